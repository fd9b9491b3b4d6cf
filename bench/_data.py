"""Shared helpers for the benchmarks: data loading and SQuAD-style answer matching."""

from __future__ import annotations

import gzip
import json
import re
import string
import unicodedata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEV = DATA / "nq_bm25_dev300.jsonl.gz"
CORPUS = DATA / "nq_corpus_chunks.jsonl.gz"


def load_dev(limit: int | None = None) -> list[dict[str, Any]]:
    """The dev queries (20 BM25 chunks each)."""
    out = []
    with gzip.open(DEV, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if limit and len(out) >= limit:
                break
    return out


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _squad(text: str, unicode_punct: bool) -> str:
    text = text.lower()
    if unicode_punct:
        text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    else:
        text = "".join(ch for ch in text if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def has_answer(text: str, answers: list[str]) -> bool:
    """An answer occurs in ``text`` as a whole-token sequence (both normalizations of the data README)."""
    for uni in (False, True):
        hay = f" {_squad(text, uni)} "
        for a in answers:
            needle = _squad(a, uni)
            if needle and f" {needle} " in hay:
                return True
    return False


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]
