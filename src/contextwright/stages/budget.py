"""Selection: fit chunks into the documents budget.

Costs are the rendered cost of each block in the configured format (header,
escaped body, footer), plus each document's header once and the frame once,
so what is selected is what the final string is made of. The pipeline then
checks the final string exactly (invariant 1).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal, get_args

from contextwright.core.cancel import CHECK_EVERY, check_cancelled
from contextwright.core.errors import ConfigError, did_you_mean
from contextwright.core.limits import bounded
from contextwright.core.search import last_fitting
from contextwright.core.sentences import split_sentences
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.model.spans import compose
from contextwright.render.meter import Meter
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance
from contextwright.stages.words import has_term, lowered_sentences, sentence_sizes, terms

__all__ = ["TokenBudget", "sentence_ends"]

Policy = Literal["greedy", "stop", "truncate", "fill", "blocks"]
_POLICIES: tuple[str, ...] = get_args(Policy)  # the one list: the type's
_WORDS = re.compile(r"\S+")


def sentence_ends(text: str) -> list[int]:
    """Character offsets just after each sentence end in ``text`` (the last is ``len(text.rstrip())``).

    Uses :func:`contextwright.core.sentences.split_sentences`, the one splitter of the library.
    """
    ends = [end for _, end in split_sentences(text)]
    if not ends or ends[-1] != len(text.rstrip()):
        ends.append(len(text.rstrip()))
    return ends


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class TokenBudget:
    """Select chunks so that the rendered context fits the budget.

    Policies:

    * ``greedy`` (default): by score, take each chunk that still fits and skip
      the ones that do not (skip-and-continue), so a long chunk does not block
      shorter ones after it.
    * ``stop``: by score, stop at the first chunk that does not fit.
    * ``truncate``: by score; the first chunk that does not fit is cut at
      the last sentence end that fits (when at least ``min_truncated_tokens``
      of it fit), before lower-ranked chunks can take the room; then greedy
      for the rest.
    * ``fill``: the whole budget in rank order. By score, each chunk that
      fits is taken whole; a chunk that does not fit gets the room left, cut
      to its most query-relevant contiguous window of whole sentences (a
      window of words when no sentence fits), and selection goes on with the
      room that remains, so a lower-ranked chunk never takes room the
      higher-ranked text could have used. This is what plain concatenation
      cut at the budget does with its last chunk, except that the kept part
      is the one about the query, it ends at a sentence end, and it is cited.
    * ``blocks``: whole documents (all their chunks, with their header) ranked
      by their best chunk, taken in rank order until the first one that does
      not fit; it and every lower-ranked document are dropped whole (the
      lowest-relevance trailing blocks go first, never a better document for
      a smaller worse one).

    The ``fill`` window: of the windows of whole sentences that fit, the one
    whose sentences contain the most query terms, each term weighted by its
    IDF over this call's chunks (the terms the retriever matched the chunk
    on, rare ones first), ties going to the window with more tokens, then
    the earliest (so without query terms in the chunk, the most text). When
    no sentence fits, the window is one of whole words, the longest that
    fits, placed where the query terms' IDF is highest. A cut block's
    ``spans`` locate its text in the chunk as it entered the pipeline (see
    :mod:`contextwright.model.spans`), so its citation points at exactly what the
    model read.

    Dropped chunks are reported as ``over_budget`` with their tokens ("143 tokens"). A chunk
    whose cost is over the room left by a lower bound (a word is at least one token with cl100k
    and o200k) is dropped without being counted: "at least 97 tokens, 12 left (not counted)"
    (``greedy`` and ``stop`` by its body; ``fill`` once the room is too small to cut a chunk
    into, by its block): a full budget's tail, most of a 20-chunk list at 500 tokens, costs no
    tokenizer pass. A truncated or cut chunk
    is reported as changed (``truncated``) with its tokens before and after
    and what was kept.

    Args:
        policy: One of ``greedy``, ``stop``, ``truncate``, ``fill``, ``blocks``.
        min_truncated_tokens: The smallest useful remainder for ``truncate``
            and ``fill`` (text tokens of the cut block, framing not counted).
        ceiling: The most tokens the context may hold even when the budget
            allows more (``None``: the budget). A reader-fitted profile sets it
            (``contextwright fit``): small models read a short context better
            than a full one, so the budget a caller sets stops deciding how
            much is sent. The stage selects for ``min(budget, ceiling)``; the
            note says when the ceiling was the limit.

    Example:
        >>> TokenBudget(policy="truncate")(chunks, meter=meter, budget=500)
    """

    name: ClassVar[str] = "token_budget"
    requires: ClassVar[tuple[str, ...]] = ("meter", "budget")
    optional: ClassVar[tuple[str, ...]] = ("query",)
    policy: Policy = "greedy"
    min_truncated_tokens: int = bounded(24, 100_000)
    ceiling: int | None = bounded(None, 10_000_000)

    def __post_init__(self) -> None:
        if self.policy not in _POLICIES:
            raise ConfigError(
                f"policy must be one of {', '.join(_POLICIES)}; got {self.policy!r}."
                f"{did_you_mean(str(self.policy), _POLICIES)}",
                loc=("policy",),
            )
        if (
            isinstance(self.min_truncated_tokens, bool)
            or not isinstance(self.min_truncated_tokens, int)
            or self.min_truncated_tokens < 1
        ):
            raise ConfigError(
                f"min_truncated_tokens must be a positive integer; got {self.min_truncated_tokens!r}.",
                loc=("min_truncated_tokens",),
            )
        c = self.ceiling
        if c is not None and (isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 10_000_000):
            raise ConfigError(
                f"ceiling must be a positive integer (tokens) or absent; got {c!r}. Use e.g. 450, or omit it "
                "to fill the budget.",
                loc=("ceiling",),
            )

    def __call__(
        self, chunks: Sequence[Chunk], /, *, meter: Meter, budget: int, query: str = ""
    ) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        if self.ceiling is not None and self.ceiling < budget:
            result = self._select(chunks, meter, self.ceiling, query)
            note = f"ceiling {self.ceiling:,} tokens of the budget {budget:,}"
            return replace(result, report=replace(result.report, notes=(*result.report.notes, note)))
        return self._select(chunks, meter, budget, query)

    def _select(self, chunks: Sequence[Chunk], meter: Meter, budget: int, query: str) -> StageResult:
        n = len(chunks)
        room = budget - meter.frame_cost()
        if self.policy == "fill":  # counts a chunk only when the room left could hold it
            return self._fill(chunks, meter, room, n, query)
        if self.policy in ("blocks", "truncate"):  # these price every chunk
            meter.prime(chunks)
        if self.policy == "blocks":
            return self._blocks(chunks, meter, room, n)
        kept: list[Chunk] = []
        drops: list[Drop] = []
        changes: list[Change] = []
        docs: set[str] = set()
        stopped = False
        truncated = False
        for k, c in enumerate(by_relevance(chunks)):
            if k % CHECK_EVERY == 0:
                check_cancelled(self.name)
            if self.policy != "truncate":
                # Its body alone does not fit (by a bound, uncounted, or counted): no need to price its header.
                detail = _ruled_out(meter, c, room, 0)
                if detail is None and meter.tokens(c) > room:
                    detail = f"{meter.tokens(c)} tokens"
                if detail is not None:
                    drops.append(Drop(c.id, "over_budget", detail=detail))
                    stopped = stopped or self.policy == "stop"
                    continue
            doc = meter.header_once(c, docs)
            cost = meter.block_cost(c, n) + doc
            if not stopped and cost <= room:
                kept.append(c)
                docs.add(c.group_key)
                room -= cost
                continue
            if self.policy == "truncate" and not truncated and not stopped:
                # The first misfit is cut to the room left, before anything
                # ranked lower can take that room.
                cut = self._truncate(c, meter, room - doc, n)
                if cut is not None:
                    truncated = True
                    kept.append(cut)
                    docs.add(c.group_key)
                    room -= meter.block_cost(cut, n) + doc
                    changes.append(
                        Change(
                            c.id,
                            "truncated",
                            meter.tokens(c),
                            meter.tokens(cut),
                            detail=f"{len(cut.text)} of {len(c.text)} characters",
                        )
                    )
                    continue
            drops.append(Drop(c.id, "over_budget", detail=f"{meter.tokens(c)} tokens"))
            if self.policy == "stop":
                stopped = True
        keep_ids = {c.id: c for c in kept}
        out = [keep_ids[c.id] for c in chunks if c.id in keep_ids]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)

    def _truncate(self, c: Chunk, meter: Meter, room: int, n: int) -> Chunk | None:
        """``c`` cut at the last sentence end that fits in ``room``, or None."""
        overhead = meter.block_cost(c, n) - meter.tokens(c)
        if room - overhead < self.min_truncated_tokens:
            return None
        text = c.text.strip()
        lead = len(c.text) - len(c.text.lstrip())
        ends = sentence_ends(text)[:-1]  # the full text does not fit
        lo, hi, best = 0, len(ends) - 1, None
        scratch = meter.scratch()  # the prefixes tried stay out of the pipeline's caches
        while lo <= hi:  # the largest prefix that fits; costs grow with length
            check_cancelled(self.name)
            mid = (lo + hi) // 2
            cand = c.with_ops("truncated", text=text[: ends[mid]])
            cost = scratch.tokens(cand)
            if cost + overhead <= room:
                best, lo = (cand, cost), mid + 1
            else:
                hi = mid - 1
        if best is None or best[1] < self.min_truncated_tokens:
            return None
        kept = best[0]
        return replace(kept, spans=compose(c, [(lead, lead + len(kept.text))]))

    def _fill(self, chunks: Sequence[Chunk], meter: Meter, room: int, n: int, query: str) -> StageResult:
        kept: list[Chunk] = []
        drops: list[Drop] = []
        changes: list[Change] = []
        docs: set[str] = set()
        relevance: _Relevance | None = None
        for k, c in enumerate(by_relevance(chunks)):
            if k % CHECK_EVERY == 0:
                check_cancelled(self.name)
            key = c.group_key
            doc = meter.header_once(c, docs)
            if room - doc < self.min_truncated_tokens:
                # Too little room to cut anything into: only a whole chunk could still fit. Once a
                # lower bound of its cost is over the room, it is dropped without counting it (the
                # budget is full; with 20 chunks at 500 tokens, most of the list).
                detail = _ruled_out(meter, c, room, meter.header_cost(c, n) + doc)
                if detail is not None:
                    drops.append(Drop(c.id, "over_budget", detail=detail))
                    continue
            if meter.tokens(c) <= room:
                cost = meter.block_cost(c, n) + doc
                if cost <= room:
                    kept.append(c)
                    docs.add(key)
                    room -= cost
                    continue
            if room - doc >= self.min_truncated_tokens:
                if relevance is None:  # built once, and only when something is cut
                    relevance = _Relevance(query, chunks)
                found = _best_window(c, meter, room - doc, n, relevance, self.min_truncated_tokens)
                if found is not None:
                    cut, detail = found
                    kept.append(cut)
                    docs.add(key)
                    room -= meter.block_cost(cut, n) + doc
                    changes.append(
                        Change(c.id, "truncated", meter.tokens(c), meter.tokens(cut), detail=detail)
                    )
                    continue
            drops.append(Drop(c.id, "over_budget", detail=f"{meter.tokens(c)} tokens"))
        keep_ids = {c.id: c for c in kept}
        out = [keep_ids[c.id] for c in chunks if c.id in keep_ids]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)

    def _blocks(self, chunks: Sequence[Chunk], meter: Meter, room: int, n: int) -> StageResult:
        groups: dict[str, list[Chunk]] = {}
        for c in by_relevance(chunks):
            groups.setdefault(c.group_key, []).append(c)
        kept: set[str] = set()
        drops: list[Drop] = []
        full = False
        for members in groups.values():
            cost = meter.set_cost(members, n, frame=False)
            if not full and cost <= room:
                kept.update(c.id for c in members)
                room -= cost
                continue
            detail = (
                f"document block of {cost} tokens"
                if not full
                else f"document block after the first misfit ({cost} tokens)"
            )
            full = True
            drops.extend(Drop(c.id, "over_budget", detail=detail) for c in members)
        out = [c for c in chunks if c.id in kept]
        return StageResult.of(self.name, chunks, out, dropped=drops)


def _ruled_out(meter: Meter, c: Chunk, room: int, framing: int) -> str | None:
    """The ``over_budget`` detail of ``c`` when its body and ``framing`` are over ``room`` by its
    count if this call has it, else by :meth:`Meter.at_least` (nothing counted); None when it may fit."""
    known = meter.known_tokens(c)
    least = known if known is not None else meter.at_least(c, room - framing)
    if least + framing <= room:
        return None
    if known is not None:
        return f"{known} tokens"
    return f"at least {least} tokens, {max(room, 0)} left (not counted)"


# -- the ``fill`` policy's window -----------------------------------------------------------------


class _Relevance:
    """Query terms and their IDF over one call's chunks (each chunk one document)."""

    __slots__ = ("_probes", "_terms", "_weights", "idf")

    def __init__(self, query: str, chunks: Sequence[Chunk]) -> None:
        wanted = list(dict.fromkeys(terms(query)))
        df = dict.fromkeys(wanted, 0)
        # Document frequency over the chunks joined by "\n" (no term holds one, and a chunk's
        # first word follows it as it would the start of the text): per term, str.find from
        # hit to hit, and past a chunk once it counts, instead of a test per chunk and term.
        lowered = [c.text.lower() for c in chunks]  # not cached: a cache lookup costs more
        joined = "\n".join(lowered)
        starts = [0]
        for low in lowered[:-1]:
            starts.append(starts[-1] + len(low) + 1)
        for t in wanted:
            f = 0
            at = joined.find(t)
            while at >= 0:
                if at == 0 or not (joined[at - 1].isalnum() or joined[at - 1] == "_"):
                    f += 1  # a word of this chunk starts with t: on to the next chunk
                    k = bisect.bisect_right(starts, at)
                    if k >= len(starts):
                        break
                    at = joined.find(t, starts[k])
                else:
                    at = joined.find(t, at + 1)
            df[t] = f
        n = len(chunks)
        self.idf: Mapping[str, float] = {
            t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items() if f
        }
        self._terms = tuple(self.idf)
        # What ``has_term`` looks for with ``str.find`` (the stem, less a final "y"): a term
        # whose probe is not in a text is in none of its parts.
        self._probes = tuple(t[:-1] if len(t) > 1 and t.endswith("y") else t for t in self._terms)
        self._weights: dict[int, float] = {}

    def candidates(self, low: str) -> tuple[tuple[int, str, str], ...]:
        """``(bit, term, probe)`` of the query terms that may occur in the lower-cased ``low``."""
        return tuple(
            (1 << k, t, p)
            for k, (t, p) in enumerate(zip(self._terms, self._probes, strict=True))
            if p and p in low
        )

    def masks(self, lowered: Sequence[str], joined: str) -> list[int]:
        """:meth:`mask` of each of ``lowered`` (parts of ``joined``), ruling terms out on ``joined`` once."""
        found = self.candidates(joined)
        if not found:
            return [0] * len(lowered)
        out = []
        for low in lowered:
            bits = 0
            for bit, t, p in found:
                if p in low and has_term(low, t):
                    bits |= bit
            out.append(bits)
        return out

    def mask(self, low: str) -> int:
        """The query terms among the terms of the lower-cased ``low``, as a bit set."""
        return self.masks((low,), low)[0]

    def weight(self, bits: int) -> float:
        """The IDF of the distinct query terms in ``bits``."""
        got = self._weights.get(bits)
        if got is None:
            # Rounded so that float summation order never decides a tie.
            got = round(sum(self.idf[t] for k, t in enumerate(self._terms) if bits >> k & 1), 9)
            self._weights[bits] = got
        return got


