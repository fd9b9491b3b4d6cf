"""Evaluation data: queries with their retrieved, labelled chunks, read from JSONL(.gz).

One query per line, in the schema of the shared NQ data::

    {"id": "nq-0000", "question": "...", "answers": ["..."],
     "chunks": [{"id", "text", "score", "has_answer", ...}, ...]}

``question`` may also be called ``query``. Chunk lists are in retrieval order.
A chunk without ``has_answer`` is labelled here with
:func:`~contextwright.eval.metrics.answer_in_text`, the rule the shared data
was labelled with; a chunk without ``id`` gets ``"<query id>:<position>"``.
The label fields (``has_answer``, ``is_gold``) are removed from the chunks a
strategy sees, so no strategy can select by the answer key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwright.core.errors import InputError
from contextwright.eval.metrics import answer_in_text

__all__ = ["LABEL_FIELDS", "EvalQuery", "load_queries", "query_from_dict"]

#: Keys removed from the chunks a strategy sees.
LABEL_FIELDS = ("has_answer", "is_gold")


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One labelled query.

    Attributes:
        id: The query id (results are sorted by it).
        question: The query text.
        answers: Accepted answer strings.
        chunks: The retrieved chunks as mappings, in retrieval order, without
            label fields; every chunk has an ``id``.
        answer_ids: Ids of the chunks labelled ``has_answer``.
        first_answer_rank: 0-based position of the first answer-bearing chunk
            in the retrieved list, or ``None`` when there is none.

    Example:
        >>> q = query_from_dict({"id": "q", "question": "who?", "answers": ["Ann"],
        ...                      "chunks": [{"text": "Bob"}, {"text": "Ann did"}]})
        >>> q.answer_ids, q.first_answer_rank, q.hard
        (frozenset({'q:1'}), 1, True)
    """

    id: str
    question: str
    answers: tuple[str, ...]
    chunks: tuple[Mapping[str, Any], ...]
    answer_ids: frozenset[str]
    first_answer_rank: int | None

    @property
    def answerable(self) -> bool:
        """Whether some retrieved chunk bears an answer."""
        return self.first_answer_rank is not None

    @property
    def hard(self) -> bool:
        """Answerable, but the first answer-bearing chunk is not the top-ranked one."""
        return self.first_answer_rank is not None and self.first_answer_rank > 0


def query_from_dict(data: Mapping[str, Any], *, where: str = "query") -> EvalQuery:
    """Validate one query mapping and build an :class:`EvalQuery`.

    Raises:
        InputError: naming ``where``, the field and the fix.
    """
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be a JSON object; got {type(data).__name__}.")
    question = data.get("question", data.get("query"))
    if not isinstance(question, str):
        raise InputError(f"{where} needs a 'question' string; got {question!r}.")
    answers = data.get("answers")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InputError(
            f"{where} needs 'answers', a list of strings (the accepted answers); got {answers!r}."
        )
    qid = data.get("id", where)
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise InputError(f"{where}.id must be a string; got {qid!r}.")
    qid = str(qid)
    raw_chunks = data.get("chunks")
    if not isinstance(raw_chunks, list):
        raise InputError(
            f"{where} needs 'chunks', the retrieved list in retrieval order; got {raw_chunks!r}."
        )
    chunks: list[Mapping[str, Any]] = []
    answer_ids: set[str] = set()
    first: int | None = None
    for i, item in enumerate(raw_chunks):
        if not isinstance(item, Mapping):
            raise InputError(f"{where}.chunks[{i}] must be an object; got {type(item).__name__}.")
        chunk = {k: v for k, v in item.items() if k not in LABEL_FIELDS}
        chunk.setdefault("id", f"{qid}:{i}")
        label = item.get("has_answer")
        if label is None:
            text = item.get("text")
            label = isinstance(text, str) and answer_in_text(text, answers)
        elif not isinstance(label, bool):
            raise InputError(f"{where}.chunks[{i}].has_answer must be true or false; got {label!r}.")
        if label:
            answer_ids.add(str(chunk["id"]))
            if first is None:
                first = i
        chunks.append(chunk)
    return EvalQuery(
        id=qid,
        question=question,
        answers=tuple(answers),
        chunks=tuple(chunks),
        answer_ids=frozenset(answer_ids),
        first_answer_rank=first,
    )


def load_queries(path: str | Path, *, limit: int | None = None) -> tuple[EvalQuery, ...]:
    """Read labelled queries from JSON Lines or a JSON array (gzip or not; ``-`` for stdin).

    Args:
        path: The file (read by :func:`contextwright.inputs.readers.read_records`).
        limit: Read only the first ``limit`` queries.

    Raises:
        InputError: for a missing file, a line that is not JSON, a malformed
            query, or two queries with the same id.

    Example:
        >>> queries = load_queries("../shared/data/nq_bm25_dev300.jsonl.gz", limit=10)
    """
    if limit is not None and limit < 1:
        raise InputError(f"limit must be a positive number of queries; got {limit}.")
    from contextwright.inputs.readers import read_records

    out: list[EvalQuery] = []
    seen: set[str] = set()
    for record in read_records(path, need="queries", command="eval", limit=limit):
        where = record.where.rsplit("/", 1)[-1]
        query = query_from_dict(record.data, where=where)
        if query.id in seen:
            raise InputError(f"{where}: query id {query.id!r} repeats an earlier line; ids must be unique.")
        seen.add(query.id)
        out.append(query)
    if not out:
        raise InputError(f"data file {str(path)!r} holds no queries.")
    return tuple(out)
