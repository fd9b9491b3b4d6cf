"""Positional priors: how accurate a reader model is, by where the answer sits in its context.

A prior turns "the first answer-bearing block is at position p" into an
expected accuracy, so two assembly strategies that both keep the answer can
still be told apart by where they put it. The default is the curve measured by
Liu et al., "Lost in the Middle: How Language Models Use Long Contexts"
(TACL 12, 2024), for GPT-3.5-Turbo on 20-document multi-document QA:
accuracy 75.8 / 57.2 / 53.8 / 55.4 / 63.2 % with the gold document at
positions 1 / 5 / 10 / 15 / 20, and 56.1 % closed-book (no document).

A prior file (JSON or TOML) has either 1-based ``positions`` with
``num_documents`` (default: the largest position), or ``normalized_positions``
in 0-1, plus ``accuracy`` in percent and ``closed_book`` in percent::

    name = "my-reader"
    positions = [1, 10, 20]
    num_documents = 20
    accuracy = [80.0, 60.0, 70.0]
    closed_book = 50.0
    source = "our own measurement, 2026-11"

Example:
    >>> LIU_2024.accuracy(0.0), LIU_2024.accuracy(None)
    (75.8, 56.1)
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwright.core.errors import ConfigError

__all__ = ["LIU_2024", "PositionalPrior", "load_prior"]


@dataclass(frozen=True, slots=True)
class PositionalPrior:
    """Expected accuracy of a reader as a function of the answer's normalized position.

    Linear interpolation between the points; positions outside the first and
    last point take the nearest point's accuracy. ``None`` (no answer in the
    context) gives ``closed_book``.

    Args:
        name: A short label for reports.
        points: ``(normalized position, accuracy %)`` pairs, positions
            strictly increasing in 0-1.
        closed_book: Accuracy (%) when the context holds no answer.
        source: Where the numbers come from.

    Example:
        >>> prior = PositionalPrior(name="flat-ish", points=((0.0, 80.0), (1.0, 60.0)), closed_book=40.0)
        >>> prior.accuracy(0.5)
        70.0
    """

    name: str
    points: tuple[tuple[float, float], ...]
    closed_book: float
    source: str = ""

    def __post_init__(self) -> None:
        points = tuple((float(x), float(y)) for x, y in self.points)
        object.__setattr__(self, "points", points)
        if not points:
            raise ConfigError("prior points must not be empty; give at least one (position, accuracy) pair.")
        xs = [x for x, _ in points]
        if any(not 0.0 <= x <= 1.0 for x in xs) or any(b <= a for a, b in itertools.pairwise(xs)):
            raise ConfigError(
                f"prior positions must be strictly increasing within 0-1; got {xs}. "
                "Give 1-based 'positions' with 'num_documents', or 'normalized_positions' in 0-1."
            )
        for value in (*(y for _, y in points), self.closed_book):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 100.0):
                raise ConfigError(f"prior accuracies must be percentages in 0-100; got {value!r}.")

    def accuracy(self, position: float | None) -> float:
        """Expected accuracy (%) with the answer at ``position`` (0-1), or closed-book for ``None``."""
        if position is None:
            return self.closed_book
        pts = self.points
        if position <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if position <= x1:
                return y0 + (y1 - y0) * (position - x0) / (x1 - x0)
        return pts[-1][1]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping that :func:`load_prior` reads back."""
        return {
            "name": self.name,
            "normalized_positions": [x for x, _ in self.points],
            "accuracy": [y for _, y in self.points],
            "closed_book": self.closed_book,
            "source": self.source,
        }


def _from_positions(positions: Sequence[int], num_documents: int) -> tuple[float, ...]:
    if num_documents < 2:
        return tuple(0.0 for _ in positions)
    return tuple((p - 1) / (num_documents - 1) for p in positions)


LIU_2024 = PositionalPrior(
    name="liu2024-gpt35-20doc",
    points=tuple(zip(_from_positions((1, 5, 10, 15, 20), 20), (75.8, 57.2, 53.8, 55.4, 63.2), strict=True)),
    closed_book=56.1,
    source=(
        "Liu et al., Lost in the Middle: How Language Models Use Long Contexts, TACL 12 (2024); "
        "GPT-3.5-Turbo, 20-document multi-document QA; closed-book 56.1%"
    ),
)


def prior_from_mapping(data: Mapping[str, Any], *, name: str = "custom") -> PositionalPrior:
    """Build a prior from the mapping a prior file holds (see the module docstring).

    Raises:
        ConfigError: naming the missing or malformed key.
    """
    acc = data.get("accuracy")
    if not isinstance(acc, list) or not all(isinstance(a, (int, float)) for a in acc):
        raise ConfigError(f"prior 'accuracy' must be a list of percentages; got {acc!r}.")
    if "normalized_positions" in data:
        xs = data["normalized_positions"]
        if not isinstance(xs, list) or not all(isinstance(x, (int, float)) for x in xs):
            raise ConfigError(f"prior 'normalized_positions' must be a list of numbers in 0-1; got {xs!r}.")
        norm = tuple(float(x) for x in xs)
    elif "positions" in data:
        pos = data["positions"]
        if not isinstance(pos, list) or not pos or not all(isinstance(p, int) and p >= 1 for p in pos):
            raise ConfigError(f"prior 'positions' must be a list of 1-based integers; got {pos!r}.")
        total = data.get("num_documents", max(pos))
        if not isinstance(total, int) or total < max(pos):
            raise ConfigError(
                f"prior 'num_documents' must be an integer >= the largest position ({max(pos)}); got {total!r}."
            )
        norm = _from_positions(pos, total)
    else:
        raise ConfigError(
            "a prior needs 'positions' (1-based, with 'num_documents') or 'normalized_positions' (0-1)."
        )
    if len(norm) != len(acc):
        raise ConfigError(
            f"prior has {len(norm)} positions but {len(acc)} accuracies; give one accuracy per position."
        )
    closed = data.get("closed_book")
    if not isinstance(closed, (int, float)):
        raise ConfigError(f"prior 'closed_book' must be a percentage (no answer in context); got {closed!r}.")
    return PositionalPrior(
        name=str(data.get("name", name)),
        points=tuple(zip(norm, (float(a) for a in acc), strict=True)),
        closed_book=float(closed),
        source=str(data.get("source", "")),
    )


def load_prior(spec: str | Path | Mapping[str, Any] | PositionalPrior | None = None) -> PositionalPrior:
    """Resolve a prior: ``None`` or ``"liu2024"`` for the default, a mapping, or a ``.json``/``.toml`` file.

    Raises:
        ConfigError: when the file cannot be read or holds a malformed prior.

    Example:
        >>> load_prior().name
        'liu2024-gpt35-20doc'
    """
    if spec is None or (isinstance(spec, str) and spec in ("liu2024", LIU_2024.name)):
        return LIU_2024
    if isinstance(spec, PositionalPrior):
        return spec
    if isinstance(spec, Mapping):
        return prior_from_mapping(spec)
    path = Path(spec)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read prior file {str(path)!r}: {exc.strerror}. Pass 'liu2024' or a .json/.toml file."
        ) from None
    try:
        if path.suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(raw.decode())
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"prior file {str(path)!r} is not valid {path.suffix[1:] or 'JSON'}: {exc}"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"prior file {str(path)!r} is nested too deeply to read (over about 1,000 levels)."
        ) from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"prior file {str(path)!r} must hold an object/table at the top level.")
    return prior_from_mapping(data, name=path.stem)
