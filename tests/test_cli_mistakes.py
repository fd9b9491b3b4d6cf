"""What a new user trips on (issue 34): each mistake through the real CLI, and the message it gets.

docs/cli.md "Common mistakes" shows these messages.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()
WIDE = {"COLUMNS": "200"}


def one_line(text: str) -> str:
    return " ".join(text.split())


def query_file(tmp_path: Path, n: int = 3) -> Path:
    """A small query file with labelled chunks, the shape eval and assemble read."""
    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    rows = [
        {
            "id": f"q-{i}",
            "question": "who discovered x-rays?",
            "answers": ["Röntgen"],
            "chunks": [{**c, "has_answer": "Röntgen" in c["text"]} for c in chunks],
        }
        for i in range(n)
    ]
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 1. an output path that cannot be written fails before any work -----------------------


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "{queries}", "-s", "naive", "-b", "300", "--json", "{missing}/eval.json"],
        ["eval", "{queries}", "-s", "naive", "-b", "300", "--html", "{missing}/eval.html"],
        ["inspect", "{example}", "-q", "x", "--budget", "300", "--html", "{missing}/page.html"],
        ["batch", "{queries}", "{missing}/out.jsonl", "--budget", "300", "--workers", "1"],
        ["dedup-corpus", "{example}", "--out", "{missing}/pairs.jsonl"],
        ["index", "{corpus}", "--store", "sqlite:///{missing}/c.db"],
    ],
    ids=["eval --json", "eval --html", "inspect --html", "batch", "dedup-corpus --out", "index --store"],
)
def test_an_unwritable_output_fails_before_any_work(tmp_path: Path, args: list[str]) -> None:
    names = {
        "queries": str(query_file(tmp_path)),
        "example": str(EXAMPLE),
        "corpus": str(REPO / "tests" / "fixtures" / "small_corpus.jsonl"),
        "missing": str(tmp_path / "nodir"),
    }
    start = time.perf_counter()
    out = runner.invoke(app, [a.format(**names) for a in args], env=WIDE)
    assert out.exit_code == 2, out.output
    assert out.stdout == ""  # no table printed, nothing assembled
    message = one_line(out.stderr)
    assert message.startswith(f"error: cannot write '{names['missing']}/"), message
    assert "does not exist; create it first (mkdir -p" in message
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "nodir").exists()


def test_an_output_that_is_a_folder_is_named(tmp_path: Path) -> None:
    out = runner.invoke(
        app,
        ["eval", str(query_file(tmp_path)), "-s", "naive", "-b", "300", "--json", str(tmp_path)],
        env=WIDE,
    )
    assert out.exit_code == 2
    assert f"cannot write '{tmp_path}' (--json): it is a folder" in one_line(out.stderr)


# -- 5. an empty list: an empty context, said so -------------------------------------------


def test_an_empty_list_gives_an_empty_context_and_a_warning(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    out = runner.invoke(app, ["assemble", str(empty), "-q", "q", "--budget", "300", "--json"], env=WIDE)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["text"] == "" and data["citations"] == [] and data["report"]["input_chunks"] == 0
    assert f"warning: {empty} holds no chunks (an empty list), so the context is empty." in out.stderr
    text = runner.invoke(app, ["assemble", str(empty), "-q", "q", "--budget", "300"], env=WIDE)
    assert text.exit_code == 0 and "holds no chunks" in text.stderr
    assert "0 → 0 chunks · 0 → 0 tokens (budget 300; 300 unused)" in text.stderr


# -- 6. a budget too small for any chunk ----------------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_small_budget_warning() -> None:
    from contextwright.assembly import pipeline

    pipeline._SMALL_BUDGETS_LOGGED.clear()  # logged once per budget and process: each test is a new run


def need_of(stderr: str) -> int:
    return int(one_line(stderr).split("raise the ceiling to at least ")[1].split()[0].rstrip(","))


def test_a_ceiling_too_small_for_any_chunk_names_the_ceiling_not_the_budget(tmp_path: Path) -> None:
    """A fitted profile's cap under every chunk: the budget would hold one, so the warning says to
    raise the ceiling (a larger budget would change nothing), with the figure that fits."""
    profile = tmp_path / "capped.toml"
    profile.write_text(
        'name = "capped"\nformat = "lean"\n[[stages]]\ntype = "token_budget"\npolicy = "fill"\nceiling = 5\n'
    )
    args = ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "300", "--preset", str(profile)]
    out = runner.invoke(app, [*args, "--json"], env=WIDE)
    assert out.exit_code == 0, out.stderr
    message = one_line(out.stderr)
    assert (
        "warning: ceiling 5: no chunk fits under token_budget's ceiling, so the context is empty" in message
    )
    assert "(the budget, 300, would hold it)" in message and "pass a budget" not in message
    from contextwright.assembly import pipeline

    pipeline._SMALL_BUDGETS_LOGGED.clear()  # logged once per ceiling and process: a new run
    under = runner.invoke(app, [*args[:-3], "20", *args[-2:]], env=WIDE)  # both under the smallest chunk
    assert "ceiling 5: no chunk fits" in one_line(under.stderr)
    assert f"(the budget, 20, to be raised to {need_of(under.stderr)} too)" in one_line(under.stderr)
    need = need_of(out.stderr)
    assert 5 < need <= 300
    notes = json.loads(out.stdout)["report"]["stages"][-1]["notes"]
    assert any(n.startswith("ceiling 5: no chunk fits") for n in notes)
    profile.write_text(profile.read_text().replace("ceiling = 5", f"ceiling = {need}"))
    fits = runner.invoke(app, [*args, "--json"], env=WIDE)
    assert json.loads(fits.stdout)["report"]["output_chunks"] == 1  # the figure it names is exact
    assert "no chunk fits" not in fits.stderr


@pytest.mark.parametrize("budget", [5, 20])
def test_a_budget_too_small_for_any_chunk_warns_with_the_smallest_need(budget: int) -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", str(budget)], env=WIDE)
    assert out.exit_code == 0
    message = one_line(out.stderr)
    assert (
        f"warning: budget {budget}: no chunk fits, so the context is empty; the smallest chunk needs"
        in message
    )
    need = int(message.split("pass a budget of at least ")[1].split()[0])
    fits = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", str(need), "--json"])
    assert json.loads(fits.stdout)["report"]["output_chunks"] == 1  # the figure it names is exact
    assert "no chunk fits" not in fits.stderr


def test_a_query_file_at_a_tiny_budget_warns_once(tmp_path: Path) -> None:
    out = runner.invoke(app, ["assemble", str(query_file(tmp_path)), "--budget", "5"], env=WIDE)
    assert out.exit_code == 0
    assert out.stderr.count("no chunk fits") == 1
    assert "(logged once per process)" not in out.stderr


# -- 7. a CSV file, a list of strings: the format named, the shape shown ---------------------


def test_a_csv_file_is_named_as_csv_with_the_json_shape(tmp_path: Path) -> None:
    csv = tmp_path / "chunks.csv"
    csv.write_text("id,text\n1,Röntgen discovered x-rays\n", encoding="utf-8")
    out = runner.invoke(app, ["assemble", str(csv), "-q", "q", "--budget", "300"], env=WIDE)
    assert out.exit_code == 2
    message = one_line(out.stderr)
    assert "not valid JSON" in message and "It looks like CSV" in message
    assert '[{"text": "...", "id": "...", "score": 0.9}, ...]' in message


def test_a_list_of_strings_shows_the_text_object_it_needs(tmp_path: Path) -> None:
    strings = tmp_path / "strings.json"
    strings.write_text('["one passage", "another"]', encoding="utf-8")
    out = runner.invoke(app, ["assemble", str(strings), "-q", "q", "--budget", "300"], env=WIDE)
    assert out.exit_code == 2
    message = one_line(out.stderr)
    assert "[0] is a JSON string, not an object" in message
    assert 'Wrap each string as {"text": "..."}' in message


def test_a_python_object_is_named_with_its_article() -> None:
    import contextwright
    from contextwright.core.errors import InputError

    with pytest.raises(InputError, match=r"chunks\[0\] is an object, not a chunk"):
        contextwright.assemble("q", [object()], budget=100)


# -- 10. a query file on stderr: every summary names its query; a closing line -------------


def test_query_file_summaries_name_their_query_and_end_with_a_count(tmp_path: Path) -> None:
    out = runner.invoke(app, ["assemble", str(query_file(tmp_path)), "--budget", "300"], env=WIDE)
    assert out.exit_code == 0
    lines = out.stderr.splitlines()
    assert [line.split(" · ")[0] for line in lines[:3]] == ["q-0", "q-1", "q-2"]
    assert lines[3].startswith("assembled 3 queries in ") and len(lines) == 4
    assert all(line == line.rstrip() for line in lines)  # no padding in a file
    report = runner.invoke(
        app, ["assemble", str(query_file(tmp_path)), "--budget", "300", "--report"], env=WIDE
    )
    titles = [line for line in report.stderr.splitlines() if " chunks · " in line]
    assert [t.split(" · ")[0] for t in titles] == ["q-0", "q-1", "q-2"]
    assert "1 chunks" not in report.stderr


# -- 11. --query on a query file --------------------------------------------------------------


def test_query_on_a_query_file_is_refused(tmp_path: Path) -> None:
    queries = query_file(tmp_path)
    out = runner.invoke(app, ["assemble", str(queries), "-q", "x", "--budget", "300"], env=WIDE)
    assert out.exit_code == 2 and out.stdout == ""
    assert (
        f"error: --query would replace the question of every query in {queries}: a query file "
        "carries its own questions." in one_line(out.stderr)
    )


# -- 13. piped tables: one row per line ------------------------------------------------------


def test_piped_tables_keep_each_row_on_one_line() -> None:
    models = runner.invoke(app, ["models"], env={"COLUMNS": "80"})
    assert models.exit_code == 0
    rows = [line for line in models.stdout.splitlines() if "hf:Qwen/Qwen2.5-72B-Instruct" in line]
    assert len(rows) == 1 and "qwen2.5-72b-instruct" in rows[0] and "32,768" in rows[0]
    presets = runner.invoke(app, ["presets"], env={"COLUMNS": "80"})
    assert "…" not in presets.stdout
    from contextwright.assembly.presets import list_presets

    for name, description in list_presets().items():
        row = next(line for line in presets.stdout.splitlines() if line.strip().startswith(name + " "))
        assert description in row


def test_a_redirected_error_is_one_line() -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "q", "--budget", "300", "--order", "bookends"])
    assert out.exit_code == 2
    assert out.stderr.count("\n") == 1, out.stderr


# -- 8. no file, stdin a terminal: say that input is awaited ---------------------------------


def test_assemble_says_it_reads_stdin_when_stdin_is_a_terminal() -> None:
    import os
    import pty
    import select
    import subprocess
    import sys

    from ._pty import CLI

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "assemble", "--query", "who?", "--budget", "300"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while b"end with Ctrl-D" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                seen += os.read(master, 4096)
        assert b"reading chunks from stdin (a JSON array or JSON Lines); end with Ctrl-D" in seen, seen
        os.write(master, b'[{"text": "Wilhelm Roentgen discovered x-rays in 1895."}]\n')
        os.write(master, b"\x04")  # Ctrl-D: the end of the input
        stdout, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
        os.close(master)
    assert proc.returncode == 0
    assert b"Wilhelm Roentgen discovered x-rays in 1895." in stdout


def test_assemble_from_a_pipe_says_nothing_about_stdin() -> None:
    chunks = EXAMPLE.read_text(encoding="utf-8")
    out = runner.invoke(app, ["assemble", "--query", "who?", "--budget", "300"], input=chunks)
    assert out.exit_code == 0 and "reading chunks from stdin" not in out.stderr


# -- 9. serve on a port in use -----------------------------------------------------------------


@pytest.mark.parametrize("how", ["--port", "CONTEXTWRIGHT_PORT"])
def test_serve_on_a_port_in_use_names_the_fix(how: str) -> None:
    import os
    import socket
    import subprocess
    import sys

    pytest.importorskip("uvicorn")
    from ._pty import CLI

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
        args = ["serve"]
        if how == "--port":
            args += ["--port", str(port)]
        else:
            env["CONTEXTWRIGHT_PORT"] = str(port)
        done = subprocess.run(
            [sys.executable, "-c", CLI, *args], capture_output=True, text=True, env=env, timeout=60
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is already in use (another contextwright serve?). "
        "Pick another with --port N or CONTEXTWRIGHT_PORT=N, or stop the process using it.\n"
    )


# -- 3. tokens sent against the budget, the same way for every preset; frugal's note --------


def test_every_preset_shows_tokens_against_the_budget_the_same_way() -> None:
    lines = {}
    for preset in ("qa", "frugal", "chat"):
        out = runner.invoke(
            app,
            [
                "assemble",
                str(EXAMPLE),
                "-q",
                "who discovered x-rays?",
                "--preset",
                preset,
                "--budget",
                "1000",
            ],
        )
        assert out.exit_code == 0, out.output
        lines[preset] = out.stderr.strip().splitlines()[-1]
    for line in lines.values():
        assert line.endswith(" unused)") and "(budget 1,000; " in line, lines
        assert "saved" not in line


def test_frugal_note_names_the_floor_and_where_the_threshold_comes_from(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "text": "Wilhelm Roentgen found x-rays in 1895 while testing tubes.", "score": 10.0},
        {"id": "b", "text": "The first Nobel Prize in Physics went to him in 1901.", "score": 9.0},
        # under the threshold, but inside the 200-token floor: kept
        {"id": "c", "text": "Marie Curie later won prizes in physics and chemistry.", "score": 1.0},
    ]
    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    out = runner.invoke(
        app,
        ["assemble", str(path), "-q", "who?", "--preset", "frugal", "--budget", "1000", "--report"],
        env=WIDE,
    )
    assert out.exit_code == 0, out.output
    note = next(line for line in out.stderr.splitlines() if line.startswith("relevance_stop:"))
    assert "threshold 2.8 = lowest 1 + min_relative 0.2 × (top 10 − lowest 1)" in note
    assert "1 chunk under the threshold kept by the 200-token floor" in note


def test_the_default_eval_table_has_a_tokens_column_and_a_one_line_footer(tmp_path: Path) -> None:
    out = runner.invoke(app, ["eval", str(query_file(tmp_path)), "-s", "naive,qa,frugal", "-b", "300"])
    assert out.exit_code == 0, out.output
    header = next(line for line in out.stdout.splitlines() if "strategy" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == [
        "strategy", "budget", "ans%", "pos", "E[acc]%", "tokens", "red%", "p50 ms"
    ]  # fmt: skip
    footer = out.stdout.rstrip("\n").splitlines()[-1]
    assert footer.startswith("3 queries (") and footer.endswith("· prior liu2024-gpt35-20doc")


# -- 14. cosmetics -------------------------------------------------------------------------------


def test_one_chunk_is_singular_and_table_numbers_have_separators(tmp_path: Path) -> None:
    import re

    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "40"], env=WIDE)
    assert "7 → 1 chunk · 241 → " in out.stderr
    big = tmp_path / "big.json"
    rows = [
        {"id": f"c{i}", "text": f"Passage {i} " + " ".join(f"word{i}x{j}" for j in range(150))}
        for i in range(8)
    ]
    big.write_text(json.dumps(rows), encoding="utf-8")
    report = runner.invoke(app, ["assemble", str(big), "-q", "x", "--budget", "1200", "--report"], env=WIDE)
    assert report.exit_code == 0, report.output
    summary = report.stderr.splitlines()[0]
    first_row = next(
        line for line in report.stderr.splitlines() if "token_budget" in line
    )  # qa's first stage
    total = re.search(r"· ([\d,]+) → ", summary)
    assert total and "," in total[1] and re.search(rf"│ {total[1]} → [\d,]+ ", first_row)  # 4,840 in both


def test_frugal_note_writes_the_budget_as_the_summary_does(tmp_path: Path) -> None:
    out = runner.invoke(
        app,
        ["assemble", str(query_file(tmp_path, 1)), "--preset", "frugal", "--budget", "1000", "--report"],
        env=WIDE,
    )
    assert out.exit_code == 0
    assert "budget 1000" not in out.stderr and "budget 1,000" in out.stderr


def test_presets_on_a_terminal_fold_long_words_instead_of_cutting_them() -> None:
    from ._pty import on_a_terminal

    shown = on_a_terminal(["presets"])
    assert "…" not in shown
    assert max(len(line) for line in shown.splitlines()) <= 80


def test_the_small_budget_warning_is_logged_once_per_budget_and_noted_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import contextwright

    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    with caplog.at_level("WARNING", logger="contextwright"):
        contexts = [contextwright.assemble("x-rays?", chunks, budget=20) for _ in range(3)]
    assert sum("no chunk fits" in r.getMessage() for r in caplog.records) == 1
    assert all(any("no chunk fits" in n for n in c.report.stages[-1].notes) for c in contexts)
