"""Containment dedup: each chunk against the text already kept, across chunk boundaries.

A knowledge base ingested twice with two chunkers, or holding a page copied
from a mirror, returns one passage in windows that do not line up: a
120-word window straddles two 100-word windows, so no pair of whole chunks is
a copy and pairwise dedup (exact, Jaccard) finds nothing. :class:`ContainmentDedup`
walks the chunks in rank order and compares each one with the union of the
text kept before it.

The comparison is on words (``\\w+`` runs of the NFKC, case-folded text, so
curly and straight quotes, dashes and whitespace do not matter), hashed as
overlapping ``shingle_size``-word shingles into one map from shingle to the
kept chunk that first held it: each chunk costs one pass over its words,
whatever the list's length. A line that repeats in several multi-line chunks
of the list (a site header or footer) is left out of the comparison. The
rendered text is always the original. In a pipeline the walk stops once the
text kept holds ``reach`` budgets of tokens: what lies below is never reached
by a budget filled in rank order.
"""

from __future__ import annotations

import bisect
import itertools
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from contextwright.core.caches import cache_of, text_cache
from contextwright.core.cancel import Pace
from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.core.sentences import split_sentences
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.model.spans import compose, join_pieces
from contextwright.stages.base import register_stage
from contextwright.stages.dedup import fold_duplicate, normalize_text
from contextwright.stages.filter import relevance_key
from contextwright.stages.profiles import _CACHE as _PROFILES
from contextwright.stages.profiles import (
    Hashes,
    Profile,
    native_table,
    profiles,
    shingle_hashes,
    word_bounds,
)
from contextwright.stages.shingles import shingle_words

if TYPE_CHECKING:
    from contextwright.render.meter import Meter

__all__ = ["ContainmentDedup", "clear_caches"]

_WORD = re.compile(r"\w+")
_ASCII_SPLIT = re.compile(r"([A-Za-z0-9_]+)")
_WORD_SPLIT = re.compile(r"(\w+)")
Range = tuple[int, int]


def clear_caches() -> None:
    """Forget the cached word profiles and strip plans (cold benchmarks)."""
    _PROFILES.cache_clear()
    cache_of(_strip_plan).cache_clear()


def _word_bounds(text: str, ranges: Sequence[Range], n_words: int) -> tuple[list[int], list[int]] | None:
    """Where each of the ``n_words`` comparison words starts and ends in ``text``, or None where
    the mapping is not one to one.

    A non-ASCII word is normalized on its own here and with its text for the
    comparison; the two agree except for rare compatibility characters, and
    then the chunk is simply not stripped. (An ASCII word is one word either way.)
    One ``re.split`` per range gives the words and the gaps between them, whose running
    lengths are the bounds: no match object per word. Where the C module is built, one C pass
    for any text, calling back into Python only for a word with a non-ASCII character (dev
    chunks: ASCII 14.2 -> 3.2 µs, the others 36.1 -> 7.1 µs).
    """
    fast = word_bounds(text, ranges)
    if fast is not None:
        return fast if len(fast[0]) == n_words else None
    starts: list[int] = []
    ends: list[int] = []
    for start, end in ranges:
        part = text[start:end]
        plain = part.isascii()
        pieces = (_ASCII_SPLIT if plain else _WORD_SPLIT).split(part)  # gap, word, gap, ..., word, gap
        at = list(itertools.accumulate(map(len, pieces), initial=start))  # piece j: at[j] to at[j + 1]
        if plain:
            starts += at[1:-1:2]
            ends += at[2::2]
            continue
        for j in range(1, len(pieces), 2):
            word = pieces[j]
            n = 1 if word.isascii() else len(_WORD.findall(unicodedata.normalize("NFKC", word).casefold()))
            starts += [at[j]] * n
            ends += [at[j + 1]] * n
    return (starts, ends) if len(starts) == n_words else None


def _boilerplate(chunks: Sequence[Chunk]) -> frozenset[str]:
    """Normalized lines that repeat in two or more multi-line chunks: headers, footers."""
    seen: dict[str, int] = {}
    for c in chunks:
        if "\n" not in c.text:
            continue
        lines = {normalize_text(line) for line in c.text.split("\n")}
        lines.discard("")
        if len(lines) > 1:
            for line in lines:
                seen[line] = seen.get(line, 0) + 1
    return frozenset(line for line, n in seen.items() if n > 1)


