"""Tests of the input reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from contextwright.core.errors import InputError
from contextwright.inputs.readers import read_items


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_json_array_of_chunks(tmp_path: Path) -> None:
    (item,) = read_items(write(tmp_path / "a.json", json.dumps([{"text": "a"}, {"text": "b"}])))
    assert [c["text"] for c in item.chunks] == ["a", "b"] and item.query == ""


def test_json_object_with_query(tmp_path: Path) -> None:
    (item,) = read_items(write(tmp_path / "a.json", json.dumps({"query": "q?", "chunks": [{"text": "a"}]})))
    assert item.query == "q?"


def test_jsonl_of_chunks_and_gzip(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write('{"text": "a"}\n\n{"text": "b"}\n')
    (item,) = read_items(path)
    assert len(item.chunks) == 2


def test_jsonl_of_queries_with_limit(dev_queries: list, tmp_path: Path) -> None:
    path = write(tmp_path / "q.jsonl", "\n".join(json.dumps(q) for q in dev_queries[:3]))
    items = list(read_items(path, limit=2))
    assert [i.id for i in items] == ["nq-0000", "nq-0001"] and items[0].query == dev_queries[0]["question"]
    assert items[0].extra["answers"] == dev_queries[0]["answers"]


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("", r"is empty; expected JSON or JSON Lines"),
        ('{"text": "a"}\n{"text": ', r"bad\.jsonl:2: not valid JSON"),
        ('[{"text": "a"}', r"is not valid JSON"),
        (
            '{"text": "a"}\n{"question": "q", "chunks": []}',
            r"bad\.jsonl:2 is a query \(has 'chunks'\) but earlier records were chunks",
        ),
        (
            '{"question": "q", "chunks": "x"}',
            r"bad\.jsonl:1: 'chunks' must be a list of chunk objects; got str",
        ),
    ],
)
def test_bad_input_is_named(tmp_path: Path, content: str, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        list(read_items(write(tmp_path / "bad.jsonl", content)))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"does not exist\. Pass a JSON/JSONL file or '-'"):
        list(read_items(tmp_path / "nope.json"))


def test_bad_keep_turns_unusable_lines_into_error_records(tmp_path: Path) -> None:
    from contextwright.inputs.readers import read_records

    text = '{"question": "q", "chunks": []}\n{oops\n"a string"\n{"text": "a chunk"}\n\xff\n'
    path = tmp_path / "q.jsonl"
    path.write_bytes(text.encode("utf-8").replace(b"\xc3\xbf", b"\xff"))  # a byte that is not UTF-8
    with pytest.raises(InputError, match=r"q.jsonl:2: not valid JSON"):
        list(read_records(path, need="queries"))
    records = list(read_records(path, need="queries", command="batch", bad="keep"))
    assert [r.error is None for r in records] == [True, False, False, False, False]
    assert [r.where.rsplit(":", 1)[1] for r in records] == ["1", "2", "3", "4", "5"]
    assert records[1].raw == "{oops" and "not an object" in str(records[2].error)
    assert "earlier records were queries" in str(records[3].error) and records[3].data == {"text": "a chunk"}
    assert "not UTF-8" in str(records[4].error)


def test_parquet_is_read_with_its_nulls_dropped(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from contextwright.inputs.readers import read_records

    rows = [
        {"id": "1", "question": "q1", "chunks": [{"text": "a", "page": 3}]},
        {"id": "2", "question": "q2", "chunks": [{"text": "b"}]},
    ]
    path = tmp_path / "queries.data"  # the content, not the name, says Parquet
    pq.write_table(pa.Table.from_pylist(rows), path)
    records = list(read_records(path, need="queries"))
    assert [r.data for r in records] == rows  # no "page": None on the second row's chunk
    assert [r.where for r in records] == [f"{path}[0]", f"{path}[1]"]
    with pytest.raises(InputError, match=r"needs chunks.*holds queries"):
        list(read_records(path, need="chunks", command="index"))
