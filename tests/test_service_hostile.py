"""Hostile requests to a real uvicorn server get a 4xx and nothing else (issue 11).

A request may not take the server down: every numeric setting of every
registered stage at an absurd value is refused within a second with no
memory growth; lone surrogates, template abuse, unknown keys, unknown roles
and encodings that would be downloaded are 4xx problems, never a 500 or a
reset connection.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from contextwright.core.limits import numeric_settings  # noqa: E402
from contextwright.stages.base import registered_stages  # noqa: E402

CHUNKS = [
    {"id": f"c{i}", "text": f"Chunk number {i} says something about topic {i % 2}.", "score": 1 - i / 10}
    for i in range(5)
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    code = "from contextwright.cli import main; main()"
    cmd = [
        sys.executable,
        "-c",
        code,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(
        cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("server did not start")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    cache = tempfile.mkdtemp(prefix="cw-empty-tiktoken-")  # no cached BPE files: gpt2 would be a download
    proc, url = _start(
        {"CONTEXTWRIGHT_BUDGET": "300", "CONTEXTWRIGHT_ALLOW_TEMPLATES": "true", "TIKTOKEN_CACHE_DIR": cache}
    )
    try:
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def numeric_stage_settings() -> list[tuple[str, str]]:
    return [(name, s) for name, cls in registered_stages().items() for s in numeric_settings(cls)]


def test_every_numeric_setting_of_every_stage_at_an_absurd_value_is_a_fast_4xx(
    server: tuple[str, int],
) -> None:
    url, pid = server
    pairs = numeric_stage_settings()
    assert len(pairs) >= 20
    with httpx.Client(base_url=url, timeout=10) as c:
        assert c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS}).status_code == 200  # warm
        before = _rss_kib(pid)
        for stage, setting in pairs:
            for value in (10**12, -(10**12), 1e300, 10**30):
                config = {"stages": [{"type": stage, setting: value}, {"type": "token_budget"}]}
                start = time.perf_counter()
                r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "config": config})
                elapsed = time.perf_counter() - start
                assert 400 <= r.status_code < 500, (stage, setting, value, r.status_code, r.text[:300])
                assert elapsed < 1.0, (stage, setting, value, elapsed)
                assert r.headers["content-type"].startswith("application/problem+json")
        assert (
            c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS}).status_code == 200
        )  # still serving
        assert _rss_kib(pid) - before < 50_000  # KiB


def test_the_issue_reproducer_and_the_work_cap(server: tuple[str, int]) -> None:
    url, _ = server
    with httpx.Client(base_url=url, timeout=10) as c:
        config = {
            "stages": [
                {"type": "near_dedup", "method": "minhash", "num_perm": 20_000_000},
                {"type": "token_budget"},
            ]
        }
        start = time.perf_counter()
        r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "config": config})
        assert r.status_code == 422 and "num_perm" in r.json()["detail"]
        assert time.perf_counter() - start < 1.0
        # within every bound, but too much work for one request: chunks × num_perm
        many = [{"id": f"m{i}", "text": f"text {i} " * 5, "score": 0.5} for i in range(1000)]
        config["stages"][0]["num_perm"] = 1024
        start = time.perf_counter()
        r = c.post("/v1/assemble", json={"query": "q", "chunks": many, "config": config})
        assert r.status_code == 422, r.text[:300]
        body = r.json()
        assert body["code"] == "too-much-work" and "max_request_work" in body["detail"]
        assert time.perf_counter() - start < 1.0


SURROGATE_BODIES = [
    '{"query": "q", "chunks": [{"text": "a", "title": "t\\ud800"}]}',
    '{"query": "q", "chunks": [{"text": "a", "source": "\\udfff"}]}',
    '{"query": "q", "chunks": [{"text": "a", "section": "\\ud800x"}]}',
    '{"query": "q", "chunks": [{"text": "a", "doc_id": "\\ud800"}]}',
    '{"query": "q", "chunks": [{"text": "abc\\ud800"}]}',
    '{"query": "q", "chunks": [{"text": "a", "metadata": {"page_summary": "\\ud800"}}]}',
    '{"query": "q", "chunks": [{"text": "a", "extra\\ud800": 1}]}',
    '{"query": "q\\ud800", "chunks": [{"text": "a"}]}',
    '{"query": "q", "chunks": [{"text": "a"}], "system": "\\ud800"}',
    '{"query": "q", "chunks": [{"text": "a"}], "model": "\\ud800"}',
    '{"query": "q", "chunks": [{"text": "a"}], "config": {"format": "\\ud800"}}',
    '{"query": "q", "chunks": [{"text": "a"}], "history_tokens": 50, "history": [{"role": "user", "content": "\\ud800"}]}',
    '{"query": "q", "chunks": [{"text": "a", "score": []}], "x\\ud800": 1}',
    '{"answer": "\\ud800 [1]", "citations": [{"index": 1, "source": "\\ud800"}]}',
]


@pytest.mark.parametrize("body", SURROGATE_BODIES)
def test_lone_surrogates_are_a_4xx_and_the_connection_survives(server: tuple[str, int], body: str) -> None:
    url, _ = server
    path = "/v1/citations/resolve" if body.startswith('{"answer"') else "/v1/assemble"
    with httpx.Client(base_url=url, timeout=10) as c:
        r = c.post(path, content=body.encode(), headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
        problem = r.json()
        assert (
            "surrogate" in problem["detail"]
            or problem["code"] == "validation-error"
            or path.endswith("resolve")
        )
        # the same keep-alive connection serves the next request
        assert c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS}).status_code == 200


@pytest.mark.parametrize(
    "template",
    [
        "{{ blocks.__class__.__mro__[1].__subclasses__() }}",
        "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
        "{% for i in range(10**9) %}{% endfor %}",
        "{{ 'a' * 10**9 }}",
        "{{ [1]*10**8 }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    ],
)
def test_template_abuse_is_a_422_quickly(server: tuple[str, int], template: str) -> None:
    url, pid = server
    with httpx.Client(base_url=url, timeout=10) as c:
        before = _rss_kib(pid)
        start = time.perf_counter()
        r = c.post(
            "/v1/assemble",
            json={"query": "q", "chunks": CHUNKS, "format": {"type": "template", "template": template}},
        )
        assert r.status_code == 422, (r.status_code, r.text[:300])
        assert "TemplateFormat" in r.json()["detail"]
        assert time.perf_counter() - start < 4.0
        assert _rss_kib(pid) - before < 200_000


def test_small_holes_are_4xx_naming_the_fix(server: tuple[str, int]) -> None:
    url, _ = server
    with httpx.Client(base_url=url, timeout=10) as c:
        r = c.post(
            "/v1/assemble",
            json={
                "query": "q",
                "chunks": CHUNKS,
                "history_tokens": 50,
                "history": [{"role": "root", "content": "x"}],
            },
        )
        assert r.status_code == 422 and "assistant" in r.text
        r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "base_url": "http://x"})
        assert r.status_code == 422 and r.json()["loc"] == ["body", "base_url"]
        assert "valid fields: " in r.json()["detail"].lower() and "chunks" in r.json()["detail"]
        r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "config": {"base_url": "http://x"}})
        assert r.status_code == 422 and "valid keys" in r.json()["detail"].lower()
        for name in ("gpt2", "p50k_base", "r50k_base"):
            start = time.perf_counter()
            r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "tokenizer": name})
            assert r.status_code == 422, r.text[:300]
            assert "openaipublic" not in r.text and "http" not in r.json()["detail"]
            assert time.perf_counter() - start < 2.0


def test_citation_years_are_not_missing_over_http(server: tuple[str, int]) -> None:
    url, _ = server
    with httpx.Client(base_url=url, timeout=10) as c:
        r = c.post(
            "/v1/citations/resolve",
            json={"answer": "the war of [1914-1918] [1]", "citations": [{"index": 1}]},
        )
        assert r.status_code == 200 and r.json()["ok"] is True and r.json()["missing"] == []


def payload(**extra: Any) -> dict[str, Any]:
    return {"query": "q", "chunks": CHUNKS, **extra}
