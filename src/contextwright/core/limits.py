"""Upper bounds on every numeric setting: a 400-byte config must not cost minutes.

A stage's work grows with some of its settings (``near_dedup``'s
``num_perm``, ``expand``'s ``window``, ...). Each numeric setting therefore
declares its bound next to it, as data::

    @register_stage
    @dataclass(frozen=True, slots=True, kw_only=True)
    class NearDedup:
        num_perm: int = bounded(64, 1024, work=True)

:func:`check_settings` enforces the bounds at construction (``register_stage``
calls it before the stage's own ``__init__`` runs, so an absurd value never
allocates anything) and raises :class:`~contextwright.core.errors.ConfigError`
naming the setting, the value and the bound. A numeric setting that declares
no bound gets :data:`DEFAULT_BOUND`. ``work=True`` marks settings the cost of
a call grows linearly with; :func:`stage_work` multiplies them, and the HTTP
service caps ``chunks × Σ stage_work`` per request (``max_request_work``).

:func:`bounds_table` lists every bound of every registered stage and format
(the table in docs/security.md is checked against it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contextwright.core.errors import ConfigError

__all__ = [
    "DEFAULT_BOUND",
    "MAX_BUDGET_TOKENS",
    "Bound",
    "bound_of",
    "bounded",
    "bounds_table",
    "check_number",
    "check_settings",
    "numeric_settings",
    "stage_work",
]


@dataclass(frozen=True, slots=True)
class Bound:
    """The largest magnitude a numeric setting may take.

    Attributes:
        hi: ``abs(value) <= hi`` must hold (and the value must be finite).
        work: The cost of a call grows linearly with this setting.
    """

    hi: float
    work: bool = False


#: For numeric settings that declare no bound of their own.
DEFAULT_BOUND = Bound(1_000_000)
#: Largest token budget / zone anywhere (10M tokens: beyond every model's window).
MAX_BUDGET_TOKENS = 10_000_000

_KEY = "contextwright.bound"


def bounded(default: Any, hi: float, *, work: bool = False) -> Any:
    """A dataclass field with ``default`` whose magnitude may not exceed ``hi``."""
    return dataclasses.field(default=default, metadata={_KEY: Bound(hi, work)})


def _is_numeric_annotation(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    words = set(str(text).replace("|", " ").replace("[", " ").replace("]", " ").replace(",", " ").split())
    return bool(words & {"int", "float", "Optional[int]", "Optional[float]"}) and not any(
        kind in str(text) for kind in ("tuple", "Mapping", "dict")
    )  # containers of numbers (fuse ``weights``) check their own items


def numeric_settings(cls: type[Any]) -> dict[str, Bound]:
    """Every numeric init setting of a dataclass and its bound (declared or default)."""
    out: dict[str, Bound] = {}
    for f in dataclasses.fields(cls):
        if f.init and _is_numeric_annotation(f.type):
            out[f.name] = bound_of(f)
    return out


def bound_of(f: dataclasses.Field[Any]) -> Bound:
    """The bound a field declares, or :data:`DEFAULT_BOUND`."""
    b = f.metadata.get(_KEY)
    return b if isinstance(b, Bound) else DEFAULT_BOUND


def check_number(value: Any, name: str, hi: float, *, where: str = "") -> None:
    """Raise :class:`ConfigError` when a number is not finite or beyond ``±hi``; other types pass."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return  # types are the owner's own check
    prefix = f"{where}.{name}" if where else name
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{prefix} must be a finite number; got {value!r}.")
    if abs(value) > hi:
        raise ConfigError(
            f"{prefix} is {value!r}, beyond its bound of {hi:g} (|value| <= {hi:g}); "
            f"choose a value within it (see the bounds table in docs/security.md)."
        )


def check_settings(
    cls: type[Any], settings: Mapping[str, Any], *, where: str = "", work_only: bool = False
) -> None:
    """Check ``settings`` (constructor keywords) of dataclass ``cls`` against their bounds.

    ``work_only`` checks just the ``work`` settings.

    Raises:
        ConfigError: naming the setting, the value and the bound.
    """
    bounds = numeric_settings(cls)
    for name, value in settings.items():
        b = bounds.get(name)
        if b is not None and (b.work or not work_only):
            check_number(value, name, b.hi, where=where or str(getattr(cls, "name", cls.__name__)))


def stage_work(stage: Any) -> int:
    """The product of a stage's ``work`` settings (1 when it has none): its cost per chunk, relatively."""
    work = 1
    if not dataclasses.is_dataclass(stage):
        return work
    for f in dataclasses.fields(stage):
        b = f.metadata.get(_KEY)
        if isinstance(b, Bound) and b.work:
            value = getattr(stage, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                work *= max(1, math.ceil(abs(value)))
    return work


def bounds_table(classes: Iterable[tuple[str, type[Any]]]) -> list[tuple[str, str, str, bool]]:
    """``(owner, setting, bound, work)`` rows for the given ``(name, dataclass)`` pairs."""
    rows = []
    for owner, cls in classes:
        for name, b in numeric_settings(cls).items():
            bound = f"{int(b.hi):,}" if float(b.hi).is_integer() else f"{b.hi:g}"
            rows.append((owner, name, bound, b.work))
    return rows
