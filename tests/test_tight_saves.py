"""`tight` dedups after its cut (issue 32, stop 42): the preset is the setting the reader measured.

bench/bench_saves.py measured `tight` with its exact and containment dedup placed after the cut and
its overlap strip kept first (``--keep overlap_dedup``), against `tight` as it was until stop 41
(bench/plans/tight-stop41.toml). These tests hold the shipped preset to that measured setting, and
check on the mirrors lists that it saves what a copy took instead of refilling it.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from contextwright import Assembler, get_preset
from contextwright.assembly.presets import load_config_file

from .conftest import REPO, SHARED_DATA, _read_jsonl_gz

BENCH = REPO / "bench"
OLD = BENCH / "plans" / "tight-stop41.toml"
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
