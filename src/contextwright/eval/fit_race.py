"""The race behind ``contextwright fit``: the settings of one knob raced on the fit queries.

:func:`race_knob` runs one knob's race (an F-race with successive halving, see
:mod:`contextwright.eval.fit`); :class:`Guard` is the retention guard that keeps
settings out of it before any reader request; :class:`Asker` builds the eval
requests of strategies and asks them through the reader's reply cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright.core.errors import ConfigError
from contextwright.eval.data import EvalQuery
from contextwright.eval.fit_space import candidate_config, label
from contextwright.eval.metrics import answer_in_text
from contextwright.eval.reader_client import Reader, logger
from contextwright.eval.reader_requests import (
    Request,
    answer_of,
    ask_again,
    strategy_request,
    system_of,
    tokens_sent,
)
from contextwright.eval.reader_results import ReaderAnswer
from contextwright.eval.strategies import NaiveStrategy, PipelineStrategy, Strategy
from contextwright.tokens import CachedTokenizer

__all__ = ["Asker", "FitProgress", "Guard", "RaceRules", "Trial", "holds_answer", "mean", "race_knob"]

#: ``(stage, done, total)``: the search's progress (stage is ``"fit amount"``, ``"confirm"``, ...).
FitProgress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Trial:
    """One setting raced on the fit queries.

    Attributes:
        knob: The knob being raced when this setting ran.
        setting: The value of every knob.
        scores: Per fit query, the share of budgets answered right (0-1).
        tokens: Per fit query, the mean tokens sent over the budgets.
        dropped_after: Queries seen when the race dropped it (``None``: it survived).
        retained: Per fit query, the share of budgets whose context holds an answer.
        guarded: Why the retention guard kept it out of the race (``""``: it raced). A guarded
            setting is never sent to the reader, so its ``scores`` are empty.
    """

    knob: str
    setting: Mapping[str, str]
    scores: Mapping[str, float]
    tokens: Mapping[str, float]
    dropped_after: int | None
    retained: Mapping[str, float] = field(default_factory=dict)
    guarded: str = ""

    @property
    def label(self) -> str:
        return label(self.setting)

    @property
    def accuracy(self) -> float:
        return mean(self.scores.values())

    @property
    def tokens_mean(self) -> float:
        return mean(self.tokens.values())

    @property
    def outcome(self) -> str:
        """How the race treated it, in words (the fit table's last column)."""
        if self.guarded:
            kept = "; kept: no value passed the guard" if self.dropped_after is None else ""
            return f"guarded: {self.guarded}{kept}"
        if not self.scores:
            return "the only value the guard left (not raced)"
        return "survived" if self.dropped_after is None else f"dropped after {self.dropped_after}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "knob": self.knob,
            "setting": dict(self.setting),
            "label": self.label,
            "queries": len(self.scores),
            "accuracy": self.accuracy if self.scores else None,  # None: never asked (the guard)
            "retention": mean(self.retained.values()),
            "tokens_mean": self.tokens_mean,
            "dropped_after": self.dropped_after,
            **({"guarded": self.guarded} if self.guarded else {}),
        }


def mean(values: Any) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def holds_answer(req: Request) -> bool:
    """Whether the context of ``req`` holds an answer string of its query (answer retention)."""
    return answer_in_text("\n".join(req.blocks), req.query.answers)


