"""One registry of text caches, each bounded by bytes: memory has a ceiling, and a cold start is cold.

``contextwright.clear_caches()`` empties every cache of the process; ``Assembler.clear_caches()``
only the assembler's own (issue 31 item 2, issue 34's house item).
"""

from __future__ import annotations

import functools
import importlib
import random
import sys
from pathlib import Path
from typing import Any

import pytest

import contextwright
from contextwright import Assembler
from contextwright.core import caches
from contextwright.tokens import CharTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

TEXT_CACHES = (
    "contextwright.stages.words.analyze",
    "contextwright.stages.words.lowered_sentences",
    "contextwright.stages.words.sentence_spans",
    "contextwright.stages.words.sentence_sizes",
    "contextwright.stages.words._stem_short",
    "contextwright.stages.dedup._exact_key",
    "contextwright.stages.containment._profile",
    "contextwright.stages.containment._strip_plan",
    "contextwright.render.cite._snippet",
    "contextwright.assembly.pipeline.bodies",
    "contextwright.assembly.pipeline.headers",
)


@pytest.fixture(autouse=True)
def _modules() -> None:
    for module in ("stages.words", "stages.dedup", "stages.containment", "render.cite", "assembly.pipeline"):
        importlib.import_module(f"contextwright.{module}")


def test_every_text_cache_is_registered_with_a_byte_bound() -> None:
    bounded = {s.name: s for s in caches.stats()}
    for name in TEXT_CACHES:
        assert name in bounded, name
        assert 0 < bounded[name].max_bytes <= 16 * 2**20, bounded[name]
    # the process-wide text caches together (the tokenizers' counts come on top: 64 MiB each)
    shared = sum(bounded[n].max_bytes for n in TEXT_CACHES)
    assert shared <= 96 * 2**20


def test_clear_caches_empties_every_cache_and_the_method_only_the_assemblers_own(
    dev_queries: list[dict[str, Any]],
) -> None:
    shared = Assembler("tight", budget=300)  # compresses: fills the words caches too
    own = Assembler("qa", budget=300, tokenizer=CharTokenizer(4.0))
    for q in dev_queries[:5]:
        shared.assemble(q["question"], q["chunks"])
        own.assemble(q["question"], q["chunks"])
    held = {s.name: s.entries for s in caches.stats()}
    assert held["contextwright.stages.words.analyze"] > 0
    assert held["contextwright.stages.containment._profile"] > 0
    counted = len(shared.tokenizer._cache)
    assert counted > 0 and len(own.tokenizer._cache) > 0

    own.clear_caches()
    assert len(own.tokenizer._cache) == 0  # its own tokenizer (passed as an object)
    assert len(shared.tokenizer._cache) == counted  # the shared one is not its to clear
    assert {s.name: s.entries for s in caches.stats()}["contextwright.stages.words.analyze"] > 0
    text = dev_queries[0]["chunks"][0]["text"]
    assert own.pipeline._bodies.get(text) is None  # its rendered bodies are forgotten
    assert shared.pipeline._bodies.get(text) is not None  # another pipeline's are not

    shared.clear_caches()  # a tokenizer named by a string is the registry's: kept
    assert len(shared.tokenizer._cache) == counted

    contextwright.clear_caches()
    assert all(s.entries == 0 and s.bytes == 0 for s in caches.stats())
    assert len(shared.tokenizer._cache) == 0


def test_clear_all_empties_a_registered_lru_cache() -> None:
    @caches.register
    @functools.lru_cache(maxsize=4)
    def double(x: int) -> int:
        return 2 * x

    double(2)
    assert double.cache_info().currsize == 1
    caches.clear_all()
    assert double.cache_info().currsize == 0


def test_byte_lru_holds_its_byte_bound_and_evicts_the_least_recently_used() -> None:
    cache = caches.ByteLRU("test.lru", max_bytes=8_000, weak=None)
    for i in range(100):
        cache.put(i, "x", 500)
        assert cache.bytes <= 8_000
    assert len(cache) == 8_000 // (500 + caches.ENTRY_OVERHEAD)
    cache.get(90)  # recently used: survives the next insertions
    for i in range(1_000, 1_003):  # evicts 88, 89, then 91: 90 was used after them
        cache.put(i, "y", 500)
    assert 90 in cache and 91 not in cache
    cache.put("huge", "z", 2_000)  # over an eighth of the bound: computed, never kept
    assert "huge" not in cache
    cache.cache_clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_a_long_text_is_keyed_by_its_digest_and_not_kept_alive() -> None:
    @caches.text_cache(max_bytes=2**20)
    def first_word(text: str) -> str:
        return text.split()[0]

    short, long = "alpha beta", "gamma " * 2_000
    assert first_word(short) == "alpha" and first_word(long) == "gamma"
    keys = list(first_word.cache._data)  # type: ignore[attr-defined]
    assert short in keys  # a short text is its own key
    assert all(long not in k for k in keys)  # the 12,000-character text is not a key
    assert first_word.cache.bytes < 2_000  # type: ignore[attr-defined]
    assert first_word(long) == "gamma" and first_word.cache.hits == 1  # type: ignore[attr-defined]


def test_scoped_views_share_one_bound_and_renew_forgets_one_view() -> None:
    lru = caches.ByteLRU("test.scoped", max_bytes=2**20, weak=None)
    a, b = caches.Scoped(lru), caches.Scoped(lru)
    a["text"] = "A"
    b["text"] = "B"
    assert (a.get("text"), b.get("text")) == ("A", "B")
    assert a.setdefault("text", "other") == "A"
    a.renew()
    assert a.get("text") is None and b.get("text") == "B"


def test_soak_of_distinct_100kb_chunks_keeps_the_caches_within_their_caps() -> None:
    """The bench_memory soak, reduced: 40 requests of 19 distinct 100 KB chunks in ``qa``."""
    bench_memory = importlib.import_module("bench_memory")
    contextwright.clear_caches()
    args = type(
        "Args",
        (),
        {
            "seed": 7,
            "preset": "qa",
            "budget": 1000,
            "tokenizer": "chars",
            "requests": 40,
            "chunks": 19,
            "chars": 100_000,
            "every": 40,
        },
    )()
    out = bench_memory.soak(args, report=False)
    assert out["cache_bytes"] <= out["cache_max_bytes"]
    for s in caches.stats():
        assert s.bytes <= s.max_bytes, s
    # 40 x 1.9 MB of text went through; without byte bounds the caches kept ~4.9 MB a request
    assert out["growth_mb"] < 150, out
    rng = random.Random(1)
    assert bench_memory.distinct_text(rng, 1_000) != bench_memory.distinct_text(rng, 1_000)
