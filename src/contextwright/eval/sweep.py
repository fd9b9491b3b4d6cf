"""The position sweep: where in the context the answer passage sits, and how often the reader finds it there."""

from __future__ import annotations

from collections.abc import Sequence

from contextwright.core.errors import ConfigError
from contextwright.eval.data import EvalQuery
from contextwright.eval.metrics import (
    wilson_interval,
)
from contextwright.eval.reader_client import (
    CLOSED_BOOK,
    Progress,
    Reader,
)
from contextwright.eval.reader_requests import (
    Request,
    answer_of,
    closed_request,
    plain_messages,
    system_of,
)
from contextwright.eval.reader_results import (
    PositionSweep,
    ReaderAnswer,
    _share,
)
from contextwright.render.messages import build_messages
from contextwright.tokens import CachedTokenizer, get_tokenizer


def _render_numbered(texts: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {t}" for i, t in enumerate(texts, 1))


def sweep_requests(queries: Sequence[EvalQuery], k: int | None, *, system: str) -> list[Request]:
    if k is None:
        return []
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError(f"positions must be an integer >= 2 (chunks per context); got {k!r}. Example: 5.")
    out = []
    for query in queries:
        if query.first_answer_rank is None:
            continue
        gold = query.chunks[query.first_answer_rank]
        others = [c for c in query.chunks if str(c.get("id")) not in query.answer_ids][: k - 1]
        if len(others) < k - 1:
            continue
        for pos in range(k):
            chunks = [*others[:pos], gold, *others[pos:]]
            texts = [str(c.get("text", "")) for c in chunks]
            messages = plain_messages(build_messages(_render_numbered(texts), query.question, system=system))
            out.append(Request(query, f"position-{pos + 1}", pos + 1, messages, tuple(texts), True))
    return out


def sweep_result(
    answers: Sequence[ReaderAnswer], k: int, main: Sequence[ReaderAnswer], model: str
) -> PositionSweep:
    acc: list[float | None] = []
    low: list[float | None] = []
    high: list[float | None] = []
    answered: list[int] = []
    swept = {a.query_id for a in answers}
    for pos in range(1, k + 1):
        ok = [a for a in answers if a.budget == pos and a.ok]
        hits = sum(a.correct for a in ok)
        ci = wilson_interval(hits, len(ok))
        acc.append(_share(hits, len(ok)))
        low.append(ci[0] if ci else None)
        high.append(ci[1] if ci else None)
        answered.append(len(ok))
    closed = [a for a in main if a.strategy == CLOSED_BOOK and a.ok and a.query_id in swept]
    return PositionSweep(
        k=k,
        queries=len(swept),
        accuracy=tuple(acc),
        low=tuple(low),
        high=tuple(high),
        answered=tuple(answered),
        closed_book=_share(sum(a.correct for a in closed), len(closed)),
        model=model,
    )


def position_sweep(
    queries: Sequence[EvalQuery], *, reader: Reader, k: int = 5, progress: Progress | None = None
) -> PositionSweep:
    """Liu et al.'s experiment on the reader: the answer chunk at each of ``k`` positions.

    For each answerable query with at least ``k - 1`` chunks without an answer,
    the context holds the first answer-bearing chunk and the first ``k - 1``
    others (retrieval order), numbered ``[1]..[k]``, with the answer chunk at
    position 1, then 2, ... k; everything else is identical. The closed-book
    accuracy on the same queries is measured too, for the prior's floor.

    Example:
        >>> sweep = position_sweep(queries, reader=reader, k=5)
        >>> Path("my-prior.json").write_text(json.dumps(sweep.prior_dict()))
    """
    system = system_of(reader)
    reqs = sweep_requests(queries, k, system=system)
    swept = {r.query.id for r in reqs}
    closed = [closed_request(q) for q in queries if q.id in swept]
    replies = reader.ask_many([r.messages for r in (*reqs, *closed)], progress=progress)
    tok = CachedTokenizer(get_tokenizer("cl100k_base").base)
    answers = [answer_of(r, g, tok) for r, g in zip((*reqs, *closed), replies, strict=True)]
    return sweep_result(answers[: len(reqs)], k, answers[len(reqs) :], reader.model)
