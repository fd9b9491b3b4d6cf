"""Tests of the embedders and their content-hash cache."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from contextwright.clients.embed import (
    CallableEmbedder,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
)
from contextwright.core.errors import ConfigError, MissingDependencyError


def test_minilm_embeds_unit_vectors_and_ranks_a_paraphrase_above_an_unrelated_text(
    minilm_embedder: Any,
) -> None:
    texts = [
        "The cat sat on the mat.",
        "A cat was sitting on the mat.",
        "Quarterly revenue grew by eight percent.",
    ]
    vecs = minilm_embedder.embed(texts)
    assert isinstance(minilm_embedder, Embedder)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > 0.8 > 0.2 > vecs[0] @ vecs[2]


def test_minilm_second_call_is_served_from_the_cache(minilm_embedder: Any) -> None:
    texts = ["A sentence only this test embeds.", "Another sentence only this test embeds."]
    first = minilm_embedder.embed(texts)
    hits = minilm_embedder.cache.hits
    again = minilm_embedder.embed(texts[::-1])
    assert minilm_embedder.cache.hits == hits + 2
    assert np.array_equal(again, first[::-1])


def test_callable_embedder_encodes_each_uncached_text_once_and_normalizes() -> None:
    calls: list[list[str]] = []

    def fn(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    emb = CallableEmbedder(fn)
    out = emb.embed(["ab", "cde", "ab"])
    assert calls == [["ab", "cde"]]
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert np.array_equal(out[0], out[2])
    emb.embed(["cde", "f"])
    assert calls[-1] == ["f"]


def test_callable_embedder_rejects_a_wrong_number_of_rows() -> None:
    emb = CallableEmbedder(lambda texts: [[1.0, 0.0]])
    with pytest.raises(ConfigError, match=r"returned 1 vectors for 2 texts; it must return one row per text"):
        emb.embed(["a", "b"])


def test_callable_embedder_needs_a_callable() -> None:
    with pytest.raises(ConfigError, match=r"CallableEmbedder needs a callable texts -> vectors; got 3"):
        CallableEmbedder(3)  # type: ignore[arg-type]


def test_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    cache = EmbeddingCache(maxsize=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert len(cache) == 2
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == (1, 3)
    with pytest.raises(ConfigError, match=r"cache_size must be a non-negative integer; got -1"):
        EmbeddingCache(-1)


def test_missing_sentence_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    emb = SentenceTransformerEmbedder("some-model")
    with pytest.raises(MissingDependencyError, match=r"pip install 'contextwright\[semantic\]'"):
        emb.embed(["x"])


def test_sentence_transformer_embedder_validates_its_settings() -> None:
    with pytest.raises(ConfigError, match=r"batch_size must be a positive integer; got 0"):
        SentenceTransformerEmbedder("m", batch_size=0)


def test_importing_contextwright_loads_no_model_library() -> None:
    code = (
        "import sys, contextwright, contextwright.clients.embed\n"
        "from contextwright.stages.base import registered_stages\n"
        "registered_stages()\n"
        "print(sorted(m for m in ('numpy', 'torch', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
