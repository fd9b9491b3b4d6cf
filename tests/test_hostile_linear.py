"""Every preset assembles 100,000-character hostile chunks in linear time (issue 31, item 1).

``compress`` dropped one sentence per step and joined and counted the whole
chunk again each time: ``"Hi there. " * 6000`` took 8.6 s in ``tight`` and a
100 KB chunk kept a worker busy for half a minute after its 504. The budget's
``fill`` window did the same in a milder way (the terms of each window were
recomputed from its sentences: 1.4 s for one 100 KB run at a 20,000-token
budget). Each shape below is one an attacker controls: a run of short
sentences, one sentence with no punctuation, one word with no spaces, lines
the format must escape (so every size estimate is short), thousands of tiny
chunks, and thousands of copies of a few texts.

Bounds are CPU seconds of this thread (``time.thread_time``), the best of two
cold runs, and generous (2 s where the code takes ~0.3 s) so that a loaded
two-core machine does not fail them; the growth tests compare ``n`` with
``4n`` (linear: ~4x, quadratic: ~16x) and allow 8x.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from contextwright import Assembler, list_presets
from contextwright.core.caches import clear_all
from contextwright.stores.memory import InMemoryStore

QUERY = "what is this question about w5 and paris"
BOUND_S = 2.0
GROWTH = 8.0


def _runs(n: int = 10_000) -> list[dict[str, Any]]:
    return [
        {"id": "a", "doc_id": "d1", "index": 0, "text": "Hi there. " * n, "score": 0.9},
        {"id": "b", "doc_id": "d2", "index": 0, "text": "Hello world. This is fine.", "score": 0.5},
    ]


def _one_sentence(words: int = 20_000) -> list[dict[str, Any]]:
    text = " ".join(f"w{i % 997}" for i in range(words))  # ~100k characters, no punctuation
    return [
        {"id": "a", "doc_id": "d1", "index": 0, "text": text, "score": 0.9},
        {"id": "b", "doc_id": "d2", "index": 0, "text": "Hello world. Is this the question?", "score": 0.5},
    ]


def _no_spaces() -> list[dict[str, Any]]:
    return [
        {"id": "a", "doc_id": "d1", "index": 0, "text": "x" * 100_000, "score": 0.9},
        {"id": "b", "doc_id": "d2", "index": 0, "text": "Hello world. Is this the question?", "score": 0.5},
    ]


def _escaped_lines(n: int = 2_000) -> list[dict[str, Any]]:
    # Every line looks like a block header, so the rendered body is longer than its sentences.
    text = "".join(f"[{i % 9 + 1}] Paris is the capital of France, line {i}.\n" for i in range(n))
    return [
        {"id": "a", "doc_id": "d1", "index": 0, "text": text, "score": 0.9},
        {"id": "b", "doc_id": "d2", "index": 0, "text": "Hello world. This is fine.", "score": 0.5},
    ]


def _tiny(m: int = 5_000) -> list[dict[str, Any]]:
    return [
        {
            "id": f"t{i}",
            "doc_id": f"d{i % 50}",
            "index": i // 50,
            "text": f"tiny {i} is question x",
            "score": 1 - i / m / 2,
        }
        for i in range(m)
    ]


def _copies(m: int = 5_000) -> list[dict[str, Any]]:
    return [
        {
            "id": f"c{i}",
            "doc_id": f"d{i % 50}",
            "index": i // 50,
            "text": f"what is this {i % 7}.",
            "score": 1 - i / m / 2,
        }
        for i in range(m)
    ]


def _one_document(m: int = 1_000) -> list[dict[str, Any]]:
    """``m`` chunks of ~2 KB of one document: overlap_dedup compares each with the kept ones."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(3_000)]
    return [
        {
            "id": f"o{i}",
            "doc_id": "d",
            "index": i,
            "text": " ".join(rng.choices(words, k=300)),
            "score": 1 - i / m / 2,
        }
        for i in range(m)
    ]


SHAPES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "sentence-run": _runs,
    "one-sentence": _one_sentence,
    "no-spaces": _no_spaces,
    "escaped-lines": _escaped_lines,
    "5000-tiny-chunks": _tiny,
    "5000-copies": _copies,
}


def _assembler(preset: str, chunks: list[dict[str, Any]], budget: int, **options: Any) -> Assembler:
    if preset == "documents":  # it reads neighbours from a store
        options["store"] = InMemoryStore(chunks)
    return Assembler(preset, budget=budget, **options)


