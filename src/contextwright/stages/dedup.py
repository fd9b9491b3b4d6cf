"""Deduplication: exact, overlap, near-duplicate and semantic.

* :class:`ExactDedup` - normalized-text hash.
* :class:`OverlapDedup` - the overlap consecutive chunks of one document
  share, and chunks contained in another chunk of their document.
* :class:`~contextwright.stages.near.NearDedup` (``stages.near``) - Jaccard
  similarity of word shingles (exact pairwise, or MinHash + LSH banding for
  large inputs, ``stages.shingles``).
* :class:`~contextwright.stages.semantic.SemanticDedup` (``stages.semantic``) -
  cosine similarity of embeddings.

Every stage keeps the higher-scored copy (ties: the earlier in retrieval
order) and folds the dropped copy's id and source into the survivor, so the
survivor's citation names every place the text came from.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from contextwright.core.caches import ByteLRU, key_of, sizeof
from contextwright.core.cancel import Pace
from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.model.spans import compose
from contextwright.stages.base import register_stage
from contextwright.stages.filter import relevance_key

if TYPE_CHECKING:
    from contextwright.render.meter import Meter

__all__ = ["ExactDedup", "OverlapDedup", "fold_duplicate", "normalize_text", "suffix_prefix_overlap"]


_SPACE = re.compile(r"\s+")


_ASCII_WS_RUNS = ("  ", "\n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: the key two copies share."""
    if text.isascii():
        # NFKC is the identity and casefold is lower() on ASCII; collapse only
        # when there is something to collapse (most texts have single spaces).
        text = text.lower()
        if any(ws in text for ws in _ASCII_WS_RUNS):
            return " ".join(text.split())
        return text.strip()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    # Without whitespace but single spaces, split/join would give back the stripped text. " " is
    # the only printable whitespace character, so a printable text without "  " has none: two C
    # scans (~1 µs on a dev chunk) instead of a regex class scan (~6 µs). A text with another
    # unprintable character takes the split, which then gives what strip() would.
    return " ".join(text.split()) if not text.isprintable() or "  " in text else text.strip()


_KEYS = ByteLRU("contextwright.stages.dedup._exact_key", max_bytes=4 * 2**20, maxsize=65_536)
_KEY_BYTES = sys.getsizeof(b"\0" * 16)


def _exact_keys(texts: Sequence[str]) -> list[bytes]:
    """Hash of each normalized text, cached by content across calls (the new ones stored at once)."""
    cache_keys = [key_of(t) for t in texts]
    out: list[bytes | None] = [_KEYS.get(k) for k in cache_keys]
    fresh = []
    pace = Pace("exact_dedup")
    for i, key in enumerate(out):
        if key is None:
            pace.step(len(texts[i]))
            key = out[i] = hashlib.blake2b(normalize_text(texts[i]).encode(), digest_size=16).digest()
            fresh.append((cache_keys[i], key, sizeof(cache_keys[i]) + _KEY_BYTES))
    if fresh:
        _KEYS.put_many(fresh)
    return out  # type: ignore[return-value]


def fold_duplicate(survivor: Chunk, dropped: Chunk) -> Chunk:
    """The survivor, remembering the dropped copy's id, source, page, line and text for its citation."""
    sources = list(survivor.also_sources)
    for src in (dropped.source, *dropped.also_sources):
        if src and src != survivor.source and src not in sources:
            sources.append(src)
    dups = survivor.duplicates + tuple(
        i for i in (dropped.id, *dropped.duplicates) if i not in survivor.duplicates
    )
    known = {a[0] for a in survivor.also_at}
    also_at = survivor.also_at + tuple(
        a
        for a in ((dropped.id, dropped.source, dropped.page, dropped.line), *dropped.also_at)
        if a[0] not in known
    )
    # Each copy's own text: the citation names its source only for the text it holds
    # (contextwright.model.provenance); a copy's copies come along with their texts.
    copies = survivor.copies + tuple(
        t for t in ((dropped.id, dropped.text), *dropped.copies) if t[0] not in known
    )
    # with_ops: a slot copy, half the time of replace() (containment dedup folds many copies)
    return survivor.with_ops(duplicates=dups, also_sources=tuple(sources), also_at=also_at, copies=copies)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ExactDedup:
    """Drop chunks whose normalized text equals a higher-scored chunk's.

    The key is a hash of the NFKC, case-folded, whitespace-collapsed text. The
    copy with the higher score survives (ties: the earlier one in retrieval
    order); the dropped copy is reported as ``duplicate_of`` and its id and
    source are recorded on the survivor, so the survivor's citation lists both
    places the text came from.

    Example:
        >>> ExactDedup()(chunks).report.dropped
    """

    name: ClassVar[str] = "exact_dedup"
    requires: ClassVar[tuple[str, ...]] = ()

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        best: dict[bytes, Chunk] = {}
        losers: list[tuple[Chunk, bytes]] = []
        for c, key in zip(chunks, _exact_keys([c.text for c in chunks]), strict=True):
            held = best.get(key)
            if held is None:
                best[key] = c
            elif relevance_key(c) < relevance_key(held):
                best[key] = c
                losers.append((held, key))
            else:
                losers.append((c, key))
        if not losers:
            return StageResult.of(self.name, chunks, chunks)
        folded = dict(best)
        drops: list[Drop] = []
        for loser, key in losers:
            folded[key] = fold_duplicate(folded[key], loser)
            drops.append(Drop(loser.id, "duplicate_of", related=best[key].id))
        survivors = {c.id: c for c in folded.values()}
        out = [survivors[c.id] for c in chunks if c.id in survivors]
        return StageResult.of(self.name, chunks, out, dropped=drops)


