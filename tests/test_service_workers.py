"""``serve --workers 2``: ``/metrics`` reports the whole server, not the worker that took the scrape."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("prometheus_client")

from .test_service import CHUNKS, metric, start_server, stop_server  # noqa: E402


def _served_by(directory: Path) -> dict[str, float]:
    """POST /v1/assemble 200s counted in each worker's file (prometheus_client multiprocess mode)."""
    from prometheus_client.mmap_dict import MmapedDict

    out: dict[str, float] = {}
    for path in directory.glob("counter_*.db"):
        pid = path.stem.split("_", 1)[1]
        out[pid] = 0.0
        for key, value, *_ in MmapedDict.read_all_values_from_file(str(path)):
            metric_name, _name, labels, *_help = json.loads(key)  # prometheus_client's mmap_key
            if metric_name == "contextwright_http_requests" and labels == {
                "route": "/v1/assemble",
                "method": "POST",
                "status": "200",
            }:
                out[pid] += value
    return out


def _settled(directory: Path, n: int, wait_s: float = 10.0) -> dict[str, float]:
    """The per-worker counts once they add up to ``n`` (or after ``wait_s``).

    A worker counts a request when its handler returns, which is just after the response has gone
    out (the timing covers the send), so the client can read its 200 a moment before the count.
    """
    deadline = time.monotonic() + wait_s
    served = _served_by(directory)
    while sum(served.values()) < n and time.monotonic() < deadline:
        time.sleep(0.02)
        served = _served_by(directory)
    return served


def _load(url: str, n: int) -> None:
    def one(_: int) -> int:
        with httpx.Client(base_url=url, timeout=10) as c:  # a new connection each: spread over workers
            return c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS[:3]}).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one, range(n))) == {200}


def _scrapes(url: str, k: int) -> list[float]:
    out = []
    for _ in range(k):
        with httpx.Client(base_url=url, timeout=10) as c:
            text = c.get("/metrics").text
        out.append(
            metric(
                text, "contextwright_http_requests_total", route="/v1/assemble", method="POST", status="200"
            )
        )
    return out


def test_metrics_of_two_workers_are_summed(tmp_path: Path) -> None:
    shared = tmp_path / "prom"
    shared.mkdir()
    (shared / "counter_1.db").write_bytes(b"stale")  # a previous run's file: serve empties the directory
    proc, url = start_server(
        "--workers", "2", env={"CONTEXTWRIGHT_BUDGET": "200", "PROMETHEUS_MULTIPROC_DIR": str(shared)}
    )
    try:
        deadline = time.monotonic() + 30
        while len(list(shared.glob("counter_*.db"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # both workers have started (each writes its own files)
        # The kernel hands connections to whichever worker accepts first; on a quiet machine one
        # worker can take a whole burst. Load in rounds (bounded) until both have served.
        n = 0
        for _ in range(20):
            _load(url, 40)
            n += 40
            served = _settled(shared, n)
            if sum(1 for v in served.values() if v) == 2:
                break
        assert sum(served.values()) == n and sum(1 for v in served.values() if v) == 2, served
        # Whichever worker answers the scrape, it reports the whole server.
        assert _scrapes(url, 8) == [n] * 8
    finally:
        stop_server(proc)


def test_serve_makes_a_fresh_shared_directory_when_none_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextwright.service.metrics import MULTIPROC_ENV, shared_metrics_dir

    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    with shared_metrics_dir() as path:
        assert path.is_dir() and list(path.iterdir()) == []
        assert Path(os.environ[MULTIPROC_ENV]) == path  # inherited by the workers uvicorn starts
    assert not path.exists() and MULTIPROC_ENV not in os.environ