def _content_ranges(text: str, boiler: frozenset[str]) -> list[Range]:
    """Character ranges of ``text`` the comparison reads: every line but boilerplate ones."""
    if not boiler or "\n" not in text:
        return [(0, len(text))]
    out: list[Range] = []
    at = 0
    for line in text.split("\n"):
        if normalize_text(line) not in boiler:
            out.append((at, at + len(line)))
        at += len(line) + 1
    return out


@dataclass(frozen=True, slots=True)
class _View:
    """A chunk as the comparison sees it."""

    ranges: list[Range]
    n_words: int
    shingles: Hashes  # its shingle hashes (stages.profiles)


def _views(texts: Sequence[str], k: int, boiler: frozenset[str]) -> list[_View]:
    """Each text as the comparison sees it: plain texts through the profile cache, texts with
    boilerplate lines from their other lines; every new one hashed in one batch."""
    ranges = [_content_ranges(t, boiler) for t in texts]
    plain = [i for i, (t, r) in enumerate(zip(texts, ranges, strict=True)) if r == [(0, len(t))]]
    got: dict[int, Profile] = dict(zip(plain, profiles([texts[i] for i in plain], k), strict=True))
    rest = [i for i in range(len(texts)) if i not in got]
    if rest:
        for i in rest:
            w = [w for s, e in ranges[i] for w in shingle_words(texts[i][s:e])]
            got[i] = (len(w), shingle_hashes(w, k))
    return [_View(ranges[i], got[i][0], got[i][1]) for i in range(len(texts))]


def _strip_ranges(
    text: str, runs: Sequence[Range], word_starts: Sequence[int], word_ends: Sequence[int]
) -> list[Range]:
    """Character ranges to cut for covered word runs ``[a, b)``.

    A run is cut at sentence boundaries (whole sentences inside it, or from the
    chunk's start / to its end); a run at the chunk's head or tail that holds
    no such boundary is cut at word boundaries. A run in the middle is cut
    only where whole sentences lie inside it: a cut mid-sentence there would
    leave a sentence with a hole.
    """
    spans = split_sentences(text)
    starts = [s for s, _ in spans]
    ends = [e for _, e in spans]
    cuts: list[Range] = []
    n_words = len(word_starts)
    for a, b in runs:
        head, tail = a == 0, b == n_words
        # the run reaches from the end of the last new word before it to the start of the first after
        # it, so a sentence's closing punctuation and the space after it belong to the run
        lo_at = 0 if head else word_ends[a - 1]
        hi_at = len(text) if tail else word_starts[b]
        lo = (
            0
            if head
            else (starts[i] if (i := bisect.bisect_left(starts, lo_at)) < len(starts) else len(text))
        )
        hi = len(text) if tail else (ends[j - 1] if (j := bisect.bisect_right(ends, hi_at)) > 0 else 0)
        if lo < hi:
            cuts.append((lo, hi))
        elif head or tail:
            cuts.append((0 if head else word_starts[a], len(text) if tail else hi_at))
    return cuts


