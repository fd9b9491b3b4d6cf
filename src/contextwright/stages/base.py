"""The stage contract, the stage registry and generic (de)serialization.

A stage is a frozen dataclass with keyword-only settings, a ``name`` and one
method, ``__call__(chunks, **needs) -> StageResult``. The pipeline passes a
stage only what it lists in ``requires`` (``query``, ``tokenizer``,
``budget``, ``format``, ``store``, ``embedder``), so a stage that does not use
the query never sees it.

Settings are stored under their parameter names, which makes serialization
generic (scikit-learn's estimator rule, Haystack's ``component_to_dict``):
:func:`stage_to_dict` reads the dataclass fields and :func:`stage_from_dict`
calls the constructor; no stage writes its own ``to_dict``.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from contextwright.core.errors import ConfigError, located
from contextwright.core.limits import check_settings
from contextwright.model.chunk import Chunk
from contextwright.model.fields import check_tree
from contextwright.model.report import StageResult

__all__ = [
    "Stage",
    "get_stage_class",
    "is_order_stage",
    "register_resource",
    "register_stage",
    "registered_stages",
    "resource_names",
    "stage_from_dict",
    "stage_to_dict",
]


@runtime_checkable
class Stage(Protocol):
    """One step of the pipeline.

    A stage that places blocks also declares ``kind: ClassVar[str] = "order"``
    (see :func:`is_order_stage`); ``order=`` overrides replace it.
    """

    name: ClassVar[str]
    requires: ClassVar[tuple[str, ...]]

    def __call__(self, chunks: Sequence[Chunk], /, **needs: Any) -> StageResult: ...


_STAGES: dict[str, type[Any]] = {}
_LOCK = threading.Lock()
S = TypeVar("S", bound=type[Any])


def register_stage(cls: S) -> S:
    """Class decorator: make a stage constructible by its ``name`` from config."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{cls.__name__} needs a class attribute 'name' to be registered.")
    if not dataclasses.is_dataclass(cls):
        raise ConfigError(f"{cls.__name__} must be a frozen dataclass to be registered.")
    _guard_init(cls)
    with _LOCK:
        existing = _STAGES.get(name)
        if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
            raise ConfigError(
                f"stage name {name!r} is taken by {existing.__module__}.{existing.__qualname__}; "
                "choose another name."
            )
        _STAGES[name] = cls
    return cls


def _guard_init(cls: type[Any]) -> None:
    """Check every setting's bound (and lone surrogates) around the stage's own ``__init__``.

    ``work`` settings are checked before it (an absurd ``num_perm`` is refused
    before anything is allocated for it), the others after it, so the stage's
    own, more specific message ("ratio must be between 0 and 1") wins where it
    has one (see :mod:`contextwright.core.limits`).
    """
    init = cls.__init__
    if getattr(init, "_bounds_checked", False):
        return

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **settings: Any) -> None:
        _check_bounds(cls, settings, work_only=True)
        for key, value in settings.items():
            if isinstance(value, (str, tuple, list, Mapping)):
                with located(key):
                    check_tree(value, f"{cls.name}.{key}", error=ConfigError)
        init(self, *args, **settings)
        _check_bounds(cls, settings)

    __init__._bounds_checked = True  # type: ignore[attr-defined]
    cls.__init__ = __init__


def _check_bounds(cls: type[Any], settings: Mapping[str, Any], *, work_only: bool = False) -> None:
    """:func:`~contextwright.core.limits.check_settings`, whose error carries the setting's name as ``loc``."""
    try:
        check_settings(cls, settings, work_only=work_only)
    except ConfigError:
        for key, value in settings.items():  # on failure only: the first bad setting, one at a time
            with located(key):
                check_settings(cls, {key: value}, work_only=work_only)
        raise


# What the pipeline itself hands to stages; never a resource the caller passes.
PIPELINE_PROVIDED = frozenset({"query", "tokenizer", "budget", "meter", "format", "previous"})
_RESOURCES: set[str] = set()


