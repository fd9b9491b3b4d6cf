"""A real model reads the context: answer accuracy per strategy, against any OpenAI-compatible endpoint.

Retention says the answer is *in* the context; only a reader says whether a
model *finds* it there. :func:`evaluate_reader` asks the model (through
:class:`~contextwright.llm.ChatClient`) each question from each strategy's
context at each budget, plus two references:

* ``closed-book``: the question alone, no context (the floor: what the model
  knows by heart);
* ``oracle``: the first answer-bearing chunk alone (the ceiling of this
  reader with perfect retrieval and assembly; answerable queries only).

A pipeline strategy's messages are ``ctx.messages(system=...)`` of the
context it assembled; a baseline's (``naive``, ``greedy``, ``oracle``) are
built the same way from its text (:func:`~contextwright.render.messages.build_messages`).

Scoring is the open-QA accuracy of Liu et al. and NQ: a reply is correct when
some gold answer, normalized (lower-case, no punctuation, no articles), occurs
in the normalized reply as whole words (:func:`~contextwright.eval.metrics.answer_in_text`);
``exact`` is the stricter exact match of the whole reply. Citations ``[n]`` in
the reply are resolved with :func:`~contextwright.render.cite.resolve_citations`;
citation precision is the share of cited numbers whose block contains a gold
answer (a number that matches no block counts as imprecise).

Per strategy and budget: accuracy with a 95 % Wilson interval, the delta
against ``naive`` at the same budget on the queries both answered, with a
paired bootstrap interval and McNemar's exact p-value, tokens sent, and the
reader's latency. A request that fails (HTTP error after retries, timeout,
a context over the model's window, an empty or malformed reply) is recorded
per query with its error and left out of the accuracy, never scored as wrong;
an unreachable endpoint or a rejected key stops the run with a clear error
before any query is asked.

Replies are cached in a SQLite file keyed by (endpoint, model, messages,
generation settings): a re-run, or a run resumed after Ctrl-C, sends only what
is not cached yet. Failures are not cached, so a resumed run retries them.

Example:
    >>> from contextwright.eval import load_queries
    >>> from contextwright.eval.reader import Reader, evaluate_reader
    >>> reader = Reader("http://127.0.0.1:8080/v1", model="smollm2", cache="reader.sqlite")
    >>> result = evaluate_reader(load_queries("dev.jsonl.gz", limit=20), ["naive", "qa"], [500], reader=reader)
    >>> result.summary("qa", 500).accuracy
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contextwright.errors import ConfigError, LLMError
from contextwright.eval.data import EvalQuery
from contextwright.eval.metrics import (
    answer_in_text,
    mcnemar_exact,
    median,
    normalize_answer,
    paired_bootstrap_delta,
    percentile,
    wilson_interval,
)
from contextwright.eval.priors import PositionalPrior
from contextwright.eval.strategies import Strategy, build_strategy
from contextwright.llm import ChatClient, ChatReply
from contextwright.render.messages import Message, build_messages
from contextwright.tokens import CachedTokenizer, Tokenizer, get_tokenizer

__all__ = [
    "CLOSED_BOOK",
    "CLOSED_BOOK_PROMPT",
    "ORACLE",
    "PositionSweep",
    "Reader",
    "ReaderAnswer",
    "ReaderResult",
    "ReaderSummary",
    "default_cache_path",
    "evaluate_reader",
    "position_sweep",
    "score_reply",
]

logger = logging.getLogger(__name__)

CLOSED_BOOK = "closed-book"
ORACLE = "oracle"
#: The system prompt of the closed-book run (the grounded prompts talk about sources it does not have).
CLOSED_BOOK_PROMPT = "Answer the question in a few words."
#: The suffix asked of every reader: short answers score fairly and cost little.
BRIEF = " Answer in a few words."
Progress = Callable[[int, int], None]


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/contextwright/reader.sqlite`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextwright" / "reader.sqlite"


class _Cache:
    """Replies on disk: one SQLite row per request key, committed as each reply arrives."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = str(path) if path is not None else ":memory:"
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, endpoint TEXT, model TEXT, "
                "reply TEXT NOT NULL, created REAL)"
            )
        except sqlite3.Error as exc:
            raise ConfigError(
                f"cannot open the reader cache {self.path!r}: {exc}. Pass --reader-cache with a writable path."
            ) from None
        self._lock = threading.Lock()

    def get(self, key: str) -> ChatReply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return ChatReply(**json.loads(row[0]))

    def put(self, key: str, endpoint: str, model: str, reply: ChatReply) -> None:
        data = json.dumps(asdict(reply), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                (key, endpoint, model, data, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Reader:
    """A model that answers questions, with a reply cache on disk.

    Args:
        base_url: The OpenAI-compatible API root (``.../v1``).
        model: The model name the endpoint expects.
        api_key: Sent as a bearer token when given (read it from the environment, never a file).
        cache: SQLite file for replies (``None``: in memory, nothing kept).
        max_tokens: The most tokens per answer (short answers: the metric needs a few words).
        temperature: Sampling temperature (0: greedy, reproducible on most servers).
        max_concurrency: Requests in flight at once.
        timeout_s: Timeout of one request.
        retries: Retries with exponential backoff on 429/5xx/timeouts/connection errors.
        system: The grounded system prompt for contexts (a name in
            :data:`~contextwright.render.messages.PROMPTS` or the text).
        client: A ready :class:`~contextwright.llm.ChatClient` (its URL and model are used).
        offline: Answer from the cache only: a request not in it fails (recorded per query)
            and nothing is sent, e.g. to re-print the report of a finished or interrupted run.
        cache_endpoint: What identifies the endpoint in the cache key (default: its URL). A
            stable label keeps the cache valid for a local server whose port changes per run.

    Example:
        >>> Reader("http://127.0.0.1:11434/v1", model="llama3.1", cache="reader.sqlite")
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str | None = None,
        cache: str | Path | None = None,
        max_tokens: int = 32,
        temperature: float = 0.0,
        max_concurrency: int = 4,
        timeout_s: float = 120.0,
        retries: int = 3,
        system: str = "default",
        client: ChatClient | None = None,
        offline: bool = False,
        cache_endpoint: str | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer; got {max_tokens!r}. Example: 32.")
        self.client = client or ChatClient(
            base_url,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
            max_concurrency=max_concurrency,
        )
        self.endpoint = self.client.url
        self.cache_endpoint = cache_endpoint or self.endpoint
        self.model = self.client.model
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.max_concurrency = self.client.max_concurrency
        self.system = system
        self._cache = _Cache(cache)
        self.cache_path = self._cache.path
        self._checked = False
        self.offline = offline

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool and the cache."""
        self.client.close()
        self._cache.close()

    def key(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The cache key of a request: endpoint, model, messages and generation settings."""
        blob = json.dumps(
            {
                "endpoint": self.cache_endpoint,
                "model": self.model,
                "messages": [dict(m) for m in messages],
                "max_tokens": self.max_tokens,
                "temperature": self.temperature,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def cached(self, messages: Sequence[Mapping[str, str]]) -> ChatReply | None:
        """The cached reply to ``messages``, or ``None``."""
        return self._cache.get(self.key(messages))

    def check(self) -> None:
        """Send one tiny request; stop early on an unreachable endpoint or a rejected key.

        Raises:
            LLMError: for a connection failure, 401/403/404, naming the endpoint and the fix.
        """
        if self._checked or self.offline:
            return
        try:
            self.client.chat([{"role": "user", "content": "Say OK."}], max_tokens=1, temperature=0.0)
        except LLMError as exc:
            if exc.status is None or exc.status in (401, 403, 404):
                raise LLMError(
                    f"the reader endpoint {self.endpoint} (model {self.model!r}) cannot be used: {exc}",
                    status=exc.status,
                ) from None
            # Any other status (a 400 for the probe itself, 5xx after retries) is left to the queries.
        self._checked = True

    def ask(self, messages: Sequence[Mapping[str, str]]) -> tuple[ChatReply, bool]:
        """The reply to ``messages`` and whether it came from the cache.

        Raises:
            LLMError: when the request fails or the reply is empty.
        """
        key = self.key(messages)
        hit = self._cache.get(key)
        if hit is not None:
            return hit, True
        if self.offline:
            raise LLMError("not in the reply cache, and the reader is offline (nothing was sent)")
        reply = self.client.chat(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if not reply.content.strip():
            raise LLMError(
                f"the model returned an empty reply (finish_reason={reply.finish_reason!r}); "
                "check the chat template and max_tokens"
            )
        self._cache.put(key, self.endpoint, self.model, reply)
        return reply, False

    def ask_many(
        self, requests: Sequence[Sequence[Mapping[str, str]]], *, progress: Progress | None = None
    ) -> list[tuple[ChatReply, bool] | LLMError]:
        """:meth:`ask` for each request, ``max_concurrency`` at once; identical requests are sent once.

        Ctrl-C cancels what has not started, waits for the requests in flight
        (their replies go to the cache; a second Ctrl-C stops waiting) and
        re-raises; every reply that arrived is in the cache, so the same call
        resumes from there.
        """
        keys = [self.key(m) for m in requests]
        out: dict[str, tuple[ChatReply, bool] | LLMError] = {}
        uncached: dict[str, Sequence[Mapping[str, str]]] = {}
        for k, m in zip(keys, requests, strict=True):
            if k in out or k in uncached:
                continue
            hit = self._cache.get(k)
            if hit is not None:
                out[k] = (hit, True)
            else:
                uncached[k] = m
        total = len(out) + len(uncached)
        if progress is not None:
            progress(len(out), total)
        if uncached:
            self.check()

            def one(messages: Sequence[Mapping[str, str]]) -> tuple[ChatReply, bool] | LLMError:
                try:
                    return self.ask(messages)
                except LLMError as exc:
                    return exc

            pool = ThreadPoolExecutor(max_workers=self.max_concurrency)
            try:
                pending: dict[Future[tuple[ChatReply, bool] | LLMError], str] = {}
                items = iter(uncached.items())
                # Submit a bounded window so Ctrl-C leaves little in flight.
                for k, m in items:
                    pending[pool.submit(one, m)] = k
                    if len(pending) >= 2 * self.max_concurrency:
                        break
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        out[pending.pop(fut)] = fut.result()
                        if progress is not None:
                            progress(len(out), total)
                    for k, m in items:
                        pending[pool.submit(one, m)] = k
                        if len(pending) >= 2 * self.max_concurrency:
                            break
            except BaseException:
                # Ctrl-C: drop what has not started, let the requests in flight land in the cache
                # (at most max_concurrency, each bounded by timeout_s), so the cache is complete
                # when the caller sees the interrupt; a second Ctrl-C stops waiting.
                try:
                    pool.shutdown(wait=True, cancel_futures=True)
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
        return [out[k] for k in keys]


@dataclass(frozen=True, slots=True)
class ReaderAnswer:
    """One reply to one question from one strategy's context, scored.

    Attributes:
        query_id: The query.
        strategy: The strategy (or ``closed-book``, ``oracle``).
        budget: The documents budget (0 for closed-book and oracle, which have none).
        ok: The reader replied; ``False`` means ``error`` says why and the
            query is left out of this strategy's accuracy.
        answer: The reply text.
        correct: A gold answer occurs in the reply (normalized, whole words).
        exact: The normalized reply equals a normalized gold answer.
        cites: The reply cites at least one ``[n]``.
        cited: Numbers cited.
        cited_correct: Cited numbers whose block contains a gold answer.
        tokens_sent: Tokens of the messages' contents, with the evaluation's tokenizer.
        prompt_tokens: Prompt tokens the endpoint counted (chat template included), when it reports them.
        latency_ms: The request's wall time (of the original request when cached).
        cached: The reply came from the cache.
        finish_reason: As the endpoint reported (``length``: cut at ``max_tokens``).
        error: Why there is no reply.
        numbered: The context numbered its blocks, so a citation could be scored.
    """

    query_id: str
    strategy: str
    budget: int
    ok: bool
    answer: str = ""
    correct: bool = False
    exact: bool = False
    cites: bool = False
    cited: int = 0
    cited_correct: int = 0
    tokens_sent: int = 0
    prompt_tokens: int | None = None
    latency_ms: float | None = None
    cached: bool = False
    finish_reason: str | None = None
    error: str | None = None
    numbered: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_reply(
    answer: str, golds: Sequence[str], blocks: Sequence[str] = (), *, numbered: bool = False
) -> dict[str, Any]:
    """Score a reply: ``correct``, ``exact``, ``cites``, ``cited``, ``cited_correct``.

    Args:
        answer: The reply.
        golds: The accepted answers.
        blocks: The texts of the context's blocks, ``blocks[n-1]`` for ``[n]``.
        numbered: The context showed ``[n]`` numbers (citations are scored only then).

    Example:
        >>> score_reply("It was Paris [2].", ["Paris"], ["Rome is old.", "Paris is big."], numbered=True)
        {'correct': True, 'exact': False, 'cites': True, 'cited': 1, 'cited_correct': 1}
    """
    from contextwright.render.cite import parse_citation_numbers

    norm = normalize_answer(answer)
    numbers = parse_citation_numbers(answer) if numbered else []
    cited_correct = sum(1 for n in numbers if 1 <= n <= len(blocks) and answer_in_text(blocks[n - 1], golds))
    return {
        "correct": answer_in_text(answer, golds),
        "exact": bool(norm) and any(norm == normalize_answer(g) for g in golds),
        "cites": bool(numbers),
        "cited": len(numbers),
        "cited_correct": cited_correct,
    }


@dataclass(frozen=True, slots=True)
class ReaderSummary:
    """Reader metrics of one strategy at one budget.

    Shares are in 0-1, ``None`` when their denominator is empty.

    Attributes:
        strategy: The strategy (or ``closed-book``, ``oracle``).
        budget: The budget (0 for closed-book and oracle).
        queries: Questions asked.
        answered: Questions the reader replied to (the accuracy's denominator).
        failed: Questions without a reply (errors are in the per-query answers).
        accuracy: Correct / answered.
        accuracy_low: Lower end of the 95 % Wilson interval.
        accuracy_high: Upper end.
        exact: Exact match / answered.
        delta: Accuracy minus naive's at the same budget, on queries both answered.
        delta_low: Lower end of the 95 % paired bootstrap interval of the delta.
        delta_high: Upper end.
        p_value: McNemar's exact two-sided p-value against naive.
        paired: Queries in the paired comparison.
        cite_share: Replies that cite at least one ``[n]`` / answered, over numbered contexts
            (``None`` for a strategy whose context has no numbers).
        cite_precision: Cited numbers whose block holds a gold answer / cited numbers.
        tokens_mean: Mean tokens sent (messages' contents, evaluation tokenizer).
        prompt_tokens_mean: Mean prompt tokens the endpoint counted (``None`` when unreported).
        latency_p50_ms: Median reader latency.
        latency_p95_ms: 95th percentile (nearest rank).
    """

    strategy: str
    budget: int
    queries: int
    answered: int
    failed: int
    accuracy: float | None
    accuracy_low: float | None
    accuracy_high: float | None
    exact: float | None
    delta: float | None
    delta_low: float | None
    delta_high: float | None
    p_value: float | None
    paired: int
    cite_share: float | None
    cite_precision: float | None
    tokens_mean: float | None
    prompt_tokens_mean: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PositionSweep:
    """Accuracy by the answer chunk's position among the same k chunks (Liu et al.'s experiment).

    Attributes:
        k: Chunks in each context.
        queries: Queries swept (answerable ones with at least k chunks).
        accuracy: Accuracy (0-1) with the answer chunk at position 1..k.
        low: Lower ends of the 95 % Wilson intervals.
        high: Upper ends.
        answered: Replies per position (failures excluded).
        closed_book: Closed-book accuracy (0-1) on the same queries, when measured.
        model: The reader model.
    """

    k: int
    queries: int
    accuracy: tuple[float | None, ...]
    low: tuple[float | None, ...]
    high: tuple[float | None, ...]
    answered: tuple[int, ...]
    closed_book: float | None
    model: str

    def prior(self) -> PositionalPrior:
        """The curve as a :class:`~contextwright.eval.priors.PositionalPrior` (positions with replies)."""
        pts = [
            ((i / (self.k - 1)) if self.k > 1 else 0.0, 100 * a)
            for i, a in enumerate(self.accuracy)
            if a is not None
        ]
        if not pts:
            raise ConfigError("the position sweep has no replies, so it gives no prior.")
        return PositionalPrior(
            name=f"{self.model}-k{self.k}",
            points=tuple(pts),
            closed_book=100 * (self.closed_book or 0.0),
            source=(
                f"contextwright eval --positions {self.k}: {self.model}, {self.queries} queries, "
                "answer chunk at each position among the same chunks"
            ),
        )

    def prior_dict(self) -> dict[str, Any]:
        """A prior file's content (``--prior`` reads it back), with 1-based positions."""
        positions = [i + 1 for i, a in enumerate(self.accuracy) if a is not None]
        prior = self.prior()
        return {
            "name": prior.name,
            "positions": positions,
            "num_documents": self.k,
            "accuracy": [round(y, 2) for _, y in prior.points],
            "closed_book": round(prior.closed_book, 2),
            "source": prior.source,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ReaderResult:
    """Everything one reader evaluation produced.

    Attributes:
        answers: One :class:`ReaderAnswer` per query, strategy and budget.
        summaries: One :class:`ReaderSummary` per strategy and budget.
        sweep: The position sweep, when asked for.
        meta: Endpoint, model, generation settings, cache, request counts.
    """

    answers: tuple[ReaderAnswer, ...]
    summaries: tuple[ReaderSummary, ...]
    sweep: PositionSweep | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def summary(self, strategy: str, budget: int = 0) -> ReaderSummary:
        """The summary of one strategy at one budget (0 for closed-book and oracle).

        Raises:
            KeyError: when that strategy or budget was not evaluated.
        """
        for s in self.summaries:
            if (s.strategy, s.budget) == (strategy, budget):
                return s
        raise KeyError(f"no reader summary for strategy {strategy!r} at budget {budget}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "meta": dict(self.meta),
            "summaries": [s.to_dict() for s in self.summaries],
            "sweep": self.sweep.to_dict() if self.sweep else None,
            "prior": self.sweep.prior_dict() if self.sweep and any(self.sweep.answered) else None,
            "answers": [a.to_dict() for a in self.answers],
        }


# -- running -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Request:
    query: EvalQuery
    strategy: str
    budget: int
    messages: list[dict[str, str]]
    blocks: tuple[str, ...]
    numbered: bool
    error: str | None = None


def _plain(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def _tokens_sent(messages: Sequence[Mapping[str, str]], tokenizer: Tokenizer | CachedTokenizer) -> int:
    return sum(tokenizer.count(m["content"]) for m in messages)


def _system(reader: Reader) -> str:
    from contextwright.render.messages import system_prompt

    return system_prompt(reader.system) + BRIEF


def _strategy_request(
    query: EvalQuery,
    strategy: Strategy,
    budget: int,
    *,
    tokenizer: CachedTokenizer,
    resources: Mapping[str, Any],
    system: str,
) -> _Request:
    try:
        out = strategy.run(
            query.question, query.chunks, budget=budget, tokenizer=tokenizer, resources=resources
        )
    except Exception as exc:  # a strategy failing on one query is recorded, not fatal
        logger.warning("strategy failed", extra={"strategy": strategy.name, "query_id": query.id})
        return _Request(query, strategy.name, budget, [], (), False, error=f"assembly failed: {exc}")
    ctx = out.context
    if ctx is not None:
        messages = _plain(ctx.messages(query.question, system=system))
        # Citations are scored only where the context shows `[n]` labels (not `minimal`'s bare blocks).
        numbered = bool(ctx.citations) and ctx.format is not None and ctx.format.citation_style() == "[{n}]"
        return _Request(query, strategy.name, budget, messages, out.blocks, numbered)
    messages = _plain(build_messages(out.text, query.question, system=system))
    return _Request(query, strategy.name, budget, messages, out.blocks, False)


def _oracle_request(query: EvalQuery, *, system: str) -> _Request | None:
    if query.first_answer_rank is None:
        return None
    chunk = query.chunks[query.first_answer_rank]
    text = str(chunk.get("text", ""))
    messages = _plain(build_messages(text, query.question, system=system))
    return _Request(query, ORACLE, 0, messages, (text,), False)


def _closed_request(query: EvalQuery) -> _Request:
    messages = [
        {"role": "system", "content": CLOSED_BOOK_PROMPT},
        {"role": "user", "content": f"Question: {query.question}"},
    ]
    return _Request(query, CLOSED_BOOK, 0, messages, (), False)


def _answer(
    req: _Request, got: tuple[ChatReply, bool] | LLMError | None, tokenizer: Tokenizer | CachedTokenizer
) -> ReaderAnswer:
    q, s, b = req.query.id, req.strategy, req.budget
    if req.error is not None or got is None:
        return ReaderAnswer(q, s, b, ok=False, error=req.error or "not asked")
    sent = _tokens_sent(req.messages, tokenizer)
    if isinstance(got, LLMError):
        return ReaderAnswer(q, s, b, ok=False, tokens_sent=sent, error=str(got))
    reply, cached = got
    sc = score_reply(reply.content, req.query.answers, req.blocks, numbered=req.numbered)
    return ReaderAnswer(
        q,
        s,
        b,
        ok=True,
        answer=reply.content,
        correct=bool(sc["correct"]),
        exact=bool(sc["exact"]),
        cites=bool(sc["cites"]),
        cited=int(sc["cited"]),
        cited_correct=int(sc["cited_correct"]),
        tokens_sent=sent,
        prompt_tokens=reply.prompt_tokens,
        latency_ms=reply.latency_ms,
        cached=cached,
        finish_reason=reply.finish_reason,
        numbered=req.numbered,
    )


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize_reader(answers: Sequence[ReaderAnswer], *, baseline: str = "naive") -> list[ReaderSummary]:
    """Aggregate per (strategy, budget) in first-seen order, with paired comparisons against ``baseline``.

    Closed-book and oracle (budget 0) are compared with the baseline at each
    budget it ran; their row carries the comparison with the smallest budget.
    """
    groups: dict[tuple[str, int], list[ReaderAnswer]] = {}
    for a in answers:
        groups.setdefault((a.strategy, a.budget), []).append(a)
    base_budgets = sorted(b for s, b in groups if s == baseline)
    out = []
    for (strategy, budget), rows in groups.items():
        ok = [a for a in rows if a.ok]
        k = sum(a.correct for a in ok)
        ci = wilson_interval(k, len(ok))
        delta = low = high = p = None
        paired = 0
        against = budget if budget in base_budgets else (base_budgets[0] if base_budgets else None)
        if strategy != baseline and against is not None:
            base = {a.query_id: a for a in groups[(baseline, against)] if a.ok}
            pairs = [(base[a.query_id].correct, a.correct) for a in ok if a.query_id in base]
            paired = len(pairs)
            boot = paired_bootstrap_delta([x for x, _ in pairs], [y for _, y in pairs])
            if boot is not None:
                delta, low, high = boot
                b = sum(1 for x, y in pairs if x and not y)
                c = sum(1 for x, y in pairs if y and not x)
                p = mcnemar_exact(b, c)
        numbered = [a for a in ok if a.numbered]
        cited = sum(a.cited for a in ok)
        latencies = [a.latency_ms for a in ok if a.latency_ms is not None]
        prompt = [a.prompt_tokens for a in ok if a.prompt_tokens is not None]
        sent = [a.tokens_sent for a in rows if a.ok or a.tokens_sent]
        out.append(
            ReaderSummary(
                strategy=strategy,
                budget=budget,
                queries=len(rows),
                answered=len(ok),
                failed=len(rows) - len(ok),
                accuracy=_share(k, len(ok)),
                accuracy_low=ci[0] if ci else None,
                accuracy_high=ci[1] if ci else None,
                exact=_share(sum(a.exact for a in ok), len(ok)),
                delta=delta,
                delta_low=low,
                delta_high=high,
                p_value=p,
                paired=paired,
                cite_share=_share(sum(a.cites for a in numbered), len(numbered)),
                cite_precision=_share(sum(a.cited_correct for a in ok), cited),
                tokens_mean=_share(sum(sent), len(sent)),
                prompt_tokens_mean=_share(sum(prompt), len(prompt)),
                latency_p50_ms=median(latencies),
                latency_p95_ms=percentile(latencies, 95),
            )
        )
    return out


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
        progress: Called with ``(replies done, total)`` as replies arrive.

    Raises:
        LLMError: when the endpoint is unreachable or rejects the key (checked before the first query).
        ConfigError: for a bad strategy or budget.
    """
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise ConfigError(f"budgets must be positive integers; got {list(budgets)!r}. Example: 500,1000.")
    built = [build_strategy(s) for s in strategies]
    res = dict(resources or {})
    tok = CachedTokenizer(get_tokenizer(tokenizer).base)
    system = _system(reader)
    skipped = {s.name: reason for s in built if (reason := s.missing(res))}
    for name, reason in skipped.items():
        logger.warning("strategy skipped by the reader", extra={"strategy": name, "reason": reason})
    requests: list[_Request] = []
    for query in queries:
        for strategy in built:
            if strategy.name in skipped:
                continue
            for budget in dict.fromkeys(budgets):
                requests.append(
                    _strategy_request(query, strategy, budget, tokenizer=tok, resources=res, system=system)
                )
        if closed_book:
            requests.append(_closed_request(query))
        if oracle:
            req = _oracle_request(query, system=system)
            if req is not None:
                requests.append(req)
    sweep_requests = _sweep_requests(queries, positions, system=system) if positions else []
    asked = [r for r in (*requests, *sweep_requests) if r.error is None]
    replies = reader.ask_many([r.messages for r in asked], progress=progress)
    by_id = {id(r): g for r, g in zip(asked, replies, strict=True)}
    answers = tuple(_answer(r, by_id.get(id(r)), tok) for r in requests)
    summaries = summarize_reader(answers)
    sweep = None
    if positions:
        sweep_answers = [_answer(r, by_id.get(id(r)), tok) for r in sweep_requests]
        sweep = _sweep_result(sweep_answers, positions, answers, reader.model)
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
            "endpoint": reader.cache_endpoint if reader.offline else reader.endpoint,
            "offline": reader.offline,
            "model": reader.model,
            "max_tokens": reader.max_tokens,
            "temperature": reader.temperature,
            "system": system,
            "closed_book_system": CLOSED_BOOK_PROMPT,
            "cache": reader.cache_path,
            "requests": len(asked),
            "cached": sum(1 for g in replies if not isinstance(g, LLMError) and g[1]),
            "failed": len(failures),
            "queries": len(queries),
            "tokenizer": tok.name,
            "skipped": skipped,
        },
    )


# -- the position sweep ---------------------------------------------------------------------------------


def _render_numbered(texts: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {t}" for i, t in enumerate(texts, 1))


def _sweep_requests(queries: Sequence[EvalQuery], k: int | None, *, system: str) -> list[_Request]:
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
            messages = _plain(build_messages(_render_numbered(texts), query.question, system=system))
            out.append(_Request(query, f"position-{pos + 1}", pos + 1, messages, tuple(texts), True))
    return out


def _sweep_result(
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
    system = _system(reader)
    reqs = _sweep_requests(queries, k, system=system)
    swept = {r.query.id for r in reqs}
    closed = [_closed_request(q) for q in queries if q.id in swept]
    replies = reader.ask_many([r.messages for r in (*reqs, *closed)], progress=progress)
    tok = CachedTokenizer(get_tokenizer("cl100k_base").base)
    answers = [_answer(r, g, tok) for r, g in zip((*reqs, *closed), replies, strict=True)]
    return _sweep_result(answers[: len(reqs)], k, answers[len(reqs) :], reader.model)
