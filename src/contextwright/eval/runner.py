"""Run strategies over labelled queries at several budgets and aggregate the metrics.

:func:`evaluate` runs every strategy at every budget on every query (in
worker processes when ``workers > 1``), scores each output with
:func:`score_output`, and aggregates per strategy, budget and subset
(:func:`summarize`). Results are sorted by query id, then strategy, then
budget, so a run with any number of workers gives the same results; only the
measured latencies differ.

Example:
    >>> from contextwright.eval import evaluate, load_queries
    >>> result = evaluate(load_queries("nq_bm25_dev300.jsonl.gz", limit=20), ["naive", "qa"], [500])
    >>> result.summary("qa", 500).answer_retention  # a share in 0-1
"""

from __future__ import annotations

import logging
import logging.handlers
import multiprocessing
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextwright.core.caches import clear_all
from contextwright.core.errors import ConfigError
from contextwright.core.spawn import spawn_blocker
from contextwright.eval.data import EvalQuery
from contextwright.eval.metrics import (
    chunk_retention,
    first_answer_block,
    in_middle_third,
    median,
    normalized_position,
    percentile,
    redundancy,
)
from contextwright.eval.reader import ReaderResult
from contextwright.eval.strategies import Strategy, StrategyOutput, build_strategy, default_strategies
from contextwright.stages.priors import PositionalPrior, load_prior
from contextwright.tokens import CachedTokenizer, Tokenizer, get_tokenizer

__all__ = [
    "DEFAULT_BUDGETS",
    "EvalResult",
    "QueryResult",
    "Summary",
    "evaluate",
    "evaluate_query",
    "open_corpus_store",
    "score_output",
    "summarize",
]

logger = logging.getLogger(__name__)