def _best_window(
    c: Chunk, meter: Meter, room: int, n: int, relevance: _Relevance, min_tokens: int
) -> tuple[Chunk, str] | None:
    """``c`` cut to its best window that fits ``room`` as block ``n``, and why; or None.

    Sentence windows first; a window of words only when no single sentence fits.
    """
    text = c.text
    # Framing of a block at its largest: a header may shrink with its text
    # (``lean`` leaves out a title the text already names), never grow.
    empty = c.with_ops(text="")
    overhead = meter.block_cost(empty, n) - meter.tokens(empty)
    limit = room - max(overhead, 0)
    if limit < min_tokens:
        return None
    spans, lowered, joined = lowered_sentences(text)

    # Window sizes are estimated from per-sentence counts: each sentence alone (as a window's
    # first) and with the whitespace that leads into it (as a later one), so the search costs two
    # short encodings per sentence rather than one encoding per candidate window. The chosen window
    # is then counted exactly, and shrunk from its end in the rare case where the estimate was
    # short (a merge across a sentence boundary, an escape in the rendered body).
    if not spans:
        return _word_window(c, meter, room, limit, n, relevance, min_tokens)
    alone, cum = sentence_sizes(meter.tokenizer, text)

    def size(i: int, j: int) -> int:
        """Estimated tokens of sentences i..j."""
        return alone[i] + cum[j] - cum[i]

    masks = relevance.masks(lowered, joined)
    best: tuple[float, int, int] | None = None
    best_ij = (0, 0)
    last = len(spans) - 1
    window = _Terms(len(relevance.idf))  # the query terms of sentences i..j, kept as j and i move
    j = -1
    for i in range(len(spans)):
        if i % CHECK_EVERY == 0:
            check_cancelled("token_budget")
        if j >= i - 1 >= 0:
            window.leave(masks[i - 1])
        j = max(j, i - 1)
        stop = last - 1 if i == 0 else last  # the whole text did not fit as a block
        while j < stop and size(i, j + 1) <= limit:
            j += 1
            window.enter(masks[j])
        if j < i:
            continue  # nothing from i fits
        key = (relevance.weight(window.bits), size(i, j), -i)
        if best is None or key > best:
            best, best_ij = key, (i, j)
    if best is not None and best[1] >= min_tokens:
        i, j = best_ij
        out, j = _fit_window(c, meter, spans, (i, j), room, n)
        if meter.block_cost(out, n) <= room and meter.tokens(out) >= min_tokens:
            return out, (
                f"cut to fit the {room} tokens left: sentences {i + 1}-{j + 1} of {len(spans)}, "
                f"the window most relevant to the query ({len(out.text)} of {len(text)} characters)"
            )
    return _word_window(c, meter, room, limit, n, relevance, min_tokens)


