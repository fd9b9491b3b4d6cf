"""Chunk stores: one behavioural suite over the in-memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

import contextlib
import gzip
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from contextwright.core.errors import ConfigError, InputError, MissingDependencyError, StoreError
from contextwright.model.chunk import Chunk
from contextwright.stores import (
    ChunkStore,
    InMemoryStore,
    PostgresStore,
    SQLiteStore,
    merge_ranges,
    open_store,
    read_jsonl,
)

FIXTURE = Path(__file__).parent / "fixtures" / "small_corpus.jsonl"


def _doc(doc_id: str, n: int, **fields: Any) -> list[dict[str, Any]]:
    return [
        {"id": f"{doc_id}:{i}", "doc_id": doc_id, "index": i, "text": f"{doc_id} part {i}.", **fields}
        for i in range(n)
    ]


def _table() -> str:
    return f"cw_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of empty stores of one kind; PostgreSQL tables are unique per test and dropped."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        if request.param == "memory":
            store: Any = InMemoryStore()
        elif request.param == "sqlite":
            store = SQLiteStore(tmp_path / f"s{len(made)}.db", **options)
        else:
            dsn = request.getfixturevalue("pg_dsn")
            store = PostgresStore(dsn, table=_table(), **options)
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, PostgresStore):
            store.drop_table()
        store.close()


def test_every_store_satisfies_the_protocol(make_store: Any) -> None:
    assert isinstance(make_store(), ChunkStore)


def test_fetch_returns_the_chunks_in_range_sorted_and_skips_missing(make_store: Any) -> None:
    store = make_store()
    store.load(_doc("b", 5) + _doc("a", 2))
    got = store.fetch({"b": [(3, 9)], "a": [(0, 0)], "nowhere": [(0, 3)]})
    assert [c.id for c in got] == ["a:0", "b:3", "b:4"]
    assert [c.text for c in got] == ["a part 0.", "b part 3.", "b part 4."]


def test_overlapping_ranges_return_each_chunk_once(make_store: Any) -> None:
    store = make_store()
    store.load(_doc("d", 6))
    got = store.fetch({"d": [(0, 2), (1, 3), (3, 3), (-2, 0)]})
    assert [c.index for c in got] == [0, 1, 2, 3]


def test_empty_ranges_fetch_nothing(make_store: Any) -> None:
    store = make_store()
    store.load(_doc("d", 2))
    assert store.fetch({}) == []
    assert store.fetch({"d": []}) == []
    assert store.fetch({"d": [(2, 1)]}) == []


def test_every_chunk_field_round_trips(make_store: Any) -> None:
    store = make_store()
    original = Chunk(
        "Röntgen discovered X-rays — in 1895.",
        id="x",
        doc_id="rontgen",
        index=7,
        source="wiki/rontgen.md",
        title="Wilhelm Röntgen",
        section="Discovery",
        page=3,
        line=41,
        metadata={"lang": "en", "tags": ["physics"], "year": 1895},
        embedding=(0.25, -1.5, 3.0),
        score=0.9,
        rank=4,
        origin="expanded",
    )
    store.load([original])
    [got] = store.fetch({"rontgen": [(7, 7)]})
    for name in ("text", "id", "doc_id", "index", "source", "title", "section", "page", "line", "embedding"):
        assert getattr(got, name) == getattr(original, name), name
    assert dict(got.metadata) == {"lang": "en", "tags": ["physics"], "year": 1895}
    # Retrieval-time fields are not part of what a store holds.
    assert (got.score, got.rank, got.origin) == (0.0, 0, "retrieved")


def test_loading_the_same_key_again_replaces_the_chunk(make_store: Any) -> None:
    store = make_store()
    assert store.load(_doc("d", 3)) == 3
    assert store.load([{"id": "d:1-new", "doc_id": "d", "index": 1, "text": "replaced"}]) == 1
    assert store.count() == 3
    assert [c.text for c in store.fetch({"d": [(1, 1)]})] == ["replaced"]


def test_a_chunk_without_doc_id_or_index_fails_the_load_and_loads_nothing(make_store: Any) -> None:
    store = make_store()
    with pytest.raises(InputError, match=r"chunks\[2\].*has no doc_id/index.*Add 'doc_id' and 'index'"):
        store.load([*_doc("d", 2), {"text": "orphan", "id": "o"}])
    assert store.count() == 0


def test_load_jsonl_reads_plain_and_gzipped_files(make_store: Any, tmp_path: Path) -> None:
    gz = tmp_path / "small.jsonl.gz"
    gz.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    plain, zipped = make_store(), make_store()
    assert plain.load_jsonl(FIXTURE) == 5
    assert zipped.load_jsonl(gz) == 5
    everything = {"rontgen": [(0, 10)], "curie": [(0, 10)]}
    assert plain.fetch(everything) == zipped.fetch(everything)
    [curie] = zipped.fetch({"curie": [(0, 0)]})
    assert curie.line == 12
    assert dict(curie.metadata) == {"lang": "en", "tags": ["physics", "chemistry"]}


def test_concurrent_fetches_from_many_threads_agree(make_store: Any) -> None:
    store = make_store()
    store.load(_doc("d", 50))
    ranges = [{"d": [(i, i + 2)]} for i in range(48)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda r: [c.index for c in store.fetch(r)], ranges * 4))
    assert results == [[i, i + 1, i + 2] for i in range(48)] * 4


def test_the_shared_corpus_loads_completely(make_store: Any, corpus_path: Path) -> None:
    store = make_store()
    assert store.load_jsonl(corpus_path) == 3759
    assert store.count() == 3759
    got = store.fetch({"wiki:List of Nobel laureates in Physics": [(0, 1)]})
    assert [c.index for c in got] == [0, 1]
    assert got[0].title == "List of Nobel laureates in Physics"
    assert got[0].metadata["char_start"] == 0


# -- helpers -----------------------------------------------------------------


def test_merge_ranges_clips_sorts_and_merges_adjacent_spans() -> None:
    assert merge_ranges({"d": [(3, 5), (0, 1), (2, 2), (-1, 0), (9, 8)], "e": [], "f": [(7, 7)]}) == {
        "d": [(0, 5)],
        "f": [(7, 7)],
    }


def test_merge_ranges_rejects_a_malformed_range() -> None:
    with pytest.raises(InputError, match=r"ranges\['d'\] must hold integer pairs; got \(0, '2'\)"):
        merge_ranges({"d": [(0, "2")]})  # type: ignore[list-item]


def test_read_jsonl_names_the_line_of_bad_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok", "doc_id": "d", "index": 0}\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not valid JSON"):
        list(read_jsonl(bad))


def test_read_jsonl_reports_progress_to_the_end(tmp_path: Path) -> None:
    calls: list[tuple[int, int, int]] = []
    chunks = list(read_jsonl(FIXTURE, progress=lambda *a: calls.append(a)))
    size = FIXTURE.stat().st_size
    assert len(chunks) == 5
    assert calls[-1] == (5, size, size)


def test_read_jsonl_of_a_missing_file_says_which() -> None:
    with pytest.raises(InputError, match=r"input file '.*nope\.jsonl' does not exist"):
        list(read_jsonl("nope.jsonl"))


# -- SQLite ------------------------------------------------------------------


def test_sqlite_store_persists_in_its_file(tmp_path: Path) -> None:
    path = tmp_path / "nq.db"
    with SQLiteStore(path) as store:
        store.load_jsonl(FIXTURE)
    with SQLiteStore(path) as again:
        assert again.count() == 5
        assert [c.id for c in again.fetch({"rontgen": [(1, 2)]})] == ["rontgen:1", "rontgen:2"]


def test_sqlite_load_rolls_back_when_the_file_is_bad_half_way(tmp_path: Path) -> None:
    bad = tmp_path / "half.jsonl"
    bad.write_text(FIXTURE.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    with SQLiteStore(tmp_path / "x.db") as store:
        with pytest.raises(InputError, match=r"half\.jsonl:7: not valid JSON"):
            store.load_jsonl(bad)
        assert store.count() == 0


def test_sqlite_fetch_over_its_timeout_is_interrupted(corpus_path: Path) -> None:
    with SQLiteStore(":memory:") as store:
        store.load_jsonl(corpus_path)
        everything = {c.doc_id: [(0, 30)] for c in read_jsonl(corpus_path) if c.doc_id}
        assert len(store.fetch(everything)) == 3759
        with pytest.raises(StoreError, match=r"fetch timed out after 1e-06 s \(2578 documents\)"):
            store.fetch(everything, timeout_s=1e-6)
        # The connection is usable again afterwards.
        assert len(store.fetch({"wiki:List of Nobel laureates in Physics": [(0, 0)]})) == 1


def test_sqlite_fetch_during_a_long_load_reads_the_committed_state_without_waiting(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "busy.db")
    store.load([{"doc_id": "d", "index": 0, "text": "first"}])
    release = threading.Event()
    started = threading.Event()

    def slow_chunks() -> Iterator[dict[str, Any]]:
        yield {"doc_id": "d", "index": 1, "text": "second"}
        started.set()
        release.wait(10)
        yield {"doc_id": "d", "index": 2, "text": "third"}

    loader = threading.Thread(target=store.load, args=(slow_chunks(),))
    loader.start()
    try:
        assert started.wait(10)
        # WAL and a read-only connection per thread: the reader neither waits for the writer
        # nor sees its uncommitted rows.
        start = time.perf_counter()
        assert [c.text for c in store.fetch({"d": [(0, 2)]}, timeout_s=0.5)] == ["first"]
        assert time.perf_counter() - start < 0.4
    finally:
        release.set()
        loader.join()
    assert [c.text for c in store.fetch({"d": [(0, 2)]})] == ["first", "second", "third"]
    store.close()


def test_sqlite_serves_concurrent_fetches_on_a_connection_per_thread(
    corpus_path: Path, tmp_path: Path
) -> None:
    import concurrent.futures

    with SQLiteStore(tmp_path / "nq.db") as store:
        store.load_jsonl(corpus_path)
        ranges = {c.doc_id: [(0, 3)] for c in list(read_jsonl(corpus_path))[:200] if c.doc_id}
        expected = store.fetch(ranges)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            done = list(pool.map(lambda _: (threading.get_ident(), store.fetch(ranges)), range(16)))
        threads = {ident for ident, _ in done}
        assert all(r == expected for _, r in done)
        # One read-only connection per thread that fetched (plus this one), none shared.
        assert 2 <= len(store._readers) <= len(threads) + 1
        ro = store._readers[0]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.execute("DELETE FROM chunks")


def test_a_closed_sqlite_store_raises_store_error() -> None:
    store = SQLiteStore(":memory:")
    store.close()
    with pytest.raises(StoreError, match=r"SQLite store ':memory:' is closed; open a new one"):
        store.fetch({"d": [(0, 1)]})


@pytest.mark.parametrize("table", ["", "chunks; DROP TABLE x", "1abc", "a" * 64])
def test_store_table_names_must_be_plain_identifiers(table: str) -> None:
    with pytest.raises(ConfigError, match=r"table must be a plain SQL identifier"):
        SQLiteStore(":memory:", table=table)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), True])
def test_store_timeout_must_be_positive(timeout: Any) -> None:
    with pytest.raises(ConfigError, match=r"timeout_s must be a positive number of seconds"):
        SQLiteStore(":memory:", timeout_s=timeout)


def test_an_unopenable_sqlite_path_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot open SQLite store"):
        SQLiteStore(tmp_path / "missing-dir" / "x.db")


# -- PostgreSQL --------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_fetch_blocked_by_a_lock_times_out(pg_dsn: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    with PostgresStore(pg_dsn, table=_table(), timeout_s=0.3) as store:
        try:
            store.load(_doc("d", 3))
            with psycopg.connect(pg_dsn) as holder:
                holder.execute(f"LOCK TABLE {store.table} IN ACCESS EXCLUSIVE MODE")
                # The store's default timeout (a server-side statement_timeout) ...
                with pytest.raises(StoreError, match=r"fetch timed out after 0.3 s .*QueryCanceled"):
                    store.fetch({"d": [(0, 2)]})
                # ... and a per-call one both cancel the query.
                with pytest.raises(StoreError, match=r"fetch timed out after 0.2 s"):
                    store.fetch({"d": [(0, 2)]}, timeout_s=0.2)
            assert [c.index for c in store.fetch({"d": [(0, 2)]}, timeout_s=1.0)] == [0, 1, 2]
        finally:
            store.drop_table()


def test_postgres_without_a_server_raises_store_error_without_the_password() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(
        StoreError, match=r"cannot connect to PostgreSQL store postgresql://u:\*\*\*@127.0.0.1:1/db"
    ) as info:
        PostgresStore("postgresql://u:secret@127.0.0.1:1/db", timeout_s=1.0)
    assert "secret" not in str(info.value)


def test_postgres_store_without_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'contextwright\[store\]'"):
        PostgresStore("postgresql://127.0.0.1/db")


# -- open_store --------------------------------------------------------------


def test_open_store_builds_each_kind_from_its_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_store("memory://", mode="create"), InMemoryStore)
    for url in ("sqlite://:memory:", "sqlite://", "sqlite:///:memory:"):
        store = open_store(url, mode="create")
        assert isinstance(store, SQLiteStore)
        assert store.path == ":memory:"
    relative = open_store("sqlite:///rel.db", mode="create")
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db", mode="create", table="other")
    assert (relative.path, absolute.path, absolute.table) == ("rel.db", f"{tmp_path}/abs.db", "other")
    assert (tmp_path / "rel.db").exists()
    assert (tmp_path / "abs.db").exists()


@pytest.mark.postgres
def test_open_store_opens_postgres_urls(pg_dsn: str) -> None:
    pytest.importorskip("psycopg")
    with open_store(pg_dsn, mode="create", table=_table()) as store:
        assert isinstance(store, PostgresStore)
        try:
            assert store.count() == 0
        finally:
            store.drop_table()


@pytest.mark.parametrize("url", ["mysql://x", "nq.db", "sqlite:/x.db"])
def test_open_store_rejects_an_unknown_url_and_lists_the_accepted_ones(url: str) -> None:
    with pytest.raises(
        ConfigError, match=r"unknown store URL .*sqlite:///path\.db.*postgresql://.*memory://"
    ):
        open_store(url)


def test_open_store_rejects_a_sqlite_url_without_a_path() -> None:
    with pytest.raises(ConfigError, match=r"has no path; use sqlite:///relative\.db"):
        open_store("sqlite://host")


def test_store_loads_accept_chunk_objects_and_dicts_alike() -> None:
    store = InMemoryStore()
    store.load([Chunk("obj", doc_id="d", index=0), {"text": "dict", "doc_id": "d", "index": 1}])
    assert [c.text for c in store.fetch({"d": [(0, 1)]})] == ["obj", "dict"]


# -- faults: a PostgreSQL that goes away and comes back -----------------------------


def test_circuit_breaker_opens_after_consecutive_failures_and_probes_for_recovery() -> None:
    from contextwright.stores import CircuitBreaker

    breaker = CircuitBreaker(failures=2, reset_s=0.2)
    calls = []

    def failing() -> None:
        calls.append(1)
        raise StoreError("down")

    for _ in range(2):
        with pytest.raises(StoreError, match="down"):
            breaker.call(failing, what="fetch")
    assert breaker.state == "open"
    with pytest.raises(StoreError, match=r"fetch skipped: the store failed 2 times in a row.*circuit open"):
        breaker.call(failing, what="fetch")
    assert len(calls) == 2  # failed fast, without calling
    time.sleep(0.25)
    with pytest.raises(StoreError, match="down"):
        breaker.call(failing, what="fetch")  # the probe fails: open again for reset_s
    assert len(calls) == 3 and breaker.state == "open"
    time.sleep(0.25)
    assert breaker.call(lambda: "up", what="fetch") == "up"
    assert breaker.state == "closed"
    with pytest.raises(ConfigError, match="failures must be a positive integer"):
        CircuitBreaker(failures=0)


def test_postgres_store_fails_fast_while_down_and_reconnects_after_a_restart(pg_proxy: Any) -> None:
    proxy, dsn = pg_proxy
    table = "faults_" + uuid.uuid4().hex[:8]
    store = PostgresStore(dsn, table=table, timeout_s=1.0, min_size=2, max_size=4, breaker_reset_s=0.5)
    try:
        store.load(_doc("d", 5))
        assert [c.index for c in store.fetch({"d": [(1, 2)]})] == [1, 2]
        proxy.stop()  # the server goes away: open connections are cut, new ones refused
        for _ in range(3):  # breaker_failures
            with pytest.raises(StoreError, match="PostgreSQL store"):
                store.fetch({"d": [(1, 2)]})
        start = time.perf_counter()
        with pytest.raises(StoreError, match="circuit open"):
            store.fetch({"d": [(1, 2)]})
        assert time.perf_counter() - start < 0.05  # no wait for a connection
        proxy.start()  # the server is back
        deadline = time.monotonic() + 15
        while True:
            try:
                got = store.fetch({"d": [(1, 2)]})
                break
            except StoreError:
                assert time.monotonic() < deadline, "the store did not recover within 15 s"
                time.sleep(0.1)
        assert [c.index for c in got] == [1, 2] and store.breaker.state == "closed"
        # Every pooled connection works again (each is checked when taken).
        with ThreadPoolExecutor(4) as pool:
            assert all(len(r) == 2 for r in pool.map(lambda _: store.fetch({"d": [(1, 2)]}), range(12)))
    finally:
        with contextlib.suppress(StoreError):
            store.drop_table()
        store.close()
