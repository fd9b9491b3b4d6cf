"""Tests of the ``contextwright`` commands end to end (assemble, index, presets, models)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.stores import PostgresStore, SQLiteStore, redact_url

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()


def test_assemble_bundled_example_prints_escaped_context() -> None:
    result = runner.invoke(
        app,
        # 400: at 300 the copy's tokens are saved after the cut (qa dedups after it) and the
        # hostile chunk, ranked below, is not reached
        ["assemble", str(EXAMPLE), "--query", "Who discovered X-rays?", "--budget", "400", "--format", "xml"],
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
    assert result.exit_code == 2 and "pass --budget N" in result.stderr


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
    assert set(data) == set(list_presets()) and data["qa"]["format"] == "lean"
    table = runner.invoke(app, ["presets"])
    assert "lost_in_the_middle_order" in table.stdout and "tight" in table.stdout


def test_models_command_lists_the_registry() -> None:
    result = runner.invoke(app, ["models", "--json"])
    models = {m["name"]: m for m in json.loads(result.stdout)}
    assert models["gpt-4o-mini"]["context_window"] == 128_000
    assert "claude-sonnet-4-5" in runner.invoke(app, ["models"]).stdout


def test_version_flag() -> None:
    from contextwright import __version__
    from contextwright.stages import profiles

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == f"contextwright {__version__}"
    if profiles.NATIVE is not None:  # built here (tests/stages/test_native_profiles.py: wherever cc is)
        assert result.stdout.splitlines()[1:] == ["word profiles: C (contextwright._native)"]
    with pytest.MonkeyPatch.context() as mp:  # as installed without a C compiler
        mp.setattr(profiles, "_impl", profiles.PYTHON)
        result = runner.invoke(app, ["--version"])
    assert result.stdout.splitlines()[1].startswith("word profiles: Python (installed without the C module")


# -- index, and assemble with a store --------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "small_corpus.jsonl"


def test_index_loads_the_shared_corpus_into_sqlite(corpus_path: Path, tmp_path: Path) -> None:
    db = tmp_path / "nq.db"
    result = runner.invoke(app, ["index", str(corpus_path), "--store", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    assert f"indexed 3,759 chunks into sqlite:///{db} (table chunks, 3,759 in total) in " in result.stdout
    with SQLiteStore(db) as store:
        assert store.count() == 3759
        assert [c.index for c in store.fetch({"wiki:List of Nobel laureates in Physics": [(0, 9)]})] == [0, 1]


def test_indexing_again_replaces_rather_than_duplicates(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'small.db'}"
    for _ in range(2):
        result = runner.invoke(app, ["index", str(FIXTURE), "--store", url, "--table", "docs"])
        assert result.exit_code == 0, result.output
        assert "indexed 5 chunks" in result.stdout
        assert "(table docs, 5 in total)" in result.stdout
    with SQLiteStore(tmp_path / "small.db", table="docs") as store:
        assert [c.id for c in store.fetch({"rontgen": [(2, 3)]})] == ["rontgen:2", "rontgen:3"]


def test_index_reads_gzip_and_relative_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.jsonl.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    result = runner.invoke(app, ["index", "small.jsonl.gz", "--store", "sqlite:///rel.db"])
    assert result.exit_code == 0, result.output
    with SQLiteStore(tmp_path / "rel.db") as store:
        assert store.count() == 5


@pytest.mark.parametrize(
    ("corpus", "db", "message"),
    [
        ("missing.jsonl", "sqlite:///x.db", r"input file 'missing.jsonl' does not exist"),
        (str(FIXTURE), "mysql://host/db", r"unknown store URL 'mysql://host/db'"),
        (str(FIXTURE), "memory://", r"--store memory:// keeps nothing once the command exits"),
    ],
)
def test_index_fails_with_exit_code_2_and_a_readable_message(
    corpus: str, db: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["index", corpus, "--store", db])
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_index_names_the_line_without_doc_id_and_loads_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        FIXTURE.read_text(encoding="utf-8") + '{"id": "x", "text": "no position"}\n', encoding="utf-8"
    )
    result = runner.invoke(app, ["index", str(bad), "--store", f"sqlite:///{tmp_path / 'b.db'}"])
    assert result.exit_code == 2
    assert "bad.jsonl:7: chunk 'x' has no doc_id/index" in " ".join(result.stderr.split())
    with SQLiteStore(tmp_path / "b.db") as store:
        assert store.count() == 0


@pytest.mark.postgres
def test_index_loads_into_postgres(pg_dsn: str) -> None:
    pytest.importorskip("psycopg")
    table = f"cw_cli_{uuid.uuid4().hex[:12]}"
    try:
        result = runner.invoke(app, ["index", str(FIXTURE), "--store", pg_dsn, "--table", table])
        assert result.exit_code == 0, result.output
        assert f"(table {table}, 5 in total)" in result.stdout
        assert f"into {redact_url(pg_dsn)} " in result.stdout  # never the password
    finally:
        with PostgresStore(pg_dsn, table=table) as store:
            count = store.count()
            store.drop_table()
    assert count == 5


def test_assemble_with_a_store_adds_neighbours(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'small.db'}"
    assert runner.invoke(app, ["index", str(FIXTURE), "--store", url]).exit_code == 0
    chunks = tmp_path / "hits.json"
    hit = {
        "id": "rontgen:1",
        "doc_id": "rontgen",
        "index": 1,
        "score": 1.0,
        "text": "He detected X-rays in 1895.",
    }
    chunks.write_text(json.dumps({"query": "who discovered x-rays?", "chunks": [hit]}), encoding="utf-8")
    args = ["assemble", str(chunks), "--budget", "500", "--json", "--store", url, "--expand", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [expand] = [s for s in data["report"]["stages"] if s["stage"] == "expand"]
    assert expand["added"] == ["rontgen:0", "rontgen:2"]
    assert "first Nobel Prize in Physics" in data["text"]


def test_assemble_expand_without_a_store_is_refused(tmp_path: Path) -> None:
    chunks = tmp_path / "hits.json"
    chunks.write_text(json.dumps([{"text": "x", "doc_id": "d", "index": 0}]), encoding="utf-8")
    result = runner.invoke(app, ["assemble", str(chunks), "--budget", "100", "--expand", "1"])
    assert result.exit_code == 2
    assert "--expand needs --store URL" in result.stderr


def test_assemble_history_is_trimmed_and_reported(tmp_path: Path) -> None:
    turns = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": "Tell me about the first Nobel prizes in great detail please, all of them.",
        },
        {"role": "assistant", "content": "The first Nobel Prizes were awarded in 1901 in five fields."},
        {"role": "user", "content": "And physics?"},
    ]
    hist = tmp_path / "history.json"
    hist.write_text(json.dumps(turns))
    args = ["assemble", str(EXAMPLE), "--query", "Who discovered X-rays?", "--budget", "200"]
    args += ["--history", str(hist), "--history-tokens", "40"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    history = json.loads(result.stdout)["report"]["history"]
    assert history["dropped"] == [1] and history["tokens"] <= 40
    assert [m["content"] for m in history["messages"]] == [
        turns[0]["content"],
        *(t["content"] for t in turns[2:]),
    ]
    plan = runner.invoke(app, [*args, "--dry-run"])
    assert "history: 3 messages kept, dropped turns 1 · 33 of 40 tokens" in plan.stdout
    no_zone = runner.invoke(app, [a for a in args if a not in ("--history-tokens", "40")])
    assert no_zone.exit_code == 2 and "--history needs --history-tokens" in no_zone.output
    hist.write_text('{"role": "user"}')
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "expected a JSON list" in bad.output


def test_assemble_fuses_named_lists_with_tools_and_previous(tmp_path: Path) -> None:
    """Named lists in, --fusion rrf, --tools in their zone, --previous keeps the survivors first."""
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "nq_hybrid_dev300.jsonl.gz"
    if not data.exists():
        pytest.skip("shared hybrid data not found")
    with gzip.open(data, "rt", encoding="utf-8") as f:
        row = json.loads(f.readline())
    lists = tmp_path / "lists.json"
    lists.write_text(json.dumps({"query": row["question"], "chunks": row["lists"]}))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "sql", "content": "\n".join(f"row {i}" for i in range(200))}]))
    runner = CliRunner()
    first = runner.invoke(app, ["assemble", str(lists), "--budget", "500", "--fusion", "rrf", "--json"])
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert out["report"]["stages"][0]["stage"] == "fuse"
    assert out["report"]["stages"][0]["notes"][0].startswith("rrf fusion of 2 lists")
    assert all("provenance" in c for c in out["citations"])
    prev = tmp_path / "prev.json"
    prev.write_text(first.stdout)
    second = runner.invoke(
        app,
        [
            "assemble",
            str(lists),
            "--budget",
            "500",
            "--json",
            "--previous",
            str(prev),
            "--tools",
            str(tools),
            "--tool-tokens",
            "50",
        ],
    )
    assert second.exit_code == 0, second.output
    out2 = json.loads(second.stdout)
    assert out2["report"]["tools"]["tokens"] <= 50 and out2["report"]["tools"]["dropped"] == ["sql"]
    assert out2["report"]["stable_prefix_tokens"] > 0
    bad = runner.invoke(app, ["assemble", str(lists), "--budget", "500", "--tools", str(tools)])
    assert bad.exit_code != 0 and "--tools needs --tool-tokens" in bad.output