def _keep_ranges(length: int, cuts: Sequence[Range]) -> list[Range]:
    keep: list[Range] = []
    at = 0
    for lo, hi in sorted(cuts):
        if lo > at:
            keep.append((at, lo))
        at = max(at, hi)
    if at < length:
        keep.append((at, length))
    return keep


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ContainmentDedup:
    """Drop chunks mostly inside text already kept; strip the repeated part of chunks partly inside it.

    Chunks are visited in rank order (score, then retrieval order). Each
    chunk's words are compared with the text of the chunks kept before it:

    * at least ``threshold`` of its words inside kept text: dropped as
      ``duplicate_of`` the kept chunk holding most of them (the detail gives
      the covered share); its id and source go onto that chunk, so the
      survivor's citation reads "kb-v1/X, also in mirror/X";
    * some of its words inside kept text (a run of at least ``shingle_size``
      words): the repeated part is cut, at sentence boundaries, or at word
      boundaries at the chunk's head or tail where no sentence boundary lies
      inside it; reported as ``overlap_stripped`` with the kept spans, and the
      chunk's ``spans`` point its citation at the text it kept;
    * nothing inside: kept as it is.

    Copies are found in the text only: ids, sources and titles are never
    read. A higher-ranked chunk never loses words to a lower-ranked one, and
    the text a chunk is compared with is always ranked above it, so a budget
    that fills in rank order reaches the kept copy first.

    Chunks with fewer than ``shingle_size`` comparison words are never
    compared (exact dedup handles short exact copies).

    Args:
        threshold: The share (0, 1] of a chunk's words inside kept text at
            which it is dropped whole. 0.5: a chunk that is mostly a copy adds
            less than it costs; below it, the new part is kept.
        shingle_size: Words per shingle: the shortest run that counts as
            repeated. 8 words are rarely shared by chance outside copies.
        reach: In a pipeline (which gives the stage its meter and budget), chunks
            are compared only until the text kept holds ``reach`` budgets of
            tokens; the lower-ranked rest passes on unchanged (a budget filled in
            rank order never reaches it, and the budget stage reports it). 3:
            room for the cuts of ``compress`` and ``fill``; 0 compares every chunk.

    Example:
        >>> ContainmentDedup()(chunks).report.dropped   # duplicate_of, '83% of its words ...'
    """

    name: ClassVar[str] = "containment_dedup"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("meter", "budget")
    threshold: float = bounded(0.5, 1.0)
    shingle_size: int = bounded(8, 64)
    reach: float = bounded(3.0, 1_000.0)

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
            raise ConfigError(
                f"threshold must be a share of a chunk's words in (0, 1]; got {t!r}. 0.5 drops a chunk "
                "when most of it is already in the context.",
                loc=("threshold",),
            )
        k = self.shingle_size
        if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= 64:
            raise ConfigError(
                f"shingle_size must be an integer in [2, 64]; got {k!r}. 8 words are rarely shared by chance.",
                loc=("shingle_size",),
            )
        r = self.reach
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r <= 1_000:
            raise ConfigError(
                f"reach must be a number of budgets in [0, 1000]; got {r!r}. 3 compares the chunks a "
                "budget can reach; 0 compares every chunk.",
                loc=("reach",),
            )

    def __call__(
        self, chunks: Sequence[Chunk], /, *, meter: Meter | None = None, budget: int | None = None
    ) -> StageResult:
        n = len(chunks)
        if n < 2:
            return StageResult.of(self.name, chunks, chunks)
        k = self.shingle_size
        boiler = _boilerplate(chunks)
        order = sorted(range(n), key=lambda i: relevance_key(chunks[i]))
        room = self.reach * budget if meter is not None and budget is not None and self.reach else None
        # The chunks the walk reaches unless a drop gives tokens back: profiled in one batch.
        first = _reach(order, chunks, meter, room)
        views = dict(zip(first, _views([chunks[i].text for i in first], k, boiler), strict=True))
        walk = _Walk(self, chunks, meter)
        pace = Pace(self.name)  # the deadline is checked inside the walk, not only between stages
        for i in order:
            if room is not None and meter is not None:
                if room <= 0:
                    break  # the rest lies beyond what the budget can reach: passed on as it is
                room -= meter.tokens(chunks[i])  # given back below when the chunk is dropped
            view = views.get(i) or _views([chunks[i].text], k, boiler)[0]
            pace.step(view.n_words + 1)
            if walk.visit(i, view) and room is not None and meter is not None:
                room += meter.tokens(chunks[i])
        return walk.result()

    def _strip(
        self, c: Chunk, view: _View, runs: tuple[Range, ...], main_id: str, meter: Meter | None
    ) -> tuple[Chunk, Change] | None:
        """``c`` without its covered runs, and the change to report (None when nothing can be cut)."""
        plan = _strip_plan(c.text, tuple(view.ranges), runs, view.n_words)
        if plan is None:
            return None
        keep, text, cut_words = plan
        new = c.with_ops("containment_stripped", text=text, spans=compose(c, keep))
        change = Change(
            c.id,
            "overlap_stripped",
            meter.tokens(c) if meter is not None else None,
            meter.tokens(new) if meter is not None else None,
            detail=f"{cut_words} of {view.n_words} words already in kept text (most in {main_id}); "
            f"kept spans {list(new.spans)}",
        )
        return new, change


