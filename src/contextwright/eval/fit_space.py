"""The search space of ``contextwright fit``: the knobs a reader is measured along, and the config each setting makes.

A *setting* picks one value per knob; :func:`candidate_config` turns it into
a pipeline config, the same mapping a preset or a profile TOML holds. The
knobs, in the order the search visits them (how much text matters most on
the readers measured so far, framing least):

* ``amount``: how much to send. ``fill`` fills the budget; ``cap:N`` fills at
  most N tokens whatever the budget (``token_budget.ceiling``); ``stop:R``
  stops at the first chunk whose per-list normalised score is under R after a
  200-token floor (``frugal``'s rule) (``relevance_stop``), the budget staying the ceiling;
  ``stop:R+cap:N`` is both.
* ``order``: where the strongest chunk goes. ``first`` (relevance order),
  ``last`` (the best chunk last, the second best just before it),
  ``ends`` (lost-in-the-middle: the best at the ends, the weakest in the
  middle), or ``prior`` (a measured positional prior, ``--prior``).
* ``dedup``: ``none``, ``exact`` (normalised-text copies), or ``containment``
  (exact, then chunks contained in a kept one), each before the budget, so
  the budget is refilled with lower-ranked text; or ``saves-exact`` /
  ``saves-containment``: the same after the budget's cut, so the tokens a
  copy would have taken are saved, not refilled (on a knowledge base with
  copies, SmolLM2 read the refilled contexts worse than naive's repeats).
* ``expand``: ``off``, or ``on``: each chunk's neighbours (one chunk either
  side, the ``documents`` preset's ``expand`` stage) are fetched from the
  chunk store before dedup. Searched only when a store is given (``fit
  --corpus``); without one it stays ``off``.
* ``framing``: ``lean`` (blocks headed ``[n]``), ``numbered`` (``[n]`` plus
  the source), or ``minimal`` (plain passages and an uncited prompt).
* ``prompt``: the grounded prompt, ``default``, ``strict`` (only the
  passages; "I don't know" when they are silent), ``soft`` (general
  knowledge where they are silent) or ``light`` (the answer first, then its
  sources, the brackets named once; no "I don't know" clause), each in the
  framing's cited or uncited form. A setting other than ``default`` is
  written into the profile (``prompt = "light"``), and every surface that
  builds the messages sends it. ``default`` and ``light`` are raced unless
  ``--knob prompt=...`` names others (one name fixes it).

The starting setting is the ``qa`` preset's (``fill``, ``ends``,
``saves-containment``, ``lean``), so the search can only move away from the
default by measuring something better.

Example:
    >>> candidate_config({"amount": "cap:400", "order": "last", "dedup": "exact", "framing": "lean"})["stages"][1]
    {'type': 'token_budget', 'policy': 'fill', 'ceiling': 400}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.core.errors import ConfigError, did_you_mean
from contextwright.render.messages import PROMPT_NAMES

__all__ = [
    "DEFAULT_SPACE",
    "EXPAND",
    "KNOBS",
    "START",
    "candidate_config",
    "label",
    "parse_space",
    "with_store",
]

#: The knobs in search order.
KNOBS = ("amount", "order", "dedup", "expand", "framing", "prompt")

#: Where the search starts: the ``qa`` preset.
START: dict[str, str] = {
    "amount": "fill",
    "order": "ends",
    "dedup": "saves-containment",
    "expand": "off",
    "framing": "lean",
    "prompt": "default",
}

#: The values tried per knob when the caller names none.
DEFAULT_SPACE: dict[str, tuple[str, ...]] = {
    "amount": ("fill", "cap:250", "cap:400", "cap:600", "stop:0.2", "stop:0.4", "stop:0.2+cap:500"),
    "order": ("ends", "first", "last"),
    "dedup": ("containment", "exact", "none", "saves-containment"),
    "expand": ("off",),  # ("off", "on") when a chunk store is given: see with_store
    "framing": ("lean", "numbered", "minimal"),
    # The shipped prompt against the one that ends Qwen's bare "[1]" replies (stop 45): a reader that
    # reads ``light`` worse (SmolLM2) keeps ``default``. strict and soft with --knob prompt=...
    "prompt": ("default", "light"),
}
#: The values ``expand`` takes; ``on`` needs a chunk store.
EXPAND = ("off", "on")

_DEDUP = {
    "none": [],
    "exact": [{"type": "exact_dedup"}],
    "containment": [{"type": "exact_dedup"}, {"type": "containment_dedup"}],
}
#: ``saves-*``: the same dedup after the budget's cut, so what it frees is saved, never refilled.
_SAVES = {f"saves-{k}": v for k, v in _DEDUP.items() if v}
_FORMATS = ("lean", "numbered", "minimal")
# Best last: a prior that rises with the position puts the k-th best chunk in the k-th last slot.
_BEST_LAST = {
    "name": "best-last",
    "normalized_positions": [0.0, 1.0],
    "accuracy": [0.0, 100.0],
    "closed_book": 0.0,
}


def _amount(value: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The stages before the budget and the budget's extra settings for an ``amount`` value
    (``stop:R+cap:N`` is both: the relevance stop under a ceiling)."""
    if value == "fill":
        return [], {}
    if "+" in value:
        stages: list[dict[str, Any]] = []
        budget: dict[str, Any] = {}
        for part in value.split("+"):
            more, extra = _amount(part)
            stages += more
            budget.update(extra)
        return stages, budget
    kind, _, arg = value.partition(":")
    try:
        if kind == "cap":
            n = int(arg)
            if n < 1:
                raise ValueError
            return [], {"ceiling": n}
        if kind == "stop":
            r = float(arg)
            if not 0.0 <= r <= 1.0:
                raise ValueError
            return [{"type": "relevance_stop", "min_relative": r, "min_tokens": 200}], {}
    except ValueError:
        pass
    raise ConfigError(
        f"amount {value!r} is not a setting; use fill, cap:N (N tokens at most, e.g. cap:400), "
        "stop:R (the relevance stop at R from 0 to 1, e.g. stop:0.4) or both (stop:0.2+cap:500).",
        loc=("amount",),
    )