class _Terms:
    """The query terms of a sliding window of sentences, as a bit set: each term's count in it.

    A window's terms were the OR of its sentences' masks, recomputed for each start ``i``:
    O(window) per start, quadratic when a large budget holds thousands of short sentences
    (issue 31). Counting lets a sentence leave the window as cheaply as it entered.
    """

    __slots__ = ("_counts", "bits")

    def __init__(self, terms: int) -> None:
        self.bits = 0
        self._counts = [0] * terms

    def enter(self, mask: int) -> None:
        while mask:
            low = mask & -mask
            k = low.bit_length() - 1
            self._counts[k] += 1
            self.bits |= low
            mask ^= low

    def leave(self, mask: int) -> None:
        while mask:
            low = mask & -mask
            k = low.bit_length() - 1
            self._counts[k] -= 1
            if not self._counts[k]:
                self.bits &= ~low
            mask ^= low


def _fit_window(
    c: Chunk, meter: Meter, spans: Sequence[tuple[int, int]], window: tuple[int, int], room: int, n: int
) -> tuple[Chunk, int]:
    """Sentences ``i..j`` of ``c`` as a cut block, with as many of the last ones given up as it takes
    to fit ``room`` (the size estimate can be short: a merge across a sentence boundary, an
    escape in the rendered body); ``i..i`` when even that does not fit.

    The estimated window is tried first, on ``meter`` (it is nearly always the one kept);
    shorter ones on a scratch meter, galloping then bisecting: O(log) tries, not one
    join and count of the window per sentence given up.
    """
    i, j = window
    text = c.text
    scratch = meter.scratch()

    def cut(last: int) -> Chunk:
        a, b = spans[i][0], spans[last][1]
        return c.with_ops("truncated", text=text[a:b], spans=compose(c, [(a, b)]))

    def fits(last: int) -> bool:
        check_cancelled("token_budget")
        return (meter if last == j else scratch).block_cost(cut(last), n) <= room

    last = last_fitting(fits, j, i, j)
    return cut(last), last