def _reach(
    order: Sequence[int], chunks: Sequence[Chunk], meter: Meter | None, room: float | None
) -> list[int]:
    """The chunks, in rank order, that the walk visits when no drop gives tokens back."""
    if room is None or meter is None:
        return list(order)
    out = []
    for i in order:
        if room <= 0:
            break
        room -= meter.tokens(chunks[i])
        out.append(i)
    return out


#: Kept chunks past which the walk looks owners up in a map instead of scanning the kept chunks.
_SCAN_KEPT = 32


class _Table(Protocol):
    """The index of the text kept: ``contextwright._native.ShingleTable``, or :class:`_SetTable`."""

    def visit(self, hashes: Any, k: int, owner: int, /) -> tuple[int, tuple[Range, ...]] | None: ...
    def add(self, hashes: Any, owner: int, /) -> None: ...


class _SetTable:
    """The index of the text kept, in Python: ``seen``, every shingle of the text kept, and the
    kept chunks; the first kept chunk holding a shingle is looked for only for a chunk that
    shares some (most share none: one set lookup per shingle).

    While few chunks are kept, by a scan of them (``_owners``); past :data:`_SCAN_KEPT`, in
    ``owner``, a map from each kept shingle to that chunk, built from ``kept`` then and kept up
    from then on (a lookup per shingle, where the scan grew with the list: 4.8 of 42 ms on a
    420-chunk mirror list; on 20-chunk lists keeping the map up cost more than the scans it
    saves). The C module's ``ShingleTable`` is one open-addressing map from the start.
    """

    __slots__ = ("kept", "owner", "seen", "sets")

    def __init__(self) -> None:
        self.seen: set[int] = set()  # every shingle of the text kept
        self.kept: list[tuple[int, tuple[int, ...]]] = []  # added, in order
        self.sets: dict[int, frozenset[int]] = {}  # a kept chunk's shingles, built when first needed
        self.owner: dict[int, int] | None = None  # kept shingle -> first kept chunk holding it

    def visit(self, hashes: tuple[int, ...], k: int, owner: int) -> tuple[int, tuple[Range, ...]] | None:
        """None when no shingle is kept yet (then chunk ``owner``'s are); else ``(main, runs)``:
        the kept chunk holding most of them (ties: the one holding the earliest) and the word runs
        their ``k``-word shingles cover (nothing is added)."""
        if self.seen.isdisjoint(hashes):
            self.add(hashes, owner)
            return None
        found = self.owners(hashes)  # the kept chunk holding each shingle, or None
        counts = Counter(o for o in found if o is not None)
        runs = _covered_runs([p for p, o in enumerate(found) if o is not None], k)
        return max(counts, key=counts.__getitem__), runs  # ties: the first counted

    def add(self, hashes: tuple[int, ...], owner: int) -> None:
        """Keep chunk ``owner``'s shingles; the ones already kept keep their first owner."""
        if self.owner is not None:
            self.owner.update(dict.fromkeys(set(hashes).difference(self.seen), owner))
        self.seen.update(hashes)
        self.kept.append((owner, hashes))

    def owners(self, hashes: tuple[int, ...]) -> list[int | None]:
        """The first kept chunk holding each shingle, or None."""
        if self.owner is None and len(self.kept) < _SCAN_KEPT:
            owner = self._owners(self.seen.intersection(hashes))
        else:
            owner = self._owner_map()
        return list(map(owner.get, hashes))

    def _owners(self, shared: set[int]) -> dict[int, int]:
        """The first kept chunk holding each of the ``shared`` shingles, by a scan of the kept chunks."""
        out: dict[int, int] = {}
        for j, hashes in self.kept:
            held = self.sets.get(j)
            if held is None:
                held = self.sets[j] = frozenset(hashes)
            hit = shared & held
            if hit:
                out.update(dict.fromkeys(hit, j))
                shared -= hit
                if not shared:
                    break
        return out

    def _owner_map(self) -> dict[int, int]:
        """``owner``, built from the kept chunks (in reverse, so that the first kept holding a
        shingle writes it last) when first needed."""
        if self.owner is None:
            self.owner = {}
            for j, hashes in reversed(self.kept):
                self.owner.update(dict.fromkeys(hashes, j))
        return self.owner