def _cold_cpu(asm: Assembler, chunks: list[dict[str, Any]], *, runs: int = 2) -> float:
    """CPU seconds of one assembly with every cache empty, the best of ``runs``.

    The collector is kept off during the timed call: late in the suite the process holds
    thousands of tests' objects, and a full collection triggered inside the call would bill their
    traversal to the assembly (one suite run timed the 4x fill-window case at 99 ms, where it takes
    56 ms alone). It is not run before the call: a full collection of the suite's heap before each
    timed call cost the suite about two minutes (9 min 10 s against 6 min 51 s without it).
    """
    best = float("inf")
    for _ in range(runs):
        clear_all()
        asm.clear_caches()
        gc.disable()
        try:
            start = time.thread_time()
            ctx = asm.assemble(QUERY, chunks)
            best = min(best, time.thread_time() - start)
        finally:
            gc.enable()
        assert ctx.tokens <= asm.budget  # the hard budget holds on hostile input too
        if runs == 2 and best < BOUND_S / 4:
            break  # clearly within the bound: no second run needed
    return best


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("preset", list(list_presets()))
def test_every_preset_assembles_a_hostile_shape_within_its_bound(preset: str, shape: str) -> None:
    chunks = SHAPES[shape]()
    asm = _assembler(preset, chunks, 500)
    cpu = _cold_cpu(asm, chunks)
    assert cpu < BOUND_S, f"{preset} took {cpu:.2f} s of CPU on {shape}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", ["sentence-run", "one-sentence", "escaped-lines"])
@pytest.mark.parametrize("preset", ["qa", "chat", "tight", "frugal"])
def test_a_large_budget_fills_from_a_hostile_chunk_within_its_bound(preset: str, shape: str) -> None:
    """The fill window spans thousands of sentences at a 20,000-token budget (quadratic before)."""
    chunks = SHAPES[shape]()
    asm = _assembler(preset, chunks, 20_000)
    cpu = _cold_cpu(asm, chunks)
    assert cpu < BOUND_S, f"{preset} at budget 20,000 took {cpu:.2f} s of CPU on {shape}"


def _growth(
    make: Callable[[int], list[dict[str, Any]]], n: int, preset: str, budget: int, **options: Any
) -> float:
    small, large = make(n), make(4 * n)
    t_small, t_large = _in_turns(
        (_assembler(preset, small, budget, **options), small),
        (_assembler(preset, large, budget, **options), large),
    )
    return t_large / max(t_small, 0.01)  # below 10 ms the clock's grain, not the work, would decide


def _in_turns(*jobs: tuple[Assembler, list[dict[str, Any]]], rounds: int = 3) -> list[float]:
    """The cold CPU time of each job, the best of ``rounds``, the jobs taking turns: a burst of load
    from a test on the other xdist worker (shared caches and memory bandwidth slow this thread's CPU
    time too) then meets every size, not only the large one. Timed one after the other, a suite run
    saw word-window grow 8.4x, where it grows 4.7x alone."""
    best = [float("inf")] * len(jobs)
    for _ in range(rounds):
        for k, (asm, chunks) in enumerate(jobs):
            best[k] = min(best[k], _cold_cpu(asm, chunks, runs=1))
    return best


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("case", "make", "n", "preset", "budget"),
    [
        # the repro: the top chunk alone overflows, so compress cuts it to fit
        ("compress-fit-alone", _runs, 2_500, "tight", 500),
        ("compress-fit-alone-escaped", _escaped_lines, 600, "tight", 3_000),
        ("fill-window", _runs, 2_500, "qa", 20_000),
        ("fill-window-escaped", _escaped_lines, 600, "chat", 20_000),
        ("word-window", _one_sentence, 5_000, "qa", 500),
        ("many-chunks", _tiny, 1_250, "tight", 2_000),
        ("many-copies", _copies, 1_250, "qa", 500),
        ("one-document", _one_document, 250, "tight", 500),
    ],
)
def test_work_grows_linearly_with_the_input(
    case: str, make: Callable[[int], list[dict[str, Any]]], n: int, preset: str, budget: int
) -> None:
    ratio = _growth(make, n, preset, budget)
    assert ratio < GROWTH, f"{case}: 4x the input cost {ratio:.1f}x the CPU (linear: ~4x)"


@pytest.mark.timeout(180)
def test_compress_word_windows_are_linear_in_the_sentence_and_not_in_max_words() -> None:
    """A kept sentence longer than ``max_words`` is cut to its best window: one pass, whatever ``max_words``."""
    config = {
        "stages": [{"type": "compress", "max_words": 2_000}, {"type": "token_budget"}],
        "format": "lean",
    }

    def chunks(words: int) -> list[dict[str, Any]]:
        # the top chunk fits whole; each of the others is one long sentence, squeezed and windowed
        top = {"id": "top", "text": "Paris is the question w5.", "score": 1.0}
        return [top] + [
            {
                "id": f"s{i}",
                "text": " ".join(f"w{(i * 7 + j) % 301}" for j in range(words)),
                "score": 0.9 - i / 100,
            }
            for i in range(20)
        ]

    small, large = chunks(2_500), chunks(10_000)
    t_small, t_large = _in_turns(
        (Assembler(config, budget=300), small), (Assembler(config, budget=300), large)
    )
    assert t_large < BOUND_S, f"compress took {t_large:.2f} s of CPU on 20 sentences of 10,000 words"
    assert t_large / max(t_small, 0.01) < GROWTH
