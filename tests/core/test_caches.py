"""One registry of text caches: Assembler.clear_caches empties every one (a cold start is cold)."""

from __future__ import annotations

from typing import Any

from contextwright import Assembler
from contextwright.core import caches


def test_every_text_cache_is_registered_and_clear_caches_empties_them(
    dev_queries: list[dict[str, Any]],
) -> None:
    registered = caches.registered()
    # the caches that were once missed or kept their own lists: the compressor's analysis, the
    # budget's sentence windows, dedup keys, snippets, containment profiles
    for name in (
        "contextwright.stages.words.analyze",
        "contextwright.stages.words.sentence_spans",
        "contextwright.stages.words.sentence_sizes",
        "contextwright.stages.dedup._exact_key",
        "contextwright.render.cite._snippet",
    ):
        assert name in registered, name
    assembler = Assembler("tight", budget=300)  # compresses: fills the words caches
    for q in dev_queries[:5]:
        assembler.assemble(q["question"], q["chunks"])
    filled = {n for n, c in registered.items() if c.cache_info().currsize > 0}  # type: ignore[attr-defined]
    assert "contextwright.stages.words.analyze" in filled
    assembler.clear_caches()
    assert all(c.cache_info().currsize == 0 for c in caches.registered().values())  # type: ignore[attr-defined]


def test_clear_all_empties_a_registered_cache() -> None:
    import functools

    @caches.register
    @functools.lru_cache(maxsize=4)
    def double(x: int) -> int:
        return 2 * x

    double(2)
    assert double.cache_info().currsize == 1
    caches.clear_all()
    assert double.cache_info().currsize == 0
