"""bench/bench_position_interaction.py: the reader x position interaction read from a reply cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, SHARED_DATA

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))
try:
    import bench_position_interaction as bpi
finally:
    sys.path.remove(str(BENCH))


def test_gaps_take_first_minus_last_or_minus_the_mean_of_the_rest() -> None:
    sweep = {1: {"a": 1.0, "b": 0.0}, 2: {"a": 0.0, "b": 1.0}, 3: {"a": 0.0, "b": 1.0}}
    sweep |= {4: {"a": 1.0, "b": 0.0}, 5: {"a": 1.0, "b": 1.0}}
    assert bpi.gaps(sweep, ["a", "b"], "last") == [0.0, -1.0]
    assert bpi.gaps(sweep, ["a", "b"], "rest") == [0.5, -0.75]


def test_the_sign_flip_p_tells_no_difference_from_a_consistent_one() -> None:
    assert bpi.sign_flip_p([0.0] * 20) == 1.0  # every flip ties the observed sum of zero
    assert bpi.sign_flip_p([1.0] * 12, rounds=4000) < 0.002  # all 12 the same way: 2 of 4096 sums
    mixed = [1.0, -1.0] * 10
    assert bpi.sign_flip_p(mixed, rounds=4000) == 1.0
    assert bpi.interval([1.0, 0.0, 1.0, 1.0]).startswith("+75.0 (")


def test_a_reply_missing_from_the_cache_is_named(tmp_path: Path) -> None:
    data = SHARED_DATA / "nq_bm25_dev300.jsonl.gz"
    if not data.exists():
        pytest.skip("needs ../shared/data")
    cache = tmp_path / "empty.sqlite"
    run = [sys.executable, str(BENCH / "bench_position_interaction.py"), str(data), "--cache", str(cache)]
    got = subprocess.run(
        [*run, "--limit", "2", "--reader", "m1=label-1", "--reader", "m2=label-2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 1
    assert (
        f"m1: no reply in {cache} under 'label-1' for question 'nq-0000' with the answer at position 1"
        in got.stderr
    )
    bad = subprocess.run(
        [*run, "--reader", "only-one=x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "given twice" in bad.stderr
