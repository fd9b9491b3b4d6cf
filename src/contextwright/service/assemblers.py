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

from contextwright.core.errors import BudgetError, ConfigError, MissingDependencyError, TokenizerError
from contextwright.service.problems import Failure, Loc, config_error_loc
from contextwright.service.references import load_priors, screen_stages
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
        """Build an assembler, attributing each library error to the request field that caused it."""
        from contextwright.assembly.presets import get_preset, pipeline_from_config
        from contextwright.assembly.spec import AssemblerSpec
        from contextwright.render.format import get_format
        from contextwright.stages.order import order_stage
        from contextwright.tokens import get_tokenizer
        from contextwright.tokens.zones import get_model

        def check(loc: Loc, fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except BudgetError as exc:
                raise Failure(400, "no-room-for-documents", str(exc), loc) from None
            except (ConfigError, TokenizerError, MissingDependencyError) as exc:
                raise Failure(422, "invalid-option", str(exc), config_error_loc(exc, loc)) from None

        vet_formats(o, self.config)  # before get_format: building a template compiles it
        if o["tokenizer"] != self.config.tokenizer:  # the operator's own default may be a file
            vet_tokenizer(o["tokenizer"])
        model = check(["body", "model"], lambda: get_model(o["model"])) if o["model"] else None
        tokenizer = o["tokenizer"] or (model.tokenizer if model is not None else "cl100k_base")
        check(
            ["body", "tokenizer"] if o["tokenizer"] else ["body", "model"], lambda: get_tokenizer(tokenizer)
        )
        if o["format"] is not None:
            check(["body", "format"], lambda: get_format(o["format"]))
        if o["order"] is not None:
            check(["body", "order"], lambda: order_stage(o["order"]))
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
        pipeline = check(loc, lambda: pipeline_from_config(config, order=o["order"], format=o["format"]))
        vet_pipeline(pipeline, o, self.config)
        zones_loc: Loc = ["body", "output_tokens"] if o["output_tokens"] is not None else ["body", "model"]
        return check(  # type: ignore[no-any-return]
            zones_loc if model is not None else loc,
            lambda: AssemblerSpec(
                pipeline,
                model=model,
                budget=o["budget_hint"],
                tokenizer=tokenizer,
                system=o["system"],
                history_tokens=o["history_tokens"],
                output_tokens=o["output_tokens"],
                buffer_tokens=o["buffer_tokens"],
                fusion=o.get("fusion"),
                tool_tokens=o.get("tool_tokens", 0),
                tool_policy=o.get("tool_policy", "drop_largest"),
                stable_order=o.get("stable_order", False),
            ).build(**self.resources),
        )
