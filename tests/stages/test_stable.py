"""Stable order across turns: survivors first, same bytes, stable-prefix tokens, cache breakpoints."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler
from contextwright.core.errors import InputError
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.stable import StableOrder


def test_survivors_come_first_in_their_previous_order() -> None:
    chunks = chunks_from_dicts([{"id": i, "text": f"text {i}"} for i in ("n1", "b", "n2", "a")])
    result = StableOrder()(chunks, previous=(("a",), ("gone",), ("b",)))
    assert [c.id for c in result.chunks] == ["a", "b", "n1", "n2"]
    assert result.report.notes == ("2 of 3 previous blocks kept (1 in place), 2 new appended",)
    assert [c.id for c in StableOrder()(chunks).chunks] == ["n1", "b", "n2", "a"]


def test_a_conversation_keeps_the_prefix_and_citation_numbers(hybrid_queries: list[dict[str, Any]]) -> None:
    q = hybrid_queries[3]
    stable = Assembler("qa", budget=1000, stable_order=True)
    plain = Assembler("qa", budget=1000)
    turn1 = stable.assemble(q["question"], q["lists"]["bm25"], session="s1")
    assert turn1.report.stable_prefix_tokens is None  # nothing to compare with yet
    turn2 = stable.assemble(q["question"], q["lists"], session="s1")
    survivors = [
        c.chunk_ids for c in turn2.citations if c.chunk_ids in {x.chunk_ids for x in turn1.citations}
    ]
    assert survivors, "the fused list keeps some BM25 blocks"
    # survivors first, in their previous order
    old_order = [c.chunk_ids for c in turn1.citations if c.chunk_ids in set(survivors)]
    assert [c.chunk_ids for c in turn2.citations][: len(survivors)] == old_order
    # the report's stable prefix is exactly the shared line-aligned prefix, counted
    common = 0
    while common < min(len(turn1.text), len(turn2.text)) and turn1.text[common] == turn2.text[common]:
        common += 1
    cut = turn2.text.rfind("\n", 0, common) + 1
    assert turn2.report.stable_prefix_tokens == stable.tokenizer.count(turn2.text[:cut])
    assert turn2.report.to_dict()["stable_prefix_tokens"] == turn2.report.stable_prefix_tokens
    # blocks that stayed in place keep their number and bytes
    for old, new in zip(turn1.citations, turn2.citations, strict=False):
        if old.chunk_ids != new.chunk_ids:
            break
        assert old.index == new.index
    without = plain.assemble(q["question"], q["lists"], previous=turn1)
    assert without.report.stable_prefix_tokens is not None
    assert turn2.report.stable_prefix_tokens >= without.report.stable_prefix_tokens
    # the same via the previous context's to_dict (what the CLI and the service carry)
    again = Assembler("qa", budget=1000, stable_order=True).assemble(
        q["question"], q["lists"], previous=turn1.to_dict()
    )
    assert again.text == turn2.text
    with pytest.raises(InputError, match="previous must be the previous AssembledContext"):
        stable.assemble(q["question"], q["lists"], previous={"text": "x"})


def test_cache_marks_breakpoints_after_the_stable_prefix(hybrid_queries: list[dict[str, Any]]) -> None:
    q = hybrid_queries[3]
    asm = Assembler("qa", budget=1000, stable_order=True)
    first = asm.assemble(q["question"], q["lists"]["bm25"], session="c")
    ctx = asm.assemble(q["question"], q["lists"], session="c")
    messages = ctx.messages(context_in="system", cache=True)
    blocks = messages[0]["content"]
    assert isinstance(blocks, list) and all(b["type"] == "text" for b in blocks)
    joined = "".join(b["text"] for b in blocks)
    assert joined == ctx.messages(context_in="system")[0]["content"]
    marked = [b for b in blocks if "cache_control" in b]
    assert marked and all(b["cache_control"] == {"type": "ephemeral"} for b in marked)
    if 0 < (ctx.report.stable_prefix_tokens or 0) < ctx.tokens:
        assert len(marked) == 2
        head = marked[0]["text"].split("Context:\n", 1)[1]
        assert first.text.startswith(head) and ctx.text.startswith(head)
        assert asm.tokenizer.count(head) <= (ctx.report.stable_prefix_tokens or 0)
    user = ctx.messages(cache=True)[-1]["content"]
    assert user[-1] == {"type": "text", "text": f"\n\nQuestion: {q['question']}"}