@dataclass
class Asker:
    """Builds the eval requests of strategies and asks them through the reader's cache.

    With ``reask_bare`` (a prompt), a reply that is a bare citation of a labelled context is asked
    once more under it and the second reply is the one scored, as :func:`contextwright.ask` does at
    run time (:func:`~contextwright.eval.reader_requests.ask_again`); ``reasked`` counts them.
    """

    reader: Reader
    budgets: tuple[int, ...]
    tok: CachedTokenizer
    resources: Mapping[str, Any]
    progress: FitProgress | None
    system: str = ""
    asked: int = 0
    failed: int = 0
    sent: set[str] = field(default_factory=set)  # keys of the requests the cache did not answer
    reask_bare: str | None = None
    reasked: int = 0

    def __post_init__(self) -> None:
        self.system = system_of(self.reader)

    def request(self, query: EvalQuery, strategy: Strategy, budget: int) -> Request:
        """The request ``eval --reader`` would send for ``strategy`` at ``budget`` (nothing is asked)."""
        req = strategy_request(
            query,
            strategy,
            budget,
            tokenizer=self.tok,
            resources=self.resources,
            system=self.system,
            prompt=self.reader.system,
        )
        if req.error is not None:
            raise ConfigError(f"a setting cannot assemble these chunks: {req.error}")
        return req

    def ask(
        self, stage: str, strategies: Sequence[Strategy], queries: Sequence[EvalQuery]
    ) -> dict[tuple[int, str], list[tuple[Request, Any]]]:
        """Per (strategy index, query id): each budget's request and its scored answer."""
        reqs = [
            (i, q.id, self.request(q, s, b))
            for i, s in enumerate(strategies)
            for q in queries
            for b in self.budgets
        ]
        got = self.reader.ask_many([r.messages for _, _, r in reqs], progress=self._report(stage))
        self.asked += len(reqs)
        self._note_sent([(r, reply) for (_, _, r), reply in zip(reqs, got, strict=True)])
        answers = [answer_of(r, reply, self.tok) for (_, _, r), reply in zip(reqs, got, strict=True)]
        if self.reask_bare is not None:
            answers = self._again(stage, [r for _, _, r in reqs], answers)
        out: dict[tuple[int, str], list[tuple[Request, Any]]] = {}
        for (i, qid, req), answer in zip(reqs, answers, strict=True):
            if not answer.ok:  # scored as wrong, never silently: counted, logged, in the profile
                self.failed += 1
                logger.warning("fit: a reader request failed", extra={"query_id": qid, "error": answer.error})
            out.setdefault((i, qid), []).append((req, answer))
        return out

    def _report(self, stage: str) -> Callable[[int, int], None] | None:
        progress = self.progress
        return None if progress is None else (lambda done, total: progress(stage, done, total))

    def _note_sent(self, pairs: Sequence[tuple[Request, Any]]) -> None:
        # Asked is not sent: a setting that leads one race runs again in the next, a context capped
        # below every budget is the same at each, and the cache answers the repeats.
        self.sent.update(
            self.reader.key(r.messages) for r, reply in pairs if isinstance(reply, tuple) and not reply[1]
        )

    def _again(self, stage: str, requests: list[Request], answers: list[ReaderAnswer]) -> list[ReaderAnswer]:
        """``answers`` with the bare citations asked again under ``reask_bare`` (counted as asked)."""
        assert self.reask_bare is not None
        again, pairs = ask_again(
            requests, answers, self.reask_bare, self.reader, self.tok, self._report(f"{stage} (re-asks)")
        )
        self.asked += len(pairs)
        self.reasked += len(pairs)
        self._note_sent(pairs)
        return list(again)


def answer_depths(
    asker: Asker,
    queries: Sequence[EvalQuery],
    stage: str = "split",
    known: Mapping[str, tuple[bool, ...]] | None = None,
) -> dict[str, tuple[bool, ...]]:
    """Per query id, whether naive's context holds an answer string at each of the asker's budgets.

    Assembled, never asked: it needs no reader. It says where in the list a query's answer lies as
    the budgets see it (within the smallest, only within a larger one, in none), which is what
    the retention guard and the amount knob turn on; :func:`~contextwright.eval.fit.split_queries`
    splits each such stratum in the same share, and :class:`Guard` takes naive's retention from it.
    A query in ``known`` (an earlier call's result) is not assembled again. Progress goes to
    ``stage``, in queries.
    """
    naive = NaiveStrategy()
    known = known or {}
    out: dict[str, tuple[bool, ...]] = {}
    for n, q in enumerate(queries, 1):
        got = known.get(q.id)
        out[q.id] = (
            got if got is not None else tuple(holds_answer(asker.request(q, naive, b)) for b in asker.budgets)
        )
        if asker.progress is not None and (n % 50 == 0 or n == len(queries)):
            asker.progress(stage, n, len(queries))
    return out