DEFAULT_BUDGETS = (300, 500, 1000, 1500)
Subset = Literal["all", "hard"]
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The metrics of one strategy's output for one query at one budget.

    Attributes:
        query_id: The query.
        strategy: The strategy's name.
        budget: The documents budget in tokens.
        tokens: The output text counted again, independently, with the tokenizer.
        over_budget: ``tokens > budget`` (a budget violation).
        blocks: How many blocks the output has.
        answerable: Some retrieved chunk bears an answer.
        hard: Answerable, and the first answer-bearing chunk was not ranked first.
        answer_kept: Some output block contains an answer (whole words, normalized).
        answer_chunks_kept: Answer-bearing input chunks among the output's member ids.
        answer_chunks: Answer-bearing input chunks.
        first_answer_block: 0-based index of the first block containing an answer.
        position: That index normalized to 0-1 (``None`` when no block has one).
        middle: Whether it is in the middle third (``None`` when no block has one).
        expected_accuracy: The prior's accuracy (%) at ``position`` (closed-book when none).
        redundant_words: Words repeating an earlier block (see :func:`~contextwright.eval.metrics.redundancy`).
        words: Words in the output's blocks.
        latency_ms: Wall time of the strategy for this query and budget, token cache cleared first.
        framing_tokens: ``tokens`` less the tokens of the blocks' texts counted one by one:
            what headers, separators and tags cost (a tokenizer may merge across a
            boundary, so a frameless join can come out at 0 or slightly below).

    Example:
        >>> r = score_output(query, NaiveStrategy().run(query.question, query.chunks, budget=300,
        ...                  tokenizer=tok), budget=300, tokenizer=tok)
        >>> r.answer_kept, r.position, r.expected_accuracy
        (True, 0.0, 75.8)
    """

    query_id: str
    strategy: str
    budget: int
    tokens: int
    over_budget: bool
    blocks: int
    answerable: bool
    hard: bool
    answer_kept: bool
    answer_chunks_kept: int
    answer_chunks: int
    first_answer_block: int | None
    position: float | None
    middle: bool | None
    expected_accuracy: float
    redundant_words: int
    words: int
    latency_ms: float
    framing_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _independent_count(tokenizer: Tokenizer | CachedTokenizer, text: str) -> int:
    # The base tokenizer, not the cache the assembler filled: the check must not trust its numbers.
    base = tokenizer.base if isinstance(tokenizer, CachedTokenizer) else tokenizer
    return base.count(text)


def score_output(
    query: EvalQuery,
    output: StrategyOutput,
    *,
    budget: int,
    tokenizer: Tokenizer | CachedTokenizer,
    prior: PositionalPrior | None = None,
    strategy: str = "",
    latency_ms: float = 0.0,
) -> QueryResult:
    """Score one output against the query's labels.

    Args:
        query: The labelled query.
        output: What the strategy produced.
        budget: The budget it was given.
        tokenizer: The tokenizer that defines the budget; the text is counted again with it.
        prior: The positional prior (default :data:`~contextwright.stages.priors.LIU_2024`).
        strategy: The strategy's name, copied into the result.
        latency_ms: The measured wall time, copied into the result.
    """
    prior = prior or load_prior()
    tokens = _independent_count(tokenizer, output.text)
    n = len(output.blocks)
    first = first_answer_block(output.blocks, query.answers)
    kept, total = chunk_retention(query.answer_ids, [i for ids in output.member_ids for i in ids])
    position = normalized_position(first, n) if first is not None else None
    red, words = redundancy(output.blocks)
    return QueryResult(
        query_id=query.id,
        strategy=strategy,
        budget=budget,
        tokens=tokens,
        over_budget=tokens > budget,
        blocks=n,
        answerable=query.answerable,
        hard=query.hard,
        answer_kept=first is not None,
        answer_chunks_kept=kept,
        answer_chunks=total,
        first_answer_block=first,
        position=position,
        middle=in_middle_third(first, n) if first is not None else None,
        expected_accuracy=prior.accuracy(position),
        redundant_words=red,
        words=words,
        latency_ms=latency_ms,
        framing_tokens=tokens - sum(_independent_count(tokenizer, b) for b in output.blocks),
    )


def evaluate_query(
    query: EvalQuery,
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    *,
    tokenizer: CachedTokenizer,
    prior: PositionalPrior | None = None,
    resources: Mapping[str, Any] | None = None,
) -> list[QueryResult]:
    """Run every strategy at every budget on one query and score the outputs.

    The token cache of ``tokenizer`` and the process's text caches (word profiles, dedup
    keys, sentence analyses, rendered bodies: :func:`contextwright.core.caches.clear_all`,
    the other tokenizers' counts kept) are cleared before each run, so every latency is that
    of a query whose chunks were never seen, whatever ran before it; pass a private
    :class:`~contextwright.tokens.CachedTokenizer`.
    """
    out = []
    for strategy in strategies:
        for budget in budgets:
            tokenizer.clear()
            clear_all(per_object=False)
            start = time.perf_counter()
            output = strategy.run(
                query.question, query.chunks, budget=budget, tokenizer=tokenizer, resources=resources
            )
            ms = (time.perf_counter() - start) * 1000
            out.append(
                score_output(
                    query,
                    output,
                    budget=budget,
                    tokenizer=tokenizer,
                    prior=prior,
                    strategy=strategy.name,
                    latency_ms=ms,
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class Summary:
    """The metrics of one strategy at one budget, over one subset of the queries.

    Shares are in 0-1 and ``None`` when their denominator is empty.

    Attributes:
        strategy: The strategy's name.
        budget: The budget.
        subset: ``all`` queries, or the ``hard`` ones (answerable, first
            answer-bearing chunk not at rank 0).
        queries: Queries in the subset.
        answerable: Queries with an answer-bearing chunk in the input.
        answer_retention: Answerable queries whose output keeps an answer, / answerable.
        chunk_retention: Answer-bearing chunks among the outputs' member ids, / all
            answer-bearing chunks (pooled over queries).
        position_mean: Mean normalized position of the first answer-bearing block,
            over outputs that have one.
        middle_share: Share of those outputs where it lies in the middle third.
        expected_accuracy: Mean expected accuracy (%) under the prior, over all queries.
        tokens_mean: Mean output tokens.
        utilisation: Mean of tokens / budget.
        redundancy: Redundant words / words, pooled over queries.
        violations: Outputs over budget (counted independently).
        latency_p50_ms: Median latency.
        latency_p95_ms: 95th percentile latency (nearest rank).

    Example:
        >>> s = result.summary("qa", 300, "hard")
        >>> s.answer_retention, s.middle_share
    """

    strategy: str
    budget: int
    subset: Subset
    queries: int
    answerable: int
    answer_retention: float | None
    chunk_retention: float | None
    position_mean: float | None
    middle_share: float | None
    expected_accuracy: float | None
    tokens_mean: float | None
    utilisation: float | None
    redundancy: float | None
    violations: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(results: Sequence[QueryResult], *, subset: Subset = "all") -> list[Summary]:
    """Aggregate results per (strategy, budget), in first-seen order, over ``subset``.

    Example:
        >>> [s.answer_retention for s in summarize(result.results, subset="hard")]
    """
    groups: dict[tuple[str, int], list[QueryResult]] = {}
    for r in results:
        if subset == "hard" and not r.hard:
            continue
        groups.setdefault((r.strategy, r.budget), []).append(r)
    out = []
    for (strategy, budget), rs in groups.items():
        answerable = [r for r in rs if r.answerable]
        placed = [r for r in rs if r.position is not None]
        latencies = [r.latency_ms for r in rs]
        out.append(
            Summary(
                strategy=strategy,
                budget=budget,
                subset=subset,
                queries=len(rs),
                answerable=len(answerable),
                answer_retention=_share(sum(r.answer_kept for r in answerable), len(answerable)),
                chunk_retention=_share(
                    sum(r.answer_chunks_kept for r in rs), sum(r.answer_chunks for r in rs)
                ),
                position_mean=_mean([r.position for r in placed if r.position is not None]),
                middle_share=_share(sum(bool(r.middle) for r in placed), len(placed)),
                expected_accuracy=_mean([r.expected_accuracy for r in rs]),
                tokens_mean=_mean([r.tokens for r in rs]),
                utilisation=_mean([r.tokens / r.budget for r in rs]) if budget > 0 else None,
                redundancy=_share(sum(r.redundant_words for r in rs), sum(r.words for r in rs)),
                violations=sum(r.over_budget for r in rs),
                latency_p50_ms=median(latencies),
                latency_p95_ms=percentile(latencies, 95),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Everything one evaluation produced.

    Attributes:
        results: One :class:`QueryResult` per query, strategy and budget,
            sorted by query id, then strategy (in the order given), then budget.
        summaries: :func:`summarize` over ``all`` and ``hard``.
        strategies: Name and description of each strategy that ran.
        skipped: Strategies that could not run, with the reason.
        notes: Strategies that ran without an optional resource, and what they lacked.
        budgets: The budgets.
        meta: Query counts, tokenizer, prior.
        reader: What a reader model answered (:func:`~contextwright.eval.reader.evaluate_reader`), if asked.

    Example:
        >>> result = evaluate(queries, ["naive", "qa"], [300, 1000])
        >>> result.summary("naive", 300).utilisation, result.skipped, len(result.results)
    """

    results: tuple[QueryResult, ...]
    summaries: tuple[Summary, ...]
    strategies: tuple[tuple[str, dict[str, Any]], ...]
    skipped: Mapping[str, str]
    budgets: tuple[int, ...]
    notes: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    reader: ReaderResult | None = None

    def summary(self, strategy: str, budget: int, subset: Subset = "all") -> Summary:
        """The summary of one strategy at one budget.

        Raises:
            KeyError: when that strategy or budget was not evaluated.
        """
        for s in self.summaries:
            if (s.strategy, s.budget, s.subset) == (strategy, budget, subset):
                return s
        raise KeyError(f"no summary for strategy {strategy!r} at budget {budget} ({subset})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: meta, strategies, skipped, summaries and per-query results."""
        return {
            "meta": dict(self.meta),
            "budgets": list(self.budgets),
            "strategies": [{"name": n, **d} for n, d in self.strategies],
            "skipped": dict(self.skipped),
            "notes": dict(self.notes),
            "summaries": [s.to_dict() for s in self.summaries],
            "results": [r.to_dict() for r in self.results],
            "reader": self.reader.to_dict() if self.reader is not None else None,
        }


def open_corpus_store(path: str | Path) -> Any:
    """An in-memory SQLite chunk store loaded from a chunk corpus JSONL(.gz).

    Raises:
        ConfigError: when the stores module is not available.
    """
    try:
        from contextwright.stores import SQLiteStore
    except ImportError:  # pragma: no cover - the module ships with the package
        raise ConfigError("a corpus store needs contextwright.stores, which this install lacks.") from None
    store = SQLiteStore(":memory:")
    store.load_jsonl(path)
    return store


def _private(spec: str | Tokenizer) -> CachedTokenizer:
    # A count cache of our own: the runs clear it (cold latencies) and must not clear the caller's
    # (contextwright.clear_caches() would: it empties every tokenizer's counts).
    return CachedTokenizer(get_tokenizer(spec).base)


# -- worker processes ---------------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


class _Relay(logging.Handler):
    """Hands a worker's log record to the parent's logger of the same name (and so its handlers)."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _init_worker(
    strategies: list[Strategy],
    budgets: list[int],
    tokenizer: str | Tokenizer,
    prior: PositionalPrior,
    resources: dict[str, Any],
    corpus: str | None,
    log_queue: Any,
    log_level: int,
) -> None:
    # Records go back to the parent, which logs them as if they had happened there.
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(log_queue)]
    root.setLevel(log_level)
    res = dict(resources)
    if corpus is not None:
        res["store"] = open_corpus_store(corpus)
    _WORKER.update(
        strategies=strategies, budgets=budgets, tokenizer=_private(tokenizer), prior=prior, resources=res
    )


def _work(query: EvalQuery) -> list[QueryResult]:
    w = _WORKER
    return evaluate_query(
        query,
        w["strategies"],
        w["budgets"],
        tokenizer=w["tokenizer"],
        prior=w["prior"],
        resources=w["resources"],
    )


class _EvalCall:
    """What each Ray actor holds for ``evaluate(engine="ray")``: the strategies, a private tokenizer, the store."""

    def __init__(
        self,
        strategies: list[Strategy],
        budgets: list[int],
        tokenizer: str | Tokenizer,
        prior: PositionalPrior,
        resources: dict[str, Any],
        corpus: str | None,
    ) -> None:
        res = dict(resources)
        if corpus is not None:
            res["store"] = open_corpus_store(corpus)
        self.strategies, self.budgets, self.prior, self.resources = strategies, budgets, prior, res
        self.tokenizer = _private(tokenizer)

    def __call__(self, query: EvalQuery) -> list[QueryResult]:
        return evaluate_query(
            query,
            self.strategies,
            self.budgets,
            tokenizer=self.tokenizer,
            prior=self.prior,
            resources=self.resources,
        )


def evaluate(
    queries: Sequence[EvalQuery],
    strategies: Sequence[str | Path | Strategy] | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    tokenizer: str | Tokenizer = "cl100k_base",
    prior: str | Path | Mapping[str, Any] | PositionalPrior | None = None,
    resources: Mapping[str, Any] | None = None,
    corpus: str | Path | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    engine: Literal["local", "ray"] = "local",
) -> EvalResult:
    """Evaluate strategies on labelled queries at each budget.

    Args:
        queries: From :func:`~contextwright.eval.data.load_queries`.
        strategies: Names (``naive``, ``greedy``, presets), config files or
            :class:`~contextwright.eval.strategies.Strategy` objects; default:
            naive, greedy and every preset.
        budgets: Documents budgets in tokens.
        tokenizer: The tokenizer that defines the budget (a name, so worker
            processes can load it too).
        prior: The positional prior: ``None`` for Liu et al. 2024, a file or mapping.
        resources: Things stages may require (``store=...``); with ``workers > 1``
            they must be picklable.
        corpus: A chunk corpus JSONL(.gz); opens an in-memory SQLite store as
            the ``store`` resource (in each worker).
        workers: Processes (or Ray actors); ``1`` runs in this process. Worker processes
            are spawned: they need a main module they can import again (a script with an
            ``if __name__ == "__main__":`` guard, ``python -m``, or an interactive session);
            code piped to ``python -`` or an unguarded script runs in this process instead,
            with a warning.
        progress: Called with ``(queries done, total)`` after each query.
        engine: ``local`` (processes) or ``ray``: the queries run on Ray Data
            actors through :func:`contextwright.batch.ray_map` (``RAY_ADDRESS``
            selects a cluster); results are the same.

    Returns:
        The per-query results and their summaries. A strategy that needs a
        resource the evaluation lacks is not run; it is listed in ``skipped``.

    Raises:
        ConfigError: for a bad budget, worker count, strategy or prior.
    """
    _check_options(budgets, workers, engine)
    budgets = tuple(dict.fromkeys(budgets))
    prior_obj = load_prior(prior)
    tok = _private(tokenizer)
    res: dict[str, Any] = dict(resources or {})
    if corpus is not None:
        res["store"] = open_corpus_store(corpus)
    runnable, skipped, notes = _runnable(strategies, res)
    total = len(queries)
    collected: list[QueryResult] = []
    workers = _workers_here(workers) if engine == "local" and total > 1 else workers
    if engine == "ray":
        from contextwright.batch import ray_map

        shipped = {k: v for k, v in res.items() if not (corpus is not None and k == "store")}
        args = (runnable, list(budgets), tokenizer, prior_obj, shipped, str(corpus) if corpus else None)
        for done, rs in enumerate(ray_map(queries, _EvalCall, args, workers=workers, batch_size=4), 1):
            collected.extend(rs)
            if progress is not None:
                progress(done, total)
    elif workers == 1 or total <= 1:
        for done, query in enumerate(queries, 1):
            collected.extend(
                evaluate_query(query, runnable, budgets, tokenizer=tok, prior=prior_obj, resources=res)
            )
            if progress is not None:
                progress(done, total)
    else:
        shipped = {k: v for k, v in res.items() if not (corpus is not None and k == "store")}
        args = (runnable, list(budgets), tokenizer, prior_obj, shipped, str(corpus) if corpus else None)
        collected.extend(_in_processes(queries, args, workers, progress))
    order = {n: i for i, n in enumerate(s.name for s in runnable)}
    collected.sort(key=lambda r: (r.query_id, order[r.strategy], r.budget))
    summaries = tuple(
        sorted(
            (*summarize(collected, subset="all"), *summarize(collected, subset="hard")),
            key=lambda s: (s.subset != "all", order[s.strategy], budgets.index(s.budget)),
        )
    )
    return EvalResult(
        results=tuple(collected),
        summaries=summaries,
        strategies=tuple((s.name, s.describe()) for s in runnable),
        skipped=skipped,
        notes=notes,
        budgets=budgets,
        meta={
            "queries": total,
            "answerable": sum(q.answerable for q in queries),
            "hard": sum(q.hard for q in queries),
            "tokenizer": tok.name,
            "prior": prior_obj.to_dict(),
        },
    )


def _check_options(budgets: Sequence[int], workers: int, engine: str) -> None:
    """Raise :class:`ConfigError` for budgets, workers or an engine the run cannot use."""
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in budgets):
        raise ConfigError(
            f"budgets must be non-negative integers; got {list(budgets)!r}. Example: 300,500,1000."
        )
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer; got {workers!r}.")
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine must be 'local' or 'ray'; got {engine!r}.")


def _runnable(
    strategies: Sequence[str | Path | Strategy] | None, res: Mapping[str, Any]
) -> tuple[list[Strategy], dict[str, str], dict[str, str]]:
    """The strategies that can run with these resources, those skipped (with why), and notes on
    those that run without an optional resource.

    Raises:
        ConfigError: for no strategies, or two with one name.
    """
    built = [build_strategy(s) for s in (default_strategies() if strategies is None else strategies)]
    if not built:
        raise ConfigError("no strategies to evaluate; pass names such as naive, greedy, qa, or config files.")
    names = [s.name for s in built]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"strategy names must be unique; {', '.join(dupes)} appear more than once.")
    skipped: dict[str, str] = {}
    notes: dict[str, str] = {}
    runnable: list[Strategy] = []
    for s in built:
        reason = s.missing(res)
        if reason:
            skipped[s.name] = reason
            logger.info("strategy skipped", extra={"strategy": s.name, "reason": reason})
            continue
        runnable.append(s)
        note = s.degraded(res)
        if note:
            notes[s.name] = note
    return runnable, skipped, notes


def _workers_here(workers: int) -> int:
    """``workers``, or 1 with one warning when this program cannot spawn worker processes."""
    if workers == 1:
        return 1
    reason = spawn_blocker()
    if reason is None:
        return workers
    logger.warning(
        "workers=%s: %s; evaluating in this process instead (same results). To use workers, run "
        'a script file with the call under `if __name__ == "__main__":`',
        workers,
        reason,
        extra={"workers": workers},
    )
    return 1


def _in_processes(
    queries: Sequence[EvalQuery],
    args: tuple[Any, ...],
    workers: int,
    progress: Callable[[int, int], None] | None,
) -> list[QueryResult]:
    """Each query's results from a pool of spawned worker processes (their logs relayed here)."""
    total = len(queries)
    collected: list[QueryResult] = []
    try:
        pickle.dumps(args)
    except Exception as exc:
        raise ConfigError(
            f"workers={workers} needs picklable strategies, tokenizer and resources ({exc}); "
            "use workers=1, a tokenizer name, and corpus= instead of a store object."
        ) from None
    ctx = multiprocessing.get_context("spawn")
    chunksize = max(1, total // (workers * 8))
    log_queue = ctx.Queue()
    listener = logging.handlers.QueueListener(log_queue, _Relay())
    listener.start()
    level = logging.getLogger("contextwright").getEffectiveLevel()
    try:
        with ctx.Pool(
            min(workers, total), initializer=_init_worker, initargs=(*args, log_queue, level)
        ) as pool:
            for done, rs in enumerate(pool.imap_unordered(_work, queries, chunksize=chunksize), 1):
                collected.extend(rs)
                if progress is not None:
                    progress(done, total)
    finally:
        listener.stop()
    return collected
