"""Tool outputs over HTTP: bounded work, counted in max_request_work (issue 26, finding 5)."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("prometheus_client")

from fastapi.testclient import TestClient

from contextwright.service import ServiceConfig, create_app

CHUNKS = [{"id": "a", "text": "Paris is the capital of France.", "score": 1.0}]
ANGLES = [{"name": f"t{i}", "content": "<x\n" * 20000} for i in range(20)]  # the reproducer


@pytest.mark.timeout(60)  # before the fix: a 504, then minutes of CPU in the worker
def test_hostile_tool_outputs_answer_in_well_under_two_seconds() -> None:
    from contextwright.render.parse import parse_tool_outputs
    from contextwright.tokens import get_tokenizer

    with TestClient(create_app(ServiceConfig(budget=500, timeout_s=5))) as c:
        body: dict[str, Any] = {
            "query": "q",
            "chunks": CHUNKS,
            "tools": ANGLES,
            "tool_tokens": 1000,
            "tool_policy": "truncate",
        }
        wall, cpu = time.perf_counter(), time.process_time()
        r = c.post("/v1/assemble", json=body)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert r.status_code == 200, r.text[:300]
        assert wall < 2.0 and cpu < 2.0, f"{wall:.2f} s wall, {cpu:.2f} s CPU"
        tools = r.json()["report"]["tools"]
        assert len(tools["truncated"]) == 20 and not tools["dropped"]
        assert get_tokenizer("cl100k_base").base.count(tools["text"]) == tools["tokens"] <= 1000
        assert parse_tool_outputs(tools["text"]) == [t["name"] for t in ANGLES]
        start = time.perf_counter()  # the worker is free again
        assert c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS}).status_code == 200
        assert time.perf_counter() - start < 1.0


def test_tool_outputs_count_against_max_request_work() -> None:
    with TestClient(create_app(ServiceConfig(budget=500, max_request_work=60))) as c:
        many = [{"name": f"t{i}", "content": "row\n" * 3} for i in range(200)]
        r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "tools": many, "tool_tokens": 100})
        assert r.status_code == 422, r.text[:300]
        problem = r.json()
        assert problem["code"] == "too-much-work"
        assert "200 tool outputs" in problem["detail"] and "max_request_work of 60" in problem["detail"]
        few = [{"name": "t", "content": "row\n" * 3}]
        r = c.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "tools": few, "tool_tokens": 100})
        assert r.status_code == 200, r.text[:300]
