"""What a reader run gives: each answer scored, and per strategy and budget the accuracy with its intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from contextwright.core.errors import ConfigError
from contextwright.eval.metrics import (
    answer_in_text,
    mcnemar_exact,
    median,
    normalize_answer,
    paired_bootstrap_delta,
    percentile,
    wilson_interval,
)
from contextwright.stages.priors import PositionalPrior


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
        bare: The reply is a citation and nothing else (``[1]``, ``[SOURCE 2].``): no answer
            was given, whatever the cited block holds (see :func:`~contextwright.render.cite.bare_citation`).
        reasked: The first reply was a bare citation of one of the context's blocks and the question was
            asked again under the re-ask prompt (``eval --reask-bare``); the fields above are the
            second reply's, and ``tokens_sent``, ``prompt_tokens`` and ``latency_ms`` those of both requests.
        first_answer: The first reply of a re-asked request.
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
    bare: bool = False
    reasked: bool = False
    first_answer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The share of bare-citation replies at which a strategy or a fitted profile misses issue 32's
#: target (under 3 % in every preset): ``eval --reader`` warns, and ``fit`` cautions.
BARE_LIMIT = 0.03


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
        bare_share: Replies that are a citation and nothing else / answered (see
            :func:`~contextwright.render.cite.bare_citation`): a prompt that draws citations instead of answers.
        tokens_mean: Mean tokens sent (messages' contents, evaluation tokenizer).
        prompt_tokens_mean: Mean prompt tokens the endpoint counted (``None`` when unreported).
        latency_p50_ms: Median reader latency.
        latency_p95_ms: 95th percentile (nearest rank).
        reask_share: Replies re-asked because the first was a bare citation of a labelled context
            / answered (``None`` when the run did not re-ask: ``eval --reask-bare``).
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
    bare_share: float | None
    tokens_mean: float | None
    prompt_tokens_mean: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    reask_share: float | None = None

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
        """The curve as a :class:`~contextwright.stages.priors.PositionalPrior` (positions with replies)."""
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


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def paired_outcomes(rows: Sequence[ReaderAnswer], base: Sequence[ReaderAnswer]) -> list[tuple[bool, bool]]:
    """``(baseline right, strategy right)`` for each query that both ``rows`` and ``base`` answered."""
    by_id = {a.query_id: a for a in base if a.ok}
    return [(by_id[a.query_id].correct, a.correct) for a in rows if a.ok and a.query_id in by_id]


def summarize_reader(
    answers: Sequence[ReaderAnswer], *, baseline: str = "naive", reask: bool = False
) -> list[ReaderSummary]:
    """Aggregate per (strategy, budget) in first-seen order, with paired comparisons against ``baseline``.

    ``reask``: the run re-asked bare citations, so each row says how many it re-asked.

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
            pairs = paired_outcomes(ok, groups[(baseline, against)])
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
                bare_share=_share(sum(a.bare for a in ok), len(ok)),
                tokens_mean=_share(sum(sent), len(sent)),
                prompt_tokens_mean=_share(sum(prompt), len(prompt)),
                latency_p50_ms=median(latencies),
                latency_p95_ms=percentile(latencies, 95),
                reask_share=_share(sum(a.reasked for a in ok), len(ok)) if reask else None,
            )
        )
    return out
