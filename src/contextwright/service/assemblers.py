"""The assembler cache: one :class:`Assembler` per configuration, built on first use.

Assemblers are cached per configuration (preset or config, model, tokenizer,
format, order, zones), so the tokenizer's count cache and the chunk store are
shared by every request that uses them.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from contextwright.assembly.spec import AssemblerSpec
from contextwright.core.errors import BudgetError, ConfigError, MissingDependencyError, TokenizerError
from contextwright.service.problems import Failure, Loc, config_error_loc
from contextwright.service.references import load_priors, register_profiles, screen_stages
from contextwright.service.security import vet_formats, vet_pipeline, vet_tokenizer
from contextwright.service.settings import ServiceConfig

if TYPE_CHECKING:
    from contextwright.assembly.assembler import Assembler

__all__ = ["Assemblers", "open_resources"]


def open_resources(cfg: ServiceConfig) -> dict[str, Any]:
    """The shared resources the settings name (the chunk store), passed to every assembler."""
    resources: dict[str, Any] = {}
    if cfg.store_url:
        try:
            from contextwright.stores import open_store
        except ImportError:
            raise ConfigError(
                "store_url is set but contextwright.stores is not available in this installation."
            ) from None
        resources["store"] = open_store(cfg.store_url)
    return resources


class Assemblers:
    """A small LRU of :class:`Assembler` objects keyed by their configuration."""

    def __init__(self, config: ServiceConfig, resources: Mapping[str, Any]) -> None:
        self.config = config
        self.resources = dict(resources)
        register_profiles(config)  # the server's profiles become presets before any request names one
        self.priors = load_priors(config)  # the server's named priors, read once, here at start-up
        self._cache: OrderedDict[str, Assembler] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def get(self, options: Mapping[str, Any]) -> Assembler:
        key = json.dumps(options, sort_keys=True, default=str)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        built = self._build(options)
        with self._lock:
            self._cache[key] = built
            while len(self._cache) > self.config.max_assemblers:
                self._cache.popitem(last=False)
        return built

    def _build(self, o: Mapping[str, Any]) -> Assembler:
        """Build an assembler, attributing each library error to the request field that caused it.

        The options are checked where they are used, once: an error's ``loc`` (``("order",)``,
        ``("model",)``, ...) names the field, so nothing is checked ahead only to find its field.
        """
        from contextwright.assembly.assembler import Assembler
        from contextwright.assembly.presets import get_preset, pipeline_from_config, with_overrides

        def check(loc: Loc, fn: Callable[[], Any], *, fields: bool = True) -> Any:
            """``fn()``; an error goes to the option its ``loc`` names (``fields``), else into ``loc``."""
            try:
                return fn()
            except BudgetError as exc:
                raise Failure(400, "no-room-for-documents", str(exc), loc) from None
            except (ConfigError, TokenizerError, MissingDependencyError) as exc:
                where = _field_loc(exc) if fields else None
                raise Failure(422, "invalid-option", str(exc), where or config_error_loc(exc, loc)) from None

        vet_formats(o, self.config)  # before get_format: building a template compiles it
        if o["tokenizer"] != self.config.tokenizer:  # the operator's own default may be a file
            vet_tokenizer(o["tokenizer"])
        config: Any = o["preset"]
        loc: Loc = ["body", "preset"]
        check(loc, lambda: get_preset(o["preset"]))
        if o["config"] is not None:
            config = (
                {"preset": o["preset"], **o["config"]} if "stages" not in o["config"] else dict(o["config"])
            )
            loc = ["body", "config"]
            if "stages" in config:  # built below: a stage may read what its settings name
                config["stages"] = screen_stages(config["stages"], self.config, self.priors)
            if "preset" in o["config"]:
                check(["body", "config", "preset"], lambda: get_preset(str(o["config"]["preset"])))
        pipeline = check(loc, lambda: pipeline_from_config(config), fields=False)  # loc: within the config
        pipeline = check(loc, lambda: with_overrides(pipeline, order=o["order"], format=o["format"]))
        vet_pipeline(pipeline, o, self.config)
        zones_loc: Loc = ["body", "output_tokens"] if o["output_tokens"] is not None else ["body", "model"]
        options = {k: o.get(k) for k in _OPTION_FIELDS - {"model", "tokenizer", "format", "order"} if k in o}
        spec: dict[str, Any] = {**options, "model": o["model"] or None, "tokenizer": o["tokenizer"] or None}
        return check(  # type: ignore[no-any-return]
            zones_loc if o["model"] else loc,
            lambda: Assembler.from_spec(
                AssemblerSpec(pipeline, budget=o["budget_hint"], **spec), **self.resources
            ),
        )


#: The request fields an assembler option's error can name: the spec's options (its ``loc[0]``, the
#: same name), less ``config`` (the request's preset/config) and ``budget`` (per request, not the assembler's).
_OPTION_FIELDS = frozenset(AssemblerSpec.options()) - {"config", "budget"}


def _field_loc(exc: BaseException) -> Loc | None:
    """``body.<option>`` when the error's ``loc`` names an assembler option, else None."""
    loc: tuple[str | int, ...] = getattr(exc, "loc", ())
    return ["body", str(loc[0])] if loc and loc[0] in _OPTION_FIELDS else None