@dataclass
class Guard:
    """The retention guard: a setting whose answer retention on the fit queries (the share whose
    context holds an answer string) falls more than ``loss`` under naive's at any budget never
    races, so it is never sent to the reader. Retention needs no reader: each setting is assembled
    on the fit queries, and nothing else."""

    asker: Asker
    queries: Sequence[EvalQuery]
    loss: float
    prior: Any
    depths: Mapping[str, tuple[bool, ...]] | None = None  # naive's hits already known (the split's)
    naive: dict[int, float] = field(init=False)
    # by setting label: each knob's race starts from the setting the last one chose, measured then
    _seen: dict[str, tuple[dict[int, float], dict[str, float], dict[str, float]]] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        hits = answer_depths(self.asker, self.queries, "guard naive", self.depths)
        self.naive = {b: mean(hits[q.id][i] for q in self.queries) for i, b in enumerate(self.asker.budgets)}

    def _measure(
        self, strategy: Strategy, stage: str, part: tuple[int, int]
    ) -> tuple[dict[int, float], dict[str, float], dict[str, float]]:
        """(retention per budget, per query the share of budgets retained, per query the mean tokens
        sent). Progress goes to ``stage`` as queries assembled, ``part`` = (this setting, of how many)."""
        budgets = self.asker.budgets
        per_budget: dict[int, list[bool]] = {b: [] for b in budgets}
        kept: dict[str, float] = {}
        tokens: dict[str, float] = {}
        for n, q in enumerate(self.queries, 1):
            reqs = [self.asker.request(q, strategy, b) for b in budgets]
            hits = [holds_answer(r) for r in reqs]
            for b, hit in zip(budgets, hits, strict=True):
                per_budget[b].append(hit)
            kept[q.id] = mean(hits)
            tokens[q.id] = mean(tokens_sent(r.messages, self.asker.tok) for r in reqs)
            if n % 50 == 0 or n == len(self.queries):
                self._report(stage, part, n)
        return {b: mean(v) for b, v in per_budget.items()}, kept, tokens

    def _report(self, stage: str, part: tuple[int, int], done: int) -> None:
        if self.asker.progress is not None:
            self.asker.progress(stage, part[0] * len(self.queries) + done, part[1] * len(self.queries))

    def check(
        self, knob: str, setting: Mapping[str, str], part: tuple[int, int] = (0, 1)
    ) -> tuple[float, Trial]:
        """The setting's worst retention loss against naive over the budgets, and its trial as the
        guard saw it (``guarded`` says why when the loss is over the limit). ``part``: which of the
        knob's values this is, of how many (for the progress of stage ``guard <knob>``)."""
        name = label(setting)
        if name not in self._seen:
            self._seen[name] = self._measure(
                PipelineStrategy(name, candidate_config(setting, prior=self.prior)), f"guard {knob}", part
            )
        else:
            self._report(f"guard {knob}", part, len(self.queries))
        got, kept, tokens = self._seen[name]
        losses = {b: self.naive[b] - got[b] for b in self.asker.budgets}
        worst = max(losses.values())
        over = [(b, d) for b, d in losses.items() if d > self.loss + 1e-9]
        why = ""
        if over:
            at = ", ".join(f"{100 * d:.1f} points under naive's at {b:,} tokens" for b, d in over)
            why = f"answer retention {at} (the guard allows {100 * self.loss:.1f})"
        return worst, Trial(knob, dict(setting), {}, tokens, 0, kept, why)


def _score(rows: list[tuple[Request, Any]]) -> tuple[float, float, float]:
    """(share correct, mean tokens sent, share retained) over one query's budgets; a failed reply counts wrong."""
    n = len(rows)
    correct = sum(1 for _, a in rows if a.ok and a.correct)
    tokens = sum(a.tokens_sent for _, a in rows)
    kept = sum(1 for r, _ in rows if holds_answer(r))
    return correct / n, tokens / n, kept / n


def _excluded(diffs: Sequence[float], z: float = 1.959964, *, above: bool = False) -> bool:
    """The 95 % interval of the mean paired difference lies wholly below zero (``above``: wholly
    above it), by the normal approximation; never with fewer than 10 pairs."""
    n = len(diffs)
    if n < 10:
        return False
    m = sum(diffs) / n
    var = sum((d - m) ** 2 for d in diffs) / (n - 1)
    half = z * math.sqrt(var / n)
    return m - half > 0.0 if above else m + half < 0.0


