"""The sentence splitter: spans, tricky cases, and the truncation helper built on it."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from contextwright.core.sentences import sentences, split_sentences
from contextwright.stages.budget import sentence_ends

CASES = json.loads((Path(__file__).parent / "fixtures" / "sentence_cases.json").read_text())


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("known_limitation")], ids=lambda c: c["name"])
def test_splits_tricky_case_exactly(case: dict[str, object]) -> None:
    expected = case["sentences"]
    assert isinstance(expected, list)
    text = case.get("text", " ".join(expected))
    assert sentences(str(text)) == expected


def test_known_limitations_are_documented_in_the_fixture() -> None:
    limits = [c["name"] for c in CASES if c.get("known_limitation")]
    # A single capital before a dot reads as an initial ("vitamin C. It" stays one sentence).
    assert limits == ["single letter word end"]
    assert sentences("He took vitamin C. It helped.") == ["He took vitamin C. It helped."]


def test_spans_index_the_original_text_and_cover_every_non_space() -> None:
    text = "  Dr. Who arrived at 3.30 p.m. today.\n\nHe left  (quietly).  Then? Gone!  "
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == [
        "Dr. Who arrived at 3.30 p.m. today.",
        "He left  (quietly).",
        "Then?",
        "Gone!",
    ]
    gaps = [text[: spans[0][0]]] + [text[a[1] : b[0]] for a, b in itertools.pairwise(spans)]
    gaps.append(text[spans[-1][1] :])
    assert all(not g.strip() for g in gaps)


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_blank_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []


def test_text_without_final_stop_is_one_sentence() -> None:
    assert sentences("no stop here, and a URL www.example.com/a.b") == [
        "no stop here, and a URL www.example.com/a.b"
    ]


def test_sentence_ends_uses_the_splitter_and_ends_at_the_stripped_length() -> None:
    text = "Mr. Smith went to Washington. He met J. Doe there.  "
    assert sentence_ends(text) == [len("Mr. Smith went to Washington."), len(text.rstrip())]
    assert sentence_ends("") == [0]


def test_candidate_pattern_matches_the_lookbehind_first_spelling() -> None:
    """``_CANDIDATE`` opens with its first character (fast scan) instead of the lookbehind: the
    same matches as ``(?<![.!?…])[.!?…]++...`` on random runs of every character it reads."""
    import random

    from contextwright.core.sentences import _CANDIDATE

    old = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’»)\]]*+(?:\[\d{1,3}\])*+(?=\s)")
    rng = random.Random(11)
    alphabet = list(".!?…\"'”’»)][1 \n\taZ")
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
        assert [m.span() for m in _CANDIDATE.finditer(text)] == [m.span() for m in old.finditer(text)], text
