"""The sentence splitter is linear on hostile text and unchanged on real text (issue 26, finding 2).

``split_sentences('?' * 20000)`` took 14.7 s (the candidate regex rescanned a run of punctuation
from every position in it), and it runs in the default ``qa`` preset on every chunk that does
not fit, holding the GIL.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from contextwright.core.sentences import split_sentences

ADVERSARIAL = [
    "?" * 100_000,
    "." * 100_000,
    "…" * 100_000,
    "a" + ".?!…" * 25_000 + "x",
    "!" * 50_000 + "'" * 50_000,
    ".]" * 50_000,
    "[1]" * 33_000,
    ". A" * 33_000,
    ". U.S. Army" * 9_000,
    "\n" + " " * 100_000,
    "\n \t" * 33_000,
    "a. " * 33_000,
    "Mr. " * 25_000,
    '."' * 50_000,
    " ." * 50_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:12]) + f"x{len(t)}")
def test_split_sentences_is_linear_on_100k_hostile_characters(text: str) -> None:
    best = min(_cpu(text) for _ in range(2))
    assert best < 0.5, f"split_sentences took {best:.2f} s of CPU on {len(text):,} characters"


def _cpu(text: str) -> float:
    start = time.thread_time()
    split_sentences(text)
    return time.thread_time() - start


def test_splits_of_real_chunks_are_unchanged(dev_queries: list[dict[str, Any]]) -> None:
    """The digest of every dev chunk's spans, recorded with the splitter before the fix."""
    texts = sorted({c["text"] for q in dev_queries for c in q["chunks"]})
    spans = [split_sentences(t) for t in texts]
    digest = hashlib.sha256(json.dumps(spans).encode()).hexdigest()
    assert len(texts) == DEV_TEXTS
    assert digest == DEV_DIGEST


DEV_TEXTS = 2646
DEV_DIGEST = "434a27e345c69dafbb96d0a8c82cad2d2a1a2d10071249e0addc0a58917ce901"
