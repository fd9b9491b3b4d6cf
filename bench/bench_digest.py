"""A digest of every preset's output on the dev lists: proof that a refactor moved no byte.

For every preset of :func:`contextwright.list_presets` and the budgets 300 /
500 / 1,000 / 1,500 (cl100k_base), every dev query is assembled and
``ctx.to_dict()`` is hashed (SHA-256 of its canonical JSON, with the report's
timings removed, since milliseconds are not behaviour). The ``documents``
preset reads its neighbours from an in-memory SQLite store of the corpus. One
line per (preset, budget) and one overall digest are printed; two runs of the
same code print the same lines, and a refactor that changes no behaviour
prints the same lines as the code before it.

Run: python bench/bench_digest.py [--data PATH] [--corpus PATH] [--limit N]
                                  [--budgets 300,500,1000,1500] [--presets qa,...]
                                  [--write PATH]

``--write PATH`` also writes the lines, without the run time, to PATH: that is
how tests/fixtures/digest_dev30.txt (pinned by tests/test_digest.py) is made:

    python bench/bench_digest.py --limit 30 --budgets 300,1000 --write tests/fixtures/digest_dev30.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contextwright
from _data import CORPUS, DEV
from contextwright.eval import load_queries
from contextwright.stores import SQLiteStore


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "ms"}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--budgets", default="300,500,1000,1500")
    ap.add_argument("--presets", default=None, help="comma-separated; default: every preset")
    ap.add_argument("--write", type=Path, default=None, help="also write the lines (no run time) here")
    args = ap.parse_args()
    queries = load_queries(args.data, limit=args.limit)
    store = SQLiteStore(":memory:")
    store.load_jsonl(args.corpus)
    presets = args.presets.split(",") if args.presets else list(contextwright.list_presets())
    budgets = [int(b) for b in args.budgets.split(",")]
    overall = hashlib.sha256()
    start = time.perf_counter()
    lines = [f"bench_digest: {args.data.name}, {len(queries)} queries, cl100k_base"]
    print(lines[0])
    for preset in presets:
        for budget in budgets:
            assembler = contextwright.Assembler(preset, budget=budget, tokenizer="cl100k_base", store=store)
            h = hashlib.sha256()
            for q in queries:
                ctx = assembler.assemble(q.question, q.chunks, budget=budget)
                blob = json.dumps(_without_timings(ctx.to_dict()), sort_keys=True, ensure_ascii=False)
                h.update(hashlib.sha256(blob.encode("utf-8")).digest())
            overall.update(h.digest())
            lines.append(f"{preset:<12} {budget:>5} {h.hexdigest()[:32]}")
            print(lines[-1], flush=True)
    lines.append(f"overall {overall.hexdigest()}")
    print(f"{lines[-1]} ({time.perf_counter() - start:.0f} s)")
    if args.write is not None:
        args.write.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