def _order(value: str, prior: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if value == "first":
        return {"type": "score_order"}
    if value == "last":
        return {"type": "prior_order", "prior": dict(_BEST_LAST)}
    if value == "ends":
        return {"type": "lost_in_the_middle_order"}
    if value == "prior":
        if prior is None:
            raise ConfigError(
                "order 'prior' needs a measured prior: pass --prior FILE (written by "
                "contextwright eval --reader URL --positions 10 --prior-out FILE).",
                loc=("order",),
            )
        return {"type": "prior_order", "prior": prior if isinstance(prior, str) else dict(prior)}
    raise _not_a_setting("order", value, ("first", "last", "ends", "prior"))


def _not_a_setting(knob: str, value: str, allowed: Sequence[str], note: str = "") -> ConfigError:
    """The error for a knob value outside ``allowed``: the knob, the value, the nearest value, all of them."""
    listed = f"{', '.join(allowed[:-1])} or {allowed[-1]}" if len(allowed) > 1 else allowed[0]
    return ConfigError(
        f"{knob} {value!r} is not a setting.{did_you_mean(value, allowed)} Use {listed}{note}.", loc=(knob,)
    )


def candidate_config(
    setting: Mapping[str, str], *, prior: Mapping[str, Any] | str | None = None
) -> dict[str, Any]:
    """The pipeline config of one setting (every knob given).

    Raises:
        ConfigError: naming the knob and the value that is not a setting.
    """
    setting = {"expand": "off", "prompt": "default", **setting}  # saved before these knobs existed
    missing = [k for k in KNOBS if k not in setting]
    if missing:
        raise ConfigError(f"setting {dict(setting)!r} lacks {', '.join(missing)}.")
    dedup = setting["dedup"]
    for knob, allowed, note in (
        ("dedup", (*_DEDUP, *_SAVES), ""),
        ("framing", _FORMATS, ""),
        ("prompt", PROMPT_NAMES, ""),
        ("expand", EXPAND, " (on needs a chunk store: fit --corpus FILE)"),
    ):
        if setting[knob] not in allowed:
            raise _not_a_setting(knob, setting[knob], allowed, note)
    framing = setting["framing"]
    before, budget = _amount(setting["amount"])
    first = [{"type": "expand", "window": 1}] if setting["expand"] == "on" else []
    first += [dict(s) for s in _DEDUP.get(dedup, [])]
    after = [dict(s) for s in _SAVES.get(dedup, [])]
    stages = [
        *first,
        *before,
        {"type": "token_budget", "policy": "fill", **budget},
        *after,
        _order(setting["order"], prior),
    ]
    config: dict[str, Any] = {"name": label(setting), "stages": stages, "format": framing}
    if setting["prompt"] != "default":
        config["prompt"] = setting["prompt"]
    return config


def label(setting: Mapping[str, str]) -> str:
    """A short name of a setting, e.g. ``cap:400 last exact lean`` (``+expand`` after the dedup when on,
    the prompt last when it is not ``default``)."""
    words = [setting[k] for k in KNOBS if k not in ("expand", "prompt")]
    if setting.get("expand", "off") == "on":
        words.insert(KNOBS.index("expand"), "+expand")
    if setting.get("prompt", "default") != "default":
        words.append(setting["prompt"])
    return " ".join(words)


def with_store(space: Mapping[str, Sequence[str]], given: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    """``space`` for a fit that has a chunk store: ``expand`` is searched (off, on) unless a
    ``--knob expand=...`` in ``given`` fixed it."""
    out = {k: tuple(v) for k, v in space.items()}
    if not any(spec.partition("=")[0].strip() == "expand" for spec in given):
        out["expand"] = EXPAND
    return out


def parse_space(
    specs: Sequence[str], *, prior: Mapping[str, Any] | str | None = None
) -> dict[str, tuple[str, ...]]:
    """The search space from ``knob=v1,v2`` strings over :data:`DEFAULT_SPACE`.

    A knob given once replaces its default values; a knob given with one
    value is fixed (not searched).

    Example:
        >>> parse_space(["amount=fill,cap:300", "framing=lean"])["amount"]
        ('fill', 'cap:300')

    Raises:
        ConfigError: for an unknown knob or a value that is not a setting.
    """
    space = dict(DEFAULT_SPACE)
    for spec in specs:
        knob, sep, values = spec.partition("=")
        knob = knob.strip()
        if not sep or knob not in KNOBS:
            raise ConfigError(
                f"--knob {spec!r} is not knob=values.{did_you_mean(knob, KNOBS)} "
                f"Knobs: {', '.join(KNOBS)}. Example: --knob amount=fill,cap:300,cap:500",
                loc=("knob",),
            )
        got = tuple(dict.fromkeys(v.strip() for v in values.split(",") if v.strip()))
        if not got:
            raise ConfigError(f"--knob {spec!r} names no value.", loc=("knob",))
        space[knob] = got
    for name, tried in space.items():
        for value in tried:
            candidate_config({**START, name: value}, prior=prior)
    return space
