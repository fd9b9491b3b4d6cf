"""Tests of tokenizers: real tiktoken, a real Hugging Face tokenizer.json, the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.core.errors import ConfigError, TokenizerError
from contextwright.tokens import CachedTokenizer, CharTokenizer, HFTokenizer, TiktokenTokenizer, get_tokenizer


def test_cl100k_resolves_offline_and_matches_tiktoken(cl100k) -> None:
    tok = get_tokenizer("cl100k_base")
    text = "Wilhelm Conrad Röntgen discovered X-rays in 1895. 🙂"
    assert tok.count(text) == len(cl100k.encode_ordinary(text))
    assert tok.decode(tok.encode(text)) == text
    assert tok.additive


def test_model_name_resolves_through_tiktoken() -> None:
    assert TiktokenTokenizer("gpt-3.5-turbo").count("hello world") == 2


def test_special_token_text_is_counted_as_plain_text(cl100k) -> None:
    tok = get_tokenizer("cl100k_base")
    assert tok.count("<|endoftext|>") == len(cl100k.encode_ordinary("<|endoftext|>")) > 1


def test_unknown_tokenizer_name_lists_the_options() -> None:
    with pytest.raises(ConfigError, match=r"tokenizer 'no-such-model' is neither a tiktoken encoding"):
        get_tokenizer("no-such-model")


def test_unloadable_encoding_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # o200k_base is not shipped offline; with an empty cache and no network it cannot load.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(TokenizerError, match=r"pip install 'contextwright\[offline\]'.*TIKTOKEN_CACHE_DIR"):
        TiktokenTokenizer("o200k_base", backend="tiktoken")


def test_o200k_works_offline_through_bpe_openai() -> None:
    pytest.importorskip("bpe_openai")
    tok = TiktokenTokenizer("o200k_base")
    assert tok.backend == "bpe_openai" and tok.additive and tok.digits_isolated
    assert tok.count("hello world") == 2
    assert TiktokenTokenizer("gpt-4o-mini").backend == "bpe_openai"


def test_backends_give_the_same_tokens_on_the_dev_data(dev_queries: list) -> None:
    pytest.importorskip("bpe_openai")
    fast = TiktokenTokenizer("cl100k_base", backend="bpe_openai")
    reference = TiktokenTokenizer("cl100k_base", backend="tiktoken")
    texts = [c["text"] for q in dev_queries for c in q["chunks"]]
    assert [fast.encode(t) for t in texts] == [reference.encode(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_backends_give_the_same_tokens_on_any_text(text: str) -> None:
    pytest.importorskip("bpe_openai")
    fast = get_tokenizer(TiktokenTokenizer("cl100k_base", backend="bpe_openai"))
    assert fast.encode(text) == _TIKTOKEN_CL100K.encode(text)
    # count() takes bpe-openai's list-free path; it must give the length of the tokens
    assert fast.base.count(text) == len(_TIKTOKEN_CL100K.encode(text))


def test_fast_count_equals_the_token_list_on_the_dev_data(dev_queries: list) -> None:
    pytest.importorskip("bpe_openai")
    fast = TiktokenTokenizer("cl100k_base", backend="bpe_openai")
    assert fast._fast_count is not None  # the list-free path is the one under test
    texts = [c["text"] for q in dev_queries for c in q["chunks"]]
    sentences = [s for t in texts[:400] for s in t.split(". ")]
    assert fast.count_many(texts + sentences) == [len(_TIKTOKEN_CL100K.encode(t)) for t in texts + sentences]


def test_fast_count_falls_back_for_a_lone_surrogate() -> None:
    pytest.importorskip("bpe_openai")
    fast = TiktokenTokenizer("cl100k_base", backend="bpe_openai")
    text = "caf\ud800 au lait"
    assert fast.count(text) == len(fast.encode(text)) == len(_TIKTOKEN_CL100K.encode(text))


def test_bad_backend_is_named() -> None:
    with pytest.raises(ConfigError, match="backend must be 'auto', 'bpe_openai' or 'tiktoken'"):
        TiktokenTokenizer("cl100k_base", backend="rust")
    with pytest.raises(ConfigError, match="bpe-openai has no encoding for 'gpt2'"):
        TiktokenTokenizer("gpt2", backend="bpe_openai")


def test_hf_tokenizer_json_counts_without_special_tokens(minilm_dir: Path) -> None:
    tok = HFTokenizer(minilm_dir / "tokenizer.json")
    assert tok.count("hello world") == 2
    assert tok.count_many(["hello world", "x-rays"]) == [2, tok.count("x-rays")]
    assert tok.decode(tok.encode("hello world")) == "hello world"
    assert not tok.additive
    assert get_tokenizer(str(minilm_dir)).count("hello world") == 2


def test_hf_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=r"does not exist\. Pass the path to a tokenizer\.json"):
        HFTokenizer(tmp_path / "nope.json")


def test_char_tokenizer_only_by_name_and_validated() -> None:
    assert get_tokenizer("chars").count("abcdefghi") == 3
    assert get_tokenizer("chars:2").count("abcde") == 3
    with pytest.raises(ConfigError, match="chars_per_token must be > 0"):
        CharTokenizer(0)
    with pytest.raises(ConfigError, match="must be a number"):
        get_tokenizer("chars:x")


def test_cache_tokenizes_each_distinct_text_once() -> None:
    calls: list[str] = []

    class Counting(CharTokenizer):
        def count_many(self, texts):  # type: ignore[no-untyped-def]
            calls.extend(texts)
            return [CharTokenizer.count(self, t) for t in texts]

        def count(self, text: str) -> int:
            calls.append(text)
            return super().count(text)

    tok = CachedTokenizer(Counting())
    assert tok.count_many(["a", "bb", "a"]) == [1, 1, 1]
    tok.count("a")
    tok.count_many(["bb", "ccc"])
    assert calls == ["a", "bb", "ccc"]
    assert tok.hits == 2 and tok.misses == 3


def test_cache_is_bounded() -> None:
    tok = CachedTokenizer(CharTokenizer(), maxsize=2)
    for t in ("a", "b", "c"):
        tok.count(t)
    assert len(tok._cache) == 2


def test_get_tokenizer_returns_one_shared_instance() -> None:
    assert get_tokenizer("cl100k_base") is get_tokenizer("cl100k_base")


_TIKTOKEN_CL100K = TiktokenTokenizer("cl100k_base", backend="tiktoken")
_piece_end = st.text(min_size=0, max_size=30).map(lambda s: s + "\n")
_piece_start = st.tuples(
    st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp", "Cs")), st.text(max_size=30)
).map(lambda t: t[0] + t[1])


@settings(max_examples=300, deadline=None)
@given(
    a=_piece_end,
    b=_piece_start,
    backend=st.sampled_from(["tiktoken", "auto"]),
    enc=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_counts_add_up_at_newline_boundaries(a: str, b: str, backend: str, enc: str) -> None:
    """The property the exact-budget fast path relies on (see tokens.py)."""
    if b[:1].isspace() or (enc == "o200k_base" and backend == "tiktoken"):
        return  # o200k through tiktoken would need a download
    tok = _tokenizer(enc, backend)
    assert tok.count(a + b) == tok.count(a) + tok.count(b)


_TOKENIZERS: dict[tuple[str, str], TiktokenTokenizer] = {}


def _tokenizer(enc: str, backend: str) -> TiktokenTokenizer:
    if (enc, backend) not in _TOKENIZERS:
        _TOKENIZERS[enc, backend] = TiktokenTokenizer(enc, backend=backend)
    return _TOKENIZERS[enc, backend]


# --- issue 11, item 9: no download, no host name ------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2", "p50k_base", "r50k_base"])
def test_encodings_not_available_locally_are_refused_without_network(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import socket

    import tiktoken.load

    from contextwright.core.errors import TokenizerError
    from contextwright.tokens import TiktokenTokenizer

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(TokenizerError, match="not available locally") as info:
        TiktokenTokenizer(name, backend="tiktoken")
    message = str(info.value)
    assert "openaipublic" not in message and "http" not in message and ".com" not in message
    assert tiktoken.load.read_file.__module__ == "tiktoken.load"  # the guard is removed again