def register_resource(name: str) -> str:
    """Declare a resource name that ``Assembler(..., name=obj)`` accepts.

    The built-in and registered stages' ``requires``/``optional`` names
    (``store``, ``embedder``, ``llm``) are declared already; register a name
    only for a resource no stage class declares (one your own callable stage
    reads, say). Any other keyword is a typo and raises :class:`ConfigError`.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"a resource name must be a Python identifier; got {name!r}.")
    if name in PIPELINE_PROVIDED:
        raise ConfigError(f"{name!r} is provided by the pipeline itself; choose another resource name.")
    with _LOCK:
        _RESOURCES.add(name)
    return name


def resource_names(stages: Sequence[Any] = ()) -> frozenset[str]:
    """Every resource name a caller may pass: what the registered stages (and ``stages``) declare, plus registered names."""
    names = set(_RESOURCES)
    for cls in (*registered_stages().values(), *stages):
        names.update(getattr(cls, "requires", ()) or ())
        names.update(getattr(cls, "optional", ()) or ())
    return frozenset(names - PIPELINE_PROVIDED)


def registered_stages() -> dict[str, type[Any]]:
    """Every registered stage class by name (built-in stages are loaded first)."""
    _load_builtins()
    return dict(sorted(_STAGES.items()))


def get_stage_class(name: str) -> type[Any]:
    """The stage class registered as ``name``.

    Raises:
        ConfigError: listing the known names.
    """
    _load_builtins()
    try:
        return _STAGES[name]
    except KeyError:
        raise ConfigError(f"unknown stage type {name!r}; known: {', '.join(sorted(_STAGES))}.") from None


def is_order_stage(stage: Any) -> bool:
    """Whether ``stage`` (an instance or a class) places blocks: its class says ``kind = "order"``.

    ``order=`` replaces the last such stage of a pipeline. The mark lives on the
    class, so a new order stage (built in or your own) is recognised without a
    list to keep up to date.
    """
    return getattr(stage, "kind", None) == "order"


def stage_to_dict(stage: Any) -> dict[str, Any]:
    """``{"type": name, **settings}`` for any registered stage."""
    out: dict[str, Any] = {"type": stage.name}
    for f in dataclasses.fields(stage):
        if not f.init:
            continue
        value = getattr(stage, f.name)
        out[f.name] = _plain(value)
    return out


def stage_from_dict(data: Mapping[str, Any]) -> Any:
    """Build a stage from ``{"type": name, **settings}``.

    Raises:
        ConfigError: for an unknown type or setting, naming the valid ones.
    """
    if not isinstance(data, Mapping) or "type" not in data:
        raise ConfigError(
            f"a stage config must be an object with a 'type' key; got {data!r}. "
            'Example: {"type": "exact_dedup"}.'
        )
    with located("type"):
        cls = get_stage_class(str(data["type"]))
    settings = {k: _frozen(v) for k, v in data.items() if k != "type"}
    valid = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(settings) - valid)
    if unknown:
        raise ConfigError(
            f"stage {data['type']!r} has no setting {', '.join(map(repr, unknown))}; "
            f"valid settings: {', '.join(sorted(valid)) or '(none)'}.",
            loc=(unknown[0],),
        )
    return cls(**settings)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


_loaded = False
_loading = False
_LOAD_LOCK = threading.RLock()


def _load_builtins() -> None:
    # Threads (the service's assembly pool) may ask for a stage while another thread is
    # still importing the built-ins: they wait for the lock instead of seeing a partial
    # registry. ``_loading`` stops a stage module that looks up a stage at import time
    # from starting the loop again in the same thread.
    global _loaded, _loading
    if _loaded:
        return
    with _LOAD_LOCK:
        if _loaded or _loading:
            return
        _loading = True
        try:
            import importlib
            import pkgutil

            import contextwright.stages as package

            for info in pkgutil.iter_modules(package.__path__):
                if info.name != "base":
                    importlib.import_module(f"contextwright.stages.{info.name}")
            _loaded = True
        finally:
            _loading = False
