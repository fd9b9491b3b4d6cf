"""Shared fixtures for the adapter tests: a small corpus and the real MiniLM encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: Eight retrieved passages, best first. Two are the same text from two files
#: (exact duplicate), two are long enough that a 160-token budget cannot hold
#: everything, and their scores are not in document order.
PASSAGES: list[dict[str, Any]] = [
    {
        "id": "roentgen-1",
        "text": "Wilhelm Conrad Röntgen discovered X-rays on 8 November 1895 while experimenting "
        "with cathode-ray tubes in his laboratory in Würzburg.",
        "source": "physics/xrays.md",
        "page": 1,
        "doc_id": "xrays",
        "score": 0.93,
    },
    {
        "id": "roentgen-copy",
        "text": "Wilhelm Conrad Röntgen discovered X-rays on 8 November 1895 while experimenting "
        "with cathode-ray tubes in his laboratory in Würzburg.",
        "source": "mirror/xrays-copy.md",
        "page": 4,
        "doc_id": "xrays-mirror",
        "score": 0.91,
    },
    {
        "id": "nobel-1901",
        "text": "For this discovery Röntgen received the first Nobel Prize in Physics in 1901; he "
        "donated the prize money to the University of Würzburg.",
        "source": "physics/nobel.md",
        "page": 2,
        "doc_id": "nobel",
        "score": 0.81,
    },
    {
        "id": "hand-photo",
        "text": "The first medical X-ray photograph showed the hand of Röntgen's wife, Anna Bertha "
        "Ludwig, with her wedding ring clearly visible.",
        "source": "physics/xrays.md",
        "page": 2,
        "doc_id": "xrays",
        "score": 0.77,
    },
    {
        "id": "curie",
        "text": "Marie Curie coined the term radioactivity and, with Pierre Curie, discovered the "
        "elements polonium and radium in 1898. " * 3,
        "source": "chemistry/curie.md",
        "page": 7,
        "doc_id": "curie",
        "score": 0.52,
    },
    {
        "id": "becquerel",
        "text": "Henri Becquerel found in 1896 that uranium salts emit penetrating radiation without "
        "any external source of energy, a year after Röntgen's discovery.",
        "source": "physics/becquerel.md",
        "page": 1,
        "doc_id": "becquerel",
        "score": 0.48,
    },
    {
        "id": "ct",
        "text": "Computed tomography, developed by Godfrey Hounsfield and Allan Cormack in the "
        "1970s, combines many X-ray projections into cross-sectional images. " * 3,
        "source": "medicine/ct.md",
        "page": 11,
        "doc_id": "ct",
        "score": 0.35,
    },
    {
        "id": "wurzburg",
        "text": "Würzburg is a city in the region of Franconia in northern Bavaria, Germany, on the "
        "river Main.",
        "source": "geo/wurzburg.md",
        "page": 1,
        "doc_id": "wurzburg",
        "score": 0.12,
    },
]

QUERY = "Who discovered X-rays and when?"


@pytest.fixture(scope="session")
def passages() -> list[dict[str, Any]]:
    """A fresh copy of the eight passages per test session."""
    return [dict(p) for p in PASSAGES]


@pytest.fixture(scope="session")
def minilm(minilm_dir: Path) -> Any:
    """The real all-MiniLM-L6-v2 sentence encoder, loaded once (offline)."""
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(minilm_dir), device="cpu")
