"""Tests of containment dedup: each chunk against the text kept before it (issue 22)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright import assemble
from contextwright.core.errors import ConfigError
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.base import stage_from_dict
from contextwright.stages.containment import ContainmentDedup
from contextwright.tokens import get_tokenizer

MIRRORS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "nq_mirrors_dev300.jsonl.gz"

# Sentences of distinct words: any 8-word run is shared only by copies of the same text.
SENTENCES = [
    f"Sentence {n} says that {a} {b} met {c} near the {d} of {e} in spring."
    for n, (a, b, c, d, e) in enumerate(
        (f"alpha{i}", f"beta{i}", f"gamma{i}", f"delta{i}", f"eps{i}") for i in range(40)
    )
]


def _words(i: int, j: int) -> str:
    return " ".join(" ".join(SENTENCES).split()[i:j])


def _chunk(cid: str, text: str, score: float, source: str = "kb-v1/doc.md") -> dict[str, Any]:
    return {"id": cid, "text": text, "score": score, "source": source, "doc_id": cid.split("#")[0]}


def _meter() -> Meter:
    return Meter(get_format("lean"), get_tokenizer("cl100k_base"))


def test_a_chunk_inside_kept_text_is_dropped_as_duplicate_with_its_share_and_provenance() -> None:
    chunks = chunks_from_dicts(
        [
            _chunk("a#0", _words(0, 100), 0.9),
            _chunk("a#1", _words(80, 180), 0.8),
            # another chunker's 120-word window straddling both kept windows, from a mirror
            _chunk("b#0", _words(40, 160), 0.7, source="mirror/doc.md"),
        ]
    )
    result = ContainmentDedup()(chunks)
    assert [c.id for c in result.chunks] == ["a#0", "a#1"]
    (drop,) = result.report.dropped
    # named after the kept block holding most of its words (a#1: words 80-160 of 40-160)
    assert (drop.chunk_id, drop.reason, drop.related) == ("b#0", "duplicate_of", "a#1")
    assert drop.detail.startswith("100% of its words are in kept text (most in a#1)")
    survivor = result.chunks[1]
    assert survivor.duplicates == ("b#0",)
    assert survivor.also_sources == ("mirror/doc.md",)
    assert result.chunks[0].duplicates == ()


def test_the_higher_ranked_copy_survives_whatever_the_order_of_the_list() -> None:
    chunks = chunks_from_dicts([_chunk("low", _words(0, 100), 0.2), _chunk("high", _words(10, 100), 0.9)])
    result = ContainmentDedup()(chunks)
    # 'low' has 90 of its 100 words in the higher-ranked 'high': dropped, although it comes first
    assert [c.id for c in result.chunks] == ["high"]
    assert result.report.dropped[0].chunk_id == "low"
    assert result.report.dropped[0].detail.startswith("90%")


def test_a_partly_covered_chunk_keeps_its_new_sentences_and_reports_the_strip() -> None:
    first = " ".join(SENTENCES[:6])
    later = " ".join(SENTENCES[4:12])  # two sentences repeated, six new
    chunks = chunks_from_dicts([_chunk("a", first, 0.9), _chunk("b", later, 0.5)])
    result = ContainmentDedup()(chunks, meter=_meter())
    assert result.report.dropped == ()
    kept = result.chunks[1]
    assert kept.text == " ".join(SENTENCES[6:12])
    (change,) = result.report.changed
    assert (change.chunk_id, change.action) == ("b", "overlap_stripped")
    assert change.tokens_before is not None and change.tokens_after is not None
    assert change.tokens_after < change.tokens_before
    assert "already in kept text (most in a)" in change.detail
    # the citation points at what was kept: the spans are offsets into the original text
    ((start, end),) = kept.spans
    assert later[start:end] == kept.text
    assert "containment_stripped" in kept.ops


def test_without_a_sentence_boundary_the_strip_falls_on_word_boundaries() -> None:
    words = " ".join(" ".join(SENTENCES).replace(".", "").split()[:160]).split()
    chunks = chunks_from_dicts(
        [_chunk("a", " ".join(words[:100]), 0.9), _chunk("b", " ".join(words[70:160]), 0.5)]
    )
    result = ContainmentDedup()(chunks)
    # 30 of 90 words covered: the head is cut at the first new word, not mid-word
    assert result.chunks[1].text == " ".join(words[100:160])
    assert result.report.changed[0].action == "overlap_stripped"


def test_a_repeat_in_the_middle_of_a_sentence_is_kept_rather_than_leave_a_hole() -> None:
    long_sentence = _words(0, 40).replace(".", "") + "."
    chunks = chunks_from_dicts(
        [_chunk("a", _words(10, 25).replace(".", ""), 0.9), _chunk("b", long_sentence, 0.5)]
    )
    result = ContainmentDedup()(chunks)
    assert result.chunks[1].text == long_sentence
    assert result.report.changed == ()


def test_typographic_variants_and_boilerplate_lines_do_not_hide_a_copy() -> None:
    original = 'He said "don\'t go" - it was 1990-1995 and the well-known café stayed. ' + _words(0, 90)
    variant = "He  said “don’t go” — it was 1990–1995 and the well‑known CAFÉ stayed.\n" + _words(0, 90)
    header = "Mirrored from example.org | All rights reserved"
    chunks = chunks_from_dicts(
        [
            _chunk("kb#0", original, 0.9),
            _chunk("m#0", f"{header}\n{variant}\n{header}", 0.8, source="mirror/x"),
            _chunk("m#1", f"{header}\n{_words(200, 260)}\n{header}", 0.7, source="mirror/x"),
        ]
    )
    result = ContainmentDedup()(chunks)
    assert [c.id for c in result.chunks] == ["kb#0", "m#1"]
    assert result.report.dropped[0].detail.startswith("100%")  # the header lines are not counted
    # the rendered text stays the original, boilerplate included
    assert result.chunks[1].text == chunks[2].text


def test_copies_are_found_in_the_text_never_by_id_source_or_title() -> None:
    same_names = chunks_from_dicts(
        [
            {"id": "x", "text": _words(0, 60), "score": 0.9, "source": "s", "title": "T"},
            {"id": "x2", "text": _words(200, 260), "score": 0.8, "source": "s", "title": "T"},
        ]
    )
    assert ContainmentDedup()(same_names).report.dropped == ()
    other_names = chunks_from_dicts(
        [
            {"id": "p", "text": _words(0, 60), "score": 0.9, "source": "kb-v1/p", "title": "P"},
            {"id": "q", "text": _words(0, 60), "score": 0.8, "source": "elsewhere/q", "title": "Q"},
        ]
    )
    assert [d.chunk_id for d in ContainmentDedup()(other_names).report.dropped] == ["q"]


def test_short_chunks_are_not_compared_and_the_input_is_not_changed() -> None:
    chunks = chunks_from_dicts(
        [_chunk("a", "Paris is in France.", 0.9), _chunk("b", "Paris is in France.", 0.5)]
    )
    before = [c.text for c in chunks]
    result = ContainmentDedup()(chunks)
    assert [c.id for c in result.chunks] == ["a", "b"]  # exact dedup's job, fewer than 8 words
    assert [c.text for c in chunks] == before


@pytest.mark.parametrize(
    ("setting", "value", "match"),
    [
        ("threshold", 0, "threshold must be a share"),
        ("threshold", 1.5, "threshold must be a share"),
        ("threshold", True, "threshold must be a share"),
        ("threshold", "half", "threshold must be a share"),
        ("shingle_size", 1, r"shingle_size must be an integer in \[2, 64\]"),
        ("shingle_size", 65, "shingle_size"),
        ("shingle_size", 8.0, r"shingle_size must be an integer"),
        ("reach", -1, r"reach must be a number of budgets in \[0, 1000\]"),
        ("reach", True, "reach must be"),
    ],
)
def test_settings_are_validated_naming_the_setting_and_value(setting: str, value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        stage_from_dict({"type": "containment_dedup", setting: value})


def test_copies_beyond_the_budgets_reach_are_left_to_the_budget_stage() -> None:
    rows = [
        _chunk(f"d{i}", _words(i * 12, i * 12 + 10) + f" tail{i} words here.", 1 - i / 100) for i in range(30)
    ]
    rows.append(_chunk("copy", _words(2, 10) + " tail0 words here.", 0.01, source="mirror/d0"))
    near = assemble("q", rows, preset="qa", budget=40, tokenizer="cl100k_base")
    reports = {s.stage: {d.chunk_id: d.reason for d in s.dropped} for s in near.report.stages}
    # 'copy' ranks last, far beyond 3 budgets of kept text: not compared, cut by the budget
    assert "copy" not in reports["containment_dedup"]
    assert reports["token_budget"]["copy"] == "over_budget"
    wide = assemble(
        "q",
        rows,
        preset={
            "preset": "qa",
            "stages": [{"type": "containment_dedup", "reach": 0}, {"type": "token_budget"}],
        },
        budget=40,
        tokenizer="cl100k_base",
    )
    dropped = {
        d.chunk_id: d.reason for s in wide.report.stages if s.stage == "containment_dedup" for d in s.dropped
    }
    assert dropped == {"copy": "duplicate_of"}  # reach 0 compares every chunk


# -- the presets on lists with copies -------------------------------------------


def _doc_words(doc: int, n: int) -> list[str]:
    out: list[str] = []
    s = 0
    while len(out) < n:
        out.extend(
            f"Doc{doc} line {s} tells how river{doc}x{s} feeds lake{doc}y{s} past town{doc}z{s}.".split()
        )
        s += 1
    return out


def _windows(words: list[str], size: int, stride: int, start: int = 0) -> list[str]:
    return [
        " ".join(words[i : i + size])
        for i in range(start, max(start + 1, len(words) - size + stride), stride)
    ]


def _typographic(text: str) -> str:
    return text.replace(" line ", " LINE ").replace(".", ".  ").replace("how", "how —")


def _answers_kept(text: str, answers: list[str]) -> set[str]:
    return {a for a in answers if f" {a} " in f" {text} "}


@st.composite
def lists_with_copies(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], int]:
    n_docs = draw(st.integers(1, 3))
    originals: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    answers: list[str] = []
    for d in range(n_docs):
        words = _doc_words(d, draw(st.integers(120, 300)))
        answers.extend(w for w in words if w.startswith(f"river{d}x"))
        for i, text in enumerate(_windows(words, 100, 80)):
            originals.append(
                {"id": f"kb-v1/{d}#{i}", "text": text, "source": f"kb-v1/{d}", "doc_id": f"kb-v1/{d}"}
            )
        kind = draw(st.sampled_from(["rechunk", "mirror", "both"]))
        if kind in ("rechunk", "both"):
            size, stride = draw(st.sampled_from([(120, 100), (60, 50), (100, 80)]))
            for i, text in enumerate(_windows(words, size, stride, draw(st.integers(0, 30)))):
                copies.append(
                    {"id": f"kb-v2/{d}#{i}", "text": text, "source": f"kb-v2/{d}", "doc_id": f"kb-v2/{d}"}
                )
        if kind in ("mirror", "both"):
            for i, text in enumerate(_windows(words, 100, 80, 30)):
                body = f"Mirror of example.org\n{_typographic(text)}\nCopyright example.org"
                copies.append(
                    {"id": f"mirror/{d}#{i}", "text": body, "source": f"mirror/{d}", "doc_id": f"mirror/{d}"}
                )
    # a retriever's ranking: originals in a drawn order, each copy somewhere below every original
    order = draw(st.permutations(range(len(originals))))
    for rank, i in enumerate(order):
        originals[i]["score"] = 1.0 - rank / 100
    spots = draw(st.lists(st.integers(0, 50), min_size=len(copies), max_size=len(copies)))
    for c, spot in zip(copies, spots, strict=True):
        c["score"] = 0.5 - spot / 1000
    return originals, copies, answers, draw(st.sampled_from([150, 300, 500, 800]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lists_with_copies())
def test_injecting_copies_never_lowers_qa_answer_retention(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], int],
) -> None:
    originals, copies, answers, budget = case
    clean = assemble("q", originals, preset="qa", budget=budget, tokenizer="cl100k_base")
    mixed = assemble("q", originals + copies, preset="qa", budget=budget, tokenizer="cl100k_base")
    assert mixed.tokens <= budget
    # every copy is found in the text: nothing of the clean context is lost
    assert _answers_kept(clean.text, answers) <= _answers_kept(mixed.text, answers)
    # nothing is lost silently: every chunk is in the output or in the report
    reported = {d.chunk_id for s in mixed.report.stages for d in s.dropped}
    assert {c["id"] for c in originals + copies} <= {c.id for c in mixed.chunks} | reported


@pytest.mark.parametrize("preset", ["qa", "tight", "chat", "documents"])
def test_presets_keep_the_budget_and_report_every_chunk_on_mirror_lists(preset: str) -> None:
    if not MIRRORS.exists():
        pytest.skip(f"shared data not found at {MIRRORS}")
    with gzip.open(MIRRORS, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(12), f, strict=False)]
    stripped = dropped = 0
    for row in rows:
        for budget in (300, 1000):
            ctx = assemble(
                row["question"], row["chunks"], preset=preset, budget=budget, tokenizer="cl100k_base"
            )
            assert len(get_tokenizer("cl100k_base").encode(ctx.text)) <= budget
            out = {c.id for c in ctx.chunks} | {i for c in ctx.chunks for i in c.duplicates}
            reported = {d.chunk_id for s in ctx.report.stages for d in s.dropped}
            assert {c["id"] for c in row["chunks"]} <= out | reported
            (stage,) = [s for s in ctx.report.stages if s.stage == "containment_dedup"]
            dropped += len(stage.dropped)
            stripped += len(stage.changed)
    assert dropped > 0 and stripped > 0


def test_the_stage_is_on_in_the_presets_issue_22_names() -> None:
    from contextwright.assembly.presets import get_preset

    for name in ("qa", "tight", "chat", "documents"):
        assert {"type": "containment_dedup"} in get_preset(name)["stages"], name


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII words, with_underscores and 3.14 digits.",
        "  Leading space;  two  gaps --- and a tail!  ",
        "Caf\u00e9 \u2013 \u201cquoted\u201d na\u00efve stra\u00dfe \ufb01ne x\u00b2 \u2460\u2461 \u00bd end",
        "\ufb03 \u01c5 \u0130stanbul \u03a3\u03c3\u03c2 a\u0301b c\u200bd",
        "",
        "!!! ...",
    ],
)
def test_word_bounds_are_each_comparison_words_place_in_the_text(text: str) -> None:
    """The strip maps comparison words back to the text by one split per range: the same places
    as a match per word (``\\w+`` runs, a non-ASCII one once per word its reading holds)."""
    import re
    import unicodedata

    from contextwright.stages.containment import _word_bounds
    from contextwright.stages.shingles import shingle_words

    half = len(text) // 2
    for ranges in ([(0, len(text))], [(0, half), (half, len(text))]):
        expected: list[tuple[int, int]] = []
        for start, end in ranges:
            for m in re.finditer(r"\w+", text[start:end]):
                n = len(re.findall(r"\w+", unicodedata.normalize("NFKC", m.group()).casefold()))
                expected += [(start + m.start(), start + m.end())] * n
        n_words = sum(len(shingle_words(text[s:e])) for s, e in ranges)
        got = _word_bounds(text, ranges, n_words)
        if len(expected) != n_words:
            assert got is None
            continue
        assert got is not None
        assert list(zip(*got, strict=True)) == expected


def test_comparison_words_are_the_word_runs_of_the_normalized_text() -> None:
    """``shingle_words`` splits non-ASCII text at the byte level and hands only runs with a
    non-ASCII character to the regex: the same words as ``\\w+`` over the NFKC, case-folded text."""
    import random
    import re
    import unicodedata

    from contextwright.stages.shingles import shingle_words

    rng = random.Random(8)
    alphabet = [
        *"aZ_9 .,-'\n", "\u00e9", "\u00df", "\u0130", "\u03a3", "\u2013", "\u2019", "\u201c",
        "\u00b2", "\u2460", "\ufb01", "\uff21", "\u0301", "\u00a0", "\u200b", "\u4e2d", "\U0001d400",
    ]  # fmt: skip
    for _ in range(20_000):
        text = "\u00e9" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
        want = [w.encode() for w in re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())]
        assert shingle_words(text) == want, repr(text)
