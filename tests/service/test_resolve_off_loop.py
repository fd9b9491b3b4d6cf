"""``POST /v1/citations/resolve`` runs in the worker's pool, and its work is linear (issue 31, item 5).

It ran on the event loop, and an answer of ``[1-1000, 1-1000, ...]`` walked every range in full
(0.42 s of CPU a request): 16 at once held ``/healthz`` for 5.27 s. Now the ranges walk only
numbers not seen yet (linear in the answer, which ``max_text_chars`` caps, plus at most 1,000
distinct numbers), and the work runs in the assembly pool. Against a real server on 127.0.0.1,
with the load sent from another process so the probe's own loop is idle.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

LOAD = r"""
import asyncio, sys, time
import httpx
url = sys.argv[1]
citations = [{"index": i, "chunk_ids": [f"c{i}"]} for i in range(1, 1001)]
body = httpx.Request("POST", url, json={"answer": "[" + "1-1000," * 14000 + "1]", "citations": citations}).read()
async def main():
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        print("go", flush=True)
        rs = await asyncio.gather(*[
            c.post("/v1/citations/resolve", content=body, headers={"content-type": "application/json"})
            for _ in range(16)
        ])
        print(" ".join(str(r.status_code) for r in rs), flush=True)
asyncio.run(main())
"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWRIGHT_")}
    env["CONTEXTWRIGHT_ACCESS_LOG"] = "false"
    cmd = [sys.executable, "-c", "from contextwright.cli import main; main()", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/healthz", timeout=0.5)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_healthz_answers_while_16_heavy_resolves_run(server: str) -> None:
    load = subprocess.Popen([sys.executable, "-c", LOAD, server], stdout=subprocess.PIPE, text=True)
    assert load.stdout is not None and load.stdout.readline().strip() == "go"
    latencies: list[float] = []
    with httpx.Client(base_url=server, timeout=60) as c:
        while load.poll() is None:
            start = time.perf_counter()
            r = c.get("/healthz")
            latencies.append(time.perf_counter() - start)
            # It answers; while the resolves hold every pool thread it says so (503 busy, a
            # readiness signal: the worker is alive and saturated), otherwise 200 ok.
            assert (r.status_code, r.json()["status"]) in ((200, "ok"), (503, "busy")), r.text
            time.sleep(0.02)
    codes = load.stdout.read().split()
    assert codes == ["200"] * 16
    assert len(latencies) >= 3
    # The loop still parses each request's body (~7 ms for 1,000 citations); the work itself runs
    # in the pool. On a machine shared with other jobs single probes can wait for the CPU, so the
    # median carries the promise and the worst probe only a loose bound (the issue saw 5.27 s).
    assert statistics.median(latencies) < 0.1, latencies
    assert max(latencies) < 5.0, latencies


def test_the_answer_and_the_citations_are_capped_naming_the_limit(server: str) -> None:
    with httpx.Client(base_url=server, timeout=60) as c:
        r = c.post("/v1/citations/resolve", json={"answer": "[1]" * 40_000, "citations": []})
        assert r.status_code == 422 and r.json()["loc"] == ["body", "answer"]
        assert "100000" in r.json()["detail"] and "max_text_chars" in r.json()["detail"]
        many = [{"index": i} for i in range(1, 1002)]
        r = c.post("/v1/citations/resolve", json={"answer": "[1]", "citations": many})
        assert r.status_code == 422 and r.json()["loc"] == ["body", "citations"]
        assert "1000" in r.json()["detail"] and "max_chunks" in r.json()["detail"]
