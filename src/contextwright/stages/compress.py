"""Selective compression: shrink what does not fit, never invent text.

When the selected chunks would overflow the documents budget, whole-chunk
selection throws answers away with the chunks that do not fit. These stages
shrink chunks instead, and only when the budget forces it:

* :class:`ExtractiveCompress` (``compress``): query-aware sentence selection,
  no model. The output is a subsequence of the chunk's sentences, and
  ``Chunk.spans`` keeps their character offsets so a citation can point at
  exactly the text that was kept.
* :class:`~contextwright.stages.llm_compress.LLMCompress` (``llm_compress``, in
  :mod:`contextwright.stages.llm_compress`): an OpenAI-compatible model (through
  :class:`~contextwright.clients.chat.ChatClient`) with a strictly extractive prompt;
  every returned sentence must occur in the chunk, otherwise the reply is
  rejected and the chunk kept whole.

Both run after dedup and before :class:`~contextwright.stages.budget.TokenBudget`,
which then fits the compressed set. They cost blocks exactly as the budget
stage does (:meth:`~contextwright.render.meter.Meter.set_cost`, the one set-cost rule).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contextwright.core.cancel import CHECK_EVERY, Pace, check_cancelled
from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.core.search import last_fitting
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.model.spans import compose, join_pieces
from contextwright.render.meter import Meter
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance
from contextwright.stages.words import analyze, terms

__all__ = [
    "BM25",
    "CompressionPlan",
    "ExtractiveCompress",
    "check_plan_settings",
    "overflow_plan",
    "plan_compression",
    "terms",
]

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"\S+")


class BM25:
    """Okapi BM25 over a small collection of texts (here: sentences).

    Args:
        docs: The documents, each a list of terms (see :func:`terms`).
        k1: Term-frequency saturation.
        b: Length normalization.

    Example:
        >>> bm = BM25([terms("Paris is in France."), terms("Rome is in Italy.")])
        >>> bm.scores(terms("capital of France"))
        [0.69..., 0.0]
    """

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        pace = Pace("compress")  # a deadline stops it between documents (a chunk's sentences)
        self.tfs = []
        for d in docs:
            pace.step(len(d) + 1)
            self.tfs.append(Counter(d))
        self.lens = [len(d) for d in docs]
        self.avg = (sum(self.lens) / len(docs)) if docs else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            pace.step(len(tf) + 1)
            df.update(tf.keys())
        n = len(docs)
        self.idf = {}
        for t, f in df.items():
            pace.step()
            self.idf[t] = math.log(1.0 + (n - f + 0.5) / (f + 0.5))

    def scores(self, query: Iterable[str]) -> list[float]:
        """The BM25 score of every document for ``query`` (unique terms)."""
        q = [t for t in dict.fromkeys(query) if t in self.idf]
        k1, b, avg = self.k1, self.b, self.avg or 1.0
        out = []
        for tf, n in zip(self.tfs, self.lens, strict=True):
            s = 0.0
            norm = k1 * (1.0 - b + b * n / avg)
            for t in q:
                f = tf.get(t)
                if f:
                    s += self.idf[t] * f * (k1 + 1.0) / (f + norm)
            out.append(s)
        return out


@dataclass(frozen=True, slots=True)
class _Sentence:
    start: int
    end: int
    text: str
    score: float = 0.0


def overflow_plan(chunks: Sequence[Chunk], meter: Meter, budget: int) -> tuple[list[Chunk], list[Chunk], int]:
    """Simulate the greedy fit of :class:`TokenBudget`.

    Returns:
        ``(fits, overflow, room_left)``: the chunks greedy selection would keep
        and those it would skip, both by relevance, and the tokens left over.
    """
    n = len(chunks)
    room = budget - meter.frame_cost()
    docs: set[str] = set()
    fits: list[Chunk] = []
    overflow: list[Chunk] = []
    for c in by_relevance(chunks):
        cost = meter.added_cost(c, n, docs)
        if cost <= room:
            fits.append(c)
            docs.add(c.group_key)
            room -= cost
        else:
            overflow.append(c)
    return fits, overflow, room


@dataclass(frozen=True, slots=True)
class CompressionPlan:
    """Which chunks stay whole and which shrink, when the set does not fit.

    Attributes:
        ranked: Every chunk, by relevance.
        whole: The best chunks kept whole: the top one, then the next ones
            while the set still fits in ``whole_share`` of the budget.
        squeeze: The rest, by relevance: the chunks to compress.
        top_overflows: The top chunk alone exceeds the budget (then it is the
            only chunk in ``squeeze`` that is also the best).
    """

    ranked: tuple[Chunk, ...]
    whole: tuple[Chunk, ...]
    squeeze: tuple[Chunk, ...]
    top_overflows: bool


def plan_compression(
    chunks: Sequence[Chunk], meter: Meter, budget: int, *, whole_share: float
) -> CompressionPlan | None:
    """Plan compression, or ``None`` when the chunks fit whole (greedy simulation).

    The top chunk is never compressed unless it alone overflows the budget.
    """
    if not chunks:
        return None
    meter.prime(chunks)
    _, overflow, _ = overflow_plan(chunks, meter, budget)
    if not overflow:
        return None
    n = len(chunks)
    ranked = tuple(by_relevance(chunks))
    top = ranked[0]
    if meter.set_cost([top], n) > budget:
        return CompressionPlan(ranked, (), ranked, True)
    whole = [top]
    docs = {top.group_key}
    cost = meter.set_cost(whole, n)  # kept running: set_cost([*whole, c]) for each c was quadratic
    for c in ranked[1:]:
        cost += meter.added_cost(c, n, docs)
        if cost > whole_share * budget:
            break
        whole.append(c)
        docs.add(c.group_key)
    return CompressionPlan(ranked, tuple(whole), ranked[len(whole) :], False)


def check_plan_settings(max_sentences: int | None, whole_share: float) -> None:
    """Validate the settings every compressor shares (``compress`` and ``llm_compress``).

    Raises:
        ConfigError: naming the setting, the value and an example.
    """
    if max_sentences is not None and (
        isinstance(max_sentences, bool) or not isinstance(max_sentences, int) or max_sentences < 1
    ):
        raise ConfigError(
            f"max_sentences must be a positive integer or None; got {max_sentences!r}. Example: 2.",
            loc=("max_sentences",),
        )
    if (
        isinstance(whole_share, bool)
        or not isinstance(whole_share, (int, float))
        or not 0 <= whole_share <= 1
    ):
        raise ConfigError(
            f"whole_share must be a number from 0 to 1 (the share of the budget kept for whole "
            f"top chunks); got {whole_share!r}. Example: 0.9.",
            loc=("whole_share",),
        )


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractiveCompress:
    """Query-aware extractive compression of the chunks that do not fit.

    Runs only when the chunks would exceed the budget as whole blocks (the
    same greedy simulation and costs as :class:`TokenBudget`); otherwise it
    passes them through untouched. Then, cheapest method first:

    1. **Repeated sentences** (lossless): a sentence that already appears in a
       higher-ranked chunk is removed from the lower one (adjacent chunks of
       one document overlap).
    2. **Sentence selection** on what does not fit: the best chunks stay whole
       while they fill at most ``whole_share`` of the budget (the top chunk
       always, unless it alone overflows, in which case it alone is cut to
       fit); every lower-scored chunk shrinks to its best ``max_sentences``
       sentences for the query (at most ``ratio`` of its tokens, at least its
       single best sentence), kept in their original order. A kept sentence
       longer than ``max_words`` words is cut to the contiguous window of
       ``max_words`` words that covers the most query-term IDF (ties: the
       window whose matches sit nearest its middle), still a verbatim
       substring with its own span.
    3. **Slack**: if the compressed set leaves room, the best compressed
       chunks are restored whole, in rank order, while they fit.

    :class:`TokenBudget` then fits the result, dropping the lowest-scored
    compressed chunks first if they still do not all fit.

    Sentences are scored with BM25 against the query (the collection is every
    sentence of this call's chunks, so ``idf`` is estimated on more than one
    chunk's four sentences; ``length_norm`` is its ``b``), or by cosine
    similarity with an ``embedder`` when the assembler has one. A relevance floor applies before compression:
    chunks scored below ``min_score`` are not compressed (the budget stage
    decides about them whole), and a chunk none of whose sentences scores
    above ``min_sentence_score`` (no query term at all, with BM25) is dropped
    as ``irrelevant``: it did not fit whole, and its best sentence would be an
    arbitrary one.

    Why keep most of the budget for whole chunks (``whole_share=0.9``): on
    the shared NQ data the best BM25 sentence of a chunk holds the answer in
    58% of the chunks that have one (the best two: 83%), so shrinking the
    second- or third-ranked chunk loses more answers than snippets of deeper
    chunks win (``bench/bench_compression.py``).

    Why no sentence-length normalization (``length_norm=0.0``): within one
    chunk, the sentence that matches the query terms *and* says more is the
    one that tends to hold the answer (the answer is the words beside the
    matched terms), and BM25's usual ``b=0.75`` penalizes exactly that
    sentence (best-sentence hit rate 0.572 with ``b=0.75``, 0.600 with ``b=0``).
    The longer sentences this picks are bounded by ``ratio`` and ``max_words``.

    Compressed chunks carry the op ``compressed``, ``spans`` with the kept
    sentences' offsets into the text this stage received, and a
    ``Change(tokens_before, tokens_after)`` in the report.

    Args:
        ratio: Upper bound of a compressed chunk's size, as a share of its tokens.
        max_sentences: The most sentences kept per compressed chunk (None: no limit).
        whole_share: Share of the budget the best chunks may fill whole.
        min_score: Chunks with a retriever score below this are not compressed.
        min_sentence_score: A chunk whose best sentence scores at most this is
            ``irrelevant``.
        scoring: ``auto`` (cosine with an embedder when one is configured, else
            BM25), ``bm25`` or ``embedding``.
        length_norm: BM25 ``b`` for sentence scoring (0: no length
            normalization, 1: full).
        max_words: Kept sentences longer than this many words are cut to a
            query-term window of this many words (None: whole sentences only).

    Example:
        >>> stages = [ExactDedup(), ExtractiveCompress(), TokenBudget()]
        >>> ctx = Assembler(Pipeline(stages), budget=500).assemble(query, chunks)
        >>> [c for c in ctx.report.changed if c.action == "compressed"]
    """

    name: ClassVar[str] = "compress"
    requires: ClassVar[tuple[str, ...]] = ("query", "meter", "budget")
    optional: ClassVar[tuple[str, ...]] = ("embedder",)
    ratio: float = bounded(0.6, 1.0)
    max_sentences: int | None = bounded(2, 1_000)
    whole_share: float = bounded(0.9, 1.0)
    min_score: float | None = bounded(None, 1e9)
    min_sentence_score: float = bounded(0.0, 1e9)
    scoring: Literal["auto", "bm25", "embedding"] = "auto"
    length_norm: float = bounded(0.0, 100.0)
    max_words: int | None = bounded(40, 10_000)

    def __post_init__(self) -> None:
        if isinstance(self.ratio, bool) or not isinstance(self.ratio, (int, float)) or not 0 < self.ratio < 1:
            raise ConfigError(
                f"ratio must be a number between 0 and 1 (the share of a chunk's tokens to keep); "
                f"got {self.ratio!r}. Example: ratio=0.3.",
                loc=("ratio",),
            )
        check_plan_settings(self.max_sentences, self.whole_share)
        if self.min_score is not None and (
            isinstance(self.min_score, bool)
            or not isinstance(self.min_score, (int, float))
            or not math.isfinite(self.min_score)
        ):
            raise ConfigError(
                f"min_score must be a finite number or None; got {self.min_score!r}.", loc=("min_score",)
            )
        if (
            isinstance(self.min_sentence_score, bool)
            or not isinstance(self.min_sentence_score, (int, float))
            or not math.isfinite(self.min_sentence_score)
        ):
            raise ConfigError(
                f"min_sentence_score must be a finite number; got {self.min_sentence_score!r}.",
                loc=("min_sentence_score",),
            )
        if self.scoring not in ("auto", "bm25", "embedding"):
            raise ConfigError(
                f"scoring must be 'auto', 'bm25' or 'embedding'; got {self.scoring!r}.", loc=("scoring",)
            )
        if (
            isinstance(self.length_norm, bool)
            or not isinstance(self.length_norm, (int, float))
            or not 0 <= self.length_norm <= 1
        ):
            raise ConfigError(
                f"length_norm must be a number from 0 to 1 (BM25 b for sentences); "
                f"got {self.length_norm!r}. Example: length_norm=0.0.",
                loc=("length_norm",),
            )
        if self.max_words is not None and (
            isinstance(self.max_words, bool) or not isinstance(self.max_words, int) or self.max_words < 1
        ):
            raise ConfigError(
                f"max_words must be a positive integer or None; got {self.max_words!r}. Example: max_words=40.",
                loc=("max_words",),
            )

    def __call__(
        self,
        chunks: Sequence[Chunk],
        /,
        *,
        query: str,
        meter: Meter,
        budget: int,
        embedder: Any = None,
    ) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        if self.scoring == "embedding" and embedder is None:
            raise ConfigError(
                "compress has scoring='embedding' but the assembler has no embedder; pass "
                "embedder= to Assembler, or use scoring='auto'."
            )
        plan = plan_compression(chunks, meter, budget, whole_share=self.whole_share)
        if plan is None:
            return StageResult.of(self.name, chunks, chunks, notes=["fits the budget; nothing compressed"])
        ranked = plan.ranked
        split: dict[str, list[_Sentence]] = {}
        for c in ranked:  # splitting and stemming is most of the work on long chunks: check per chunk
            check_cancelled(self.name)
            split[c.id] = [_Sentence(s, e, c.text[s:e]) for s, e in analyze(c.text)[0]]
        texts = {c.id: c.text for c in ranked}
        scorer, idf = self._scorer(query, split, texts, embedder)
        query_terms = frozenset(terms(query))
        scored = {cid: scorer(cid, sents) for cid, sents in split.items()}
        current: dict[str, Chunk] = {c.id: c for c in chunks}
        dropped: dict[str, Drop] = {}
        changes: dict[str, Change] = {}

        # 1. Lossless: a sentence already present in a higher-ranked chunk goes.
        self._drop_repeats(ranked, scored, current, changes, meter)
        lossless, lossless_changes = dict(current), dict(changes)
        # 2. Sentence selection on what does not fit (never the top chunk
        # unless it alone overflows): best sentences, in original order.
        squeezed = self._squeeze(
            plan, split, scored, _Edit(current, changes, dropped), meter, budget, (query_terms, idf)
        )
        # 3. Slack left (fewer chunks than the budget holds): restore the best
        # compressed chunks whole, in rank order, while the set still fits.
        cost = _restore(
            squeezed, (lossless, lossless_changes), _Edit(current, changes, dropped), meter, ranked, budget
        )
        out = [current[c.id] for c in chunks if c.id in current]
        notes = [f"compressed {len(changes)} chunk(s); set cost {cost} tokens for budget {budget}"]
        if self._uses_embedder(embedder):
            notes.append("sentences scored by cosine with the embedder")
        return StageResult.of(
            self.name, chunks, out, dropped=dropped.values(), changed=changes.values(), notes=notes
        )

    def _drop_repeats(
        self,
        ranked: Sequence[Chunk],
        scored: dict[str, list[_Sentence]],
        current: dict[str, Chunk],
        changes: dict[str, Change],
        meter: Meter,
    ) -> None:
        """Remove from each chunk the sentences a higher-ranked chunk already has (lossless)."""
        seen: set[str] = set()
        for c in ranked:
            sents = scored[c.id]
            fresh = [s for s in sents if " ".join(s.text.split()) not in seen]
            seen.update(" ".join(s.text.split()) for s in sents)
            if fresh and len(fresh) < len(sents):
                scored[c.id] = fresh
                self._apply(c, fresh, current, changes, meter, detail="repeated sentences removed")

    def _squeeze(
        self,
        plan: CompressionPlan,
        split: dict[str, list[_Sentence]],
        scored: dict[str, list[_Sentence]],
        edit: _Edit,
        meter: Meter,
        budget: int,
        query: tuple[frozenset[str], Any],
    ) -> list[Chunk]:
        """Cut each chunk of ``plan.squeeze`` to its best sentences, or drop it as irrelevant;
        the chunks cut, in rank order. ``query`` is the query's terms and their idf."""
        current, changes, dropped = edit.current, edit.changes, edit.dropped
        query_terms, idf = query
        ranked = plan.ranked
        n = len(current)
        squeezed: list[Chunk] = []
        for c in plan.squeeze:
            check_cancelled(self.name)
            if self.min_score is not None and c.score < self.min_score and not plan.top_overflows:
                continue
            sents = scored[c.id]
            if max((s.score for s in sents), default=0.0) <= self.min_sentence_score and c is not ranked[0]:
                del current[c.id]
                changes.pop(c.id, None)
                dropped[c.id] = Drop(
                    c.id,
                    "irrelevant",
                    detail="no sentence matches the query; compression would keep nothing useful",
                )
                continue
            if plan.top_overflows:
                kept = self._fit_alone(c, sents, meter, budget, n)
            else:
                kept = _select(sents, c, meter, max(1, int(meter.tokens(c) * self.ratio)), self.max_sentences)
                if kept is not None and self.max_words is not None:
                    kept = [_window(c.text, s, query_terms, idf, self.max_words) for s in kept]
            if kept is not None:
                self._apply(
                    c, kept, current, changes, meter, detail=f"{len(kept)} of {len(split[c.id])} sentences"
                )
                squeezed.append(c)
            if plan.top_overflows:
                break
        return squeezed

    def _uses_embedder(self, embedder: Any) -> bool:
        return embedder is not None and self.scoring in ("auto", "embedding")

    def _scorer(
        self, query: str, split: Mapping[str, list[_Sentence]], texts: Mapping[str, str], embedder: Any
    ) -> tuple[Callable[[str, list[_Sentence]], list[_Sentence]], Mapping[str, float]]:
        """The sentence scorer, and the term IDFs of this call's sentences (for word windows)."""
        keys = [(cid, i) for cid, sents in split.items() for i in range(len(sents))]
        # Once per chunk, not per sentence: a long text's analysis can be too big for its cache
        # (an entry over 1/8 of the cap is not kept), and per sentence that was quadratic.
        terms_of = {cid: analyze(texts[cid])[1] for cid in split}
        bm = BM25([terms_of[cid][i] for cid, i in keys], b=self.length_norm)
        if self._uses_embedder(embedder):
            ids = list(split)
            sentences = [s.text for cid in ids for s in split[cid]]
            vectors = embedder.embed([query, *sentences]) if sentences else None
            sims: dict[tuple[str, int], float] = {}
            if vectors is not None:
                q = vectors[0]
                k = 1
                for cid in ids:
                    for i in range(len(split[cid])):
                        sims[(cid, i)] = float(vectors[k] @ q)
                        k += 1

            def by_cosine(cid: str, sents: list[_Sentence]) -> list[_Sentence]:
                return [
                    _Sentence(s.start, s.end, s.text, sims.get((cid, i), 0.0)) for i, s in enumerate(sents)
                ]

            return by_cosine, bm.idf
        values = dict(zip(keys, bm.scores(terms(query)), strict=True))

        def by_bm25(cid: str, sents: list[_Sentence]) -> list[_Sentence]:
            return [_Sentence(s.start, s.end, s.text, values[(cid, i)]) for i, s in enumerate(sents)]

        return by_bm25, bm.idf

    def _fit_alone(
        self, c: Chunk, sents: Sequence[_Sentence], meter: Meter, budget: int, n: int
    ) -> list[_Sentence] | None:
        """The best sentences of a chunk that alone overflows, as many as fit the budget as one block.

        The most sentences ``k`` (best first, fewer than all) whose block costs at most ``budget``,
        else the best one. The cost of ``k`` sentences grows with ``k``, so instead of trying every
        ``k`` from the top (quadratic: each try joins and counts the chunk again; issue 31) the
        search starts at an estimate from the sentences' lengths and gallops, then bisects, to
        the boundary: O(log k) tries, each counted exactly on a scratch meter, so no tried
        text stays in the pipeline's caches.
        """
        ranked = sorted(sents, key=lambda s: (-s.score, s.start))
        if len(ranked) < 2:
            return ranked[:1] or None
        scratch = meter.scratch()

        def fits(k: int) -> bool:
            check_cancelled(self.name)
            kept = sorted(ranked[:k], key=lambda s: s.start)
            trial = c.with_ops("compressed", text=join_pieces(c.text, [(s.start, s.end) for s in kept]))
            return scratch.set_cost([trial], n) <= budget

        k = last_fitting(fits, _estimate(ranked, c, meter, budget, n), 1, len(ranked) - 1)
        return sorted(ranked[:k], key=lambda s: s.start)

    def _apply(
        self,
        c: Chunk,
        kept: Sequence[_Sentence],
        current: dict[str, Chunk],
        changes: dict[str, Change],
        meter: Meter,
        *,
        detail: str,
    ) -> None:
        pieces = sorted((s.start, s.end) for s in kept)
        text = join_pieces(c.text, pieces)
        if text == c.text or not text:
            return
        new = c.with_ops("compressed", text=text, spans=compose(c, pieces))
        current[c.id] = new
        changes[c.id] = Change(c.id, "compressed", meter.tokens(c), meter.tokens(new), detail=detail)


def _window(
    text: str, s: _Sentence, query_terms: frozenset[str], idf: Mapping[str, float], max_words: int
) -> _Sentence:
    """``s`` itself, or when longer than ``max_words`` words, its best window of ``max_words`` words.

    The best window covers the most IDF of distinct query terms; among equals,
    the one whose matches are centred best, then the earliest. The window runs
    from its first word's start to its last word's end: a verbatim substring.

    One pass: the window slides a word at a time, keeping how often each query term is in it
    and where its matched words are, so a sentence of ``w`` words costs O(w) plus a sum over
    the window's terms each time they change, not O(w × max_words) (issue 31).
    """
    words = [(s.start + m.start(), s.start + m.end()) for m in _TOKEN.finditer(s.text)]
    if len(words) <= max_words:
        return s
    known: dict[str, frozenset[str]] = {}  # words repeat: each distinct one is split into terms once
    hits = []
    for a, e in words:
        word = text[a:e]
        hit = known.get(word)
        if hit is None:
            hit = known[word] = frozenset(t for t in terms(word) if t in query_terms)
        hits.append(hit)
    present: dict[str, int] = {}  # query term -> how many of the window's words hold it
    matched: deque[int] = deque()  # the window's words with a query term, in order
    value, changed = 0.0, False
    best: tuple[float, float] | None = None
    best_i = 0
    for j in range(len(words)):
        if j % CHECK_EVERY == 0:
            check_cancelled("compress")
        changed = _count(present, hits[j], 1) or changed
        if hits[j]:
            matched.append(j)
        i = j - max_words + 1  # the window's first word
        if i < 0:
            continue
        if i > 0 and hits[i - 1]:
            changed = _count(present, hits[i - 1], -1) or changed
            matched.popleft()
        if changed:
            # fsum: exactly rounded, so the order of the terms (which varies with the hash seed) never decides a tie
            value, changed = math.fsum(idf.get(t, 0.0) for t in present), False
        off = abs((matched[0] + matched[-1]) / 2 - (i + max_words / 2)) if matched else float(max_words)
        key = (value, -off)
        if best is None or key > best:
            best, best_i = key, i
    start, end = words[best_i][0], words[best_i + max_words - 1][1]
    return _Sentence(start, end, text[start:end], s.score)


def _count(present: dict[str, int], hit: frozenset[str], step: int) -> bool:
    """Count a word's query terms into (``step=1``) or out of (``-1``) the window; whether its set of terms changed."""
    changed = False
    for t in hit:
        k = present.get(t, 0) + step
        if k:
            present[t] = k
        else:
            del present[t]
        changed = changed or k == (1 if step == 1 else 0)
    return changed


def _estimate(ranked: Sequence[_Sentence], c: Chunk, meter: Meter, budget: int, n: int) -> int:
    """How many of ``ranked`` (best first) fit ``budget`` as one block, estimated from their lengths."""
    per_char = meter.tokens(c) / max(1, len(c.text))
    room = budget - (meter.set_cost([c], n) - meter.tokens(c))  # frame, headers, footer
    used, k = 0.0, 0
    for s in ranked:
        used += (len(s.text) + 1) * per_char
        if used > room:
            break
        k += 1
    return k


def _select(
    sents: Sequence[_Sentence], c: Chunk, meter: Meter, target: int, limit: int | None
) -> list[_Sentence] | None:
    """The best sentences (at least one) whose estimated tokens stay within ``target``."""
    if not sents:
        return None
    per_char = meter.tokens(c) / max(1, len(c.text))
    ranked = sorted(sents, key=lambda s: (-s.score, s.start))
    kept = [ranked[0]]
    used = len(ranked[0].text) * per_char
    for s in ranked[1:]:
        if s.score <= 0 or (limit is not None and len(kept) >= limit):
            break
        need = len(s.text) * per_char
        if used + need <= target:
            kept.append(s)
            used += need
    return kept


@dataclass
class _Edit:
    """The chunks as compression leaves them, and what it changed and dropped (updated in place)."""

    current: dict[str, Chunk]
    changes: dict[str, Change]
    dropped: dict[str, Drop]


def _restore(
    squeezed: list[Chunk],
    lossless: tuple[dict[str, Chunk], dict[str, Change]],
    edit: _Edit,
    meter: Meter,
    ranked: Sequence[Chunk],
    budget: int,
) -> int:
    """Restore squeezed chunks whole (lossless), in rank order, while the set fits; the set's cost.

    ``lossless`` is each chunk and its change after step 1. Restoring swaps one version of a
    chunk for another, so the set keeps its members and their order: the new cost is the old
    one with that chunk's block (and its document's header, where it is the document's first
    block) priced again, not the whole set summed again per chunk (quadratic in chunks).
    """
    current, changes = edit.current, edit.changes
    whole, whole_changes = lossless
    n = len(ranked)
    state = [current[c.id] for c in ranked if c.id in current]
    cost = meter.set_cost(state, n)
    firsts: set[str] = set()
    docs: set[str] = set()
    for c in state:
        if c.group_key not in docs:
            firsts.add(c.id)
            docs.add(c.group_key)
    for i, c in enumerate(squeezed):
        if cost >= budget:
            break
        if i % CHECK_EVERY == 0:
            check_cancelled("compress")
        now, restored = current[c.id], whole[c.id]
        shown = () if c.id in firsts else (c.group_key,)  # its document's header: paid here or before
        new_cost = cost - meter.added_cost(now, n, shown) + meter.added_cost(restored, n, shown)
        if new_cost <= budget:
            current[c.id] = restored
            if c.id in whole_changes:
                changes[c.id] = whole_changes[c.id]
            else:
                changes.pop(c.id, None)
            cost = new_cost
    return cost
