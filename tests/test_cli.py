"""Tests of ``contextwright assemble`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from contextwright.cli import app

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()


def test_assemble_bundled_example_prints_escaped_context() -> None:
    result = runner.invoke(
        app, ["assemble", str(EXAMPLE), "--query", "Who discovered X-rays?", "--budget", "300"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('<context>\n<chunk id="1"')
    assert result.stdout.count("</chunk>") == result.stdout.count("<chunk id=")
    assert "&lt;/chunk>" in result.stdout


def test_assemble_json_output_has_text_citations_tokens_report() -> None:
    result = runner.invoke(
        app, ["assemble", str(EXAMPLE), "--budget", "120", "--json", "--preset", "citations"]
    )
    data = json.loads(result.stdout)
    assert data["tokens"] <= 120 and data["citations"][0]["label"] == "[1]"
    assert data["report"]["summary"].startswith("7 → ")


def test_assemble_query_file_assembles_each_query(dev_queries: list, tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in dev_queries[:3]))
    result = runner.invoke(
        app,
        [
            "assemble",
            str(path),
            "--budget",
            "200",
            "--json",
            "--limit",
            "2",
            "--order",
            "bookend",
            "--format",
            "sources",
        ],
    )
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["nq-0000", "nq-0001"]
    assert all(x["tokens"] <= 200 and x["text"].startswith("[SOURCE 1]") for x in lines)


def test_assemble_reads_stdin() -> None:
    result = runner.invoke(
        app, ["assemble", "-", "--budget", "50", "--format", "minimal"], input='[{"text": "hello there"}]'
    )
    assert result.exit_code == 0 and result.stdout == "hello there\n"


def test_bad_input_exits_2_with_a_readable_message() -> None:
    result = runner.invoke(app, ["assemble", "-", "--budget", "50"], input='[{"text": "x", "score": "NaN"}]')
    assert result.exit_code == 2
    assert "chunks[0].score must be a finite number" in result.stderr


def test_bad_option_exits_2() -> None:
    result = runner.invoke(app, ["assemble", str(EXAMPLE), "--budget", "50", "--order", "random"])
    assert result.exit_code == 2 and "unknown order 'random'" in result.stderr
    result = runner.invoke(app, ["assemble", str(EXAMPLE)])
    assert result.exit_code == 2 and "pass budget=" in result.stderr


def test_report_table_goes_to_stderr() -> None:
    result = runner.invoke(app, ["assemble", str(EXAMPLE), "--budget", "150", "--report"])
    assert "exact_dedup" in result.stderr and "duplicate_of" in result.stderr
    assert "exact_dedup" not in result.stdout


def test_console_script_runs() -> None:
    exe = Path(sys.executable).parent / "contextwright"
    out = subprocess.run(
        [str(exe), "assemble", str(EXAMPLE), "--budget", "100", "--format", "numbered"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("[1] History of X-rays")


def test_assemble_dry_run_prints_the_plan_and_renders_nothing() -> None:
    args = [
        "assemble",
        str(EXAMPLE),
        "--query",
        "Who discovered X-rays?",
        "--budget",
        "60",
        "--preset",
        "tight",
    ]
    result = runner.invoke(app, [*args, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "<context>" not in result.stdout
    assert "(budget 60)" in result.stdout and "does not fit whole" in result.stdout
    data = json.loads(runner.invoke(app, [*args, "--dry-run", "--json"]).stdout)
    assert data["budget"] == 60 and data["fits"] is False and data["tokens"] <= 60
    assert data["dropped"] or data["compressed"]


def test_assemble_embedder_option_runs_semantic_dedup(tmp_path: Path, minilm_dir: Path) -> None:
    config = tmp_path / "semantic.json"
    config.write_text(json.dumps({"stages": [{"type": "semantic_dedup"}, {"type": "token_budget"}]}))
    chunks = tmp_path / "chunks.json"
    chunks.write_text(
        json.dumps(
            [
                {"id": "a", "text": "Water boils at 100 degrees Celsius at sea level.", "score": 0.9},
                {"id": "b", "text": "At sea level, water boils at 100 degrees Celsius.", "score": 0.8},
                {"id": "c", "text": "The Moon orbits the Earth about every 27 days.", "score": 0.7},
            ]
        )
    )
    args = ["assemble", str(chunks), "-q", "boiling", "--budget", "300", "--preset", str(config), "--json"]
    result = runner.invoke(app, [*args, "--embedder", str(minilm_dir)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["chunk_ids"] for c in data["citations"]] == [["a"], ["c"]]
    without = runner.invoke(app, args)
    assert without.exit_code == 2
    assert "no embedder was passed" in " ".join(without.output.split())
    assert "--embedder MODEL" in " ".join(without.output.split())


def test_presets_command_lists_every_preset() -> None:
    from contextwright import list_presets

    result = runner.invoke(app, ["presets", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert set(data) == set(list_presets()) and data["qa"]["format"] == "xml"
    table = runner.invoke(app, ["presets"])
    assert "auto_order" in table.stdout and "tight" in table.stdout


def test_models_command_lists_the_registry() -> None:
    result = runner.invoke(app, ["models", "--json"])
    models = {m["name"]: m for m in json.loads(result.stdout)}
    assert models["gpt-4o-mini"]["context_window"] == 128_000
    assert "claude-sonnet-4-5" in runner.invoke(app, ["models"]).stdout


def test_version_flag() -> None:
    from contextwright import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"contextwright {__version__}"
