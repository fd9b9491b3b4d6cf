"""Bulk loading: the canonical-row fast path and PostgreSQL COPY give the rows the full path gives."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from contextwright.core.errors import InputError
from contextwright.stores import InMemoryStore, PostgresStore, SQLiteStore
from contextwright.stores.rows import plain_row as _plain_row
from contextwright.stores.rows import read_rows as _read_rows

ROWS: list[dict[str, Any]] = [
    {"id": "d1:0", "doc_id": "d1", "index": 0, "text": "alpha one", "title": "D1", "score": 0.5},
    {"id": "d1:1", "doc_id": "d1", "index": 1, "text": "alpha two", "page": 3},
    # not canonical: an alias, metadata, a float index, an embedding -> the full path
    {"chunk_id": "d2:0", "doc_id": "d2", "index": 0.0, "page_content": "beta", "lang": "en"},
    {"id": "d2:1", "doc_id": "d2", "index": 1, "text": "beta two", "embedding": [0.5, 1.0]},
    {"id": "d3:0", "doc_id": "d3", "index": 0, "text": "gamma", "title": 7},
    # a later line with the same key replaces the earlier one
    {"id": "d1:0b", "doc_id": "d1", "index": 0, "text": "alpha one again"},
]


def _write(tmp_path: Path, rows: list[Any]) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return path


def _all(store: Any) -> list[Any]:
    return store.fetch({d: [(0, 10)] for d in ("d1", "d2", "d3")})


def test_fast_path_rows_equal_the_full_path(tmp_path: Path) -> None:
    assert _plain_row(ROWS[0]) is not None and _plain_row(ROWS[2]) is None and _plain_row(ROWS[4]) is None
    path = _write(tmp_path, ROWS)
    assert len(list(_read_rows(path))) == len(ROWS)
    expected = _all(InMemoryStore(ROWS))
    with SQLiteStore(tmp_path / "a.db") as store:
        assert store.load_jsonl(path) == len(ROWS)
        got = _all(store)
    assert got == expected
    assert [c.metadata for c in got] == [c.metadata for c in expected]  # lang kept as metadata
    assert [c.embedding for c in got] == [c.embedding for c in expected]


def test_bad_line_loads_nothing_and_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[0]) + '\n{"doc_id": "x", "index": 0}\n', encoding="utf-8")
    with SQLiteStore(tmp_path / "b.db") as store:
        with pytest.raises(InputError, match=r"bad.jsonl:2"):
            store.load_jsonl(path)
        assert store.count() == 0


@pytest.mark.postgres
def test_postgres_copy_load_equals_full_path(tmp_path: Path, pg_dsn: str) -> None:
    path = _write(tmp_path, ROWS)
    table = f"bulk_{uuid.uuid4().hex[:8]}"
    with PostgresStore(pg_dsn, table=table) as store:
        try:
            assert store.load_jsonl(path) == len(ROWS)
            assert store.count() == 5
            got = _all(store)
            assert got == _all(InMemoryStore(ROWS))
            assert [c.embedding for c in got] == [None, None, None, (0.5, 1.0), None]
            bad = tmp_path / "bad.jsonl"
            bad.write_text(
                '{"id": "z", "doc_id": "z", "index": 0, "text": "z"}\nnot json\n', encoding="utf-8"
            )
            with pytest.raises(InputError, match=r"bad\.jsonl:2"):
                store.load_jsonl(bad)
            assert store.count() == 5
        finally:
            store.drop_table()


def test_the_store_reads_gzip_by_content_not_by_name(tmp_path: Path) -> None:
    """One input reader (inputs.readers): a gzip file without .gz loads, as any other input does."""
    import gzip

    path = tmp_path / "corpus.jsonl"  # gzip inside, no .gz in the name
    path.write_bytes(gzip.compress(("\n".join(json.dumps(r) for r in ROWS[:2]) + "\n").encode()))
    with SQLiteStore(tmp_path / "g.db") as store:
        assert store.load_jsonl(path) == 2
        assert store.count() == 2
