"""Running a reader evaluation: the requests of each strategy, budget and query, asked and scored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwright.core.errors import ConfigError, LLMError
from contextwright.eval.data import EvalQuery
from contextwright.eval.reader_client import (
    CLOSED_BOOK_PROMPT,
    Progress,
    Reader,
    logger,
)
from contextwright.eval.reader_requests import (
    Request,
    answer_of,
    ask_again,
    closed_request,
    oracle_request,
    strategy_request,
    system_of,
)
from contextwright.eval.reader_results import (
    ReaderResult,
    summarize_reader,
)
from contextwright.eval.strategies import Strategy, build_strategy
from contextwright.eval.sweep import sweep_requests, sweep_result
from contextwright.render.messages import check_reask
from contextwright.tokens import CachedTokenizer, Tokenizer, get_tokenizer


def evaluate_reader(
    queries: Sequence[EvalQuery],
    strategies: Sequence[str | Path | Strategy],
    budgets: Sequence[int],
    *,
    reader: Reader,
    tokenizer: str | Tokenizer = "cl100k_base",
    resources: Mapping[str, Any] | None = None,
    closed_book: bool = True,
    oracle: bool = True,
    positions: int | None = None,
    progress: Progress | None = None,
    reask_bare: str | None = None,
) -> ReaderResult:
    """Ask the reader each question from each strategy's context at each budget, and score the replies.

    Args:
        queries: Labelled queries.
        strategies: Names, config files or strategies (``naive`` is the baseline of the deltas).
        budgets: Documents budgets in tokens.
        reader: The model and its reply cache.
        tokenizer: The tokenizer that defines the budget and counts tokens sent.
        resources: Resources the strategies' stages need (``store``, ``embedder``).
        closed_book: Also ask every question without context.
        oracle: Also ask every answerable question from its first answer-bearing chunk alone.
        positions: Also run the position sweep with this many chunks (see :func:`position_sweep`).
        progress: Called with ``(replies done, total)`` as replies arrive (again from 0 for the re-asks).
        reask_bare: A prompt (name or text) under which a question is asked once more when the
            first reply is a bare citation of its labelled context (``[1]``, no answer), as an
            application would on :attr:`~contextwright.render.cite.CitationResolution.bare`; the
            second reply is the one scored (:attr:`ReaderAnswer.reasked`). ``auto``: each config's
            ``reask`` (``false`` there: never), else ``light``, as :func:`contextwright.ask`.
            None: never re-ask.

    Raises:
        LLMError: when the endpoint is unreachable or rejects the key (checked before the first query).
        ConfigError: for a bad strategy or budget.
    """
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise ConfigError(f"budgets must be positive integers; got {list(budgets)!r}. Example: 500,1000.")
    reask_bare = check_reask(reask_bare)
    built = [build_strategy(s) for s in strategies]
    res = dict(resources or {})
    tok = CachedTokenizer(get_tokenizer(tokenizer).base)
    system = system_of(reader)
    skipped = {s.name: reason for s in built if (reason := s.missing(res))}
    for name, reason in skipped.items():
        logger.warning("strategy skipped by the reader", extra={"strategy": name, "reason": reason})
    requests = _requests(
        queries,
        [s for s in built if s.name not in skipped],
        budgets,
        (closed_book, oracle),
        tok,
        res,
        (system, reader.system),
    )
    swept = sweep_requests(queries, positions, system=system) if positions else []
    asked = [r for r in (*requests, *swept) if r.error is None]
    replies = reader.ask_many([r.messages for r in asked], progress=progress)
    by_id = {id(r): g for r, g in zip(asked, replies, strict=True)}
    answers = tuple(answer_of(r, by_id.get(id(r)), tok) for r in requests)
    reasks = 0
    if reask_bare is not None:
        answers, again = ask_again(requests, answers, reask_bare, reader, tok, progress)
        reasks = len(again)
    summaries = summarize_reader(answers, reask=reask_bare is not None)
    sweep = None
    if positions:
        sweep_answers = [answer_of(r, by_id.get(id(r)), tok) for r in swept]
        sweep = sweep_result(sweep_answers, positions, answers, reader.model)
        answers = (*answers, *sweep_answers)
    failures = [a for a in answers if not a.ok]
    for a in failures[:5]:
        logger.warning(
            "reader request failed", extra={"query_id": a.query_id, "strategy": a.strategy, "error": a.error}
        )
    return ReaderResult(
        answers=answers,
        summaries=tuple(summaries),
        sweep=sweep,
        meta={
            **_reader_meta(reader, system),
            "requests": len(asked),
            "cached": sum(1 for g in replies if not isinstance(g, LLMError) and g[1]),
            "failed": len(failures),
            "queries": len(queries),
            "tokenizer": tok.name,
            "skipped": skipped,
            "reask_bare": reask_bare,
            "reasked": reasks,
        },
    )


def _reader_meta(reader: Reader, system: str) -> dict[str, Any]:
    """What a run's ``meta`` says of the reader: endpoint (its cache label when offline), model,
    generation settings, prompts and cache."""
    return {
        "endpoint": reader.cache_endpoint if reader.offline else reader.endpoint,
        "offline": reader.offline,
        "model": reader.model,
        "max_tokens": reader.max_tokens,
        "temperature": reader.temperature,
        "system": system,
        "closed_book_system": CLOSED_BOOK_PROMPT,
        "cache": reader.cache_path,
    }


def _requests(
    queries: Sequence[EvalQuery],
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    references: tuple[bool, bool],
    tok: CachedTokenizer,
    res: Mapping[str, Any],
    prompts: tuple[str, str],
) -> list[Request]:
    """Every request of the run, query by query: each strategy at each budget, then the
    closed-book and oracle references when ``references`` asks for them."""
    system, prompt = prompts
    requests: list[Request] = []
    for query in queries:
        for strategy in strategies:
            for budget in dict.fromkeys(budgets):
                requests.append(
                    strategy_request(
                        query, strategy, budget, tokenizer=tok, resources=res, system=system, prompt=prompt
                    )
                )
        if references[0]:
            requests.append(closed_request(query))
        if references[1]:
            req = oracle_request(query, system=system)
            if req is not None:
                requests.append(req)
    return requests
