"""The ``contextwright index`` command and ``assemble --store/--expand``, end to end."""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.stores import PostgresStore, SQLiteStore, redact_url

FIXTURE = Path(__file__).parent / "fixtures" / "small_corpus.jsonl"
runner = CliRunner()


def test_index_loads_the_shared_corpus_into_sqlite(corpus_path: Path, tmp_path: Path) -> None:
    db = tmp_path / "nq.db"
    result = runner.invoke(app, ["index", str(corpus_path), "--db", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    assert f"indexed 3,759 chunks into sqlite:///{db} (table chunks, 3,759 in total) in " in result.stdout
    with SQLiteStore(db) as store:
        assert store.count() == 3759
        assert [c.index for c in store.fetch({"wiki:List of Nobel laureates in Physics": [(0, 9)]})] == [0, 1]


def test_indexing_again_replaces_rather_than_duplicates(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'small.db'}"
    for _ in range(2):
        result = runner.invoke(app, ["index", str(FIXTURE), "--db", url, "--table", "docs"])
        assert result.exit_code == 0, result.output
        assert "indexed 5 chunks" in result.stdout
        assert "(table docs, 5 in total)" in result.stdout
    with SQLiteStore(tmp_path / "small.db", table="docs") as store:
        assert [c.id for c in store.fetch({"rontgen": [(2, 3)]})] == ["rontgen:2", "rontgen:3"]


def test_index_reads_gzip_and_relative_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.jsonl.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    result = runner.invoke(app, ["index", "small.jsonl.gz", "--db", "sqlite:///rel.db"])
    assert result.exit_code == 0, result.output
    with SQLiteStore(tmp_path / "rel.db") as store:
        assert store.count() == 5


@pytest.mark.parametrize(
    ("corpus", "db", "message"),
    [
        ("missing.jsonl", "sqlite:///x.db", r"cannot read corpus 'missing.jsonl'"),
        (str(FIXTURE), "mysql://host/db", r"unknown store URL 'mysql://host/db'"),
        (str(FIXTURE), "memory://", r"--db memory:// keeps nothing once the command exits"),
    ],
)
def test_index_fails_with_exit_code_2_and_a_readable_message(
    corpus: str, db: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["index", corpus, "--db", db])
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_index_names_the_line_without_doc_id_and_loads_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        FIXTURE.read_text(encoding="utf-8") + '{"id": "x", "text": "no position"}\n', encoding="utf-8"
    )
    result = runner.invoke(app, ["index", str(bad), "--db", f"sqlite:///{tmp_path / 'b.db'}"])
    assert result.exit_code == 2
    assert "bad.jsonl:7: chunk 'x' has no doc_id/index" in " ".join(result.stderr.split())
    with SQLiteStore(tmp_path / "b.db") as store:
        assert store.count() == 0


@pytest.mark.postgres
def test_index_loads_into_postgres(pg_dsn: str) -> None:
    pytest.importorskip("psycopg")
    table = f"cw_cli_{uuid.uuid4().hex[:12]}"
    try:
        result = runner.invoke(app, ["index", str(FIXTURE), "--db", pg_dsn, "--table", table])
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
    assert runner.invoke(app, ["index", str(FIXTURE), "--db", url]).exit_code == 0
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
