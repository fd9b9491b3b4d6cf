"""Bad input raises the library's own errors, never a bare Python one (issue 31, item 9).

A Python-int score past float's range raised OverflowError from the library (the service already
gave 422); a 100k-deep JSON file made ``contextwright assemble`` print a RecursionError traceback
and exit 1; both are now InputError naming the field or file, and the CLI exits 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright import Chunk, InputError, assemble
from contextwright.assembly.presets import load_config_file
from contextwright.core.errors import ConfigError
from contextwright.inputs.readers import read_records

runner = CliRunner()


@pytest.mark.parametrize("digits", [401, -401, 5001], ids=["1e400", "-1e400", "1e5000"])
def test_a_huge_int_score_in_a_mapping_is_an_input_error_naming_the_field(digits: int) -> None:
    score = 10 ** (abs(digits) - 1) * (1 if digits > 0 else -1)
    chunks = [{"id": "a", "text": "hi there", "score": score}, {"id": "b", "text": "hello", "score": 0.5}]
    with pytest.raises(InputError, match=r"chunks\[0\]\.score .*float's range.*digits"):
        assemble("q", chunks, budget=100)


@pytest.mark.parametrize("preset", ["qa", "frugal", "tight"])
@pytest.mark.parametrize("score", [10**400, "0.9"])
def test_a_hand_built_chunk_with_a_bad_score_is_an_input_error(preset: str, score: object) -> None:
    chunks = [Chunk("hi there", id="a", score=score), Chunk("hello", id="b", score=0.5)]  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"chunks\[0\]\.score must be a number"):
        assemble("q", chunks, budget=100, preset=preset)


def test_a_huge_int_in_an_embedding_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"chunks\[0\]\.embedding"):
        assemble("q", [{"id": "a", "text": "hi", "embedding": [10**400]}], budget=100)


def test_an_int_score_within_range_still_works() -> None:
    ctx = assemble("q", [{"id": "a", "text": "hi there", "score": 2**1000}], budget=100)
    assert ctx.citations[0].score == 2**1000


@pytest.mark.parametrize("opener", ["[", '{"a":', '[{"a":'])
@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_a_deeply_nested_file_exits_2_without_a_traceback(tmp_path: Path, opener: str, name: str) -> None:
    deep = tmp_path / name
    deep.write_text(opener * 100_000 + "\n")
    result = runner.invoke(app_(), ["assemble", str(deep), "-q", "q", "--budget", "100"])
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.output and "Traceback" not in result.output
    with pytest.raises(InputError, match="nested too deeply"):
        list(read_records(deep))


def test_a_deeply_nested_config_file_is_a_config_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config_file(deep)


def app_() -> object:
    from contextwright.cli import app

    return app