# -- overlap ------------------------------------------------------------------

_WORD_RUN = re.compile(r"\S+")


def _collapse(text: str) -> str:
    """``text`` with whitespace runs collapsed to one space, no outer whitespace."""
    return " ".join(text.split())


def suffix_prefix_overlap(a: str, b: str, min_chars: int) -> int:
    """Length of the longest suffix of ``a`` that is a prefix of ``b`` (0 if < ``min_chars``).

    Both strings are compared as given; the caller collapses whitespace. The
    longest overlap starts at the earliest position of ``a`` where ``b``'s
    first ``min_chars`` characters occur and the rest of ``a`` matches, so
    ``str.find`` (C speed) proposes the few candidate positions.
    """
    if min_chars <= 0 or min(len(a), len(b)) < min_chars:
        return 0
    probe = b[:min_chars]
    p = a.find(probe, max(0, len(a) - len(b)))
    while p != -1:
        if b.startswith(a[p:]):
            return len(a) - p
        p = a.find(probe, p + 1)
    return 0


def _original_cut(text: str, collapsed_chars: int) -> int:
    """Offset in ``text`` just after its first ``collapsed_chars`` whitespace-collapsed characters."""
    seen = 0
    for m in _WORD_RUN.finditer(text):
        if seen > 0:
            seen += 1  # the single space standing for the whitespace run before this word
        word = m.end() - m.start()
        if seen + word >= collapsed_chars:
            return m.start() + (collapsed_chars - seen)
        seen += word
    return len(text)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class OverlapDedup:
    """Strip the text consecutive chunks of one document share; drop chunks contained in another.

    Chunkers cut documents into overlapping windows (LangChain's
    ``chunk_overlap``, LlamaIndex's sentence windows; the shared NQ corpus uses
    100-word windows with 20 shared words), so neighbours retrieved or expanded
    together repeat that overlap and the model reads it twice.

    For two chunks of one document with consecutive ``index`` values, the
    longest suffix of the earlier chunk that is a prefix of the later one
    (compared with whitespace collapsed, at least ``min_overlap_chars``
    characters) is cut from the less relevant of the two (lower score, then
    later rank; the later chunk on a tie): the later chunk loses its head (op
    ``overlap_stripped``) or the earlier one its tail (op
    ``overlap_stripped_tail``). Cutting the less relevant copy matters when a
    budget follows: an expanded neighbour (scored below the hit it was
    fetched for) is the first chunk a budget drops, and the overlap's words
    must not leave with it while the hit that needed them stays without
    them. The cut is made on the original text and the whitespace between
    the two is kept, so ``earlier.text + later.text`` is the document text
    again (this is what :class:`~contextwright.stages.group.GroupMerge` relies
    on; formats strip outer whitespace when a stripped chunk is rendered
    alone). The overlap is always measured on the texts as they came in, so
    chains of three or more windows are cut correctly even when windows
    overlap by more than half; where a chunk's head and tail cuts would meet,
    the later chunk of the pair takes the cut.

    A chunk whose (whitespace-collapsed) text is contained in another chunk of
    the same document is dropped as ``merged_into`` the container (detail
    ``contained``); its id goes into the container's ``duplicates`` and the
    container takes the higher of the two scores, because it holds the text
    that scored.

    Use it with :class:`~contextwright.stages.group.GroupMerge` or the
    ``blocks`` budget policy: a stripped chunk shown without its neighbour
    starts or ends mid-passage.

    Args:
        min_overlap_chars: The shortest overlap (in whitespace-collapsed
            characters) worth cutting; shorter matches are coincidence.

    Example:
        >>> OverlapDedup()(chunks, meter=meter).report.changed   # 'overlap_stripped'
    """

    name: ClassVar[str] = "overlap_dedup"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("meter",)
    min_overlap_chars: int = bounded(20, 1_000_000)

    def __post_init__(self) -> None:
        m = self.min_overlap_chars
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ConfigError(
                f"min_overlap_chars must be a positive integer; got {m!r}. The default, 20, ignores "
                "coincidental matches of a few words.",
                loc=("min_overlap_chars",),
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, meter: Meter | None = None) -> StageResult:
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            if c.doc_id is not None:
                by_doc.setdefault(c.doc_id, []).append(c)
        current: dict[str, Chunk] = {c.id: c for c in chunks}
        dropped: set[str] = set()
        drops: list[Drop] = []
        changes: list[Change] = []
        collapsed = {c.id: _collapse(c.text) for c in chunks if c.doc_id is not None}

        def keep(chunk_id: str, op: str, piece: tuple[int, int], detail: str) -> None:
            """Keep only ``piece`` of the chunk's current text, and report the strip."""
            held = current[chunk_id]
            stripped = held.with_ops(op, text=held.text[piece[0] : piece[1]], spans=compose(held, [piece]))
            current[chunk_id] = stripped
            before = meter.tokens(held) if meter is not None else None
            after = meter.tokens(stripped) if meter is not None else None
            changes.append(Change(chunk_id, "overlap_stripped", before, after, detail=detail))

        pace = Pace(self.name)
        for members in by_doc.values():
            if len(members) < 2:
                continue
            pace.step(sum(len(collapsed[c.id]) for c in members))
            kept = _fold_contained(members, collapsed, current, dropped, drops)
            _strip_overlaps(kept, collapsed, self.min_overlap_chars, keep)
        if not drops and not changes:
            return StageResult.of(self.name, chunks, chunks)
        out = [current[c.id] for c in chunks if c.id not in dropped]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)