def _word_window(
    c: Chunk,
    meter: Meter,
    room: int,
    limit: int,
    n: int,
    relevance: _Relevance,
    min_tokens: int,
) -> tuple[Chunk, str] | None:
    """The best window of whole words that fits, when no sentence does."""
    text = c.text
    words = [(m.start(), m.end()) for m in _WORDS.finditer(text)]
    if len(words) < 2:
        return None
    weights = _word_weights(text, words, relevance)
    prefix = [0.0]
    for w in weights:
        prefix.append(prefix[-1] + w)

    hits = [k for k, w in enumerate(weights) if w]

    def best_start(length: int) -> int:
        """Most query-term weight; among equals, the matches nearest the window's middle, then the earliest."""
        if not hits:
            return 0  # every window weighs 0 and is centred: the earliest
        values = [round(prefix[s + length] - prefix[s], 9) for s in range(len(words) - length + 1)]
        top = max(values)
        best = -math.inf
        at = 0
        for s, v in enumerate(values):
            if v != top:
                continue
            first, last = bisect.bisect_left(hits, s), bisect.bisect_left(hits, s + length) - 1
            off = abs((hits[first] + hits[last]) / 2 - (s + (length - 1) / 2)) if first <= last else 0.0
            if -off > best:
                best, at = -off, s
        return at

    scratch = meter.scratch()  # the windows tried stay out of the pipeline's caches

    def body_size(s: int, length: int) -> int:
        a, b = words[s][0], words[s + length - 1][1]
        return scratch.tokens(c.with_ops(text=text[a:b]))

    lo, hi, found = 1, len(words) - 1, None
    while lo <= hi:  # the longest window whose best placement fits
        check_cancelled("token_budget")
        mid = (lo + hi) // 2
        s = best_start(mid)
        if body_size(s, mid) <= limit:
            found, lo = (s, mid), mid + 1
        else:
            hi = mid - 1
    if found is None:
        return None
    s, length = found
    a, b = words[s][0], words[s + length - 1][1]
    out = c.with_ops("truncated", text=text[a:b], spans=compose(c, [(a, b)]))
    tokens = meter.tokens(out)
    if tokens < min_tokens or meter.block_cost(out, n) > room:
        return None
    return out, (
        f"cut to fit the {room} tokens left: no whole sentence fits, so {length} of {len(words)} words, "
        "the window most relevant to the query"
    )


def _word_weights(text: str, words: list[tuple[int, int]], relevance: _Relevance) -> list[float]:
    """Each word's query-term weight (0.0 for a word that matches no query term)."""
    weights = [0.0] * len(words)
    if relevance.idf:
        lowered = [text[a:b].lower() for a, b in words]
        present = relevance.candidates("\n".join(lowered))
        for k, low in enumerate(lowered):
            bits = 0
            for bit, t, p in present:
                if p in low and has_term(low, t):
                    bits |= bit
            if bits:
                weights[k] = relevance.weight(bits)
    return weights
