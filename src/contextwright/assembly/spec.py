"""The assembler's options, in one place: :class:`AssemblerSpec`, and the resources flat options name.

The CLI (flags), the batch runner (settings), the service (a request body),
the framework adapters (constructor arguments), the eval strategies and
:func:`contextwright.assemble` (keywords) all build an
:class:`~contextwright.assembly.assembler.Assembler` from a flat set of
options. Each fills an :class:`AssemblerSpec`, which owns the option names,
their defaults and their checks, and hands it to
:meth:`Assembler.from_spec <contextwright.assembly.assembler.Assembler.from_spec>`;
so an option added to the assembler is added here once, an unknown option is
refused here with the list of known ones, and a bad value is refused here with
the option's name in the error's ``loc`` (which the service turns into a 422
``loc``). :func:`open_resources` turns ``store``/``expand``/``embedder`` into the
assembler's resources, for every edge the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import ConfigError, located
from contextwright.core.limits import MAX_BUDGET_TOKENS, check_number
from contextwright.render.tools import TOOL_POLICIES

if TYPE_CHECKING:
    from contextwright.assembly.pipeline import Pipeline

__all__ = ["DEFAULT_BUFFER", "AssemblerSpec", "open_resources"]

DEFAULT_BUFFER = 128

#: The options that are token counts: bounded, and non-negative integers where the spec says so.
_TOKEN_OPTIONS = ("budget", "history_tokens", "output_tokens", "buffer_tokens", "tool_tokens")


@dataclass(frozen=True, slots=True)
class AssemblerSpec:
    """The options of one assembler, checked when the spec is made.

    The fields are :class:`~contextwright.assembly.assembler.Assembler`'s
    keyword arguments, with the same defaults and meaning (documented there);
    ``config`` is its first argument (a preset name, a config file, a config
    mapping or a :class:`~contextwright.assembly.pipeline.Pipeline`). The
    checks that need no loading (numbers, ``tool_policy``, ``stable_order``)
    run here, once; the ones that load something (the preset, the model, the
    tokenizer) run when the assembler is built. Each error's ``loc`` is
    ``(option,)``.

    Example:
        >>> spec = AssemblerSpec.from_options({"preset": "qa", "budget": 800, "order": None})
        >>> Assembler.from_spec(spec).budget
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

    def __post_init__(self) -> None:
        for name in _TOKEN_OPTIONS:
            with located(name):
                check_number(getattr(self, name), name, MAX_BUDGET_TOKENS, where="Assembler")
        if not isinstance(self.stable_order, bool):
            raise ConfigError(
                f"stable_order must be true or false; got {self.stable_order!r}.", loc=("stable_order",)
            )
        tool_tokens = self.tool_tokens
        if isinstance(tool_tokens, bool) or not isinstance(tool_tokens, int) or tool_tokens < 0:
            raise ConfigError(
                f"tool_tokens must be a non-negative integer; got {tool_tokens!r}.", loc=("tool_tokens",)
            )
        if self.tool_policy not in TOOL_POLICIES:
            raise ConfigError(
                f"tool_policy must be one of {', '.join(TOOL_POLICIES)}; got {self.tool_policy!r}.",
                loc=("tool_policy",),
            )
        budget = self.budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise ConfigError(
                f"budget must be a non-negative integer number of tokens; got {budget!r}.", loc=("budget",)
            )

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The option names, in declaration order (``preset`` is also accepted for ``config``)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def split(
        cls, given: Mapping[str, Any], *, exclude: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``given`` keywords as (the options among them, less ``exclude``; the rest: resources, or
        typos to report)."""
        known = [o for o in cls.options() if o not in exclude]
        options = {k: v for k, v in given.items() if k in known}
        return options, {k: v for k, v in given.items() if k not in known}

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, where: str = "options") -> AssemblerSpec:
        """A spec from flat options, as a command line or a request gives them.

        A value of ``None`` means "not given", so the default applies; the one
        exception is ``system``, where ``None`` means no system prompt, as in
        :class:`~contextwright.assembly.assembler.Assembler`. ``preset`` is
        another name for ``config``.

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
                    f"{', '.join(k for k in known if k != 'config')}.",
                    loc=(key,),
                )
            if value is not None or name == "system":
                given[name] = value
        return cls(**given)


def open_resources(
    config: Any,
    *,
    store: str | None = None,
    expand: int | None = None,
    embedder: str | None = None,
    resources: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``(config, resources)`` for flat options that name resources: the one store/expand helper.

    ``store`` (a URL) is opened as the ``store`` resource, ``expand`` turns
    ``config`` into a pipeline that fetches the neighbours index±N from it, and
    ``embedder`` (a sentence-transformers model) becomes the ``embedder``
    resource; ``resources`` are passed on as they are.

    Raises:
        ConfigError: ``expand`` without ``store`` (``loc`` ``("expand",)``).
    """
    out: dict[str, Any] = dict(resources or {})
    if expand is not None:
        if store is None:
            raise ConfigError(
                "expand needs store= (the chunk store to fetch neighbours from).", loc=("expand",)
            )
        from contextwright.assembly.presets import pipeline_from_config
        from contextwright.stages.expand import with_expansion

        config = with_expansion(pipeline_from_config(config), window=expand)
    if store is not None:
        from contextwright.stores import open_store

        out["store"] = open_store(store)
    if embedder is not None:
        from contextwright.clients.embed import SentenceTransformerEmbedder

        out["embedder"] = SentenceTransformerEmbedder(embedder)
    return config, out
