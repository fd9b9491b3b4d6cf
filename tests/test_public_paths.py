"""Import paths users already write keep working after the move to layer packages (issue 25).

The sixteen modules the move emptied are no files any more: one finder
(``contextwright._aliases``) serves their old paths, each name the same object
as at its new home (not a copy, so ``isinstance`` checks and registries agree),
read with a ``DeprecationWarning`` that names the import to write instead
(issue 34). Nothing inside the project uses these paths
(tests/test_import_graph.py).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import contextwright
from contextwright import _aliases

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


#: The old paths that moved (issue 25): no file any more, served by contextwright._aliases.
OLD_PATHS = sorted(_aliases.ALIASES)
#: The paths above that are still the code's home.
HOMES = sorted(set(PATHS) - set(OLD_PATHS))

COMPAT_DIR = Path(contextwright.__file__).parent


@pytest.mark.parametrize("path", HOMES)
def test_a_path_that_stayed_offers_its_names(path: str) -> None:
    module = importlib.import_module(path)
    for name in PATHS[path].split():
        value = getattr(module, name)
        home = getattr(value, "__module__", None)
        if home is not None and home != path and home.startswith("contextwright."):
            assert getattr(importlib.import_module(home), name) is value, f"{path}.{name} is a copy"


def test_the_old_paths_are_the_sixteen_the_move_emptied_and_none_is_a_file() -> None:
    assert len(OLD_PATHS) == 16
    assert set(OLD_PATHS) <= set(PATHS)
    for path in OLD_PATHS:
        file = COMPAT_DIR / f"{path.split('.', 1)[1].replace('.', '/')}.py"
        assert not file.exists(), f"{file} is back; the old path {path} is served by contextwright._aliases"
    top = sorted(p.name for p in COMPAT_DIR.glob("*.py"))
    assert top == ["__init__.py", "_aliases.py"], (
        "the package's top level holds only the surface and the layers"
    )


@pytest.mark.parametrize("path", OLD_PATHS)
def test_an_old_path_offers_its_names_from_their_new_home_with_a_deprecation_warning(path: str) -> None:
    module = importlib.import_module(path)
    assert sorted(_aliases.ALIASES[path]) == sorted(PATHS[path].split()) == module.__all__
    for name in PATHS[path].split():
        with pytest.warns(
            DeprecationWarning, match=rf"{re.escape(path)} is deprecated .* removed in .*0\.3\.0"
        ) as got:
            value = getattr(module, name)
        message = str(got[0].message)
        assert got[0].filename == __file__  # the warning points at the line that used the old path
        new = re.search(r"`from (\S+) import (\w+)`", message)
        assert new is not None, message
        assert new.group(2) == name
        assert getattr(importlib.import_module(new.group(1)), name) is value, f"{path}.{name} is a copy"


def test_from_import_of_an_old_path_warns_at_the_importing_line_and_gives_the_same_object() -> None:
    with pytest.warns(DeprecationWarning, match=r"write `from contextwright import ConfigError`") as got:
        from contextwright.errors import ConfigError  # the old spelling, on purpose

    assert ConfigError is contextwright.ConfigError
    assert got[0].filename == __file__
    from contextwright import io as old_io  # the attribute, then the submodule: both old spellings

    with pytest.warns(DeprecationWarning, match=r"`from contextwright.inputs.readers import read_records`"):
        value = old_io.read_records
    assert value is importlib.import_module("contextwright.inputs.readers").read_records


def test_an_old_path_names_what_it_offers_when_a_name_is_not_there() -> None:
    module = importlib.import_module("contextwright.spans")
    with pytest.raises(AttributeError, match=r"no attribute 'Spam'.*removed in 0\.3\.0.*Span, compose"):
        module.Spam  # noqa: B018


def test_an_old_path_warns_in_a_plain_script_where_python_hides_most_deprecations() -> None:
    """Python shows a DeprecationWarning by default only when it is attributed to ``__main__``."""
    code = "from contextwright.types import Chunk\nprint(Chunk.__module__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(COMPAT_DIR.parent), "PYTHONWARNINGS": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout == "contextwright.model.chunk\n"
    assert "<string>:1: DeprecationWarning: contextwright.types is deprecated" in out.stderr
    assert "write `from contextwright import Chunk`" in out.stderr


def test_the_architecture_page_lists_every_old_path_with_its_removal_version() -> None:
    text = (COMPAT_DIR.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Compatibility paths", 1)[1].split("\n## ", 1)[0]
    assert f"removed in {_aliases.REMOVED_IN}" in section
    listed = set(re.findall(r"^\| `(contextwright[\w.]*)` \|", section, flags=re.M))
    assert listed == set(OLD_PATHS)


def test_the_version_is_the_one_in_pyproject() -> None:
    import tomllib

    pyproject = tomllib.loads((COMPAT_DIR.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert contextwright.__version__ == pyproject["project"]["version"]


_OLD = "|".join(re.escape(p.removeprefix("contextwright.")) for p in OLD_PATHS)
_TOP = "|".join(p.removeprefix("contextwright.") for p in OLD_PATHS if p.count(".") == 1)
_USE = re.compile(
    rf"\bcontextwright\.(?:{_OLD})\b"
    rf"|\bfrom contextwright import [^\n]*\b(?:{_TOP})\b"
    r"|\bfrom contextwright\.eval import [^\n]*\bpriors\b"
)
_ALLOWED = {"tests/test_public_paths.py", "tests/test_import_graph.py", "src/contextwright/_aliases.py"}


def test_nothing_in_the_project_uses_an_old_path() -> None:
    repo = COMPAT_DIR.parents[1]
    used = []
    for folder in ("src", "tests", "bench", "docs", "examples"):
        for file in sorted((repo / folder).rglob("*")):
            rel = file.relative_to(repo).as_posix()
            if file.suffix not in {".py", ".md", ".toml", ".txt", ".json", ".yml"} or rel in _ALLOWED:
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
            if rel == "docs/architecture.md":
                text = re.sub(r"## Compatibility paths.*?\n## ", "## ", text, flags=re.S)
            used += [f"{rel}: {m.group(0)}" for m in _USE.finditer(text)]
    text = (repo / "README.md").read_text(encoding="utf-8")
    used += [f"README.md: {m.group(0)}" for m in _USE.finditer(text)]
    assert used == [], "old import paths in use (write the new ones, docs/architecture.md):\n" + "\n".join(
        used
    )