class _Walk:
    """The state of one containment walk: the index of the text kept (``table``), and the outcome."""

    def __init__(self, stage: ContainmentDedup, chunks: Sequence[Chunk], meter: Meter | None) -> None:
        self.stage, self.chunks, self.meter = stage, chunks, meter
        table = native_table()  # (an empty one is falsy: it has a length)
        self.table: _Table = table if table is not None else _SetTable()
        self.current = list(chunks)
        self.dropped: set[int] = set()
        self.drops: list[Drop] = []
        self.changes: list[Change] = []

    def visit(self, i: int, view: _View) -> bool:
        """Compare chunk ``i`` with the text kept; True when it is dropped."""
        sh = view.shingles
        if not sh:
            return False
        table = self.table
        cover = table.visit(sh, self.stage.shingle_size, i)  # None: nothing of it is kept; it is now
        if cover is None:
            return False
        main, runs = cover
        share = sum(b - a for a, b in runs) / view.n_words
        c, chunks = self.chunks[i], self.chunks
        if share >= self.stage.threshold:
            self.current[main] = fold_duplicate(self.current[main], c)
            self.dropped.add(i)
            detail = f"{share:.0%} of its words are in kept text (most in {chunks[main].id})"
            self.drops.append(Drop(c.id, "duplicate_of", related=chunks[main].id, detail=detail))
            return True
        stripped = self.stage._strip(c, view, runs, chunks[main].id, self.meter)
        if stripped is not None:
            self.current[i], change = stripped
            self.changes.append(change)
        table.add(sh, i)
        return False

    def result(self) -> StageResult:
        name, chunks = self.stage.name, self.chunks
        if not self.drops and not self.changes:
            return StageResult.of(name, chunks, chunks)
        out = [self.current[i] for i in range(len(chunks)) if i not in self.dropped]
        return StageResult.of(name, chunks, out, dropped=self.drops, changed=self.changes)


def _covered_runs(hits: Sequence[int], k: int) -> tuple[Range, ...]:
    """Word runs ``[a, b)`` covered by the shingles starting at ``hits`` (ascending), merged."""
    runs: list[Range] = []
    for p in hits:
        if runs and p <= runs[-1][1]:
            runs[-1] = (runs[-1][0], p + k)
        else:
            runs.append((p, p + k))
    return tuple(runs)


def _plan_bytes(plan: tuple[list[Range], str, int] | None) -> int:
    if plan is None:
        return 16
    return 64 + sys.getsizeof(plan[0]) + len(plan[0]) * _PAIR + sys.getsizeof(plan[1]) + 32


_PAIR = sys.getsizeof((0, 0)) + 2 * sys.getsizeof(1 << 40)  # a range and its two offsets, at most


@text_cache(max_bytes=4 * 2**20, maxsize=8_192, size=_plan_bytes)
def _strip_plan(
    text: str, ranges: tuple[Range, ...], runs: tuple[Range, ...], n_words: int
) -> tuple[list[Range], str, int] | None:
    """Kept character ranges, the kept text and the number of words cut; cached by content across calls.

    ``n_words``: the text's comparison words in ``ranges`` (its view's, a function of the two).
    """
    bounds = _word_bounds(text, ranges, n_words)
    if bounds is None:
        return None
    starts, ends = bounds
    cuts = _strip_ranges(text, runs, starts, ends)
    keep = _keep_ranges(len(text), cuts)
    kept = join_pieces(text, keep)
    if not cuts or kept == text.strip() or not _WORD.search(kept):
        return None
    cut_words = sum(max(0, bisect.bisect_right(ends, hi) - bisect.bisect_left(starts, lo)) for lo, hi in cuts)
    return keep, kept, cut_words
