"""bench/reader_grid.py's ``choose`` job: the rule stop 41 fixed before its lease picks a wording."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _choose(rows: list[dict[str, Any]], tmp_path: Path) -> tuple[str, dict[str, str]]:
    sys.path.insert(0, str(BENCH))
    try:
        from reader_grid import _choose_job
    finally:
        sys.path.remove(str(BENCH))
    (tmp_path / "dev.json").write_text(json.dumps({"summaries": rows}))
    profiles: dict[str, str] = {}
    job = {"name": "pick", "choose": "dev", "wordings": ["a", "b"], "presets": ["qa", "frugal"]}
    _choose_job(job, out=tmp_path, profiles=profiles)
    return json.loads((tmp_path / "pick.json").read_text())["chosen"], profiles


def _row(strategy: str, accuracy: float, bare: float) -> dict[str, Any]:
    return {"strategy": strategy, "budget": 500, "accuracy": accuracy, "bare_share": bare}


@pytest.mark.parametrize(
    ("bares", "accuracies", "chosen"),
    [
        ((0.0, 0.0), (0.30, 0.32), "b"),  # both under 3 %: the more accurate
        ((0.0, 0.05), (0.30, 0.40), "a"),  # b is over 3 % in a preset: a, though less accurate
        ((0.04, 0.10), (0.30, 0.40), "a"),  # none under 3 %: the lowest worst bare share
        ((0.0, 0.0), (0.30, 0.30), "a"),  # a tie goes to the first wording
    ],
)
def test_the_wording_under_3_percent_bare_and_most_accurate_is_chosen(
    tmp_path: Path, bares: tuple[float, float], accuracies: tuple[float, float], chosen: str
) -> None:
    rows = [_row("naive", 0.35, 0.0), _row("qa", 0.33, 0.08)]
    for wording, bare, accuracy in zip("ab", bares, accuracies, strict=True):
        rows += [_row(f"qa+{wording}", accuracy, 0.0), _row(f"frugal+{wording}", accuracy, bare)]
    got, profiles = _choose(rows, tmp_path)
    assert got == chosen
    assert profiles == {
        "pick:qa": f"bench/plans/prompts/qa-{chosen}.toml",
        "pick:frugal": f"bench/plans/prompts/frugal-{chosen}.toml",
    }


def test_the_lease_plans_name_configs_that_exist_and_load() -> None:
    """Every config a stop-41 plan names is in the tree and builds a pipeline with its prompt."""
    from contextwright import pipeline_from_config

    root = BENCH.parent
    for plan in ("issue32_qwen5.json", "issue32_smol5.json"):
        for job in json.loads((BENCH / "plans" / plan).read_text()):
            for strategy in job.get("strategies", []):
                if strategy.endswith(".toml"):
                    pipe = pipeline_from_config(str(root / strategy))
                    # <preset>-<wording>.toml: named <preset>+<wording>, with a prompt
                    if "/prompts/" in strategy:
                        assert pipe.name == Path(strategy).stem.replace("-", "+", 1) and pipe.prompt
                    else:
                        assert pipe.prompt is None
