"""Every numeric setting has an upper bound checked at construction (issue 11, item 5)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from contextwright import Assembler
from contextwright.core.errors import ConfigError
from contextwright.core.limits import DEFAULT_BOUND, bounds_table, numeric_settings, stage_work
from contextwright.stages.base import registered_stages, stage_from_dict

ABSURD = [10**12, -(10**12), 1e300, float("inf"), float("nan")]


def numeric_stage_settings() -> list[tuple[str, str]]:
    return [(name, s) for name, cls in registered_stages().items() for s in numeric_settings(cls)]


def test_the_registry_has_numeric_settings_to_check() -> None:
    pairs = numeric_stage_settings()
    assert ("near_dedup", "num_perm") in pairs and ("expand", "window") in pairs
    assert len(pairs) >= 20


@pytest.mark.parametrize(("stage", "setting"), numeric_stage_settings())
@pytest.mark.parametrize("value", ABSURD, ids=str)
def test_an_absurd_value_of_any_numeric_stage_setting_is_a_config_error(
    stage: str, setting: str, value: Any
) -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=setting):
        stage_from_dict({"type": stage, setting: value})
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(("stage", "setting"), numeric_stage_settings())
def test_defaults_are_within_their_bounds(stage: str, setting: str) -> None:
    cls = registered_stages()[stage]
    field = {f.name: f for f in dataclasses.fields(cls)}[setting]
    default = field.default
    assert default is None or abs(default) <= numeric_settings(cls)[setting].hi


def test_built_in_stages_declare_their_bounds() -> None:
    undeclared = [
        f"{name}.{s}"
        for name, cls in registered_stages().items()
        if cls.__module__.startswith("contextwright.")
        for s, b in numeric_settings(cls).items()
        if b is DEFAULT_BOUND
    ]
    assert undeclared == []


def test_the_issue_reproducer_is_refused_at_construction() -> None:
    config = {
        "stages": [
            {"type": "near_dedup", "method": "minhash", "num_perm": 20_000_000},
            {"type": "token_budget"},
        ]
    }
    with pytest.raises(ConfigError, match=r"stages\[0\].*num_perm.*20000000.*bound of 1,?024"):
        Assembler(config, budget=100)


def test_stage_work_multiplies_the_work_settings() -> None:
    assert stage_work(stage_from_dict({"type": "near_dedup", "num_perm": 128})) == 128
    assert stage_work(stage_from_dict({"type": "exact_dedup"})) == 1


@pytest.mark.parametrize("option", ["budget", "history_tokens", "output_tokens", "buffer_tokens"])
def test_assembler_token_settings_are_bounded(option: str) -> None:
    kwargs: dict[str, Any] = {"budget": 100, option: 10**12}
    with pytest.raises(ConfigError, match=option):
        Assembler("qa", **kwargs)


def test_bounds_table_lists_every_stage_setting() -> None:
    rows = bounds_table(registered_stages().items())
    assert {(r[0], r[1]) for r in rows} == set(numeric_stage_settings())


def test_the_docs_bounds_table_matches_the_registry() -> None:
    from pathlib import Path

    from contextwright.render.format import TemplateFormat

    readme = (Path(__file__).resolve().parents[1] / "docs" / "security.md").read_text(encoding="utf-8")
    section = readme.split("| stage | bounds (magnitude) |", 1)[1].split("\n\n", 1)[0]
    shown = {line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")}
    rows = bounds_table([*registered_stages().items(), ("template", TemplateFormat)])
    assert shown == {r[0] for r in rows}
    for owner, setting, bound, _ in rows:
        assert f"`{setting}` ≤ {bound}" in section, (owner, setting)
