"""What a newcomer trips on: misspelled arguments, empty chunks, framework objects passed directly."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import contextwright
from contextwright import Assembler, Chunk, ConfigError, InputError, assemble
from contextwright.cli import app
from contextwright.model.report import StageReport, StageResult
from contextwright.stages.base import register_stage
from contextwright.stores import InMemoryStore

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()

CHUNKS = [
    {"id": "a", "text": "Wilhelm Röntgen discovered X-rays in 1895.", "score": 0.9},
    {"id": "b", "text": "He received the first Nobel Prize in Physics in 1901.", "score": 0.7},
]


# -- 1. misspelled arguments -------------------------------------------------------------


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("fromat", "format"), ("buget", "budget"), ("tokenzier", "tokenizer"), ("stor", "store")],
)
def test_assemble_rejects_a_misspelled_argument_and_suggests_the_closest(typo: str, meant: str) -> None:
    with pytest.raises(ConfigError) as info:
        assemble("who?", CHUNKS, budget=200, **{typo: "numbered"})
    message = str(info.value)
    assert f"unknown argument {typo!r}" in message
    assert f"Did you mean {meant!r}?" in message
    assert "Valid arguments: budget, buffer_tokens, chunks, format" in message
    assert "resources for stages: embedder, llm, reranker, store" in message


def test_assembler_rejects_a_misspelled_keyword_but_accepts_declared_resources() -> None:
    with pytest.raises(ConfigError, match=r"Assembler\(\) got an unknown argument 'tokenzier'.*'tokenizer'"):
        Assembler("qa", budget=100, tokenzier="o200k_base")
    with pytest.raises(ConfigError, match="unknown argument 'xyzzy'") as info:
        Assembler("qa", budget=100, xyzzy=1)
    assert "Did you mean" not in str(info.value)  # nothing close: no guess
    asm = Assembler("qa", budget=100, store=InMemoryStore(), embedder=None)
    assert set(asm.resources) == {"store", "embedder"}


def test_a_misspelled_format_no_longer_renders_the_default() -> None:
    # Before: fromat= fell into **resources and the context came out as XML.
    assert assemble("who?", CHUNKS, budget=200, format="numbered").text.startswith("[1]")
    with pytest.raises(ConfigError):
        assemble("who?", CHUNKS, budget=200, fromat="numbered")


def test_a_resource_is_declared_by_a_stage_or_registered() -> None:
    @register_stage
    @dataclass(frozen=True, slots=True)
    class Stamp:
        name: ClassVar[str] = "test_newcomer_stamp"
        requires: ClassVar[tuple[str, ...]] = ("stamp_source",)

        def __call__(self, chunks: Any, *, stamp_source: str) -> StageResult:
            return StageResult(tuple(chunks), StageReport(self.name, len(chunks), len(chunks)))

    config = {"stages": [{"type": "test_newcomer_stamp"}], "format": "minimal"}
    ctx = assemble("q", CHUNKS, preset=config, budget=200, stamp_source="x")
    assert ctx.report.output_chunks == 2
    with pytest.raises(ConfigError, match="Did you mean 'stamp_source'"):
        assemble("q", CHUNKS, preset=config, budget=200, stamp_sorce="x")
    contextwright.register_resource("test_newcomer_extra")
    assert Assembler("qa", budget=100, test_newcomer_extra=1).resources == {"test_newcomer_extra": 1}
    with pytest.raises(ConfigError, match="provided by the pipeline"):
        contextwright.register_resource("query")


# -- 2. empty and null texts are dropped, reported --------------------------------------


def test_empty_whitespace_and_null_texts_are_dropped_with_reason_empty() -> None:
    chunks: list[Any] = [
        CHUNKS[0],
        {"id": "blank", "text": "   \n"},
        {"text": ""},
        {"id": "null", "text": None},
        Chunk(" ", id="obj"),
        CHUNKS[1],
    ]
    ctx = assemble("who?", chunks, budget=300)
    assert [c.id for c in ctx.chunks] == ["a", "b"]
    assert ctx.report.input_chunks == 6 and ctx.report.output_chunks == 2
    drops = {d.chunk_id: d for d in ctx.report.dropped if d.reason == "empty"}
    assert set(drops) == {"blank", "chunks[2]", "null", "obj"}
    assert drops["null"].detail == "text is null"
    assert "whitespace" in drops["blank"].detail
    assert ctx.report.stages[0].stage == "input"
    assert ctx.report.reasons().get("empty") == 4
    # ranks stay the input positions (the second real chunk was 6th)
    assert [c.rank for c in ctx.chunks] == [0, 5]
    plan = Assembler("qa", budget=300).plan("who?", chunks)
    assert [d.chunk_id for d in plan.dropped if d.reason == "empty"] == ["blank", "chunks[2]", "null", "obj"]


def test_a_null_text_says_null_where_a_chunk_is_built_directly() -> None:
    with pytest.raises(InputError, match=r"chunk\.text is null"):
        Chunk.from_dict({"text": None})


# -- 3. framework objects straight in ----------------------------------------------------


def test_langchain_llamaindex_and_haystack_objects_are_accepted_directly() -> None:
    from haystack import Document as HaystackDocument
    from langchain_core.documents import Document as LangChainDocument
    from llama_index.core.schema import NodeWithScore, TextNode

    docs: list[Any] = [
        LangChainDocument(page_content="Röntgen discovered X-rays.", metadata={"source": "lc.md"}, id="lc"),
        (LangChainDocument(page_content="Scored pair text.", id="pair"), 0.4),
        NodeWithScore(node=TextNode(text="A scored LlamaIndex node.", id_="li"), score=0.8),
        TextNode(text="A bare LlamaIndex node.", id_="bare"),
        HaystackDocument(id="hs", content="A Haystack document.", meta={"source": "hs.md"}, score=0.6),
        LangChainDocument(page_content="   ", id="blank-lc"),
    ]
    ctx = assemble("who discovered x-rays?", docs, budget=400, format="sources")
    assert {c.id for c in ctx.chunks} == {"lc", "pair", "li", "bare", "hs"}
    assert {c.source for c in ctx.citations} >= {"lc.md", "hs.md"}
    assert [d.chunk_id for d in ctx.report.dropped if d.reason == "empty"] == ["blank-lc"]
    scores = {c.id: c.score for c in ctx.chunks}
    assert scores["li"] == 0.8 and scores["pair"] == 0.4 and scores["hs"] == 0.6


def test_an_unknown_object_names_the_adapter_functions() -> None:
    class Hit:
        def __init__(self) -> None:
            self.body = "text"

    with pytest.raises(InputError) as info:
        assemble("q", [Hit()], budget=100)
    message = str(info.value)
    assert "chunks[0] is a Hit" in message
    assert "contextwright.adapters.langchain.from_documents(docs)" in message
    assert "contextwright.adapters.llamaindex.from_nodes(nodes)" in message


# -- 4. no silent empty stores ------------------------------------------------------------


def test_open_store_read_mode_fails_for_a_missing_file_or_table(tmp_path: Path) -> None:
    import sqlite3

    from contextwright.stores import SQLiteStore, open_store

    typo = tmp_path / "typo.db"
    with pytest.raises(ConfigError) as info:
        open_store(f"sqlite:///{typo}")
    assert f"chunk store {str(typo)!r} does not exist" in str(info.value)
    assert f"contextwright index CORPUS.jsonl --store sqlite:///{typo}" in str(info.value)
    assert not typo.exists()  # reading never creates a store

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (x)").connection.close()
    with pytest.raises(
        ConfigError, match=r"has no table 'chunks': nothing was indexed there.*contextwright index"
    ):
        open_store(f"sqlite:///{other}")
    for url in ("memory://", "sqlite://:memory:"):
        with pytest.raises(ConfigError, match="mode='create'"):
            open_store(url)
    with pytest.raises(ConfigError, match="mode must be 'read' or 'create'"):
        open_store(f"sqlite:///{other}", mode="write")

    with open_store(f"sqlite:///{tmp_path / 'made.db'}", mode="create") as made:
        made.load([{"text": "t", "doc_id": "d", "index": 0}])
    with open_store(f"sqlite:///{tmp_path / 'made.db'}") as store:  # read mode opens what index made
        assert isinstance(store, SQLiteStore) and store.count() == 1


@pytest.mark.postgres
def test_open_store_read_mode_fails_for_a_missing_postgres_table(pg_dsn: str) -> None:
    pytest.importorskip("psycopg")
    from contextwright.stores import open_store

    table = f"missing_{uuid.uuid4().hex[:8]}"
    with pytest.raises(ConfigError, match=rf"has no table '{table}'.*contextwright index .* --table {table}"):
        open_store(pg_dsn, table=table)


def test_cli_assemble_with_a_typo_store_fails_naming_the_path_and_index(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    result = runner.invoke(
        app, ["assemble", str(EXAMPLE), "--budget", "300", "--store", f"sqlite:///{typo}", "--expand", "1"]
    )
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert f"chunk store '{typo}' does not exist" in message and "contextwright index" in message
    assert not typo.exists()
    corpus = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
    made = runner.invoke(app, ["index", str(corpus), "--store", f"sqlite:///{typo}"])
    assert made.exit_code == 0, made.output
    ok = runner.invoke(
        app, ["assemble", str(EXAMPLE), "--budget", "300", "--store", f"sqlite:///{typo}", "--expand", "1"]
    )
    assert ok.exit_code == 0, ok.output


def test_the_service_drops_empty_and_null_chunks_and_reports_them() -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import ServiceConfig, create_app

    chunks = [CHUNKS[0], {"id": "blank", "text": "  "}, {"id": "null", "text": None}]
    with TestClient(create_app(ServiceConfig(budget=300))) as client:
        response = client.post("/v1/assemble", json={"query": "who?", "chunks": chunks, "inspect": True})
    assert response.status_code == 200, response.text
    body = response.json()
    drops = {d["chunk_id"]: d for s in body["report"]["stages"] for d in s["dropped"]}
    assert drops["blank"]["reason"] == drops["null"]["reason"] == "empty"
    assert drops["null"]["detail"] == "text is null"
    assert {r["id"] for r in body["inputs"]} == {"a", "blank", "null"}


def test_the_service_names_a_misspelled_request_field_and_the_closest_valid_one() -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import ServiceConfig, create_app

    body = {"query": "q", "chunks": CHUNKS, "fromat": "numbered"}
    with TestClient(create_app(ServiceConfig(budget=300))) as client:
        top = client.post("/v1/assemble", json=body).json()
        nested = client.post(
            "/v1/assemble",
            json={
                "query": "q",
                "chunks": CHUNKS,
                "history_tokens": 100,
                "history": [{"rol": "user", "content": "x"}],
            },
        ).json()
    assert top["status"] == 422 and top["loc"] == ["body", "fromat"]
    assert top["detail"].startswith(
        "body.fromat: unknown field 'fromat'. Did you mean 'format'? Valid fields: "
    )
    assert "budget" in top["detail"] and "tokenizer" in top["detail"]
    assert nested["detail"].startswith("body.history.0.rol: unknown field 'rol'. Did you mean 'role'?")


def test_service_config_keys_get_a_suggestion(tmp_path: Path) -> None:
    from contextwright.service import ServiceConfig

    config = tmp_path / "service.toml"
    config.write_text("[service]\nbugdet = 200\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['bugdet'\]\. Did you mean 'budget'\? Valid: "):
        ServiceConfig.load(str(config), env={})
    with pytest.raises(
        ConfigError, match=r"unknown service setting\(s\) \['worker'\]\. Did you mean 'workers'\?"
    ):
        ServiceConfig.load(None, env={}, worker=2)


def test_config_mappings_and_files_reject_unknown_keys_with_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"config has no key 'fromat'\. Did you mean 'format'\? Valid keys: "
    ):
        contextwright.pipeline_from_config({"preset": "qa", "fromat": "numbered"})
    toml = tmp_path / "mine.toml"
    toml.write_text('preset = "qa"\nstage = []\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no key 'stage'\. Did you mean 'stages'\?"):
        assemble("q", CHUNKS, preset=str(toml), budget=100)
    with pytest.raises(ConfigError, match=r"unknown preset 'citation'\. Did you mean 'citations'\?"):
        assemble("q", CHUNKS, preset="citation", budget=100)


def test_an_unknown_contextwright_variable_is_refused_with_the_closest_setting() -> None:
    from contextwright.service import ServiceConfig

    # A typo'd key file would otherwise serve without authentication.
    with pytest.raises(
        ConfigError,
        match=r"environment variable 'CONTEXTWRIGHT_API_KEY_FILE' is not a service setting\. "
        r"Did you mean 'CONTEXTWRIGHT_API_KEYS_FILE'\? The settings are CONTEXTWRIGHT_<KEY> for the keys host, ",
    ):
        ServiceConfig.load(env={"CONTEXTWRIGHT_API_KEY_FILE": "keys.txt"})
    with pytest.raises(ConfigError, match=r"'contextwright_budget' .* Did you mean 'CONTEXTWRIGHT_BUDGET'\?"):
        ServiceConfig.load(env={"contextwright_budget": "300"})  # never read: names are case-sensitive
    with pytest.raises(ConfigError, match=r"'CONTEXTWRIGHT_BUGDET' \(and CONTEXTWRIGHT_ZZZ\) is not"):
        ServiceConfig.load(env={"CONTEXTWRIGHT_BUGDET": "300", "CONTEXTWRIGHT_ZZZ": "1"})
    # Documented variables that are not settings are left alone.
    cfg = ServiceConfig.load(
        env={
            "CONTEXTWRIGHT_BUDGET": "300",
            "CONTEXTWRIGHT_TEST_PG_DSN": "postgresql://u:p@127.0.0.1/db",
            "CONTEXTWRIGHT_BENCH_KEEP": "1",
            "CONTEXTWRIGHT_LLM_API_KEY": "sk-test",
            "CONTEXTWRIGHT_SHARED_DATA": "/data",
            "OTHER_TOOL_BUGDET": "1",
        }
    )
    assert cfg.budget == 300


def test_serve_refuses_to_start_with_an_unknown_contextwright_variable() -> None:
    pytest.importorskip("uvicorn")
    out = runner.invoke(app, ["serve"], env={"CONTEXTWRIGHT_BUDGET": "300", "CONTEXTWRIGHT_WORKER": "2"})
    assert out.exit_code == 2, out.output
    message = " ".join(out.stderr.split())
    assert "'CONTEXTWRIGHT_WORKER' is not a service setting. Did you mean 'CONTEXTWRIGHT_WORKERS'?" in message


def test_every_contextwright_variable_the_repo_uses_is_a_setting_or_left_alone() -> None:
    """A variable the tests, benchmarks or docs set must not make `serve` refuse to start."""
    import re

    from contextwright.service import ServiceConfig
    from contextwright.service.settings import NON_SETTING_PREFIXES, NON_SETTING_VARIABLES

    used: set[str] = set()
    # Code and CI that set or read variables (the docs and this file name typos on purpose).
    for folder in ("src", "tests", "bench", "examples", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".toml", ""} and path != Path(__file__):
                used |= set(
                    re.findall(
                        r"\bCONTEXTWRIGHT_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text("utf-8", "replace")
                    )
                )
    assert "CONTEXTWRIGHT_TEST_PG_DSN" in used and "CONTEXTWRIGHT_BUDGET" in used
    refused = []
    for name in sorted(used):
        try:
            ServiceConfig.load(env={name: "1"})
        except ConfigError as exc:
            if "is not a service setting" in str(exc):
                refused.append(name)
    assert not refused, f"used in the repo but refused by ServiceConfig.load: {refused}"
    service_docs = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    for name in [*NON_SETTING_VARIABLES, *(p + "*" for p in NON_SETTING_PREFIXES)]:
        assert f"`{name}`" in service_docs, f"docs/service.md does not name {name}"