def _race(
    asker: Asker,
    knob: str,
    settings: Sequence[dict[str, str]],
    queries: Sequence[EvalQuery],
    step: int,
    prior: Any,
) -> list[Trial]:
    """Race ``settings`` on ``queries`` in steps; every setting's trial, survivors with ``dropped_after=None``."""
    strategies = [PipelineStrategy(label(s), candidate_config(s, prior=prior)) for s in settings]
    scores: list[dict[str, float]] = [{} for _ in settings]
    tokens: list[dict[str, float]] = [{} for _ in settings]
    kept: list[dict[str, float]] = [{} for _ in settings]
    dropped: list[int | None] = [None] * len(settings)
    for start in range(0, len(queries), step):
        alive = [i for i, d in enumerate(dropped) if d is None]
        block = queries[start : start + step]
        got = asker.ask(f"fit {knob}", [strategies[i] for i in alive], block)
        for j, i in enumerate(alive):
            for q in block:
                scores[i][q.id], tokens[i][q.id], kept[i][q.id] = _score(got[(j, q.id)])
        seen = [q.id for q in queries[: start + step]]
        lead = _leader(alive, scores, tokens)
        for i in alive:
            if i != lead and _excluded([scores[i][q] - scores[lead][q] for q in seen]):
                dropped[i] = len(seen)
        if start + step < len(queries):
            # Successive halving: only the better half (by mean, ties to fewer tokens) runs on.
            ranked = sorted((i for i in alive if dropped[i] is None), key=_rank(scores, tokens))
            for i in ranked[math.ceil(len(ranked) / 2) :]:
                dropped[i] = len(seen)
        if sum(d is None for d in dropped) == 1:
            break
    return [
        Trial(knob, dict(s), dict(scores[i]), dict(tokens[i]), dropped[i], dict(kept[i]))
        for i, s in enumerate(settings)
    ]


@dataclass(frozen=True, slots=True)
class RaceRules:
    """How a knob's race runs: queries per step, the positional prior, the rule that moves a knob."""

    step: int
    prior: Any
    move_on: str


def race_knob(
    asker: Asker,
    knob: str,
    current: Mapping[str, str],
    values: Sequence[str],
    queries: Sequence[EvalQuery],
    guard: Guard | None,
    rules: RaceRules,
) -> tuple[dict[str, str], list[Trial]]:
    """One knob's race from ``current``: ``(the chosen setting, each value's trial)``.

    With a guard, only the values it lets through race. When it lets one through, that one is kept
    without a race; when it lets none through, the one that loses the least retention is.
    """
    settings = [{**current, knob: v} for v in values]
    if guard is None:
        passed, checked = list(range(len(settings))), []
    else:
        checked = [guard.check(knob, s, (i, len(settings))) for i, s in enumerate(settings)]
        passed = [i for i, (_, t) in enumerate(checked) if not t.guarded]
        if len(passed) < 2:
            keep = passed[0] if passed else min(range(len(settings)), key=lambda i: (checked[i][0], i))
            trials = [_kept(t) if i == keep else t for i, (_, t) in enumerate(checked)]
            return settings[keep], trials
    raced = _race(asker, knob, [settings[i] for i in passed], queries, rules.step, rules.prior)
    alive = [i for i, t in enumerate(raced) if t.dropped_after is None]
    best = _leader(alive, [t.scores for t in raced], [t.tokens for t in raced])
    if rules.move_on == "evidence":
        best = _moved(raced, best, current[knob])
    if not checked:
        return dict(raced[best].setting), raced
    by_index = dict(zip(passed, raced, strict=True))
    return dict(raced[best].setting), [by_index.get(i, t) for i, (_, t) in enumerate(checked)]


def _kept(trial: Trial) -> Trial:
    """``trial`` as the value a knob keeps without a race."""
    return Trial(trial.knob, trial.setting, {}, trial.tokens, None, trial.retained, trial.guarded)


def _moved(raced: Sequence[Trial], best: int, incumbent: str) -> int:
    """``best`` if it beats the incumbent value with a 95 % paired interval wholly above zero (on the
    queries both ran), else the incumbent: a knob moves on evidence, not on the noise of a race."""
    here = next((i for i, t in enumerate(raced) if t.setting[t.knob] == incumbent), None)
    if here is None or here == best:
        return best
    a, b = raced[best].scores, raced[here].scores
    return best if _excluded([a[q] - b[q] for q in b if q in a], above=True) else here


def _leader(
    alive: Sequence[int], scores: Sequence[Mapping[str, float]], tokens: Sequence[Mapping[str, float]]
) -> int:
    """The best mean score among ``alive``; ties go to fewer tokens sent, then to the earlier setting."""
    return min(alive, key=_rank(scores, tokens))


def _rank(
    scores: Sequence[Mapping[str, float]], tokens: Sequence[Mapping[str, float]]
) -> Callable[[int], tuple[float, float, int]]:
    """The race's order of settings, best first: mean score, then fewer tokens sent, then the earlier."""
    return lambda i: (-mean(scores[i].values()), mean(tokens[i].values()), i)
