"""Tests of presets and config round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.assembly.presets import (
    get_preset,
    list_presets,
    pipeline_from_config,
    pipeline_to_config,
    register_preset,
)
from contextwright.core.errors import ConfigError
from contextwright.stages.order import BookendOrder, ChronologicalOrder, ScoreOrder


@pytest.mark.parametrize(
    ("preset", "fmt", "order"),
    [
        ("qa", "lean", "lost_in_the_middle_order"),
        ("tight", "lean", "lost_in_the_middle_order"),
        ("citations", "numbered", "score_order"),
        ("chat", "minimal", "score_order"),
        ("summarize", "grouped", "chronological_order"),
        ("frugal", "lean", "lost_in_the_middle_order"),
        ("documents", "lean", "document_order"),
    ],
)
def test_presets(preset: str, fmt: str, order: str) -> None:
    p = pipeline_from_config(preset)
    assert p.format.name == fmt and p.stages[-1].name == order
    names = [s.name for s in p.stages]
    cut = names.index("token_budget")
    drops = [n for n in names if n in ("exact_dedup", "containment_dedup")]
    if preset in ("qa", "chat", "tight", "frugal", "documents"):
        # they dedup what their budget kept: a copy's tokens are saved, never refilled (issue 32)
        assert drops and all(names.index(n) > cut for n in drops)
    else:  # citations, summarize (since stop 47): exact copies before the greedy budget, near copies of what it kept
        assert preset in ("citations", "summarize")
        assert names[0] == "exact_dedup" and names.index("containment_dedup") == cut + 1


def test_order_and_format_overrides_replace_the_preset_ones() -> None:
    p = pipeline_from_config("qa", order="bookend", format="sources")
    assert isinstance(p.stages[-1], BookendOrder) and p.format.name == "sources"
    assert sum(isinstance(s, (BookendOrder, ScoreOrder)) for s in p.stages) == 1


def test_round_trip_through_config() -> None:
    for name in list_presets():
        p = pipeline_from_config(name)
        if any(getattr(s, "requires", ()) and "store" in s.requires for s in p.stages):
            continue
        assert pipeline_from_config(pipeline_to_config(p)) == p


def test_config_files(tmp_path: Path) -> None:
    toml = tmp_path / "mine.toml"
    toml.write_text(
        'format = "numbered"\n[[stages]]\ntype = "min_score"\nmin_score = 0.2\n[[stages]]\ntype = "chronological_order"\n'
    )
    p = pipeline_from_config(toml)
    assert p.name == "mine" and p.format.name == "numbered" and isinstance(p.stages[1], ChronologicalOrder)
    js = tmp_path / "mine.json"
    js.write_text(json.dumps({"preset": "qa", "format": "markdown"}))
    assert pipeline_from_config(str(js)).format.name == "markdown"


@pytest.mark.parametrize(
    ("config", "pattern"),
    [
        ("nope", r"unknown preset 'nope'\. Valid: .*qa"),
        ({"stages": "x"}, r"config 'stages' must be a list"),
        (
            {"stages": [{"type": "shuffle"}]},
            r"stages\[0\]: unknown stage type 'shuffle'; known: .*exact_dedup",
        ),
        (
            {"stages": [{"type": "top_k", "n": 3}]},
            r"stages\[0\]: stage 'top_k' has no setting 'n'; valid settings: k",
        ),
        ({"stages": [{"kind": "top_k"}]}, r"a stage config must be an object with a 'type' key"),
        ("missing.toml", r"cannot read config file 'missing.toml'"),
    ],
)
def test_config_errors_name_the_problem(config: object, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        pipeline_from_config(config)  # type: ignore[arg-type]


def test_register_preset_validates_and_copies() -> None:
    register_preset("mine", {"stages": [{"type": "top_k", "k": 2}], "format": "minimal"})
    assert get_preset("mine")["stages"][0]["k"] == 2
    with pytest.raises(ConfigError):
        register_preset("broken", {"stages": [{"type": "top_k", "k": -1}]})
    assert "broken" not in list_presets()


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True),
    st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_stage_settings_give_a_stage_or_a_config_error(data: st.DataObject) -> None:
    import dataclasses

    from contextwright.stages.base import registered_stages

    name, cls = data.draw(st.sampled_from(sorted(registered_stages().items())))
    fields = [f.name for f in dataclasses.fields(cls) if f.init] + ["unknown_setting"]
    settings_ = data.draw(st.dictionaries(st.sampled_from(fields), _values, max_size=3))
    try:
        pipeline = pipeline_from_config({"stages": [{"type": name, **settings_}], "format": "minimal"})
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith("stages[0]: ")  # names where, never another exception type
        return
    assert pipeline.stages[0].name == name


# --- issue 11, item 9: unknown top-level keys ----------------------------------------------------


@pytest.mark.parametrize("key", ["base_url", "stage", "formats"])
def test_unknown_top_level_config_keys_are_rejected_naming_the_valid_keys(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"(?i)'{key}'.*valid keys: .*format.*stages"):
        pipeline_from_config({"stages": [{"type": "exact_dedup"}], key: 1})
    with pytest.raises(ConfigError, match=rf"'{key}'"):
        pipeline_from_config({"preset": "qa", key: "x"})


@pytest.mark.parametrize("order", ["prior_order", "score_order", "bookend_order", "auto_order"])
def test_order_override_replaces_every_kind_of_order_stage(order: str) -> None:
    # prior_order was missing from a hand-kept list once, and order= then added a second order stage.
    config = {"stages": [{"type": "exact_dedup"}, {"type": order}, {"type": "token_budget"}]}
    pipe = pipeline_from_config(config, order="relevance")
    assert [s.name for s in pipe.stages] == ["exact_dedup", "score_order", "token_budget"]


def test_order_stages_are_marked_on_their_class() -> None:
    from dataclasses import dataclass
    from typing import ClassVar

    from contextwright.stages.base import is_order_stage, registered_stages

    marked = {name for name, cls in registered_stages().items() if is_order_stage(cls)}
    in_order_module = {n for n, c in registered_stages().items() if c.__module__.endswith("stages.order")}
    assert marked == in_order_module  # every stage of the order family, and no other (stable_order keeps
    assert "prior_order" in marked and "stable_order" not in marked  # blocks, it does not place them)

    @dataclass(frozen=True)
    class MyOrder:  # a user's own order stage is recognised by its mark alone
        name: ClassVar[str] = "my_order_for_test"
        requires: ClassVar[tuple[str, ...]] = ()
        kind: ClassVar[str] = "order"

        def __call__(self, chunks: object) -> object:
            raise NotImplementedError

    assert is_order_stage(MyOrder()) and is_order_stage(ScoreOrder)
