"""Re-asking bare citations: what ``eval --reask-bare`` buys over the first reply, with a reader.

Issue 32 asks that a small instruct model answer with its citation, never a bare ``[1]``. No one
wording serves both families measured: ``light`` ends Qwen's bare replies, and SmolLM2 reads it
worse. An application can instead keep ``default`` and ask once more, under ``light``, only when
the reply is a bare citation of its context (``resolve_citations(answer, ctx).bare``). This
measures that policy per strategy and budget on the first ``--limit`` answerable questions: the
first replies' accuracy and bare share, the same after re-asking, the paired Δ (95 % bootstrap
interval, McNemar's p), how many were re-asked and how many of those the second reply answered.
Both runs go through the reader's reply cache, so only the re-asks are new requests; ``--offline``
re-prints the figures from it.

    python bench/bench_reask.py ../shared/data/nq_bm25_confirm500.jsonl.gz --cells frugal@500,qa@500 \\
        --limit 160 --reader http://127.0.0.1:8766/v1 --model qwen2.5-coder-0.5b-instruct \\
        --cache reader.sqlite --label llama.cpp:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [--offline]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _reader import add_reader_args, open_reader
from contextwright.eval import load_queries
from contextwright.eval.metrics import mcnemar_exact, paired_bootstrap_delta
from contextwright.eval.reader import ReaderAnswer, evaluate_reader


def _cells(text: str) -> list[tuple[str, int]]:
    """``frugal@500,qa@1000`` as ``[("frugal", 500), ("qa", 1000)]``."""
    out = []
    for cell in text.split(","):
        name, _, budget = cell.partition("@")
        if not budget.isdigit():
            raise SystemExit(f"--cells wants strategy@budget items, e.g. frugal@500; got {cell!r}.")
        out.append((name, int(budget)))
    return out


def _row(cell: str, first: list[ReaderAnswer], again: list[ReaderAnswer]) -> str:
    n = len(first)
    base = [bool(a.ok and a.correct) for a in first]
    now = [bool(a.ok and a.correct) for a in again]
    asked = [b for b in again if b.reasked]
    answered = sum(1 for b in asked if b.ok and b.correct)
    delta, low, high = paired_bootstrap_delta(base, now) or (0.0, 0.0, 0.0)
    worse = sum(1 for x, y in zip(base, now, strict=True) if x and not y)
    better = sum(1 for x, y in zip(base, now, strict=True) if y and not x)
    return (
        f"{cell:<14} {n:>4} {100 * sum(base) / n:>6.1f}% {100 * sum(a.bare for a in first) / n:>5.1f}% "
        f"{100 * sum(now) / n:>6.1f}% {100 * sum(b.bare for b in again) / n:>5.1f}% "
        f"{100 * delta:>+6.1f} {f'{100 * low:+.1f}..{100 * high:+.1f}':>13} {mcnemar_exact(worse, better):>6.3f} "
        f"{len(asked):>5} {answered:>5}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--cells", default="frugal@500", help="strategy@budget, comma-separated")
    ap.add_argument("--limit", type=int, default=160, help="the first N answerable questions")
    ap.add_argument("--prompt", default="light", help="the re-ask prompt (a name or a text)")
    add_reader_args(ap)
    args = ap.parse_args()
    queries = [q for q in load_queries(args.data) if q.answers][: args.limit]
    print(f"{len(queries)} answerable questions of {args.data}; re-ask prompt {args.prompt!r}")
    print(
        f"{'cell':<14} {'n':>4} {'first':>7} {'bare':>6} {'reask':>7} {'bare':>6} {'delta':>6} "
        f"{'95 % paired':>13} {'p':>6} {'asked':>5} {'right':>5}"
    )
    for name, budget in _cells(args.cells):
        runs = []
        for reask in (None, args.prompt):
            with open_reader(args) as reader:
                res = evaluate_reader(
                    queries,
                    [name],
                    [budget],
                    reader=reader,
                    closed_book=False,
                    oracle=False,
                    reask_bare=reask,
                )
            by_id = {a.query_id: a for a in res.answers}
            runs.append([by_id[q.id] for q in queries])
        print(_row(f"{name}@{budget}", *runs), flush=True)


if __name__ == "__main__":
    main()
