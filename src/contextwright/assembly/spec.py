"""Flat options to an assembler, in one place: :class:`AssemblerSpec`.

The CLI (flags), the batch runner (settings), the service (a request body),
the framework adapters (constructor arguments) and the eval strategies all
build an :class:`~contextwright.assembly.assembler.Assembler` from a flat set
of options. Each used to list the option names and pass them on itself; now
each fills an :class:`AssemblerSpec` and calls :meth:`AssemblerSpec.build`,
so an option added to the assembler is added here once, and an unknown option
is refused here with the list of known ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from contextwright.assembly.assembler import DEFAULT_BUFFER, Assembler
from contextwright.assembly.pipeline import Pipeline
from contextwright.core.errors import ConfigError

__all__ = ["AssemblerSpec"]


@dataclass(frozen=True, slots=True)
class AssemblerSpec:
    """The options of one assembler; :meth:`build` makes it.

    The fields are :class:`Assembler`'s keyword arguments, with the same
    defaults; ``config`` is its first argument (a preset name, a config file,
    a config mapping or a :class:`Pipeline`).

    Example:
        >>> spec = AssemblerSpec.from_options({"preset": "qa", "budget": 800, "order": None})
        >>> spec.build().budget
        800
    """

    config: str | Path | Mapping[str, Any] | Pipeline = "qa"
    model: Any = None
    budget: int | None = None
    tokenizer: Any = None
    format: Any = None
    order: str | None = None
    system: str | None = "default"
    history_tokens: int = 0
    output_tokens: int | None = None
    buffer_tokens: int = DEFAULT_BUFFER
    fusion: str | Mapping[str, Any] | None = None
    tool_tokens: int = 0
    tool_policy: str = "drop_largest"
    stable_order: bool = False

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The option names, in declaration order (``preset`` is also accepted for ``config``)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, where: str = "options") -> AssemblerSpec:
        """A spec from flat options, as a command line or a request gives them.

        A value of ``None`` means "not given", so the default applies; the one
        exception is ``system``, where ``None`` means no system prompt, as in
        :class:`Assembler`. ``preset`` is another name for ``config``.

        Raises:
            ConfigError: naming an option that is not one, with the known ones.
        """
        known = cls.options()
        given: dict[str, Any] = {}
        for key, value in options.items():
            name = "config" if key == "preset" else key
            if name not in known:
                raise ConfigError(
                    f"{where}.{key} is not an assembler option; the options are preset (or config), "
                    f"{', '.join(k for k in known if k != 'config')}."
                )
            if value is not None or name == "system":
                given[name] = value
        return cls(**given)

    def build(self, **resources: Any) -> Assembler:
        """The assembler, with ``resources`` (``store=``, ``embedder=``, ...) for its stages."""
        return Assembler(
            self.config,
            model=self.model,
            budget=self.budget,
            tokenizer=self.tokenizer,
            format=self.format,
            order=self.order,
            system=self.system,
            history_tokens=self.history_tokens,
            output_tokens=self.output_tokens,
            buffer_tokens=self.buffer_tokens,
            fusion=self.fusion,
            tool_tokens=self.tool_tokens,
            tool_policy=self.tool_policy,  # type: ignore[arg-type]  # Assembler checks it, naming the field
            stable_order=self.stable_order,
            **resources,
        )
