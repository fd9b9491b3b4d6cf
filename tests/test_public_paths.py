"""Import paths users already write keep working after the move to layer packages (issue 25).

Each compatibility module re-exports the names its old module offered (its
``__all__``) from the code's new home: the same objects, not copies, so
``isinstance`` checks and registries agree whichever path a user imports.
Nothing inside the package imports these paths (tests/test_import_graph.py).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import contextwright

#: old path -> the names it offered before the move (space-separated)
PATHS: dict[str, str] = {
    "contextwright.types": "AssembledContext Change Chunk Citation Drop DropReason Report StageReport StageResult chunks_from_dicts",
    "contextwright.errors": "AssemblyCancelled BudgetError HistoryBudgetError CompressionError ConfigError ContextwrightError DeadlineExceeded InputError LLMError MissingDependencyError StoreError TokenizerError did_you_mean missing_extra",
    "contextwright.budget": "ModelSpec ZoneBudget get_model list_models register_model",
    "contextwright.limits": "DEFAULT_BOUND MAX_BUDGET_TOKENS Bound bound_of bounded bounds_table check_number check_settings numeric_settings stage_work",
    "contextwright.sentences": "sentences split_sentences",
    "contextwright.spans": "Span compose join_pieces pieces_of",
    "contextwright.llm": "ChatClient ChatReply check_client_settings",
    "contextwright.embed": "CallableEmbedder Embedder EmbeddingCache LazyModel SentenceTransformerEmbedder normalize_rows",
    "contextwright.rerank": "CrossEncoderReranker Reranker",
    "contextwright.io": "QueryItem Record batched read_items read_records",
    "contextwright.pipeline": "Pipeline Plan cancel_on",
    "contextwright.assembler": "Assembler aassemble assemble",
    "contextwright.config": "get_preset list_presets pipeline_from_config pipeline_to_config register_preset",
    "contextwright.inspector": "block_rows input_rows inspection render_page",
    "contextwright.corpus_dedup": "CorpusDedupResult NearPair near_duplicate_pairs",
    "contextwright.eval.priors": "LIU_2024 PositionalPrior load_prior",
    "contextwright.tokens": "CachedTokenizer CharTokenizer HFTokenizer TiktokenTokenizer Tokenizer canonical_spec get_tokenizer loaded_tokenizers register_tokenizer",
    "contextwright.stores": "ChunkStore InMemoryStore PostgresStore SQLiteStore open_store",
    "contextwright.batch": "BatchRow BatchSettings assemble_many ray_map read_rows run_batch",
    "contextwright.eval.reader": "PositionSweep Reader ReaderSummary evaluate_reader position_sweep",
    "contextwright.stages.order": "PriorOrder",
    "contextwright.stages.expand": "ExpandNeighbors",
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_old_path_offers_its_names_from_their_new_home(path: str) -> None:
    module = importlib.import_module(path)
    for name in PATHS[path].split():
        value = getattr(module, name)
        home = getattr(value, "__module__", None)
        if home is not None and home != path and home.startswith("contextwright."):
            assert getattr(importlib.import_module(home), name) is value, f"{path}.{name} is a copy"


COMPAT_DIR = Path(contextwright.__file__).parent


def _file(path: str) -> Path:
    return COMPAT_DIR / f"{path.split('.', 1)[1].replace('.', '/')}.py"


#: The old paths that are compatibility modules now (the others are still the code's home).
COMPAT_PATHS = sorted(
    p
    for p in PATHS
    if _file(p).is_file() and "Compatibility path" in _file(p).read_text(encoding="utf-8")[:200]
)


def test_the_moved_modules_are_compatibility_modules() -> None:
    assert len(COMPAT_PATHS) == 16  # every module the move emptied (docs/architecture.md)


@pytest.mark.parametrize("path", COMPAT_PATHS)
def test_a_compatibility_module_holds_nothing_but_re_exports(path: str) -> None:
    tree = ast.parse(_file(path).read_text(encoding="utf-8"))
    for node in tree.body[1:]:
        is_import = isinstance(node, (ast.ImportFrom, ast.Import))
        assert is_import, f"{path} holds code at line {node.lineno}; it should only re-export"
    exported = [a.asname for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if a.asname]
    assert sorted(exported) == sorted(PATHS[path].split())


def test_the_version_is_the_one_in_pyproject() -> None:
    import tomllib

    pyproject = tomllib.loads((COMPAT_DIR.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert contextwright.__version__ == pyproject["project"]["version"]
