"""Dedup before the budget's cut (what a copy frees is refilled) against after it (saved), with a reader.

`qa` dedups after its budget since stop 37 (docs/quality.md, "`qa` dedups after the cut"). This is
the measurement behind that change: on every question of the data, both settings are assembled;
where the two contexts are the same, both send the same messages and get the same reply (a tie),
so only the questions whose contexts differ are asked, with both settings, through the reader's
reply cache. Prints the difference over all questions with its 95 % paired bootstrap interval and
McNemar's p, and the bare-citation replies of each setting.

Run (a llama.cpp server, or any OpenAI-compatible endpoint):
    python bench/bench_saves.py ../shared/data/nq_bm25_confirm500.jsonl.gz --budget 500 \\
        --reader http://127.0.0.1:8765/v1 --model smollm2-135m-instruct \\
        --cache reader.sqlite --label llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf [--offline]
"""

from __future__ import annotations

import argparse
import random
from math import comb

from contextwright import Assembler, get_preset
from contextwright.eval import load_queries
from contextwright.eval.reader import Reader, evaluate_reader
from contextwright.eval.strategies import PipelineStrategy

#: ``qa`` as it was until stop 37: dedup before the budget.
BEFORE = {
    "name": "dedup-before-the-cut",
    "stages": [
        {"type": "exact_dedup"},
        {"type": "containment_dedup"},
        {"type": "token_budget", "policy": "fill"},
        {"type": "lost_in_the_middle_order"},
    ],
    "format": "lean",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--reader", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--label", default=None, help="the reply cache's endpoint label")
    ap.add_argument("--offline", action="store_true", help="answer from the cache alone")
    ap.add_argument("--max-tokens", type=int, default=24)
    args = ap.parse_args()
    after = {**get_preset("qa"), "name": "dedup-after-the-cut"}
    queries = load_queries(args.data)
    a = Assembler(BEFORE, budget=args.budget, tokenizer="cl100k_base")
    b = Assembler(after, budget=args.budget, tokenizer="cl100k_base")
    differ = [
        q for q in queries if a.assemble(q.question, q.chunks).text != b.assemble(q.question, q.chunks).text
    ]
    print(f"{len(queries)} questions, {len(differ)} with different contexts at {args.budget} tokens")
    with Reader(
        args.reader,
        model=args.model,
        cache=args.cache,
        cache_endpoint=args.label,
        max_tokens=args.max_tokens,
        max_concurrency=1,
        offline=args.offline,
    ) as reader:
        res = evaluate_reader(
            differ,
            [PipelineStrategy(BEFORE["name"], BEFORE), PipelineStrategy(after["name"], after)],
            [args.budget],
            reader=reader,
            closed_book=False,
            oracle=False,
        )
    got: dict[str, dict[str, object]] = {}
    for ans in res.answers:
        got.setdefault(ans.query_id, {})[ans.strategy] = ans
    diffs, bare, failed = [], {BEFORE["name"]: 0, after["name"]: 0}, 0
    for pair in got.values():
        x, y = pair[BEFORE["name"]], pair[after["name"]]
        failed += (not x.ok) + (not y.ok)  # type: ignore[attr-defined]
        diffs.append(int(bool(y.correct)) - int(bool(x.correct)))  # type: ignore[attr-defined]
        for name, ans in pair.items():
            bare[name] += bool(ans.bare)  # type: ignore[attr-defined]
    n = len(queries)
    diffs += [0] * (n - len(diffs))
    rng = random.Random(0)
    boots = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(2000))
    worse, better = diffs.count(-1), diffs.count(1)
    k, m = min(worse, better), worse + better
    p = min(1.0, 2 * sum(comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0
    print(
        f"after - before the cut: {100 * sum(diffs) / n:+.1f} points "
        f"[{100 * boots[50]:+.1f}, {100 * boots[1949]:+.1f}] (95 % paired bootstrap, n = {n}), McNemar p {p:.3f}; "
        f"right only before {worse}, only after {better}; bare citations before {bare[BEFORE['name']]}, "
        f"after {bare[after['name']]} (of {len(differ)}); failed requests {failed}"
    )


if __name__ == "__main__":
    main()
