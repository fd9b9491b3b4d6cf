"""Where extra answers could come from at small budgets, and why query-term sentence selection cannot get them.

On ../shared/data/nq_bm25_dev300.jsonl.gz (300 NQ queries, BM25 top-20, cl100k, ``lean``
framing), over the answerable queries:

1. **The room beyond whole chunks**, per budget. *prefix*: the chunks taken whole in rank
   order until the first that does not fit, as ``lean`` blocks (what ``token_budget(fill)``
   keeps whole): its retention and the mean room it leaves. *beyond*: queries whose answer
   is not in the prefix; *fits*: of those, the ones where some answer-bearing sentence of a
   later chunk fits the room as one block, so *ceiling* = prefix + fits is what a perfect
   answer locator could keep without giving up any whole chunk. *IDF rank*: where the
   query-term weighting of the ``fill`` window (IDF of the distinct query terms a sentence
   contains, over this query's chunks; ties by rank) puts the best-placed fitting answer
   sentence among all sentences of the later chunks (median, and how often it is first or
   in the top 3): how close a lexical locator comes to that ceiling.
2. **First-answer density**, by chunk rank and sentence class: answers per 100 tokens, counting
   a sentence only when no higher-ranked chunk holds an answer (so it is an answer that text
   would add). Classes: ``s0`` the chunk's first sentence; ``top`` its highest-weighted
   sentence (when not the first); ``term`` another sentence with a query term; ``none`` no
   query term. If a class of deeper chunks bought more answers per token than some class of
   higher-ranked chunks, moving tokens from the one to the other would pay.

Run: python bench/bench_tight.py [--limit N] [--budgets 300,500,1000,1500]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEV
from contextwright import Chunk, get_tokenizer
from contextwright.core.sentences import split_sentences
from contextwright.eval import DEFAULT_BUDGETS, EvalQuery, answer_in_text, load_queries
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.words import has_term, terms


def idf_weights(question: str, texts: Sequence[str]) -> dict[str, float]:
    """IDF of the question's terms over ``texts`` (each one document), as the ``fill`` window weighs them."""
    wanted = list(dict.fromkeys(terms(question)))
    lows = [t.lower() for t in texts]
    n = len(texts)
    out = {}
    for t in wanted:
        df = sum(has_term(low, t) for low in lows)
        if df:
            out[t] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return out


def weight(text: str, idf: dict[str, float]) -> float:
    """The IDF of the distinct query terms ``text`` contains."""
    low = text.lower()
    return round(sum(v for t, v in idf.items() if has_term(low, t)), 9)


def room_table(queries: Sequence[EvalQuery], budgets: Sequence[int]) -> None:
    """Per budget: the whole-chunk prefix, the room it leaves, and what a perfect or a lexical locator gets."""
    meter = Meter(get_format("lean"), get_tokenizer("cl100k_base"))
    print(
        f"{'budget':>6} {'prefix':>6} {'room':>5} {'beyond':>6} {'fits':>4} {'ceiling':>7} "
        f"{'IDF rank: median':>16} {'first':>5} {'top 3':>5}"
    )
    for budget in budgets:
        kept = rooms = beyond = fits = 0
        ranks: list[int] = []
        for q in queries:
            chunks = [Chunk.from_dict(dict(c), position=i) for i, c in enumerate(q.chunks)]
            n = len(chunks)
            room = budget - meter.frame_cost()
            m = n
            for k, c in enumerate(chunks):
                cost = meter.block_cost(c, n)
                if cost > room:
                    m = k
                    break
                room -= cost
            rooms += room
            if any(answer_in_text(c.text, q.answers) for c in chunks[:m]):
                kept += 1
                continue
            beyond += 1
            idf = idf_weights(q.question, [c.text for c in chunks])
            cands = []  # (-weight, rank, sentence index, holds an answer and fits)
            for r in range(m, n):
                c = chunks[r]
                for i, (a, b) in enumerate(split_sentences(c.text)):
                    text = c.text[a:b]
                    ok = answer_in_text(text, q.answers) and meter.block_cost(Chunk(text, id=c.id), n) <= room
                    cands.append((-weight(text, idf), r, i, ok))
            cands.sort()
            where = [k for k, x in enumerate(cands) if x[3]]
            if where:
                fits += 1
                ranks.append(where[0])
        share = len([x for x in ranks if x == 0]), len([x for x in ranks if x < 3])
        print(
            f"{budget:>6} {kept / len(queries):>6.3f} {rooms / len(queries):>5.0f} {beyond:>6} {fits:>4} "
            f"{(kept + fits) / len(queries):>7.3f} {statistics.median(ranks) if ranks else 0:>16.0f} "
            f"{share[0]:>5} {share[1]:>5}"
        )


def density_table(queries: Sequence[EvalQuery], last: int = 8) -> None:
    """First answers per 100 tokens by chunk rank (``last`` and beyond pooled) and sentence class."""
    tok = get_tokenizer("cl100k_base")
    stats: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # tokens, first answers
    for q in queries:
        texts = [str(c.get("text", "")) for c in q.chunks]
        idf = idf_weights(q.question, texts)
        seen = False
        for r, text in enumerate(texts):
            spans = split_sentences(text)
            ws = [weight(text[a:b], idf) for a, b in spans]
            best = max(ws, default=0.0)
            bucket = f"{r}" if r < last else f"{last}+"
            for i, (a, b) in enumerate(spans):
                cls = (
                    "s0"
                    if i == 0
                    else "top"
                    if ws[i] == best and best > 0
                    else "term"
                    if ws[i] > 0
                    else "none"
                )
                row = stats[(bucket, cls)]
                row[0] += tok.count(text[a:b])
                row[1] += (not seen) and answer_in_text(text[a:b], q.answers)
            seen = seen or answer_in_text(text, q.answers)
    classes = ("s0", "top", "term", "none")
    print(
        f"{'rank':>5} " + " ".join(f"{c:>13}" for c in classes) + "   (first answers per 100 tokens; count)"
    )
    for r in [*(str(x) for x in range(last)), f"{last}+"]:
        cells = []
        for c in classes:
            tokens, first = stats[(r, c)]
            cells.append(f"{100 * first / tokens:>8.3f} ({first:>2})" if tokens else f"{'':>13}")
        print(f"{r:>5} " + " ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    args = ap.parse_args()
    queries = [q for q in load_queries(DEV, limit=args.limit) if q.answerable]
    print(f"bench_tight: {DEV.name}, {len(queries)} answerable queries, cl100k, lean framing\n")
    room_table(queries, [int(b) for b in args.budgets.split(",")])
    print()
    density_table(queries)


if __name__ == "__main__":
    main()
