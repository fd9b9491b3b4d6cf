"""Neighbour expansion latency per query on the shared NQ dev lists.

Loads the shared corpus (3,759 chunks) into a SQLite file once, then for every
dev query (20 BM25 chunks each) times the ``expand`` stage with window 1: one
batched store call per query. Prints the median and p95 per-query time and,
measured in the same run, ratios to one SQLite point query (the floor of any
store round trip) and to the naive way (one point query per neighbour).
Also runs the in-memory store and, when CONTEXTWRIGHT_TEST_PG_DSN is set,
PostgreSQL.

Target (issue 3): median <= 2 ms per query of 20 chunks with SQLite.

    python bench/bench_expand.py [--limit N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.expand import ExpandNeighbors
from contextwright.stores import InMemoryStore, PostgresStore, SQLiteStore

DATA = Path(
    os.environ.get("CONTEXTWRIGHT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
CORPUS = DATA / "nq_corpus_chunks.jsonl.gz"
DEV = DATA / "nq_bm25_dev300.jsonl.gz"


def per_call_ms(fn: Callable[[], Any], repeat: int) -> float:
    """The median of ``repeat`` timings of ``fn`` in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def neighbour_ranges(chunks: tuple[Chunk, ...]) -> dict[str, list[tuple[int, int]]]:
    """Positions index±1 of every chunk that are not themselves in the list, as one-index ranges."""
    have = {(c.doc_id, c.index) for c in chunks}
    out: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        if c.doc_id is None or c.index is None:
            continue
        for j in (c.index - 1, c.index + 1):
            if j >= 0 and (c.doc_id, j) not in have:
                out.setdefault(c.doc_id, []).append((j, j))
    return out


def bench_store(name: str, store: Any, queries: list[tuple[Chunk, ...]], repeat: int) -> dict[str, float]:
    stage = ExpandNeighbors(window=1)
    for chunks in queries[:20]:  # warm caches and prepared statements
        stage(chunks, store=store)
    per_query = [per_call_ms(lambda c=chunks: stage(c, store=store), repeat) for chunks in queries]
    added = [len(stage(c, store=store).report.added) for c in queries]
    # The naive way: one point query per wanted neighbour (what a loop over chunks does), and the
    # one batched store call alone for the same positions, both without the stage's bookkeeping.
    sample = [neighbour_ranges(c) for c in queries[: min(60, len(queries))]]
    naive = [
        per_call_ms(partial(lambda r: [store.fetch({d: [s]}) for d, spans in r.items() for s in spans], r), 1)
        for r in sample
    ]
    fetch_only = [per_call_ms(partial(store.fetch, r), 1) for r in sample]
    point = per_call_ms(lambda: store.fetch({"wiki:List of Nobel laureates in Physics": [(1, 1)]}), 2000)
    return {
        "median": statistics.median(per_query),
        "p95": p95(per_query),
        "added": statistics.mean(added),
        "point": point,
        "naive": statistics.median(naive),
        "fetch": statistics.median(fetch_only),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N dev queries")
    parser.add_argument("--repeat", type=int, default=5, help="timings per query (median taken)")
    args = parser.parse_args()
    if not CORPUS.exists() or not DEV.exists():
        print(f"shared data not found under {DATA}", file=sys.stderr)
        return 1

    with gzip.open(DEV, "rt", encoding="utf-8") as f:
        dev = [json.loads(line) for line in f]
    queries = [chunks_from_dicts(q["chunks"]) for q in dev[: args.limit]]

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "nq.db"
        start = time.perf_counter()
        sqlite = SQLiteStore(db)
        loaded = sqlite.load_jsonl(CORPUS)
        load_s = time.perf_counter() - start
        print(f"SQLite: loaded {loaded:,} chunks into a file in {load_s:.2f} s")

        # The floor: one raw sqlite3 point query on a plain connection, no store around it.
        raw = sqlite3.connect(db)
        sql = "SELECT * FROM chunks WHERE doc_id = ? AND idx = ?"
        raw_point = per_call_ms(
            lambda: raw.execute(sql, ("wiki:List of Nobel laureates in Physics", 1)).fetchall(), 2000
        )
        raw.close()

        results["sqlite"] = bench_store("sqlite", sqlite, queries, args.repeat)
        sqlite.close()

    memory = InMemoryStore()
    memory.load_jsonl(CORPUS)
    results["memory"] = bench_store("memory", memory, queries, args.repeat)

    dsn = os.environ.get("CONTEXTWRIGHT_TEST_PG_DSN")
    if dsn:
        with PostgresStore(dsn, table=f"cw_bench_{uuid.uuid4().hex[:10]}") as pg:
            try:
                start = time.perf_counter()
                pg.load_jsonl(CORPUS)
                print(f"PostgreSQL: loaded {loaded:,} chunks in {time.perf_counter() - start:.2f} s")
                results["postgresql"] = bench_store("postgresql", pg, queries, args.repeat)
            finally:
                pg.drop_table()
    else:
        print("PostgreSQL: skipped (set CONTEXTWRIGHT_TEST_PG_DSN)")

    print(
        f"\nexpand(window=1) over {len(queries)} dev queries of 20 chunks; "
        f"median of {args.repeat} runs per query; raw sqlite3 point query {raw_point * 1000:.1f} µs\n"
    )
    header = (
        f"{'store':<11} {'median ms':>9} {'p95 ms':>7} {'added/q':>7} {'point µs':>8} "
        f"{'× point':>7} {'fetch ms':>8} {'naive ms':>8} {'naive ×':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        print(
            f"{name:<11} {r['median']:>9.3f} {r['p95']:>7.3f} {r['added']:>7.2f} {r['point'] * 1000:>8.1f} "
            f"{r['median'] / r['point']:>7.1f} {r['fetch']:>8.3f} {r['naive']:>8.3f} {r['naive'] / r['fetch']:>7.1f}"
        )
    target = results["sqlite"]["median"]
    print(
        f"\nSQLite median {target:.3f} ms per query: {'meets' if target <= 2.0 else 'MISSES'} the 2 ms target; "
        f"{target / raw_point:.1f}× one raw sqlite3 point query."
    )
    print(
        "× point = expansion of a whole query / one store point query. fetch = the one batched store call "
        "alone; naive = one point fetch per wanted neighbour; naive × = naive / fetch."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
