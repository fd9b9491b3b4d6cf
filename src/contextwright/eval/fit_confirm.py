"""The confirmation of a fit: the chosen setting against ``naive`` at each budget, on the held-out
queries (:func:`confirm_profile`), each budget's paired interval and, over several budgets, the one
simultaneous over them that ``fit --fail-if worse`` reads (:func:`~contextwright.eval.gate.joint_intervals`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.eval.data import EvalQuery
from contextwright.eval.fit_race import Asker, holds_answer, mean
from contextwright.eval.gate import joint_intervals
from contextwright.eval.metrics import mcnemar_exact, paired_bootstrap_delta
from contextwright.eval.strategies import NaiveStrategy, PipelineStrategy

__all__ = ["Confirmation", "confirm_profile"]


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The chosen setting against ``naive`` at one budget, on the held-out queries.

    Shares are in 0-1; ``delta`` and its interval are profile minus naive.
    """

    budget: int
    queries: int
    accuracy: float
    naive_accuracy: float
    delta: float
    delta_low: float
    delta_high: float
    p_value: float
    tokens_mean: float
    naive_tokens_mean: float
    retention: float
    naive_retention: float
    bare_share: float
    naive_bare_share: float
    #: The share of the profile's held-out replies asked again (``fit --reask-bare``; 0 without it).
    reask_share: float = 0.0
    #: The paired interval simultaneous over the budgets (``--fail-if worse`` reads it:
    #: :func:`~contextwright.eval.gate.joint_intervals`); ``None`` with one budget (the 95 % one).
    family_low: float | None = None
    family_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None
        }  # TOML has no null


def confirm_profile(
    asker: Asker, config: Mapping[str, Any], queries: Sequence[EvalQuery]
) -> list[Confirmation]:
    """The profile against naive at each budget on the held-out queries."""
    profile = PipelineStrategy(str(config.get("name", "profile")), config)
    got = asker.ask("confirm", [profile, NaiveStrategy()], queries)
    pairs = [[(got[(0, q.id)][k], got[(1, q.id)][k]) for q in queries] for k in range(len(asker.budgets))]
    outcomes = [
        {
            q.id: (bool(b.ok and b.correct), bool(a.ok and a.correct))
            for q, ((_, a), (_, b)) in zip(queries, ps, strict=True)
        }
        for ps in pairs
    ]
    joint = joint_intervals(outcomes) if len(pairs) > 1 else [None] * len(pairs)
    return [
        _confirmation(budget, ps, ends) for budget, ps, ends in zip(asker.budgets, pairs, joint, strict=True)
    ]


def _confirmation(
    budget: int, pairs: Sequence[tuple[Any, Any]], family: tuple[float, float] | None
) -> Confirmation:
    """One budget's :class:`Confirmation` from its ``(profile's, naive's)`` ``(reply, answer)`` pairs."""
    mine = [m for m, _ in pairs]
    base = [b for _, b in pairs]
    x = [bool(a.ok and a.correct) for _, a in base]
    y = [bool(a.ok and a.correct) for _, a in mine]
    boot = paired_bootstrap_delta(x, y)
    assert boot is not None  # queries is never empty here
    b = sum(1 for u, v in zip(x, y, strict=True) if u and not v)
    c = sum(1 for u, v in zip(x, y, strict=True) if v and not u)
    if family is not None:  # never narrower than its own 95 % interval
        family = (min(family[0], boot[1]), max(family[1], boot[2]))
    return Confirmation(
        budget=budget,
        queries=len(pairs),
        accuracy=mean(y),
        naive_accuracy=mean(x),
        delta=boot[0],
        delta_low=boot[1],
        delta_high=boot[2],
        p_value=mcnemar_exact(b, c),
        tokens_mean=mean(a.tokens_sent for _, a in mine),
        naive_tokens_mean=mean(a.tokens_sent for _, a in base),
        retention=mean(holds_answer(r) for r, _ in mine),
        naive_retention=mean(holds_answer(r) for r, _ in base),
        bare_share=mean(a.bare for _, a in mine),
        naive_bare_share=mean(a.bare for _, a in base),
        reask_share=mean(a.reasked for _, a in mine),
        family_low=None if family is None else family[0],
        family_high=None if family is None else family[1],
    )
