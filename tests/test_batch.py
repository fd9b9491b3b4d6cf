"""Batch assembly: local processes and a real local Ray (no mocks) give the same rows, in order."""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextwright.batch import (
    BatchReader,
    BatchSettings,
    RowAssembler,
    assemble_many,
    read_rows,
    run_batch,
)
from contextwright.cli import app
from contextwright.core.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[1]
BAD_CHUNK = json.dumps({"id": "bad-1", "question": "x?", "chunks": [{"score": 1.0}]})
NOT_JSON = "{this is not json"
runner = CliRunner()


@pytest.fixture(scope="module")
def queries_file(tmp_path_factory: pytest.TempPathFactory, dev_queries: list[dict[str, Any]]) -> Path:
    """12 real dev queries with a bad chunk row and a non-JSON line in the middle, gzipped."""
    lines = [json.dumps(q) for q in dev_queries[:12]]
    lines[4:4] = [BAD_CHUNK, NOT_JSON]
    path = tmp_path_factory.mktemp("batch") / "queries.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def parquet_file(queries_file: Path) -> Path:
    """The same rows as Parquet, but for the non-JSON line (Parquet cannot hold it)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    with gzip.open(queries_file, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip() != NOT_JSON]
    path = queries_file.with_name("queries.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=5)
    return path


@pytest.fixture(scope="module")
def local_out(queries_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out.jsonl"
    stats = run_batch(queries_file, out, workers=1, budget=500)
    assert (stats.rows, stats.errors) == (12, 2)
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rows_keep_input_order_and_fields(local_out: Path, dev_queries: list[dict[str, Any]]) -> None:
    recs = _records(local_out)
    assert [r["id"] for r in recs] == [q["id"] for q in dev_queries[:12]]
    assert set(recs[0]) == {"id", "text", "tokens", "citations", "report"}
    assert all(0 < r["tokens"] <= 500 for r in recs)
    assert all("ms" not in s for r in recs for s in r["report"]["stages"])  # deterministic by default


def test_error_rows_are_recorded_with_id_where_and_message_never_fatal(
    local_out: Path, queries_file: Path
) -> None:
    errors = _records(Path(str(local_out) + ".errors.jsonl"))
    assert [(e["id"], e["where"]) for e in errors] == [
        ("bad-1", f"{queries_file}:5"),
        ("", f"{queries_file}:6"),
    ]
    assert "InputError: chunks[0] has no text" in errors[0]["error"]
    assert errors[1]["error"].startswith(f"InputError: {queries_file}:6: not valid JSON")
    assert errors[1]["input"] == NOT_JSON


def test_rows_come_from_the_one_input_reader(queries_file: Path, tmp_path: Path) -> None:
    rows = list(read_rows(queries_file))
    assert len(rows) == 14 and rows[5].error is not None and rows[0].where == f"{queries_file}:1"
    chunks = tmp_path / "chunks.jsonl"  # the wrong file fails at once, not as 1,000 error rows
    chunks.write_text('{"id": "c1", "text": "a chunk"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"batch needs queries.*holds chunks"):
        read_rows(chunks)
    mixed = tmp_path / "mixed.jsonl"  # a stray chunk line among queries is one error row
    mixed.write_text(
        '{"question": "q?", "chunks": [{"text": "x"}]}\n{"text": "stray"}\n[1]\n', encoding="utf-8"
    )
    got = list(assemble_many(read_rows(mixed), workers=1, budget=50))
    assert got[0].ok and [r.where for r in got[1:]] == [f"{mixed}:2", f"{mixed}:3"]
    assert "earlier records were queries" in str(got[1].error) and "not an object" in str(got[2].error)


def test_two_processes_equal_one_and_open_their_own_store(
    queries_file: Path, local_out: Path, tmp_path: Path, corpus_path: Path
) -> None:
    out = tmp_path / "two.jsonl"
    run_batch(queries_file, out, workers=2, budget=500, batch_size=3)
    assert out.read_bytes() == local_out.read_bytes()
    # with a store and expansion, each worker opens its own connection from the URL
    from contextwright.stores import SQLiteStore

    with SQLiteStore(tmp_path / "nq.db") as store:
        store.load_jsonl(corpus_path)
    url = f"sqlite:///{tmp_path / 'nq.db'}"
    rows = list(read_rows(queries_file))[:4]
    one = list(assemble_many(rows, workers=1, budget=800, store=url, expand=1))
    two = list(assemble_many(rows, workers=2, budget=800, store=url, expand=1, batch_size=1))
    assert one == two and one[0].where == f"{queries_file}:1"
    assert any(s["stage"] == "expand" and s["added"] for r in one for s in r.record["report"]["stages"])  # type: ignore[index]


def test_bad_settings_fail_before_any_row(queries_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="budget"):
        list(assemble_many([], preset="qa"))
    with pytest.raises(ConfigError, match="engine"):
        run_batch(queries_file, tmp_path / "o.jsonl", engine="spark", budget=10)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="does not exist"):
        run_batch(tmp_path / "missing.jsonl", tmp_path / "o.jsonl", budget=10)
    with pytest.raises(ConfigError, match=r"directory.*engine='ray'"):
        run_batch(queries_file, str(tmp_path) + "/", budget=10)
    with pytest.raises(ConfigError, match=r"'s3://bucket/out/' is a URI: part files"):
        run_batch(queries_file, "s3://bucket/out/", budget=10)
    with pytest.raises(ConfigError, match=r"URI.*--engine ray"):
        run_batch("s3://bucket/queries.jsonl", tmp_path / "o.jsonl", budget=10)
    assert not (tmp_path / "o.jsonl").exists()


def test_plain_rows_are_named_by_position() -> None:
    rows = list(assemble_many([{"query": "q", "chunks": [{"text": "a b"}]}, "{nope"], workers=1, budget=50))
    assert rows[0].ok and rows[1].where == "queries[1]" and "queries[1]: not valid JSON" in str(rows[1].error)


def test_row_assembler_accepts_query_objects() -> None:
    row = RowAssembler(BatchSettings(budget=50))({"query": "q", "chunks": [{"text": "alpha beta"}]})
    assert row.ok and row.record is not None and row.record["tokens"] > 0 and row.id == ""


def test_parquet_round_trip_matches_jsonl(parquet_file: Path, local_out: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"
    stats = run_batch(parquet_file, out, workers=1, budget=500)
    assert (stats.rows, stats.errors) == (12, 1)  # the non-JSON line cannot be in Parquet
    errors = _records(Path(str(out) + ".errors.jsonl"))
    assert [(e["id"], e["where"]) for e in errors] == [("bad-1", f"{parquet_file}[4]")]
    table = pq.read_table(out)
    assert table.column_names == ["id", "text", "tokens", "citations", "report"]
    back = [
        {**r, "citations": json.loads(r["citations"]), "report": json.loads(r["report"])}
        for r in table.to_pylist()
    ]
    assert back == _records(local_out)


def test_rows_carry_the_chat_to_send_when_asked(
    queries_file: Path, dev_queries: list[dict[str, Any]], tmp_path: Path
) -> None:
    """``messages``: each row also holds the chat :func:`contextwright.chat_messages` gives (for a
    batch LLM API), in JSONL and in Parquet (JSON strings, like ``citations``), from the CLI too."""
    import pyarrow.parquet as pq

    import contextwright

    out, pq_out = tmp_path / "chat.jsonl", tmp_path / "chat.parquet"
    run_batch(queries_file, out, workers=1, budget=500, messages=("default", "auto"))
    rows = _records(out)
    assembler = contextwright.Assembler("qa", budget=500)
    for row, q in zip(rows, dev_queries[:12], strict=True):
        ctx = assembler.assemble(q["question"], q["chunks"])
        assert row["text"] == ctx.text
        assert {k: row[k] for k in ("messages", "reask_messages")} == contextwright.chat_messages(ctx)
    run_batch(queries_file, pq_out, workers=1, budget=500, messages=("default", "auto"))
    table = pq.read_table(pq_out).to_pylist()
    assert [json.loads(r["messages"]) for r in table] == [r["messages"] for r in rows]
    assert [json.loads(r["reask_messages"]) for r in table] == [r["reask_messages"] for r in rows]
    cli = tmp_path / "cli.jsonl"
    args = ["batch", str(queries_file), str(cli), "--workers", "1", "--budget", "500", "--messages"]
    result = runner.invoke(app, [*args, "--system", "strict", "--reask-bare", "none"])
    assert result.exit_code == 0, result.output
    strict = _records(cli)
    assert all("reask_messages" not in r for r in strict)
    assert strict[0]["messages"] == assembler.assemble(
        dev_queries[0]["question"], dev_queries[0]["chunks"]
    ).messages(system="strict")
    bad = runner.invoke(
        app, ["batch", str(queries_file), str(cli), "--budget", "500", "--reask-bare", "light"]
    )
    assert bad.exit_code == 2 and "shape the chat of --messages or --reader: add one" in bad.output
    # a bad prompt in the settings fails the job before any row, not each row
    for messages, said in (
        (("default", "lite"), r"messages\[1\] \(reask_bare\) must be .* Did you mean 'light'"),
        (("strcit", "auto"), r"messages\[0\] \(system\) must be .* Did you mean 'strict'"),
        (("default",), r"messages must be \(system, reask_bare\)"),
    ):
        with pytest.raises(ConfigError, match=said):
            run_batch(queries_file, tmp_path / "x.jsonl", workers=1, budget=500, messages=messages)
        assert not (tmp_path / "x.jsonl").exists()


def test_cli_batch_writes_output_and_errors(queries_file: Path, local_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl.gz"
    result = runner.invoke(app, ["batch", str(queries_file), str(out), "--workers", "1", "--budget", "500"])
    assert result.exit_code == 0, result.output
    assert "assembled 12 rows" in result.stdout and "2 error rows" in result.stdout
    assert gzip.decompress(out.read_bytes()) == local_out.read_bytes()
    bad = runner.invoke(app, ["batch", str(queries_file), str(out), "--engine", "spark"])
    assert bad.exit_code == 2 and "--engine must be local or ray" in bad.output
    bad = runner.invoke(app, ["batch", str(queries_file), str(out), "--out-format", "csv"])
    assert bad.exit_code == 2 and "--out-format must be jsonl, jsonl.gz or parquet" in bad.output


def test_import_and_other_commands_never_load_ray() -> None:
    code = (
        "import sys, contextwright, contextwright.batch, contextwright.cli, contextwright.eval\n"
        "assert not [m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'pyarrow'))], 'ray loaded'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# -- a real local Ray ------------------------------------------------------------------------------
# One Ray for the module and three pipelines that cover: JSONL in → part files out from two actors
# (Ray's writers, error rows through the collector); Parquet in (a file:// URI) → one ordered file
# out (rows through the driver); eval on Ray actors. Each actor imports the library and builds an
# assembler (seconds on a busy 2-core machine), so only the first pipeline starts two.


@pytest.fixture(scope="module")
def ray_session() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_part_files_equal_the_local_file(
    ray_session: Any, queries_file: Path, local_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "parts"
    seen: list[tuple[int, int]] = []
    # Ray Data's console handler (its stream is the stderr of the moment ray.data was imported)
    console = next(h for h in logging.getLogger("ray.data").handlers if type(h).__name__ == "PlainRayHandler")
    stderr = io.StringIO()
    monkeypatch.setattr(console, "stream", stderr)
    stats = run_batch(
        queries_file,
        f"{out}/",
        engine="ray",
        workers=2,
        budget=500,
        batch_size=2,
        rows_per_file=5,
        progress=lambda done, failed: seen.append((done, failed)),
    )
    assert seen[-1] == (14, 2)  # the actors' counts reach the caller's progress
    assert (stats.rows, stats.errors, stats.engine) == (12, 2, "ray")
    parts = sorted(out.glob("*.jsonl"))
    assert len(parts) > 1  # 12 rows, at least 5 a file: written by several write tasks
    assert b"".join(p.read_bytes() for p in parts) == local_out.read_bytes()
    errors = Path(f"{out}.errors.jsonl").read_bytes()
    assert errors == Path(str(local_out) + ".errors.jsonl").read_bytes()
    # Ray Data's INFO lines (execution plans) stay in its session log, off the caller's stderr
    assert "Starting execution of Dataset" not in stderr.getvalue()
    assert "Progress bars disabled" not in stderr.getvalue()


def test_ray_actors_ask_the_reader_and_write_its_answers_to_parquet_parts(
    ray_session: Any, queries_file: Path, tmp_path: Path
) -> None:
    """``reader``: each Ray actor opens its own client; the part files carry the ``answer`` column."""
    pq = pytest.importorskip("pyarrow.parquet")
    from .eval.test_reader import ChatServer, reply

    server = ChatServer(lambda body: reply("Paris [1]."))
    try:
        reader = BatchReader(url=server.base_url, model="m")
        out = tmp_path / "asked"
        stats = run_batch(
            queries_file, f"{out}/", engine="ray", workers=2, budget=500, batch_size=2,
            out_format="parquet", rows_per_file=5, reader=reader,
        )  # fmt: skip
        assert (stats.rows, stats.errors) == (12, 2)
        assert len(server.asked()) == 12  # the two bad rows fail before any request
    finally:
        server.close()
    rows = [r for part in sorted(out.glob("*.parquet")) for r in pq.read_table(part).to_pylist()]
    answers = [json.loads(r["answer"]) for r in rows]
    assert len(rows) == 12 and {a["answer"] for a in answers} == {"Paris [1]."}
    assert all([c["index"] for c in a["cited"]] == [1] and a["reasked"] is False for a in answers)


def test_ray_reads_parquet_from_a_uri_into_one_ordered_file(
    ray_session: Any, parquet_file: Path, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    local_pq, ray_pq = tmp_path / "l.parquet", tmp_path / "r.parquet"
    run_batch(parquet_file, local_pq, workers=1, budget=500)
    stats = run_batch(f"file://{parquet_file}", ray_pq, engine="ray", workers=1, budget=500, batch_size=2)
    assert (stats.rows, stats.errors) == (12, 1)
    assert pq.read_table(ray_pq).to_pylist() == pq.read_table(local_pq).to_pylist()
    chat = {"workers": 1, "budget": 500, "messages": ("default", "auto")}
    run_batch(parquet_file, local_pq, **chat)  # type: ignore[arg-type]
    run_batch(f"file://{parquet_file}", ray_pq, engine="ray", batch_size=2, **chat)  # type: ignore[arg-type]
    assert pq.read_table(ray_pq).column_names[-2:] == ["messages", "reask_messages"]
    assert pq.read_table(ray_pq).to_pylist() == pq.read_table(local_pq).to_pylist()
    error = _records(Path(str(ray_pq) + ".errors.jsonl"))[0]
    assert (error["id"], error["where"]) == ("bad-1", f"file://{parquet_file}[4]")
    # a URI is not checked up front: the wrong file fails inside Ray, and the library's own error
    # comes out, not Ray's wrapper with the remote traceback for a message
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text('{"id": "c1", "text": "a chunk"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"^batch needs queries") as raised:
        run_batch(f"file://{chunks}", tmp_path / "x.jsonl", engine="ray", workers=1, budget=500)
    assert type(raised.value) is InputError


def test_eval_engine_ray_equals_local(ray_session: Any, dev_queries: list[dict[str, Any]]) -> None:
    from contextwright.eval import evaluate, query_from_dict

    queries = [query_from_dict(q) for q in dev_queries[:6]]
    local = evaluate(queries, ["naive", "qa"], [300])
    on_ray = evaluate(queries, ["naive", "qa"], [300], engine="ray", workers=1)

    def strip(r: Any) -> dict[str, Any]:
        return {k: v for k, v in r.to_dict().items() if k != "latency_ms"}

    assert [strip(r) for r in on_ray.results] == [strip(r) for r in local.results]
