"""The old import paths, served by one finder with a ``DeprecationWarning`` each.

Before the layer packages (issue 25), ``contextwright.types``,
``contextwright.errors``, ``contextwright.io`` and thirteen more were modules at
the top of the package. Their code moved; :data:`ALIASES` says where each name
went. ``import contextwright`` installs :class:`AliasFinder` on
:data:`sys.meta_path`, so ``import contextwright.types`` and
``from contextwright.errors import ConfigError`` still work, and every name read
through an old path warns once per call site, naming the import to write
instead. The old paths go in :data:`REMOVED_IN` (docs/architecture.md,
"Compatibility paths"). Nothing inside the project imports them.

The names are resolved on first use, not at import: an old path into an edge
(``contextwright.corpus_dedup`` lives in ``contextwright.batch``) loads that
edge only when a name is read, as its module used to.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["ALIASES", "REMOVED_IN", "AliasFinder", "install", "new_home"]

#: The version that removes the old paths.
REMOVED_IN = "0.3.0"

#: old module -> {name: the module that holds it now}; the names are the old module's ``__all__``.
ALIASES: dict[str, dict[str, str]] = {
    "contextwright.types": {
        "AssembledContext": "contextwright.render.context",
        "Change": "contextwright.model.report",
        "Chunk": "contextwright.model.chunk",
        "Citation": "contextwright.render.context",
        "Drop": "contextwright.model.report",
        "DropReason": "contextwright.model.report",
        "Report": "contextwright.model.report",
        "StageReport": "contextwright.model.report",
        "StageResult": "contextwright.model.report",
        "chunks_from_dicts": "contextwright.model.convert",
    },
    "contextwright.errors": dict.fromkeys(
        (
            "AssemblyCancelled BudgetError CompressionError ConfigError ContextwrightError DeadlineExceeded "
            "HistoryBudgetError InputError LLMError MissingDependencyError StoreError TokenizerError "
            "did_you_mean missing_extra"
        ).split(),
        "contextwright.core.errors",
    ),
    "contextwright.budget": dict.fromkeys(
        "ModelSpec ZoneBudget get_model list_models register_model".split(), "contextwright.tokens.zones"
    ),
    "contextwright.limits": dict.fromkeys(
        (
            "DEFAULT_BOUND MAX_BUDGET_TOKENS Bound bound_of bounded bounds_table check_number "
            "check_settings numeric_settings stage_work"
        ).split(),
        "contextwright.core.limits",
    ),
    "contextwright.sentences": dict.fromkeys(
        ("sentences", "split_sentences"), "contextwright.core.sentences"
    ),
    "contextwright.spans": dict.fromkeys(
        ("Span", "compose", "join_pieces", "pieces_of"), "contextwright.model.spans"
    ),
    "contextwright.llm": dict.fromkeys(
        ("ChatClient", "ChatReply", "check_client_settings"), "contextwright.clients.chat"
    ),
    "contextwright.embed": dict.fromkeys(
        (
            "CallableEmbedder Embedder EmbeddingCache LazyModel SentenceTransformerEmbedder normalize_rows"
        ).split(),
        "contextwright.clients.embed",
    ),
    "contextwright.rerank": dict.fromkeys(
        ("CrossEncoderReranker", "Reranker"), "contextwright.clients.rerank"
    ),
    "contextwright.io": dict.fromkeys(
        ("QueryItem", "Record", "batched", "read_items", "read_records"), "contextwright.inputs.readers"
    ),
    "contextwright.pipeline": {
        "Pipeline": "contextwright.assembly.pipeline",
        "Plan": "contextwright.assembly.pipeline",
        "cancel_on": "contextwright.assembly.loop",
    },
    "contextwright.assembler": dict.fromkeys(
        ("Assembler", "aassemble", "assemble"), "contextwright.assembly.assembler"
    ),
    "contextwright.config": dict.fromkeys(
        ("get_preset", "list_presets", "pipeline_from_config", "pipeline_to_config", "register_preset"),
        "contextwright.assembly.presets",
    ),
    "contextwright.inspector": dict.fromkeys(
        ("block_rows", "input_rows", "inspection", "render_page"), "contextwright.assembly.inspector"
    ),
    "contextwright.corpus_dedup": dict.fromkeys(
        ("CorpusDedupResult", "NearPair", "near_duplicate_pairs"), "contextwright.batch.corpus_dedup"
    ),
    "contextwright.eval.priors": dict.fromkeys(
        ("LIU_2024", "PositionalPrior", "load_prior"), "contextwright.stages.priors"
    ),
}


def new_home(old: str, name: str) -> str:
    """The import to write instead of ``from old import name``: the public surface when it offers
    the name (``from contextwright import Chunk``), else the name's home module."""
    surface = sys.modules.get("contextwright")
    if name in getattr(surface, "__all__", ()):
        return f"from contextwright import {name}"
    return f"from {ALIASES[old][name]} import {name}"


class _OldPath(types.ModuleType):
    """An old module: each name is read from its home, with a ``DeprecationWarning``."""

    def __getattr__(self, name: str) -> Any:
        homes = ALIASES[self.__name__]
        if name not in homes:
            raise AttributeError(
                f"module {self.__name__!r} has no attribute {name!r}; it is an old path "
                f"(removed in {REMOVED_IN}) that offers {', '.join(sorted(homes))}"
            )
        warnings.warn(
            f"{self.__name__} is deprecated and will be removed in contextwright {REMOVED_IN}; "
            f"write `{new_home(self.__name__, name)}` (docs/architecture.md, Compatibility paths).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(homes[name]), name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *ALIASES[self.__name__]})


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the old paths of :data:`ALIASES` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin="alias")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _OldPath(
            spec.name, f"Old path: import from {', '.join(sorted(set(ALIASES[spec.name].values())))}."
        )
        module.__all__ = sorted(ALIASES[spec.name])  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the names are read from their homes on use."""


def install() -> None:
    """Put one :class:`AliasFinder` first on :data:`sys.meta_path` (again: no second one)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
