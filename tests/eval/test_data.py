"""Reading labelled queries: schema, labels, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from contextwright.core.errors import InputError
from contextwright.eval.data import load_queries, query_from_dict

from ..conftest import DEV_QUERIES


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_query_labels_come_from_has_answer_and_are_hidden_from_strategies() -> None:
    q = query_from_dict(
        {
            "id": "q1",
            "question": "who?",
            "answers": ["Ann"],
            "chunks": [
                {"id": "a", "text": "Bob", "has_answer": False, "is_gold": False},
                {"id": "b", "text": "Ann", "has_answer": True, "is_gold": True},
            ],
        }
    )
    assert q.answer_ids == frozenset({"b"})
    assert q.first_answer_rank == 1
    assert q.answerable
    assert q.hard
    assert all("has_answer" not in c and "is_gold" not in c for c in q.chunks)


def test_missing_labels_and_ids_are_filled_in() -> None:
    q = query_from_dict(
        {
            "id": "q2",
            "query": "where?",
            "answers": ["Idaho"],
            "chunks": [{"text": "Idaho's capital"}, {"text": "x"}],
        }
    )
    assert [c["id"] for c in q.chunks] == ["q2:0", "q2:1"]
    assert q.answer_ids == frozenset({"q2:0"})
    assert q.answerable
    assert not q.hard


def test_unanswerable_query_is_neither_answerable_nor_hard() -> None:
    q = query_from_dict({"id": "q3", "question": "?", "answers": ["zzz"], "chunks": [{"text": "nothing"}]})
    assert (q.answerable, q.hard, q.first_answer_rank) == (False, False, None)


def test_load_queries_reads_gzip_with_a_limit() -> None:
    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    queries = load_queries(DEV_QUERIES, limit=5)
    assert [q.id for q in queries] == [f"nq-{i:04d}" for i in range(5)]
    assert all(len(q.chunks) == 20 for q in queries)


def test_load_queries_reads_plain_and_gzipped_jsonl_alike(tmp_path: Path) -> None:
    rows = [{"id": "a", "question": "q", "answers": ["x"], "chunks": [{"text": "x y"}]}]
    plain = _write(tmp_path / "d.jsonl", rows)
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_queries(plain) == load_queries(packed)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([{"question": "q", "chunks": []}], r"d\.jsonl:1 needs 'answers'"),
        ([{"answers": [], "chunks": []}], "needs a 'question' string"),
        ([{"question": "q", "answers": []}], "needs 'chunks'"),
        ([{"question": "q", "answers": [], "chunks": ["text"]}], r"chunks\[0\] must be an object"),
        ([{"question": "q", "answers": [], "chunks": [{"text": "t", "has_answer": "yes"}]}], "true or false"),
        (
            [{"id": "a", "question": "q", "answers": [], "chunks": []}] * 2,
            r"d\.jsonl:2: query id 'a' repeats",
        ),
    ],
)
def test_malformed_data_is_rejected_with_line_and_field(
    tmp_path: Path, rows: list[object], match: str
) -> None:
    path = _write(tmp_path / "d.jsonl", rows)
    with pytest.raises(InputError, match=match):
        load_queries(path)


def test_a_line_that_is_not_json_is_rejected_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "q", "answers": [], "chunks": []}\n{oops\n')
    with pytest.raises(InputError, match=r"d\.jsonl:2: not valid JSON"):
        load_queries(path)


def test_missing_file_and_bad_limit_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_queries(tmp_path / "none.jsonl")
    with pytest.raises(InputError, match="limit must be a positive"):
        load_queries(tmp_path / "none.jsonl", limit=0)
