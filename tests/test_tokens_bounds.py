"""Tokenizer memory and loading under hostile specs (issue 26, finding 5).

* The count cache is bounded by bytes as well as entries.
* Equivalent specs (``chars:4``, ``chars:4.0``, ``chars:4.00``) are one tokenizer and one cache,
  and the number of loaded tokenizers is bounded.
* A Hugging Face hub name is loaded from the local cache only: never a download at run time,
  refused at once when absent, the refusal cached, and no global lock held while loading.
"""

from __future__ import annotations

import threading
import time

import pytest

from contextwright.core.errors import TokenizerError
from contextwright.tokens import (
    CachedTokenizer,
    CharTokenizer,
    get_tokenizer,
    loaded_tokenizers,
    register_tokenizer,
)


def test_the_count_cache_is_bounded_by_bytes() -> None:
    cache = CachedTokenizer(CharTokenizer(4.0), max_bytes=1_000_000)
    for i in range(40):
        assert cache.count(f"{i} " + "x" * 95_000) == (len(str(i)) + 1 + 95_000 + 3) // 4
    assert cache.bytes <= 1_000_000
    assert 0 < len(cache._cache) <= 10
    cache.count("short")
    assert cache.bytes <= 1_000_000


def test_a_text_larger_than_the_byte_bound_is_counted_and_not_kept() -> None:
    cache = CachedTokenizer(CharTokenizer(4.0), max_bytes=10_000)
    assert cache.count("y" * 50_000) == 12_500
    assert cache.bytes == 0 and not cache._cache


def test_byte_bound_is_validated() -> None:
    from contextwright.core.errors import ConfigError

    with pytest.raises(ConfigError, match="max_bytes"):
        CachedTokenizer(CharTokenizer(4.0), max_bytes=0)


@pytest.mark.parametrize("spec", ["chars:4.0", "chars:4.00", "chars:4", "chars", "chars:04", "chars:4e0"])
def test_equivalent_char_specs_are_one_tokenizer(spec: str) -> None:
    assert get_tokenizer(spec) is get_tokenizer("chars:4")


def test_distinct_specs_do_not_grow_the_registry_without_bound() -> None:
    for i in range(300):
        get_tokenizer(f"chars:{1 + i / 1000}").count("hello world")
    assert len(loaded_tokenizers()) <= 64
    assert get_tokenizer("cl100k_base").count("hello world") == 2  # still usable after eviction


def test_a_hub_name_not_in_the_local_cache_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.perf_counter()
    with pytest.raises(TokenizerError, match="never downloads") as first:
        get_tokenizer("hf:someone-who-does-not-exist/no-such-model")
    assert time.perf_counter() - start < 2.0  # before the fix: 24 s of retries offline
    assert "tokenizer.json" in str(first.value)  # the fix: where to put the file
    start = time.perf_counter()
    with pytest.raises(TokenizerError):
        get_tokenizer("hf:someone-who-does-not-exist/no-such-model")
    assert time.perf_counter() - start < 0.05  # the refusal is cached


def test_loading_one_tokenizer_does_not_block_another() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow() -> CharTokenizer:
        started.set()
        release.wait(10)
        return CharTokenizer(3.0)

    register_tokenizer("slow-test-tokenizer", slow)
    loader = threading.Thread(target=get_tokenizer, args=("slow-test-tokenizer",))
    loader.start()
    try:
        assert started.wait(5)
        start = time.perf_counter()
        assert get_tokenizer("cl100k_base").count("hello world") == 2
        assert get_tokenizer("chars:2.5").count("abcde") == 2
        assert time.perf_counter() - start < 1.0
    finally:
        release.set()
        loader.join(10)
    assert get_tokenizer("slow-test-tokenizer").base.chars_per_token == 3.0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "extra", [{"tokenizer": "hf:1.5"}, {"model": "qwen3-8b"}, {"tokenizer": "hf:nobody/nothing-here"}]
)
def test_the_service_never_fetches_a_tokenizer_for_a_request(
    extra: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import create_app

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    client = TestClient(create_app())
    body = {"query": "q", "budget": 100, "chunks": [{"text": "a"}], **extra}
    start = time.perf_counter()
    response = client.post("/v1/assemble", json=body)
    assert response.status_code == 422
    assert "tokenizer" in response.json()["detail"]  # the field named (schema or loader refusal)
    assert time.perf_counter() - start < 2.0  # 24 s of hub retries before, with the lock held
    ok = client.post("/v1/assemble", json={"query": "q", "budget": 100, "chunks": [{"text": "a"}]})
    assert ok.status_code == 200