class _Holders:
    """Which kept chunks can contain a text: an index of the kept texts' words.

    If ``text`` occurs inside a kept text, every word of ``text`` but its first and last (which
    may be cut mid-word) is a whole word there; so only the kept chunks holding ``text``'s rarest
    inner word are compared, in the order they were kept (the container found is the one a scan
    of every kept chunk finds first). Without it, one document of n chunks cost n²/2 substring
    searches. A text of fewer than three words is compared with every kept chunk, as before.
    """

    __slots__ = ("index",)

    def __init__(self) -> None:
        self.index: dict[str, list[Chunk]] = {}

    def add(self, chunk: Chunk, text: str) -> None:
        index = self.index
        for word in set(text.split()):
            index.setdefault(word, []).append(chunk)

    def candidates(self, text: str, kept: list[Chunk]) -> list[Chunk]:
        inner = text.split()[1:-1]
        if not inner:
            return kept
        get = self.index.get
        return min((get(w, []) for w in set(inner)), key=len)


def _fold_contained(
    members: list[Chunk],
    collapsed: dict[str, str],
    current: dict[str, Chunk],
    dropped: set[str],
    drops: list[Drop],
) -> list[Chunk]:
    """Fold each chunk of one document contained in another into its container; the rest, kept.

    ``current`` (the chunks as they are now), ``dropped`` and ``drops`` are updated in place.
    """
    # containment: longest first, so a chunk is compared with every possible container
    order = sorted(members, key=lambda c: (-len(collapsed[c.id]), *relevance_key(c)))
    kept: list[Chunk] = []
    holders = _Holders()
    for c in order:
        text = collapsed[c.id]
        container = next((k for k in holders.candidates(text, kept) if text in collapsed[k.id]), None)
        if container is None:
            kept.append(c)
            holders.add(c, text)
            continue
        held = current[container.id]
        folded = fold_duplicate(held, c)
        if c.score > held.score:
            folded = replace(folded, score=c.score)
        current[container.id] = folded
        dropped.add(c.id)
        drops.append(Drop(c.id, "merged_into", related=container.id, detail="contained"))
    return kept


def _strip_overlaps(
    kept: list[Chunk],
    collapsed: dict[str, str],
    min_overlap_chars: int,
    keep: Callable[[str, str, tuple[int, int], str], None],
) -> None:
    """Strip the text consecutive chunks of one document share, calling ``keep`` for each cut."""
    # overlap: consecutive indices, measured on the texts as they came in; the copy is cut
    # from the less relevant chunk of the pair, so a budget that later drops that chunk
    # (an expanded neighbour, usually) never takes the overlap's words with it
    indexed = sorted((c for c in kept if c.index is not None), key=lambda c: (c.index, c.rank))
    head_cut: dict[str, int] = {}  # offset into the original text where a chunk now starts
    for prev, cur in itertools.pairwise(indexed):
        if prev.index is None or cur.index != prev.index + 1:
            continue
        k = suffix_prefix_overlap(collapsed[prev.id], collapsed[cur.id], min_overlap_chars)
        if k == 0:
            continue
        if relevance_key(prev) > relevance_key(cur):
            start = head_cut.get(prev.id, 0)
            end = _original_cut(prev.text, len(collapsed[prev.id]) - k)
            if prev.text[start:end].strip():
                detail = f"last {len(prev.text) - end} of {len(prev.text)} characters shared with {cur.id}"
                keep(
                    prev.id,
                    "overlap_stripped_tail",
                    (0, end - start),
                    f"{detail}, which ranks higher",
                )
                continue
            # its head is already cut and the two cuts would meet: cut the later chunk
        cut = _original_cut(cur.text, k)
        head_cut[cur.id] = cut
        keep(
            cur.id,
            "overlap_stripped",
            (cut, len(cur.text)),
            f"{cut} of {len(cur.text)} characters shared with {prev.id}",
        )
