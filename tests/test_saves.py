"""Presets that dedup after their cut (issue 32): each is the setting the readers measured.

bench/bench_saves.py measured `tight` with its exact and containment dedup placed after the cut and
its overlap strip kept first (``--keep overlap_dedup``), against `tight` as it was until stop 41
(bench/plans/tight-stop41.toml), and `frugal` (stop 43) with its dedup placed after its relevance
stop and budget, against `frugal` as it was until stop 42 (bench/plans/frugal-stop42.toml, dedup
first). These tests hold the shipped presets to those measured settings, and check on the mirrors
lists that they save what a copy took instead of refilling it, with every input accounted for.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextwright import Assembler, get_preset
from contextwright.assembly.presets import load_config_file

from .conftest import REPO, SHARED_DATA, _read_jsonl_gz

BENCH = REPO / "bench"
OLD = BENCH / "plans" / "tight-stop41.toml"
OLD_FRUGAL = BENCH / "plans" / "frugal-stop42.toml"
OLD_CITATIONS = BENCH / "plans" / "citations-stop43.toml"
OLD_SUMMARIZE = BENCH / "plans" / "summarize-stop46.toml"
#: The presets that keep whole chunks and gained containment dedup after their greedy budget, each
#: with the plan of what it was before (citations at stop 44, summarize at stop 47).
WHOLE_CHUNKS = [("citations", OLD_CITATIONS, "numbered"), ("summarize", OLD_SUMMARIZE, "grouped")]
MIRRORS = SHARED_DATA / "nq_mirrors_dev300.jsonl.gz"


def _placed() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        from bench_saves import placed
    finally:
        sys.path.remove(str(BENCH))
    return placed


def _types(config: dict[str, Any]) -> list[str]:
    return [s["type"] for s in config["stages"]]


def test_the_shipped_tight_is_the_measured_placement_of_the_old_one() -> None:
    placed = _placed()
    old = load_config_file(OLD)
    assert _types(placed(old, "after", ("overlap_dedup",))) == _types(get_preset("tight"))
    # with nothing kept, every dedup stage moves (stop 38's measurement, which read worse)
    assert _types(placed(old, "after")) == [
        "compress",
        "token_budget",
        "exact_dedup",
        "overlap_dedup",
        "containment_dedup",
        "lost_in_the_middle_order",
    ]
    # stage settings travel with the stages: compress keeps whole_share 1.0
    compress = next(s for s in get_preset("tight")["stages"] if s["type"] == "compress")
    assert compress["whole_share"] == 1.0


def test_placed_leaves_a_preset_already_on_that_side_as_it_is() -> None:
    placed = _placed()
    qa = get_preset("qa")
    assert _types(placed(qa, "after")) == _types(qa)
    assert _types(placed(qa, "before")) == [
        "exact_dedup",
        "containment_dedup",
        "token_budget",
        "lost_in_the_middle_order",
    ]


@pytest.mark.skipif(not MIRRORS.exists(), reason=f"needs the shared data at {MIRRORS.parent}")
def test_on_copies_tight_saves_what_the_old_one_refilled() -> None:
    queries = _read_jsonl_gz(MIRRORS, limit=40)
    new = Assembler("tight", budget=300, tokenizer="cl100k_base")
    old = Assembler(load_config_file(OLD), budget=300, tokenizer="cl100k_base")
    saved = 0
    for q in queries:
        a, b = new.assemble(q["question"], q["chunks"]), old.assemble(q["question"], q["chunks"])
        dups = [d for d in a.report.dropped if d.reason == "duplicate_of"]
        if a.text != b.text:
            # the copies are found in what the budget kept, so the context is never longer
            assert a.report.tokens <= 300 and b.report.tokens <= 300
            saved += a.report.tokens < b.report.tokens
        # a copy dropped after the cut is reported, and no chunk is lost from the report
        ids = {c.id for c in a.chunks} | {d.chunk_id for d in a.report.dropped}
        assert ids == {c["id"] for c in q["chunks"]}
        for d in dups:
            assert d.related in {c.id for c in a.chunks}
    assert saved >= 20  # on most of these lists the new context is shorter: saved, not refilled


def test_the_shipped_frugal_is_the_measured_placement_of_the_old_one() -> None:
    placed = _placed()
    old, new = load_config_file(OLD_FRUGAL), get_preset("frugal")
    assert placed(old, "after")["stages"] == new["stages"]
    assert _types(old)[:3] == ["exact_dedup", "containment_dedup", "relevance_stop"]
    assert old["format"] == new["format"] == "lean"
    # placed "before" on the new one puts the dedup after the stop, which is not the old order:
    # the reference plan, not a placement, is what the preset was
    assert placed(new, "before")["stages"] != old["stages"]


@pytest.mark.skipif(not MIRRORS.exists(), reason=f"needs the shared data at {MIRRORS.parent}")
def test_on_copies_frugal_saves_what_the_old_one_refilled() -> None:
    queries = _read_jsonl_gz(MIRRORS, limit=40)
    new = Assembler("frugal", budget=300, tokenizer="cl100k_base")
    old = Assembler(load_config_file(OLD_FRUGAL), budget=300, tokenizer="cl100k_base")
    saved = longer = 0
    for q in queries:
        a, b = new.assemble(q["question"], q["chunks"]), old.assemble(q["question"], q["chunks"])
        assert a.report.tokens <= 300 and b.report.tokens <= 300
        saved += a.report.tokens < b.report.tokens
        longer += a.report.tokens > b.report.tokens
        # nothing is lost: every input is in the output or in the report, and a copy's chain of
        # "duplicate of" (a copy of a copy that containment then found in a third) ends in the output
        ids = {c.id for c in a.chunks} | {d.chunk_id for d in a.report.dropped}
        assert ids == {c["id"] for c in q["chunks"]}
        copy_of = {d.chunk_id: d.related for d in a.report.dropped if d.reason == "duplicate_of"}
        kept = {c.id for c in a.chunks}
        for cid in copy_of:
            seen = {cid}
            while cid not in kept:
                cid = copy_of[cid]
                assert cid not in seen
                seen.add(cid)
        # and the output chunk it ends in carries every copy folded into it (its citation's sources)
        assert set(copy_of) <= {i for c in a.chunks for i in c.duplicates}
    assert saved >= 25 and longer <= 5  # most contexts are shorter: the copies' tokens are saved


@pytest.mark.parametrize(("preset", "plan", "fmt"), WHOLE_CHUNKS)
def test_the_shipped_preset_is_the_old_one_with_containment_after_its_budget(
    preset: str, plan: Path, fmt: str
) -> None:
    shipped, old = get_preset(preset), load_config_file(plan)
    assert shipped["format"] == old["format"] == fmt
    # the measured setting: the old stages, with containment dedup just after the greedy budget
    cut = _types(old).index("token_budget") + 1
    assert shipped["stages"] == [*old["stages"][:cut], {"type": "containment_dedup"}, *old["stages"][cut:]]


@pytest.mark.skipif(not MIRRORS.exists(), reason=f"needs the shared data at {MIRRORS.parent}")
@pytest.mark.parametrize(("preset", "plan", "fmt"), WHOLE_CHUNKS)
def test_on_copies_a_whole_chunk_preset_sends_a_passage_once(preset: str, plan: Path, fmt: str) -> None:
    """Until stop 43 `citations` (46 `summarize`) dropped exact copies only: a mirror's copy of a
    kept chunk, with a line of boilerplate around it, was sent again (in `citations` under a second
    number). Now it is folded into the kept chunk, whose citation lists it, and its tokens are saved."""
    queries = _read_jsonl_gz(MIRRORS, limit=40)
    new = Assembler(preset, budget=300, tokenizer="cl100k_base")
    old = Assembler(load_config_file(plan), budget=300, tokenizer="cl100k_base")
    twice_before = twice_now = shorter = folded = 0
    for q in queries:
        a, b = new.assemble(q["question"], q["chunks"]), old.assemble(q["question"], q["chunks"])
        assert a.report.tokens <= b.report.tokens <= 300  # saved, never refilled
        shorter += a.report.tokens < b.report.tokens
        twice_before += _a_block_repeats(b)
        twice_now += _a_block_repeats(a)
        ids = {c.id for c in a.chunks} | {d.chunk_id for d in a.report.dropped}
        assert ids == {c["id"] for c in q["chunks"]}  # every input in the output or the report
        by_block = {cid: cit for cit in a.citations for cid in cit.chunk_ids}
        near = [d for d in a.report.dropped if d.reason == "duplicate_of" and "of its words" in d.detail]
        for d in near:  # a near copy of what the budget kept: the kept block's citation lists it
            assert d.chunk_id in by_block[d.related].duplicates
        folded += len(near)
    assert twice_before >= 15 and twice_now == 0 and shorter >= 15 and folded >= 15


def _a_block_repeats(ctx: Any) -> bool:
    """Whether some block is mostly (half or more of its 8-word runs) inside the blocks before it."""
    seen: set[tuple[str, ...]] = set()
    for c in ctx.chunks:
        words = re.findall(r"\w+", c.text.lower())
        runs = {tuple(words[i : i + 8]) for i in range(len(words) - 7)}
        if runs and len(runs & seen) >= len(runs) / 2:
            return True
        seen |= runs
    return False


@pytest.mark.skipif(not MIRRORS.exists(), reason=f"needs the shared data at {MIRRORS.parent}")
def test_bench_saves_challenger_asks_only_the_questions_whose_contexts_differ(
    llama_server: Any, tmp_path: Path
) -> None:
    """``bench_saves.py --challenger FILE`` against a real model: the preset as shipped and the
    config, paired on every question, with only the differing ones asked; a re-run is answered
    from the reply cache alone (``--offline``)."""
    challenger = OLD_CITATIONS
    ship, other = (
        Assembler(c, budget=300, tokenizer="cl100k_base") for c in ("citations", load_config_file(challenger))
    )
    rows = _read_jsonl_gz(MIRRORS, limit=30)
    same = [
        q
        for q in rows
        if ship.assemble(q["question"], q["chunks"]).text == other.assemble(q["question"], q["chunks"]).text
    ]
    differ = [q for q in rows if q not in same]
    assert same and len(differ) >= 2  # the mirror copies the old preset keeps, the shipped one drops
    data = tmp_path / "four.jsonl.gz"
    with gzip.open(data, "wt", encoding="utf-8") as f:
        for q in [*differ[:2], *same[:2]]:
            f.write(json.dumps(q) + "\n")
    cache = tmp_path / "replies.sqlite"
    args = [
        *(sys.executable, str(BENCH / "bench_saves.py"), str(data), "--budget", "300"),
        *("--preset", "citations", "--challenger", str(challenger)),
        *("--reader", llama_server.base_url, "--model", llama_server.model, "--cache", str(cache)),
        *("--max-tokens", "8"),
    ]
    first = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    assert "4 questions, 2 with different contexts at 300 tokens" in first
    line = next(x for x in first.splitlines() if x.startswith("citations-stop43 - citations:"))
    assert "(95 % paired bootstrap, n = 4)" in line and "failed requests 0" in line
    assert line.endswith("(of 2); failed requests 0")
    again = subprocess.run(
        [*args, "--offline"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert next(x for x in again.splitlines() if x.startswith("citations-stop43")) == line
