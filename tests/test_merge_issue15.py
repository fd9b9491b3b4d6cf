"""Issue 15's inputs through issue 11/13's checks, on the sync and async paths."""

from __future__ import annotations

import asyncio

import pytest

from contextwright import Assembler, aassemble, assemble
from contextwright.core.errors import ConfigError, InputError

LISTS = {
    "bm25": [
        {"id": "a", "text": "Alpha is the first letter.", "score": 9.0},
        {"id": "e", "text": "   ", "score": 8.0},
        {"id": "b", "text": "Beta comes second.", "score": 3.0},
    ],
    "dense": [
        {"id": "b", "text": "Beta comes second.", "score": 0.9},
        {"id": "e", "text": None, "score": 0.8},
        {"id": "c", "text": "Gamma is third.", "score": 0.5},
    ],
}


def test_named_lists_drop_empty_chunks_with_reason_empty_once() -> None:
    ctx = assemble("which letter?", LISTS, budget=300)
    assert {c.id for c in ctx.chunks} == {"a", "b", "c"}
    empties = [d for d in ctx.report.dropped if d.reason == "empty"]
    assert [d.chunk_id for d in empties] == ["e"] and "list 'bm25'" in (empties[0].detail or "")
    assert ctx.report.stages[0].stage == "input" and ctx.report.input_chunks == 4


def test_named_lists_reject_lone_surrogates_naming_the_list() -> None:
    with pytest.raises(InputError, match=r"lists\['dense'\].*surrogate"):
        assemble("q", {"bm25": [{"text": "ok"}], "dense": [{"text": "bad \ud800"}]}, budget=100)


def test_issue_15_keywords_pass_the_strict_check_and_typos_do_not() -> None:
    Assembler("qa", budget=100, fusion="rrf", tool_tokens=10, tool_policy="truncate", stable_order=True)
    assemble("q", LISTS, budget=200, fusion={"method": "rrf", "k": 10}, stable_order=True)
    with pytest.raises(ConfigError, match="Did you mean 'fusion'"):
        assemble("q", LISTS, budget=200, fussion="rrf")
    with pytest.raises(ConfigError, match="Did you mean 'reranker'"):
        Assembler("qa", budget=100, rerankr=object())
    with pytest.raises(ConfigError, match=r"fuse\.k is 20000, beyond its bound"):
        Assembler("qa", budget=100, fusion={"k": 20_000})


def test_async_path_fuses_fits_tools_and_keeps_order() -> None:
    asm = Assembler("qa", budget=300, tool_tokens=50, stable_order=True, fusion="rrf")
    tools = [{"name": "calc", "content": "2 + 2 = 4"}]
    sync1 = asm.assemble("which letter?", LISTS, tools=tools)
    async1 = asyncio.run(asm.aassemble("which letter?", LISTS, tools=tools))
    assert async1.text == sync1.text and async1.report.tools == sync1.report.tools
    assert async1.report.stages[1].stage == "fuse"
    more = {**LISTS, "dense": [{"id": "z", "text": "Zeta is late.", "score": 1.0}, *LISTS["dense"]]}
    sync2 = asm.assemble("which letter?", more, previous=sync1)
    async2 = asyncio.run(asm.aassemble("which letter?", more, previous=async1.to_dict()))
    assert (
        async2.text == sync2.text and async2.report.stable_prefix_tokens == sync2.report.stable_prefix_tokens
    )
    a = asyncio.run(asm.aassemble("which letter?", LISTS, session="s"))
    b = asyncio.run(asm.aassemble("which letter?", more, session="s"))
    assert a.text.splitlines()[0] == b.text.splitlines()[0] and b.report.stable_prefix_tokens
    top = asyncio.run(aassemble("which letter?", LISTS, budget=300, tools=tools, tool_tokens=50))
    assert top.report.tools is not None and top.report.tools.kept == ("calc",)
