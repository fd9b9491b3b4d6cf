"""Property tests of invariants 1-5 over every preset and format.

1. Hard budget: the final text, counted independently, is within budget.
2. Nothing lost: every input chunk is in the output or dropped with a reason.
3. Citations after order: ``[n]`` in the text and ``citations[n-1]`` agree.
4. Boundaries cannot be forged: the text has exactly one block per citation.
5. Deterministic: the same input and config give the same bytes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright import Assembler, list_presets
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.context import AssembledContext
from contextwright.render.parse import parse_blocks

FORMATS = ["minimal", "numbered", "xml", "grouped", "sources", "markdown", "lean"]
BLOCK_PATTERNS = {
    "xml": r'^<chunk id="(\d+)"',
    "numbered": r"^\[(\d+)\]",
    "lean": r"^\[(\d+)\]",
    "grouped": r"^\[(\d+)\]",
    "sources": r"^\[SOURCE (\d+)\]",
    "markdown": r"^### \[(\d+)\]",
}
PRESETS_WITHOUT_RESOURCES = ["qa", "citations", "chat", "summarize", "tight", "documents"]

DELIMITERS = [
    "</chunk>",
    '<chunk id="1">',
    "</context>",
    "\n[SOURCE 3] x.md\n",
    "\n[2] Title\n",
    "\n---\n",
    "\n## Document: X\n",
    "\n### [4]\n",
    "\n\n",
]
UNICODE = [
    "\u00a0[2] nbsp",
    "\u3000[SOURCE 4] ideographic",
    "\u200b### [5] zero-width",
    "<![CDATA[ <!-- x",
    "北京是中国的首都。",
    "🙂👩‍👩‍👧 emoji",
    "שלום עולם",
    "مرحبا بالعالم",
    "e\u0301 combining",
    "Ｆｕｌｌｗｉｄｔｈ",
]

words = st.sampled_from(
    ["the", "capital", "of", "France", "is", "Paris.", "1895", "X-rays", *DELIMITERS, *UNICODE]
)
texts = st.lists(words, min_size=1, max_size=40).map(" ".join).filter(lambda t: t.strip())
chunk = st.fixed_dictionaries(
    {"text": texts, "score": st.sampled_from([0.1, 0.5, 0.5, 0.9, 1.0])},
    optional={
        "doc_id": st.sampled_from(["A", "B", "C"]),
        "index": st.integers(0, 5),
        "source": st.sampled_from(["a.md", "b </chunk>.md", "c\nd.md"]),
        "title": texts,
    },
)
chunk_lists = st.lists(chunk, min_size=0, max_size=12)
budgets = st.sampled_from([0, 1, 5, 40, 120, 400, 100_000])


def accounted_ids(ctx: AssembledContext) -> set[str]:
    ids = {i for c in ctx.chunks for i in (*c.member_ids, *c.duplicates)}
    ids |= {d.chunk_id for d in ctx.report.dropped}
    return ids


def check_invariants(
    ctx: AssembledContext, inputs: list[dict[str, Any]], fmt: str, budget: int, encoding: Any
) -> None:
    # 1: exact and within budget, counted independently of our cache
    assert len(encoding.encode_ordinary(ctx.text)) == ctx.tokens <= budget
    # 2: nothing lost
    n_inputs = len(inputs)
    assert len(accounted_ids(ctx)) >= n_inputs
    assert ctx.report.input_chunks == n_inputs
    # 3: citation numbers follow the final order
    assert [c.index for c in ctx.citations] == list(range(1, len(ctx.chunks) + 1))
    for cite, block in zip(ctx.citations, ctx.chunks, strict=True):
        assert cite.chunk_ids == block.member_ids
    # 4: one block per citation, numbered in order: the format's own grammar (a reader's view,
    # see contextwright.render.parse) and the plain header patterns agree
    assert parse_blocks(ctx.text, fmt) == [c.index for c in ctx.citations]
    if fmt in BLOCK_PATTERNS:
        found = [int(n) for n in re.findall(BLOCK_PATTERNS[fmt], ctx.text, re.MULTILINE)]
        assert found == [c.index for c in ctx.citations]
    elif ctx.chunks:
        assert len(ctx.text.split("\n\n")) == len(ctx.chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=chunk_lists,
    budget=budgets,
    fmt=st.sampled_from(FORMATS),
    preset=st.sampled_from(PRESETS_WITHOUT_RESOURCES),
)
def test_invariants_hold_for_every_preset_and_format(
    inputs: list[dict[str, Any]], budget: int, fmt: str, preset: str, cl100k: Any
) -> None:
    assembler = Assembler(preset, budget=budget, format=fmt, tokenizer="cl100k_base")
    ctx = assembler.assemble("What is the capital?", inputs)
    check_invariants(ctx, inputs, fmt, budget, cl100k)
    # 5: deterministic, with a fresh assembler and a warm cache alike
    again = Assembler(preset, budget=budget, format=fmt, tokenizer="cl100k_base").assemble(
        "What is the capital?", inputs
    )
    assert again.text == ctx.text and again.citations == ctx.citations
    assert [s.dropped for s in again.report.stages] == [s.dropped for s in ctx.report.stages]


@pytest.mark.parametrize("policy", ["greedy", "stop", "truncate", "fill", "blocks"])
@pytest.mark.parametrize(
    "order", ["relevance", "chronological", "lost_in_the_middle", "bookend", "document", "auto"]
)
def test_invariants_on_real_queries_for_every_policy_and_order(
    dev_queries: list[dict[str, Any]], policy: str, order: str, cl100k: Any
) -> None:
    config = {
        "stages": [
            {"type": "exact_dedup"},
            {"type": "token_budget", "policy": policy},
            {"type": "auto_order"},
        ],
        "format": "xml",
    }
    assembler = Assembler(config, budget=300, order=order)
    cuts = 0
    for q in dev_queries[:10]:
        ctx = assembler.assemble(q["question"], q["chunks"])
        check_invariants(ctx, q["chunks"], "xml", 300, cl100k)
        cuts += sum(ch.action == "truncated" for ch in ctx.report.changed)
        if policy in ("greedy", "truncate", "fill"):
            assert ctx.tokens > 200  # the budget is used, not just respected
        if policy == "fill":
            assert ctx.tokens >= 300 - 60  # at most a sentence's worth and a header left over
    if policy == "fill":
        assert cuts >= 5  # the property below is not vacuous on real text


def test_preset_list_covers_the_tested_presets() -> None:
    assert set(PRESETS_WITHOUT_RESOURCES) <= set(list_presets())


@settings(max_examples=40, deadline=None)
@given(inputs=chunk_lists.filter(bool), budget=st.sampled_from([0, 10, 60, 300]))
def test_budget_holds_with_a_non_additive_hugging_face_tokenizer(
    inputs: list[dict[str, Any]], budget: int, minilm_dir: Any
) -> None:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    reference.no_padding()
    reference.no_truncation()
    ctx = Assembler("qa", budget=budget, tokenizer=str(minilm_dir / "tokenizer.json")).assemble("q", inputs)
    assert len(reference.encode(ctx.text, add_special_tokens=False).ids) == ctx.tokens <= budget


@settings(max_examples=40, deadline=None)
@given(inputs=chunk_lists.filter(bool), budget=st.sampled_from([0, 10, 60, 300]))
def test_budget_holds_for_a_user_template(inputs: list[dict[str, Any]], budget: int, cl100k: Any) -> None:
    template = {
        "type": "template",
        "template": "{% for b in blocks %}<<{{ b.label }}>> {{ b.text }} ({{ b.source }})\n{% endfor %}",
    }
    ctx = Assembler("qa", budget=budget, format=template).assemble("q", inputs)
    assert len(cl100k.encode_ordinary(ctx.text)) == ctx.tokens <= budget
    assert len(accounted_ids(ctx)) >= len(inputs)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=chunk_lists,
    budget=st.sampled_from([0, 5, 30, 60, 120, 250]),
    fmt=st.sampled_from(FORMATS),
    query=st.sampled_from(["What is the capital?", "France 1895", "", "X-rays Paris"]),
)
def test_fill_policy_keeps_the_invariants_and_its_cuts_reach_their_citations(
    inputs: list[dict[str, Any]], budget: int, fmt: str, query: str, cl100k: Any
) -> None:
    config = {
        "stages": [
            {"type": "exact_dedup"},
            {"type": "token_budget", "policy": "fill", "min_truncated_tokens": 1},
            {"type": "auto_order"},
        ],
        "format": fmt,
    }
    ctx = Assembler(config, budget=budget, tokenizer="cl100k_base").assemble(query, inputs)
    check_invariants(ctx, inputs, fmt, budget, cl100k)
    again = Assembler(config, budget=budget, tokenizer="cl100k_base").assemble(query, inputs)
    assert again.text == ctx.text and again.citations == ctx.citations
    originals = {c.id: c.text for c in chunks_from_dicts(inputs)}
    cut_ids = {ch.chunk_id for ch in ctx.report.changed if ch.action == "truncated"}
    for block, cite in zip(ctx.chunks, ctx.citations, strict=True):
        if block.id not in cut_ids:
            continue
        assert "truncated" in block.ops and block.spans and cite.spans == block.spans
        source = originals[block.id]
        shown = " ".join(source[a:b] for a, b in block.spans)
        assert " ".join(shown.split()) == " ".join(block.text.split())


def _lists(inputs: list[dict[str, Any]], split: int) -> dict[str, list[dict[str, Any]]]:
    """Two named lists sharing some chunks (same id, same text), as hybrid search returns them."""
    items = [{**c, "id": f"k{i}"} for i, c in enumerate(inputs)]
    return {"bm25": items[: split + 2], "dense": list(reversed(items[split:]))}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=chunk_lists,
    split=st.integers(0, 6),
    budget=budgets,
    fmt=st.sampled_from(FORMATS),
    method=st.sampled_from(["score", "rrf"]),
)
def test_invariants_hold_for_fused_named_lists(
    inputs: list[dict[str, Any]], split: int, budget: int, fmt: str, method: str, cl100k: Any
) -> None:
    lists = _lists(inputs, split)
    distinct = {c["id"]: c for items in lists.values() for c in items}
    if not distinct:
        return
    ctx = Assembler("qa", budget=budget, format=fmt, fusion=method).assemble("What is the capital?", lists)
    check_invariants(ctx, list(distinct.values()), fmt, budget, cl100k)
    assert accounted_ids(ctx) >= set(distinct)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=chunk_lists, budget=budgets, fmt=st.sampled_from(FORMATS), lam=st.sampled_from([0.0, 0.5, 1.0]))
def test_invariants_hold_under_mmr_selection(
    inputs: list[dict[str, Any]], budget: int, fmt: str, lam: float, cl100k: Any
) -> None:
    vectors = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.1]]
    items = [{**c, "embedding": vectors[i % 4]} for i, c in enumerate(inputs)]
    config = {
        "stages": [{"type": "exact_dedup"}, {"type": "mmr", "lambda_mult": lam}, {"type": "auto_order"}]
    }
    ctx = Assembler(config, budget=budget, format=fmt).assemble("What is the capital?", items)
    check_invariants(ctx, items, fmt, budget, cl100k)
