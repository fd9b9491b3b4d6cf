"""Tokens sent against answers kept: the budget as a ceiling (preset ``frugal``).

For the BM25 lists of ../shared/data/nq_bm25_dev300.jsonl.gz and the ``dense`` lists (MiniLM
cosines) of ../shared/data/nq_hybrid_dev300.jsonl.gz, at 500 and 1,000 tokens (cl100k), through
:func:`contextwright.eval.evaluate`: naive, ``qa`` and ``frugal``, each with

* ret: answer-text retention over the answerable queries;
* Δ naive [95 %]: paired bootstrap interval (2,000 resamples), and Δ on each half of the queries;
* tok: mean tokens sent, and that as a share of the budget; viol: outputs over budget.

``--min-relative 0.3,0.5,0.7`` adds ``frugal`` variants with other thresholds (the sweep that
chose the default on dev). ``--data PATH`` runs one other list file instead (the confirmation
set: ../shared/data/nq_bm25_confirm500.jsonl.gz).

Run: python bench/bench_frugal.py [--limit N] [--budgets 500,1000] [--min-relative 0.5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEV
from contextwright import get_preset, register_preset
from contextwright.eval import QueryResult, evaluate, load_queries, paired_bootstrap_delta

HYBRID = DEV.parent / "nq_hybrid_dev300.jsonl.gz"


def dense_file(tmp: Path) -> Path:
    """The hybrid file's ``dense`` lists as a plain list file (in a temporary directory)."""
    out = tmp / "nq_dense_dev300.jsonl"
    with gzip.open(HYBRID, "rt", encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in src:
            q = json.loads(line)
            q["chunks"] = q.pop("lists")["dense"]
            dst.write(json.dumps(q) + "\n")
    return out


def _delta(base: dict[str, float], other: dict[str, float], ids: Sequence[str]) -> tuple[float, float, float]:
    found = paired_bootstrap_delta([base[i] for i in ids], [other[i] for i in ids], iterations=2000)
    assert found is not None
    return found


def table(results: Sequence[QueryResult], strategies: Sequence[str], budgets: Sequence[int]) -> None:
    kept: dict[tuple[str, int], dict[str, float]] = {}
    tokens: dict[tuple[str, int], list[int]] = {}
    viol: dict[tuple[str, int], int] = {}
    for r in results:
        key = (r.strategy, r.budget)
        tokens.setdefault(key, []).append(r.tokens)
        viol[key] = viol.get(key, 0) + int(r.over_budget)
        if r.answerable:
            kept.setdefault(key, {})[r.query_id] = float(r.answer_kept)
    ids = sorted(next(iter(kept.values())))
    half = len(ids) // 2
    print(f"{len(ids)} answerable queries")
    print(
        f"{'budget':>6} {'strategy':<12} {'ret':>6} {'Δ naive [95%]':>22} {'halves':>13} "
        f"{'tok':>6} {'of budget':>9} {'viol':>4}"
    )
    for budget in budgets:
        base = kept[("naive", budget)]
        for name in strategies:
            key = (name, budget)
            ret = sum(kept[key].values()) / len(kept[key])
            delta = halves = ""
            if name != "naive":
                d, lo, hi = _delta(base, kept[key], ids)
                delta = f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
                h = [
                    sum(kept[key][i] - base[i] for i in part) / len(part) for part in (ids[:half], ids[half:])
                ]
                halves = f"{100 * h[0]:+.1f} / {100 * h[1]:+.1f}"
            mean = sum(tokens[key]) / len(tokens[key])
            print(
                f"{budget:>6} {name:<12} {ret:>6.3f} {delta:>22} {halves:>13} {mean:>6.0f} "
                f"{100 * mean / budget:>8.0f}% {viol[key]:>4}"
            )
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budgets", default="500,1000")
    ap.add_argument("--min-relative", default="", help="extra frugal thresholds, e.g. 0.3,0.7")
    ap.add_argument("--data", type=Path, default=None, help="one list file instead of the two dev sets")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = ["naive", "qa", "frugal"]
    for value in filter(None, args.min_relative.split(",")):
        config = get_preset("frugal")
        for stage in config["stages"]:
            if stage["type"] == "relevance_stop":
                stage["min_relative"] = float(value)
        register_preset(f"frugal@{value}", config)
        strategies.append(f"frugal@{value}")
    with tempfile.TemporaryDirectory() as tmp:
        sets = [("given", args.data)] if args.data else [("bm25", DEV), ("dense", dense_file(Path(tmp)))]
        for label, path in sets:
            queries = load_queries(path, limit=args.limit)
            result = evaluate(queries, strategies, budgets, workers=args.workers)
            print(
                f"== {label}: {Path(path).name}, {len(queries)} queries, tokenizer {result.meta['tokenizer']}"
            )
            table(result.results, strategies, budgets)


if __name__ == "__main__":
    main()
