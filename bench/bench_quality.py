"""Answer retention of every strategy at small budgets, with paired bootstrap intervals against naive.

On ../shared/data/nq_bm25_dev300.jsonl.gz (300 NQ queries, BM25 top-20; the
corpus ../shared/data/nq_corpus_chunks.jsonl.gz is the store of the
``documents`` preset), for budgets 300 / 500 / 1,000 / 1,500 (cl100k) and the
strategies naive, greedy and every preset, through
:func:`contextwright.eval.evaluate` (the same machinery as ``contextwright
eval``):

* ret: answer-text retention over the answerable queries (an answer string in
  some block's text, whole words, normalized);
* Δ naive [95 %]: retention minus naive's on the same queries, with a paired
  bootstrap 95 % interval (2,000 resamples, seed 0;
  :func:`contextwright.eval.metrics.paired_bootstrap_delta`): an interval that
  contains 0 is not a win or a loss;
* hard: retention on the hard subset (answerable, first answer-bearing chunk
  not ranked first); mid%: share of the hard subset's outputs whose first
  answer block lies in the middle third;
* acc: expected accuracy (%) under the Liu et al. 2024 positional prior;
* tok: mean tokens used; frame/blk: framing tokens (text tokens less the
  blocks' own tokens) per block; viol: outputs over budget, counted
  independently.

The same table follows for the first 150 and the last 150 queries, so a
reader can see whether a difference holds on both halves.

Run: python bench/bench_quality.py [--limit N] [--workers 2] [--budgets 300,500,1000,1500]
                                   [--strategies naive,greedy,qa,...] [--resamples 2000]
                                   [--data PATH] [--corpus PATH]

``--data`` runs another list file of the same schema, e.g. the mirrors set
../shared/data/nq_mirrors_dev300.jsonl.gz (a knowledge base holding copies);
its corpus defaults to the one beside it (``nq_mirrors_corpus.jsonl.gz`` for a
file named ``nq_mirrors_*``, else the BM25 corpus), or ``--corpus``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import CORPUS, DEV
from contextwright.eval import (
    DEFAULT_BUDGETS,
    QueryResult,
    default_strategies,
    evaluate,
    load_queries,
    paired_bootstrap_delta,
    summarize,
)


def table(
    results: Sequence[QueryResult], strategies: Sequence[str], budgets: Sequence[int], resamples: int
) -> None:
    """Print one table for ``results`` (any subset of queries)."""
    alls = {(s.strategy, s.budget): s for s in summarize(results, subset="all")}
    hards = {(s.strategy, s.budget): s for s in summarize(results, subset="hard")}
    kept: dict[tuple[str, int], dict[str, float]] = {}
    framing: dict[tuple[str, int], tuple[int, int]] = {}
    for r in results:
        key = (r.strategy, r.budget)
        if r.answerable:
            kept.setdefault(key, {})[r.query_id] = float(r.answer_kept)
        f, b = framing.get(key, (0, 0))
        framing[key] = (f + r.framing_tokens, b + r.blocks)
    n = len({r.query_id for r in results})
    print(f"{n} queries ({alls[(strategies[0], budgets[0])].answerable} answerable)")
    print(
        f"{'budget':>6} {'strategy':<10} {'ret':>6} {'Δ naive [95% paired bootstrap]':>32} {'hard':>6} "
        f"{'mid%':>5} {'acc':>5} {'tok':>6} {'frame/blk':>9} {'viol':>4}"
    )
    for budget in budgets:
        base = kept.get(("naive", budget))
        for name in strategies:
            key = (name, budget)
            if key not in alls:
                continue
            a, h = alls[key], hards[key]
            delta = ""
            if base is not None and name != "naive":
                ids = sorted(base)
                found = paired_bootstrap_delta(
                    [base[i] for i in ids], [kept[key][i] for i in ids], iterations=resamples
                )
                assert found is not None  # naive ran on these queries
                d, lo, hi = found
                delta = f"{100 * d:+.1f} pt [{100 * lo:+.1f}, {100 * hi:+.1f}]"
            f, blocks = framing[key]
            print(
                f"{budget:>6} {name:<10} {a.answer_retention or 0:>6.3f} {delta:>32} "
                f"{h.answer_retention or 0:>6.3f} {100 * (h.middle_share or 0):>5.1f} "
                f"{a.expected_accuracy or 0:>5.1f} {a.tokens_mean or 0:>6.1f} "
                f"{f / blocks if blocks else 0:>9.2f} {a.violations:>4}"
            )
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    ap.add_argument("--strategies", default=",".join(default_strategies()))
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--data", type=Path, default=DEV, help="a list file (JSONL, gzip or not)")
    ap.add_argument("--corpus", type=Path, default=None, help="the store of the documents preset")
    args = ap.parse_args()
    data: Path = args.data
    corpus: Path = args.corpus or (
        data.parent / "nq_mirrors_corpus.jsonl.gz" if data.name.startswith("nq_mirrors_") else CORPUS
    )
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = args.strategies.split(",")
    queries = load_queries(data, limit=args.limit)
    start = time.perf_counter()
    result = evaluate(queries, strategies, budgets, corpus=corpus, workers=args.workers)
    took = time.perf_counter() - start
    strategies = [name for name, _ in result.strategies]  # config files go by their name
    print(
        f"bench_quality: {data.name} (corpus {corpus.name}), tokenizer {result.meta['tokenizer']}, {took:.0f} s"
    )
    for name, why in result.skipped.items():
        print(f"skipped {name}: {why}")
    print("\n== all queries ==")
    table(result.results, strategies, budgets, args.resamples)
    ids = sorted(q.id for q in queries)
    half = len(ids) // 2
    for label, part in (("first half", set(ids[:half])), ("second half", set(ids[half:]))):
        print(f"== {label} ==")
        table([r for r in result.results if r.query_id in part], strategies, budgets, args.resamples)


if __name__ == "__main__":
    main()
