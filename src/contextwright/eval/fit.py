"""Fit the context to the reader: measure how much, in what order and through which stages a model reads best.

:func:`fit_profile` runs the search behind ``contextwright fit``:

1. **Split.** The labelled queries are split into a *fit* part and a
   *confirm* part (``confirm_share``, default one half), stratified by where
   naive's context holds an answer (at which of the budgets; assembled, not
   asked), then by a hash of their ids; neither part depends on the order of
   the file. Each part then holds the same share of the queries whose answer
   only a larger budget reaches, the ones the retention guard and the amount
   knob turn on (``split="hash"``: by the hash alone, as until stop 51).
2. **Search on the fit part**, one knob at a time in the order of
   :data:`~contextwright.eval.fit_space.KNOBS`, starting from the ``qa``
   preset's setting. For each knob, the settings that differ only in that knob
   *race* (an F-race): all are asked the first ``step`` fit queries at every
   budget; each query scores the share of budgets answered right; after each
   step, a setting is dropped as soon as the 95 % interval of its paired
   difference with the leader lies wholly below zero, and of the rest only
   the better half runs on (successive halving); the survivors get the next
   ``step`` queries, until the fit part is used or one is left. The leader
   (ties: fewer tokens sent) becomes the knob's value (``move_on="leader"``,
   the default), and the next knob races from there; ``move_on="evidence"``
   moves a knob only when the leader's paired interval against the current
   value lies wholly above zero. The held-out confirmation, not the race, is
   the guard against a lucky leader. With ``max_retention_loss`` (the
   retention guard), a setting whose answer retention on the fit queries falls
   more than that under naive's at any budget does not race: retention is
   measured by assembling, without the reader, so what the guard rules out is
   never sent to it. Because retention costs no reader, the guard can also
   measure more labelled queries than the reader is asked (``guard_queries``:
   each one whose question is not held out joins the fit queries there).
3. **Confirm on the held-out part:** the chosen setting against ``naive`` at
   every budget, with the paired bootstrap interval and McNemar's p. Only the
   confirmation is reported as the result; the fit figures choose, they never
   publish.

Every request goes through the reader's reply cache with the same messages
that ``contextwright eval --reader`` sends, so a re-run, an interrupted run and
a later ``eval --reader --config profile.toml`` reuse the replies.

Example:
    >>> with Reader(url, model="smollm2", cache="reader.sqlite") as reader:
    ...     result = fit_profile(queries, reader=reader, budgets=(500, 1000))
    >>> result.verdict
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextwright.core.errors import ConfigError, LLMError
from contextwright.eval.data import EvalQuery
from contextwright.eval.fit_confirm import Confirmation, confirm_profile
from contextwright.eval.fit_race import (
    Asker,
    FitProgress,
    Guard,
    RaceRules,
    Trial,
    answer_depths,
    race_knob,
)
from contextwright.eval.fit_space import DEFAULT_SPACE, KNOBS, START, candidate_config, label
from contextwright.eval.gate import check_rule, fails
from contextwright.eval.reader_client import Reader
from contextwright.eval.reader_results import BARE_LIMIT
from contextwright.render.messages import check_reask, reask_prompt
from contextwright.stages.dedup import normalize_text
from contextwright.tokens import CachedTokenizer, Tokenizer, get_tokenizer

__all__ = ["Confirmation", "FitResult", "Trial", "fit_profile", "guard_set", "split_queries"]

#: The fewest queries per part: under this a 95 % interval on a binary score is wider than ±14 points.
MIN_PER_PART = 50


@dataclass(frozen=True, slots=True)
class FitResult:
    """What :func:`fit_profile` found: the setting, its config, every trial and the confirmation."""

    setting: Mapping[str, str]
    config: Mapping[str, Any]
    trials: tuple[Trial, ...]
    confirmations: tuple[Confirmation, ...]
    meta: Mapping[str, Any]

    @property
    def verdict(self) -> str:
        """One readable sentence of what the confirmation showed."""
        return verdict(self)

    @property
    def cautions(self) -> tuple[str, ...]:
        """What the confirmation does not support, in plain words (empty when it supports the profile)."""
        return cautions(self)

    @property
    def under_naive(self) -> tuple[int, ...]:
        """The budgets at which the profile read under naive on the held-out queries (its delta, the
        point estimate, below zero): where naive is the better choice for this reader. ``fit
        --fail-under-naive`` exits 3 when there is any."""
        return self.failing("under-naive")

    def failing(self, rule: str) -> tuple[int, ...]:
        """The budgets whose confirmation fails ``rule``, one of
        :data:`~contextwright.eval.gate.FAIL_RULES`: ``under-naive`` (the point estimate below zero,
        as :attr:`under_naive`), ``worse`` (the whole 95 % interval below zero: a loss the held-out
        queries show) or ``not-better`` (the interval's low end at zero or below: no gain they
        show). ``fit --fail-if RULE`` exits 3 when there is any."""
        check_rule(rule)
        return tuple(c.budget for c in self.confirmations if fails(rule, c.delta, *_gated(rule, c)))

    def profile(self) -> dict[str, Any]:
        """The profile: the pipeline config plus a ``fit`` table of provenance and confirmed figures."""
        out = dict(self.config)
        out["description"] = f"Fitted to {self.meta['model']} by contextwright fit: {self.verdict}"
        if self.meta.get("reask_bare") is not None:  # ask re-asks as the replies were scored
            out["reask"] = self.meta["reask_bare"]
        said = self.cautions
        out["fit"] = {
            **{k: v for k, v in self.meta.items() if v is not None},
            "setting": dict(self.setting),
            "verdict": self.verdict,
            **({"cautions": list(said)} if said else {}),
            "confirm": [c.to_dict() for c in self.confirmations],
        }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "setting": dict(self.setting),
            "config": dict(self.config),
            "verdict": self.verdict,
            "cautions": list(self.cautions),
            "meta": dict(self.meta),
            "confirm": [c.to_dict() for c in self.confirmations],
            "trials": [t.to_dict() for t in self.trials],
        }


def split_queries(
    queries: Sequence[EvalQuery],
    confirm_share: float,
    strata: Mapping[str, Hashable] | None = None,
) -> tuple[list[EvalQuery], list[EvalQuery]]:
    """``(fit, confirm)``, by a hash of each query's id, so the split does not depend on file order.

    Without ``strata`` each query goes to the confirmation when its hash (as a share of the range)
    is under ``confirm_share``: each part's size varies by chance. With ``strata`` (a key per query
    id, e.g. :func:`~contextwright.eval.fit_race.answer_depths`), the queries are ordered by key,
    then by hash, and every ``1 / confirm_share``-th goes to the confirmation (systematic
    sampling): each stratum is split in that share, to within one query, and so is the whole.

    Example:
        >>> fit, confirm = split_queries(queries, 0.5)
        >>> fit, confirm = split_queries(queries, 0.5, answer_depths(asker, queries))
    """
    if not 0.0 < confirm_share < 1.0:
        raise ConfigError(f"confirm_share must be between 0 and 1; got {confirm_share!r}. Use e.g. 0.5.")
    fit: list[EvalQuery] = []
    confirm: list[EvalQuery] = []
    if strata is None:
        for q in queries:
            (confirm if _hashed(q) / 2**64 < confirm_share else fit).append(q)
        return fit, confirm
    ordered = sorted(queries, key=lambda q: (repr(strata[q.id]), _hashed(q), q.id))
    for r, q in enumerate(ordered):  # the r-th goes to the confirmation when its share's floor steps
        steps = math.floor((r + 1) * confirm_share + 0.5) > math.floor(r * confirm_share + 0.5)
        (confirm if steps else fit).append(q)
    return fit, confirm


def _hashed(q: EvalQuery) -> int:
    return int.from_bytes(hashlib.sha256(q.id.encode()).digest()[:8], "big")


def fit_profile(
    queries: Sequence[EvalQuery],
    *,
    reader: Reader,
    budgets: Sequence[int] = (500, 1000),
    space: Mapping[str, Sequence[str]] | None = None,
    tokenizer: str | Tokenizer = "cl100k_base",
    resources: Mapping[str, Any] | None = None,
    confirm_share: float = 0.5,
    step: int = 25,
    prior: Mapping[str, Any] | str | None = None,
    min_per_part: int = MIN_PER_PART,
    progress: FitProgress | None = None,
    data_name: str = "",
    move_on: str = "leader",
    max_retention_loss: float | None = None,
    guard_queries: Sequence[EvalQuery] = (),
    split: str = "stratified",
    reask_bare: str | None = None,
) -> FitResult:
    """Search the setting the reader reads best on a fit split, and confirm it against naive on the rest.

    Args:
        queries: Labelled queries (the eval format).
        reader: The model and its reply cache.
        budgets: The documents budgets the profile must serve; a setting's
            score on a query is its share of budgets answered right.
        space: Values per knob (default :data:`~contextwright.eval.fit_space.DEFAULT_SPACE`).
        tokenizer: The tokenizer that defines the budget.
        resources: Resources the stages need (none for the default space).
        confirm_share: The share of queries held out for the confirmation.
        step: Queries per race step (default 25). After each step the worse half of the settings
            stops, so a race ends after about 3 steps. On ``nq_bm25_dev300`` at two budgets
            (155 fit queries) the default space asked SmolLM2 2,030 requests and sent 919 with 25:
            35 minutes of llama.cpp on 2 cores, measured end to end (stop 45). With 50 it asked
            2,880 and 1,168 distinct (about 44 minutes, scaled by prompt tokens). Both chose the
            same setting, on llama.cpp's replies and on the GPU lease's. 50 races on twice the
            queries, when an hour or an accelerator is available.
        prior: A positional prior (file or mapping) for the ``order=prior`` value.
        min_per_part: The fewest queries each part may have (default 50).
        progress: Called with ``(stage, done, total)`` as replies arrive.
        data_name: The data set's name, for the profile's provenance.
        move_on: ``leader`` (default): each race's leader becomes the knob's value; ``evidence``:
            a knob leaves its current value (the ``qa`` preset's, to start) only for a value whose
            95 % paired interval against it lies wholly above zero on the fit queries. Measured on
            ``nq_bm25_dev300`` (155 fit queries, 3 budgets) and confirmed once on
            ``nq_bm25_confirm500`` (docs/quality.md): the leader rule found settings that read
            +5.0 to +13.6 points over naive (SmolLM2-135M) and +4.8 to +9.8 (Qwen2.5-0.5B); the
            evidence rule moved no knob for SmolLM2 and, for Qwen, moved framing to a setting
            that read 6.0 points under naive at 500 tokens. On a smaller CPU fit (104 queries,
            2 budgets) the leader did not hold (13.5 % against naive's 20.8 %): the held-out
            confirmation is what tells, and it is what the verdict reports.
        max_retention_loss: The retention guard, as a share (``0.015``: 1.5 points): a setting
            whose answer retention on the fit queries (the share whose context holds an answer
            string) is more than this under naive's at any budget does not race and is never sent
            to the reader. ``None`` (default): no guard; the reader alone decides, and the
            confirmation's cautions say where retention fell. Retention needs no reader, so the
            guard costs assembly time only, and it saves the requests of the settings it rules out.
        guard_queries: More labelled queries for the retention guard alone (never sent to the
            reader): it measures the fit queries and these, less any whose question is held out for
            the confirmation or repeats one it already has (:func:`guard_set`). On a few hundred fit
            queries one query moves retention by half a point or more, so the guard sees only clear
            losses; measured on ``nq_bm25_dev300``, the 155 fit queries let through a relevance stop
            that lost 2.7 points of retention on all 300 (docs/fit.md). Needs ``max_retention_loss``.
        split: How the queries are split into fit and confirm. ``stratified`` (default): by where
            naive's context holds an answer at each budget (:func:`answer_depths`: assembled, no
            reader), then by a hash of the id, so each part holds its share of every stratum.
            ``hash``: by the hash alone (the split until stop 51, which the shipped profiles were
            fitted on). On ``nq_bm25_dev300`` at 500 / 1,000 tokens the hash split put all 7 queries
            whose answer naive reaches only at 1,000 into the confirmation, so the retention guard
            saw none of them and let through settings that lost 4–7 points there (docs/fit.md).
        reask_bare: A prompt (name or text): a reply that is a bare citation of a labelled context
            (``[1]`` and no answer) is asked once more under it, in the race and the confirmation,
            and the second reply is scored: the policy :func:`contextwright.ask` follows (``auto``:
            ``light``). The profile's ``reask`` keeps it, so ``ask`` re-asks as fitted and framings
            with ``[n]`` labels are judged on the answers your application shows. ``None``
            (default): the first reply is scored. Each re-ask is one more request (``meta["reasked"]``).

    Raises:
        ConfigError: too few labelled queries (saying how many are needed), a bad budget or knob value.
        LLMError: when the reader endpoint cannot be used, every request failed (offline: none
            was in the cache), or a confirmation request failed (its reply would be scored wrong
            in the published figure). A failed request during the race is counted in
            ``meta["failed"]`` and scored wrong; the confirmation is the guard against what it skews.
    """
    _check_options(budgets, move_on, max_retention_loss, guard_queries, split)
    labelled = [q for q in queries if q.answers]
    _check_parts(labelled, confirm_share, min_per_part, split)
    space = {k: tuple(v) for k, v in (space or DEFAULT_SPACE).items()}
    if "on" in space.get("expand", ()) and not (resources or {}).get("store"):
        raise ConfigError(
            "expand=on fetches each chunk's neighbours from a chunk store, and none was given: pass "
            "--corpus FILE (the corpus JSONL of your chunks), or drop expand from --knob.",
            loc=("expand",),
        )
    tok = CachedTokenizer(get_tokenizer(tokenizer).base)
    again = reask_prompt(check_reask(reask_bare), None)  # auto: light (a candidate has no reask)
    asker = Asker(
        reader, tuple(dict.fromkeys(budgets)), tok, dict(resources or {}), progress, reask_bare=again
    )
    depths = answer_depths(asker, labelled) if split == "stratified" else None
    fit, confirm = split_queries(labelled, confirm_share, depths)
    setting = {k: (space[k][0] if len(space.get(k, ())) == 1 else START[k]) for k in KNOBS}
    guarded, left_out = guard_set(fit, confirm, guard_queries)
    guard = None if max_retention_loss is None else Guard(asker, guarded, max_retention_loss, prior, depths)
    rules = RaceRules(step, prior, move_on)
    trials: list[Trial] = []
    for knob in KNOBS:
        values = space.get(knob, (START[knob],))
        if len(values) < 2:
            continue
        setting, knob_trials = race_knob(asker, knob, setting, values, fit, guard, rules)
        trials.extend(knob_trials)
    config = candidate_config(setting, prior=prior)
    failed_before = asker.failed
    confirmations = confirm_profile(asker, config, confirm)
    _check_measured(asker, reader)
    _check_confirmed(asker.failed - failed_before, 2 * len(confirm) * len(asker.budgets), reader)
    meta = {
        "model": reader.model,
        "endpoint": reader.cache_endpoint,
        "data": data_name or None,
        "queries": len(labelled),
        "fit_queries": len(fit),
        "confirm_queries": len(confirm),
        "confirm_share": confirm_share,
        "budgets": list(asker.budgets),
        "tokenizer": tok.name,
        "max_tokens": reader.max_tokens,
        "temperature": reader.temperature,
        "system": reader.system,
        "requests": asker.asked,
        "sent": len(asker.sent),
        "failed": asker.failed,
        "move_on": move_on,
        "max_retention_loss": max_retention_loss,
        "split": split,
        "strata": None if depths is None else _strata_counts(depths, fit, confirm, asker.budgets),
        "guard_queries": None if guard is None else len(guarded),
        "guard_left_out": left_out if guard_queries else None,
        "reask_bare": asker.reask_bare,
        "reasked": asker.reasked if asker.reask_bare is not None else None,
    }
    return FitResult(setting, config, tuple(trials), tuple(confirmations), meta)


#: How :func:`fit_profile` splits the queries into fit and confirm.
SPLITS = ("stratified", "hash")


def _strata_counts(
    depths: Mapping[str, tuple[bool, ...]],
    fit: Sequence[EvalQuery],
    confirm: Sequence[EvalQuery],
    budgets: Sequence[int],
) -> dict[str, list[int]]:
    """``{stratum: [fit, confirm]}``, a stratum named by the budgets at which naive holds an answer
    (``"500,1000"``, ``"1000"``, ``"none"``)."""
    out: dict[str, list[int]] = {}
    for part, qs in enumerate((fit, confirm)):
        for q in qs:
            name = ",".join(str(b) for b, hit in zip(budgets, depths[q.id], strict=True) if hit) or "none"
            out.setdefault(name, [0, 0])[part] += 1
    return dict(sorted(out.items()))


def _check_parts(labelled: Sequence[EvalQuery], confirm_share: float, min_per_part: int, split: str) -> None:
    """Refuse too few labelled queries for either part, saying how many to give, before anything is
    assembled. A stratified split's part sizes do not depend on the strata: one stratum gives them."""
    strata = None if split == "hash" else dict.fromkeys((q.id for q in labelled), 0)
    fit, confirm = split_queries(labelled, confirm_share, strata)
    if min(len(fit), len(confirm)) < min_per_part:
        need = math.ceil(min_per_part / min(confirm_share, 1 - confirm_share))
        raise ConfigError(
            f"fit needs at least {min_per_part} labelled queries to fit on and {min_per_part} to confirm on; "
            f"got {len(labelled)} labelled queries ({len(fit)} fit / {len(confirm)} confirm at "
            f"confirm_share {confirm_share:g}). Give about {need} or more labelled queries."
        )


def _check_options(
    budgets: Sequence[int],
    move_on: str,
    max_retention_loss: float | None,
    guard_queries: Sequence[EvalQuery],
    split: str,
) -> None:
    """Refuse bad budgets, a move-on rule that is none, a guard that is no share, guard queries
    without a guard, and a split that is none, naming the fix."""
    if split not in SPLITS:
        raise ConfigError(
            f"split must be one of {', '.join(SPLITS)}; got {split!r}. 'stratified' (the default) splits "
            "the queries whose answer only a larger budget reaches evenly between fit and confirm.",
            loc=("split",),
        )
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise ConfigError(f"budgets must be positive integers; got {list(budgets)!r}. Example: 500,1000.")
    if move_on not in ("evidence", "leader"):
        raise ConfigError(f"move_on must be 'evidence' or 'leader'; got {move_on!r}.", loc=("move_on",))
    if max_retention_loss is not None and (
        isinstance(max_retention_loss, bool)
        or not isinstance(max_retention_loss, int | float)
        or not 0.0 <= max_retention_loss < 1.0
    ):
        raise ConfigError(
            f"max_retention_loss is a share of queries between 0 and 1; got {max_retention_loss!r}. "
            "Use e.g. 0.015 for 1.5 points.",
            loc=("max_retention_loss",),
        )
    if guard_queries and max_retention_loss is None:
        raise ConfigError(
            f"guard_queries ({len(guard_queries)} queries) are measured by the retention guard, which is off: "
            "pass max_retention_loss too (e.g. 0.015 for 1.5 points), or drop guard_queries.",
            loc=("guard_queries",),
        )


def guard_set(
    fit: Sequence[EvalQuery], confirm: Sequence[EvalQuery], extra: Sequence[EvalQuery]
) -> tuple[list[EvalQuery], dict[str, int]]:
    """The queries the retention guard measures, and how many of ``extra`` it left out, and why.

    The fit queries, then each labelled ``extra`` query whose question is neither held out for the
    confirmation (the confirmed figures stay held out) nor one it already has. Questions match as
    exact dedup keys texts (:func:`~contextwright.stages.dedup.normalize_text`: NFKC, case and
    spaces), so the same data file given again adds nothing. An extra query's id becomes
    ``guard:<id>``, so ids from another file cannot collide with the fit's.

    Example:
        >>> queries, left_out = guard_set(fit, confirm, load_queries("more_labelled.jsonl"))
    """
    held = {_question(q) for q in confirm}
    have = {_question(q) for q in fit}
    out = list(fit)
    left_out = {"held_out": 0, "repeated": 0, "unlabelled": 0}
    for q in extra:
        key = _question(q)
        why = "unlabelled" if not q.answers else _left_out(key, held, have)
        if why:
            left_out[why] += 1
            continue
        have.add(key)
        out.append(replace(q, id=f"guard:{q.id}"))
    return out, left_out


def _question(q: EvalQuery) -> str:
    return normalize_text(q.question)


def _left_out(question: str, held: set[str], have: set[str]) -> str:
    """Why a labelled guard query is left out (``""``: it is measured)."""
    if question in held:
        return "held_out"
    return "repeated" if question in have else ""


def _check_measured(asker: Asker, reader: Reader) -> None:
    """Raise when every request failed: a search scored on failures measured nothing."""
    if not asker.asked or asker.failed < asker.asked:
        return
    why = (
        "the reader is offline, so the replies must be in its cache under the label, model and "
        f"max_tokens they were cached with (label now {reader.cache_endpoint!r}, model {reader.model!r}; "
        "--reader-cache-label names the label)"
        if reader.offline
        else "check the endpoint, the model name and the key"
    )
    raise LLMError(
        f"every one of the {asker.asked} reader requests failed, so nothing was measured and no "
        f"profile was written: {why}."
    )


def _check_confirmed(failed: int, asked: int, reader: Reader) -> None:
    """Raise when a confirmation request failed: a failed reply is scored wrong, so the figure the
    profile would publish is not the reader's. (Measured: offline over a cache that lacked 433 of a
    fit's requests, a profile was written whose confirmation read 31 points under naive.)"""
    if not failed:
        return
    why = (
        "the reader is offline and those replies are not in its cache (label "
        f"{reader.cache_endpoint!r}, model {reader.model!r}): run it online once to fill them in"
        if reader.offline
        else "see the log lines above and run again: the replies so far are cached, so only the "
        "failed ones are asked again"
    )
    raise LLMError(
        f"{failed} of the {asked} confirmation requests failed, so the confirmed figure would score "
        f"them as wrong answers and no profile was written: {why}."
    )


def _gated(rule: str, c: Confirmation) -> tuple[float, float]:
    """The interval ``rule`` reads: for ``worse``, the one simultaneous over the budgets where there is one."""
    if rule == "worse" and c.family_low is not None and c.family_high is not None:
        return c.family_low, c.family_high
    return c.delta_low, c.delta_high


def verdict(result: FitResult) -> str:
    """E.g. "on SmolLM2, cap:400 ... (~380 tokens) read 29.0 % at 500 and 28.1 % at 1,000 against naive's ..."."""
    cs = result.confirmations
    m = result.meta
    accs = " / ".join(f"{100 * c.accuracy:.1f}" for c in cs)
    naive = " / ".join(f"{100 * c.naive_accuracy:.1f}" for c in cs)
    deltas = "; ".join(
        f"{c.budget:,}: {100 * c.delta:+.1f} [{100 * c.delta_low:+.1f}, {100 * c.delta_high:+.1f}]"
        for c in cs
    )
    at = " / ".join(f"{c.budget:,}" for c in cs)
    tokens = " / ".join(f"{c.tokens_mean:,.0f}" for c in cs)
    best = max(cs, key=lambda c: c.naive_accuracy)
    return (
        f"on {m['model']}, '{label(result.setting)}'{_reasking(result)} read {accs} % at {at} tokens (sending {tokens} tokens) "
        f"against naive's {naive} % (naive's best: {100 * best.naive_accuracy:.1f} % at {best.budget:,}); "
        f"Δ against naive with 95 % paired intervals, {deltas} points; confirmed on {m['confirm_queries']} "
        f"held-out queries{' of ' + str(m['data']) if m.get('data') else ''}, chosen on {m['fit_queries']} others"
        + (
            f" among the settings within {100 * m['max_retention_loss']:.1f} points of naive's answer retention"
            f" on {m.get('guard_queries') or m['fit_queries']:,} queries."
            if m.get("max_retention_loss") is not None
            else "."
        )
    )


def _reasking(result: FitResult) -> str:
    """How the replies were scored when bare citations were asked again (``fit --reask-bare``)."""
    prompt = result.meta.get("reask_bare")
    if prompt is None:
        return ""
    name = prompt if len(prompt.split()) == 1 else "a prompt of your own"
    asked = max((c.reask_share for c in result.confirmations), default=0.0)
    if asked == 0:
        return f" (a bare citation asked again under {name}: none of its held-out replies was one)"
    return f" (a bare citation asked again under {name}: up to {100 * asked:.1f} % of its held-out replies)"


#: The answer-retention fall against naive from which :func:`cautions` warns where the reader
#: gains (issue 32's guard: at most 1.5 points).
RETENTION_CAUTION = 0.015


def cautions(result: FitResult) -> tuple[str, ...]:
    """What the held-out confirmation does not support, one plain sentence each (empty when it supports it).

    * first, when the profile reads under naive at every budget: that no setting searched beat naive
      on this reader, so naive is what to keep (the profile is written for inspection);
    * a budget at which the profile reads under naive (the point estimate; "worse" when the
      whole 95 % interval lies under zero): there the profile is not confirmed;
    * naive's best budget reading above the profile at a budget where the profile beats naive;
    * bare-citation replies at :data:`~contextwright.eval.reader_results.BARE_LIMIT` or more (the
      share at which ``eval --reader`` warns too);
    * answer retention :data:`RETENTION_CAUTION` or more under naive's at a budget where the reader gains.

    Point estimates on a few hundred queries: a caution says where to look, not that the
    profile is wrong, and the verdict keeps the intervals.
    """
    cs = result.confirmations
    if not cs:
        return ()
    out: list[str] = []
    under_at = set(result.under_naive)  # the one rule of "under naive", read once
    under = [c for c in cs if c.budget in under_at]
    if len(under) == len(cs):
        at = ", ".join(f"{c.budget:,}" for c in cs)
        out.append(
            f"The profile reads under naive at every budget it was confirmed at ({at} tokens): on this reader "
            "and these queries, no setting searched beat the chunks joined in rank order. Keep naive (preset "
            "'naive', or the preset you use now) for this reader; this profile is written for inspection. To "
            "search again, give more labelled queries, --step 50, or a wider space (a setting the retention "
            "guard kept out is named in the fit table)."
        )
    for c in under:
        how = (
            "reads worse than naive (the interval lies under zero)"
            if c.delta_high < 0
            else "is not confirmed"
        )
        out.append(
            f"At {c.budget:,} tokens the profile reads {100 * -c.delta:.1f} points under naive on the held-out "
            f"queries ({100 * c.delta_low:+.1f}…{100 * c.delta_high:+.1f}): it {how} there, where the chunks "
            "joined in rank order up to the budget (naive) read better. Search again on more queries (more "
            "labelled queries, or --step 50), or keep the profile to the budgets it was confirmed at."
        )
    best = max(cs, key=lambda c: c.naive_accuracy)
    below = [c for c in cs if c.delta >= 0 and c.accuracy < best.naive_accuracy]
    if below:
        at = ", ".join(f"{100 * c.accuracy:.1f} % at {c.budget:,}" for c in below)
        out.append(
            f"Naive's best, {100 * best.naive_accuracy:.1f} % at {best.budget:,} tokens, reads above the profile "
            f"({at}): where {best.budget:,} tokens can be sent, naive read better on these queries."
        )
    bare = _bare_caution(result)
    if bare:
        out.append(bare)
    fell = [c for c in cs if c.delta > 0 and c.naive_retention - c.retention >= RETENTION_CAUTION]
    if fell:
        at = ", ".join(
            f"{100 * (c.naive_retention - c.retention):.1f} points under naive's at {c.budget:,} tokens"
            for c in fell
        )
        out.append(
            f"Answer retention (the answer string in the context) is {at}, where the reader gains: this reader "
            "reads the shorter context better, but a reader that needs the passages left out would not find them."
            + _guard_too_small(result, fell)
        )
    return tuple(out)


def _bare_caution(result: FitResult) -> str:
    """Where the profile's held-out replies were bare citations at :data:`BARE_LIMIT` or more ("": nowhere)."""
    cs = result.confirmations
    bare = [c for c in cs if c.bare_share >= BARE_LIMIT]
    if not bare:
        return ""
    at = ", ".join(f"{100 * c.bare_share:.1f} % at {c.budget:,} tokens" for c in bare)
    again = result.meta.get("reask_bare")
    return (
        f"The reader replied to the profile's held-out queries with a bare citation (a [n] and no answer): "
        f"{at}{' after asking again' if again else ''} (naive: "
        f"{100 * max(c.naive_bare_share for c in bare):.1f} %). Framing with [n] labels draws them from some "
        "models: fit again with --knob framing=minimal, or --knob prompt=light"
        + (
            "."
            if again
            else "; or keep the profile and ask again when resolve_citations(answer, ctx).bare (fit with "
            "--reask-bare light to judge the settings that way, as contextwright.ask answers)."
        )
    )


def _guard_too_small(result: FitResult, fell: Sequence[Confirmation]) -> str:
    """When the held-out fall is over the guard's limit, that the guard measured too few queries to see it."""
    m = result.meta
    limit = m.get("max_retention_loss")
    if limit is None or all(c.naive_retention - c.retention <= limit + 1e-9 for c in fell):
        return ""
    n = m.get("guard_queries") or m["fit_queries"]
    return (
        f" The retention guard let it through on {n:,} queries, where one query is {100 / n:.1f} points: give "
        "it more labelled queries (--guard-data FILE; retention needs no reader, so they cost assembly time only)."
    )
