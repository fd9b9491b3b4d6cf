"""contextwright: context assembly for retrieval-augmented generation.

Turn ranked retrieved chunks into the context an LLM reads: under an exact
token budget, deduplicated, ordered against "lost in the middle", rendered
with boundaries that cannot be forged, and cited so every ``[n]`` maps back
to its source.

    >>> import contextwright
    >>> ctx = contextwright.assemble("who discovered x-rays?", chunks, budget=500)
    >>> ctx.text, ctx.citations, ctx.report.summary()
"""

from contextwright._aliases import install as _install_aliases
from contextwright.assembly.assembler import Assembler, aassemble, assemble
from contextwright.assembly.pipeline import Pipeline
from contextwright.assembly.presets import (
    get_preset,
    list_presets,
    pipeline_from_config,
    pipeline_to_config,
    register_preset,
)
from contextwright.core.caches import clear_all as clear_caches
from contextwright.core.errors import (
    BudgetError,
    ConfigError,
    ContextwrightError,
    HistoryBudgetError,
    InputError,
    MissingDependencyError,
    TokenizerError,
)
from contextwright.core.version import __version__
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, Report, StageReport, StageResult
from contextwright.render.cite import Answer, CitationResolution, aask, ask, chat_messages, resolve_citations
from contextwright.render.context import AssembledContext, Citation
from contextwright.render.format import get_format
from contextwright.render.messages import PROMPTS
from contextwright.stages.base import Stage, register_resource, register_stage
from contextwright.tokens import Tokenizer, get_tokenizer, register_tokenizer
from contextwright.tokens.zones import ModelSpec, ZoneBudget, get_model, list_models, register_model

# The import paths that moved in issue 25 keep working, deprecated (_aliases, docs/architecture.md).
_install_aliases()

__all__ = [
    "Answer",
    "AssembledContext",
    "Assembler",
    "BudgetError",
    "Change",
    "Chunk",
    "Citation",
    "CitationResolution",
    "ConfigError",
    "ContextwrightError",
    "Drop",
    "HistoryBudgetError",
    "InputError",
    "MissingDependencyError",
    "ModelSpec",
    "PROMPTS",
    "Pipeline",
    "Report",
    "Stage",
    "StageReport",
    "StageResult",
    "Tokenizer",
    "TokenizerError",
    "ZoneBudget",
    "__version__",
    "aask",
    "aassemble",
    "ask",
    "assemble",
    "chat_messages",
    "clear_caches",
    "get_format",
    "get_model",
    "get_preset",
    "get_tokenizer",
    "list_models",
    "list_presets",
    "pipeline_from_config",
    "pipeline_to_config",
    "register_model",
    "register_preset",
    "register_resource",
    "register_stage",
    "register_tokenizer",
    "resolve_citations",
]
