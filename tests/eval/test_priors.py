"""The positional prior: the Liu et al. 2024 curve, interpolation, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextwright.core.errors import ConfigError
from contextwright.stages.priors import LIU_2024, PositionalPrior, load_prior


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (0.0, 75.8),  # gold document first of 20
        (4 / 19, 57.2),  # 5th
        (9 / 19, 53.8),  # 10th
        (14 / 19, 55.4),  # 15th
        (1.0, 63.2),  # 20th
        (2 / 19, (75.8 + 57.2) / 2),  # 3rd: halfway between the 1st and the 5th
        (11.5 / 19, (53.8 + 55.4) / 2),
    ],
)
def test_liu_prior_matches_the_paper_at_its_points_and_interpolates_between(
    position: float, expected: float
) -> None:
    assert LIU_2024.accuracy(position) == pytest.approx(expected)


def test_liu_prior_gives_closed_book_accuracy_without_an_answer() -> None:
    assert LIU_2024.accuracy(None) == 56.1


def test_prior_clamps_outside_its_points() -> None:
    prior = PositionalPrior(name="p", points=((0.25, 80.0), (0.75, 60.0)), closed_book=40.0)
    assert prior.accuracy(0.0) == 80.0
    assert prior.accuracy(1.0) == 60.0
    assert prior.accuracy(0.5) == pytest.approx(70.0)


def test_prior_from_a_json_file_with_1_based_positions(tmp_path: Path) -> None:
    path = tmp_path / "reader.json"
    path.write_text(
        json.dumps(
            {"positions": [1, 11, 21], "num_documents": 21, "accuracy": [90, 50, 70], "closed_book": 30}
        )
    )
    prior = load_prior(path)
    assert prior.name == "reader"
    assert prior.accuracy(0.5) == pytest.approx(50.0)
    assert prior.accuracy(0.25) == pytest.approx(70.0)
    assert prior.accuracy(None) == 30.0


def test_prior_from_a_toml_file_with_normalized_positions(tmp_path: Path) -> None:
    path = tmp_path / "flat.toml"
    path.write_text(
        'name = "flat"\nnormalized_positions = [0.0, 1.0]\naccuracy = [60.0, 60.0]\nclosed_book = 20.0\n'
    )
    prior = load_prior(path)
    assert (prior.name, prior.accuracy(0.3), prior.accuracy(None)) == ("flat", 60.0, 20.0)


def test_prior_round_trips_through_to_dict() -> None:
    assert load_prior(LIU_2024.to_dict()) == LIU_2024


def test_default_prior_is_liu() -> None:
    assert load_prior() is LIU_2024
    assert load_prior("liu2024") is LIU_2024


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"positions": [1, 20], "accuracy": [70.0], "closed_book": 50}, "2 positions but 1 accuracies"),
        ({"positions": [1, 2], "accuracy": [70.0, 60.0]}, "'closed_book' must be a percentage"),
        ({"accuracy": [70.0], "closed_book": 50}, "needs 'positions'"),
        ({"positions": [0, 2], "accuracy": [1, 2], "closed_book": 5}, "1-based integers"),
        ({"positions": [1, 30], "num_documents": 20, "accuracy": [1, 2], "closed_book": 5}, "num_documents"),
        ({"normalized_positions": [0.5, 0.2], "accuracy": [1, 2], "closed_book": 5}, "strictly increasing"),
        ({"normalized_positions": [0.0], "accuracy": [120], "closed_book": 5}, "percentages in 0-100"),
    ],
)
def test_malformed_priors_are_rejected_with_the_key_named(data: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_prior(data)


def test_missing_prior_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read prior file .*nope\.json"):
        load_prior(tmp_path / "nope.json")
