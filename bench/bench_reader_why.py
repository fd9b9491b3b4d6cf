"""Why a model reads one context better than another: where the answer sits, and naive's cut fragment.

Reads the JSON that ``bench_reader.py --json`` wrote (every reply and whether it was right),
rebuilds each strategy's context for the same queries with the same tokenizer and chunk store,
and prints two tables from one run:

1. Per strategy and budget, the queries by where the first gold answer occurs in the context
   (the first, middle or last third of its characters, or nowhere) and the reader's accuracy
   on each group. If the reader's gains came from moving answers out of the middle, they
   would show here.
2. Naive against greedy on the queries where greedy's context is naive's minus its ending:
   naive fills the budget by cutting the next chunk mid-sentence, greedy stops at the last
   whole chunk, and nothing else differs. The questions each answered there, McNemar's exact
   p on the discordant pairs, and the fragment's length in tokens.

    python bench/bench_reader.py --budgets 500 --json reader.json
    python bench/bench_reader_why.py reader.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from _data import CORPUS, DEV
from contextwright.eval import load_queries
from contextwright.eval.metrics import mcnemar_exact, normalize_answer, normalize_answer_unicode
from contextwright.eval.runner import open_corpus_store
from contextwright.eval.strategies import build_strategy
from contextwright.tokens import CachedTokenizer, get_tokenizer

THIRDS = ("first third", "middle third", "last third", "nowhere")


def first_answer_at(text: str, golds: list[str]) -> float | None:
    """Where the first gold answer starts, as a share of the normalized context; ``None`` when absent.

    The same whole-word match as the reader's scoring (either normalization).
    """
    best: float | None = None
    for norm in (normalize_answer, normalize_answer_unicode):
        hay = f" {norm(text)} "
        for gold in golds:
            needle = norm(gold)
            at = hay.find(f" {needle} ") if needle else -1
            if at >= 0:
                share = at / len(hay)
                best = share if best is None else min(best, share)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="the file bench_reader.py --json wrote")
    args = ap.parse_args()
    data = json.loads(Path(args.json).read_text(encoding="utf-8"))
    correct = {(a["query_id"], a["strategy"], a["budget"]): a["correct"] for a in data["answers"] if a["ok"]}
    runs = sorted({(s, b) for _, s, b in correct if b > 0}, key=lambda sb: (sb[1], sb[0] != "naive", sb[0]))
    ids = {q for q, _, _ in correct}
    queries = [q for q in load_queries(DEV) if q.id in ids]
    tok = CachedTokenizer(get_tokenizer("cl100k_base").base)
    resources = {"store": open_corpus_store(CORPUS)} if CORPUS.exists() else {}
    texts: dict[tuple[str, str, int], str] = {}
    for name, budget in runs:
        strategy = build_strategy(name)
        for q in queries:
            out = strategy.run(q.question, q.chunks, budget=budget, tokenizer=tok, resources=resources)
            texts[q.id, name, budget] = out.text

    print(f"{len(queries)} queries from {args.json}; where the first gold answer sits in each context:")
    print(f"{'strategy':<11}{'budget':>7}" + "".join(f"{t:>24}" for t in THIRDS))
    pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, (name, budget) in enumerate(runs):
        cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for q in queries:
            if (q.id, name, budget) not in correct:
                continue
            at = first_answer_at(texts[q.id, name, budget], list(q.answers))
            third = THIRDS[3] if at is None else THIRDS[min(int(at * 3), 2)]
            for cell in (cells[third], pooled[third]):
                cell[0] += 1
                cell[1] += correct[q.id, name, budget]
        print(f"{name:<11}{budget:>7}" + "".join(f"{_share(*cells[t]):>24}" for t in THIRDS))
        if i + 1 == len(runs) or runs[i + 1][1] != budget:  # pooled over the strategies of one budget
            print(f"{'all':<11}{budget:>7}" + "".join(f"{_share(*pooled[t]):>24}" for t in THIRDS))
            pooled.clear()
    print("(queries in the group, and the reader's accuracy on them)")

    for budget in sorted({b for _, b in runs}):
        if not {("naive", budget), ("greedy", budget)} <= set(runs):
            continue
        won = lost = both = 0
        fragments = []
        for q in queries:
            naive, greedy = texts[q.id, "naive", budget], texts[q.id, "greedy", budget]
            answered = (q.id, "naive", budget) in correct and (q.id, "greedy", budget) in correct
            if not answered or naive == greedy or not naive.startswith(greedy):
                continue
            fragments.append(tok.count(naive[len(greedy) :]))
            n, g = correct[q.id, "naive", budget], correct[q.id, "greedy", budget]
            won += g and not n
            lost += n and not g
            both += n and g
        if fragments:
            print(
                f"\nbudget {budget}: on {len(fragments)} queries naive's context is greedy's plus a cut fragment"
                f" (median {statistics.median(fragments):.0f} tokens, at most {max(fragments)}):"
                f" naive answers {both + lost}, greedy {both + won};"
                f" greedy won {won}, lost {lost}, McNemar p = {mcnemar_exact(lost, won):.3g}"
            )


def _share(n: int, k: int) -> str:
    return f"{n:>4} q, {100 * k / n:5.1f} %" if n else "0 q"


if __name__ == "__main__":
    main()
