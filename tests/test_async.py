"""``aassemble``: the same result as ``assemble``; I/O stages overlap and never block the event loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import contextwright
from contextwright import Assembler, ConfigError

from .test_llm import ScriptedChatServer, _chunks, completion, passage

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = json.loads((REPO / "examples" / "chunks.json").read_text(encoding="utf-8"))
QUERY = "When was the Eiffel Tower completed?"


async def _with_heartbeat(work: Any) -> tuple[Any, int, float]:
    """Run ``work`` while a task ticks every 5 ms; return its result, the ticks and the seconds."""
    ticks = 0
    done = asyncio.Event()

    async def beat() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.005)
            ticks += 1

    beater = asyncio.create_task(beat())
    start = time.perf_counter()
    try:
        result = await work
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        await beater
    return result, ticks, elapsed


def test_aassemble_gives_the_same_bytes_as_assemble() -> None:
    asm = Assembler("citations", budget=150)
    sync = asm.assemble("who discovered x-rays?", EXAMPLE)
    ctx = asyncio.run(asm.aassemble("who discovered x-rays?", EXAMPLE))
    assert ctx.text == sync.text and ctx.citations == sync.citations
    assert [s.stage for s in ctx.report.stages] == [s.stage for s in sync.report.stages]
    top = asyncio.run(contextwright.aassemble("who?", EXAMPLE, budget=150, preset="citations"))
    assert top.text == sync.text
    with pytest.raises(ConfigError, match="Did you mean 'format'"):
        asyncio.run(contextwright.aassemble("who?", EXAMPLE, budget=150, fromat="numbered"))


def test_llm_compress_requests_overlap_across_calls_and_the_loop_keeps_running() -> None:
    delay = 0.4

    def script(body: dict[str, Any], attempt: int) -> tuple[int, Any, float]:
        return 200, completion(passage(body).split(". ")[0] + "."), delay

    server = ScriptedChatServer(script)
    try:
        config = {
            "stages": [
                {
                    "type": "llm_compress",
                    "base_url": server.base_url,
                    "model": "m",
                    "api_key_env": "",
                    "retries": 0,
                    "whole_share": 0.3,
                    "max_concurrency": 1,
                },
                {"type": "token_budget"},
            ],
            "format": "xml",
        }
        asm = Assembler(config, budget=200)
        calls = 4

        async def many() -> list[Any]:
            return await asyncio.gather(*(asm.aassemble(QUERY, _chunks()) for _ in range(calls)))

        ctxs, ticks, elapsed = asyncio.run(_with_heartbeat(many()))
    finally:
        server.close()
    per_call = len(server.requests) // calls
    assert per_call >= 2  # each call sends several requests, one at a time (max_concurrency=1)
    assert all(c.tokens <= 200 and any("compressed" in b.ops for b in c.chunks) for c in ctxs)
    # Serially the calls would take calls × per_call × delay; overlapped, about per_call × delay.
    assert elapsed < (calls * per_call * delay) / 2, (elapsed, per_call)
    assert server.max_in_flight >= 2
    assert ticks >= (elapsed / 0.005) * 0.3, (ticks, elapsed)  # the loop was never held


@pytest.mark.postgres
def test_store_fetches_wait_in_threads_not_on_the_loop(pg_dsn: str) -> None:
    pytest.importorskip("psycopg")
    import psycopg

    from contextwright.stores import open_store

    table = f"async_{uuid.uuid4().hex[:8]}"
    corpus = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
    with open_store(pg_dsn, mode="create", table=table) as made:
        made.load_jsonl(corpus)
    hits = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:1]
    store = open_store(pg_dsn, table=table, timeout_s=5.0)
    config = {"stages": [{"type": "expand", "window": 1, "timeout_s": 5.0}], "format": "numbered"}
    asm = Assembler(config, budget=2_000, store=store)
    hold = 0.6
    locked = threading.Event()

    def lock_table() -> None:  # a real writer holding the table: every fetch waits for it
        with psycopg.connect(pg_dsn, autocommit=False) as conn:
            conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            locked.set()
            time.sleep(hold)
            conn.rollback()

    try:
        locker = threading.Thread(target=lock_table)
        locker.start()
        assert locked.wait(5)

        async def many() -> list[Any]:
            return await asyncio.gather(*(asm.aassemble("q", hits) for _ in range(4)))

        ctxs, ticks, elapsed = asyncio.run(_with_heartbeat(many()))
        locker.join()
    finally:
        store.drop_table()
        store.close()
    assert all(len(c.chunks) > 1 for c in ctxs)  # neighbours were fetched
    assert hold * 0.5 < elapsed < hold * 4  # the four fetches waited together, not one after another
    assert ticks >= (elapsed / 0.005) * 0.3, (ticks, elapsed)
