"""Stores and dedup at corpus scale: 10k / 100k / 1M chunks.

One run prints, side by side for each size:

* loading the corpus with ``contextwright index`` (the real command, in a
  subprocess) into SQLite and PostgreSQL: seconds, chunks/s, database size;
* expansion latency: one store round trip fetching the neighbours (index ±1)
  of a 20-chunk retrieval, p50/p95 over 1,000 queries, on a warm connection;
* corpus near-duplicate detection (``contextwright dedup-corpus``, MinHash
  LSH): seconds, peak memory, pairs found, recall of the planted near
  duplicates, and agreement with the exact Jaccard on a sample.

The corpus is synthetic and reproducible (``--seed``): documents of 5-200
chunks of 40-60 words drawn from a 20,000-word vocabulary by Zipf's law (exponent 1),
with 1% of the chunks planted as near duplicates (a copy of another chunk
with 1-3 words replaced).

Usage:
    python bench/bench_scale.py                       # 10k, 100k, 1M; SQLite and PostgreSQL
    python bench/bench_scale.py --sizes 10000,100000 --no-postgres
    CONTEXTWRIGHT_BENCH_PG_DSN=postgresql://postgres:postgres@127.0.0.1:5432/contextwright_test_16 \\
        python bench/bench_scale.py

PostgreSQL is skipped when neither ``CONTEXTWRIGHT_BENCH_PG_DSN`` nor
``CONTEXTWRIGHT_TEST_PG_DSN`` is set. The machine's load matters: say how busy
it was next to the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VOCAB = 20_000
NEAR_SHARE = 0.01


def _vocabulary(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < VOCAB:
        n = int(rng.integers(2, 11))
        words.add("".join(rng.choice(letters, n)))
    return sorted(words)


def generate(n_chunks: int, path: Path, *, seed: int = 16) -> dict[str, Any]:
    """Write a synthetic corpus of ``n_chunks`` chunks (JSONL) and return its facts (planted pairs)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_vocabulary(rng))
    lengths = []
    total = 0
    while total < n_chunks:
        k = int(min(rng.integers(5, 201), n_chunks - total))
        lengths.append(k)
        total += k
    words_per = rng.integers(40, 61, size=n_chunks)
    # word ranks follow Zipf's law with exponent 1 over the vocabulary, as in English text
    # (the commonest word is ~9.5% of the words)
    ranks = 1.0 / np.arange(1, VOCAB + 1)
    ids = rng.choice(VOCAB, size=int(words_per.sum()), p=ranks / ranks.sum())
    bounds = np.concatenate(([0], np.cumsum(words_per)))
    texts = [" ".join(vocab[ids[bounds[i] : bounds[i + 1]]]) for i in range(n_chunks)]
    # plant near duplicates: chunk j becomes chunk i with 1-3 words replaced
    n_near = int(n_chunks * NEAR_SHARE)
    pairs = []
    sources = rng.choice(n_chunks, size=2 * n_near, replace=False)
    for i, j in zip(sources[:n_near], sources[n_near:], strict=True):
        words = texts[i].split()
        for _ in range(int(rng.integers(1, 4))):
            words[int(rng.integers(0, len(words)))] = str(vocab[int(rng.integers(0, VOCAB))])
        texts[j] = " ".join(words)
        pairs.append((int(min(i, j)), int(max(i, j))))
    at = 0
    with path.open("w", encoding="utf-8") as f:
        for d, k in enumerate(lengths):
            doc = f"doc-{d:07d}"
            for idx in range(k):
                f.write(
                    json.dumps(
                        {
                            "id": f"{doc}:{idx}",
                            "doc_id": doc,
                            "index": idx,
                            "title": f"Document {d}",
                            "text": texts[at],
                        }
                    )
                    + "\n"
                )
                at += 1
    return {"docs": len(lengths), "doc_sizes": lengths, "chunks": n_chunks, "pairs": pairs, "texts": texts}


def _cli(*args: str) -> tuple[float, str]:
    """Run ``contextwright ARGS`` in a subprocess; (seconds, stdout)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from contextwright.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"contextwright {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return elapsed, done.stdout


def _queries(facts: dict[str, Any], n: int, seed: int) -> list[dict[str, list[tuple[int, int]]]]:
    """``n`` retrievals of 20 random chunks, as expansion ranges (index ±1)."""
    rng = random.Random(seed)
    sizes = []
    docs = facts["doc_sizes"]
    for _ in range(n):
        ranges: dict[str, list[tuple[int, int]]] = {}
        for _ in range(20):
            d = rng.randrange(len(docs))
            i = rng.randrange(docs[d])
            ranges.setdefault(f"doc-{d:07d}", []).append((i - 1, i + 1))
        sizes.append(ranges)
    return sizes


def _latency(
    store: Any, queries: list[dict[str, list[tuple[int, int]]]]
) -> tuple[float, float, float, float]:
    """Wall p50/p95 and CPU-time p50/p95 (ms) of one fetch.

    On a shared, oversubscribed machine the wall p95 measures the scheduler
    (the process waits for a core); the CPU time of this thread is what the
    fetch costs (all of it for SQLite, which runs in-process; only the client
    side for PostgreSQL).
    """
    for q in queries[:20]:  # warm the connection and the statement cache
        store.fetch(q)
    wall, cpu = [], []
    for q in queries:
        start, cstart = time.perf_counter(), time.thread_time()
        store.fetch(q)
        cpu.append((time.thread_time() - cstart) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    wall.sort()
    cpu.sort()
    p95 = int(0.95 * (len(wall) - 1))
    return statistics.median(wall), wall[p95], statistics.median(cpu), cpu[p95]


def bench_stores(corpus: Path, facts: dict[str, Any], work: Path, pg_dsn: str | None) -> list[dict[str, Any]]:
    from contextwright.stores import PostgresStore, SQLiteStore

    n = facts["chunks"]
    rows = []
    queries = _queries(facts, 1000, seed=n)
    db = work / f"scale_{n}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    secs, _ = _cli("index", str(corpus), "--store", f"sqlite:///{db}")
    size = sum(Path(str(db) + s).stat().st_size for s in ("", "-wal") if Path(str(db) + s).exists())
    with SQLiteStore(db) as store:
        assert store.count() == n, store.count()
        p50, p95, c50, c95 = _latency(store, queries)
    rows.append(
        {"store": "sqlite", "chunks": n, "load_s": secs, "size_mb": size / 1e6}
        | {"p50": p50, "p95": p95, "c50": c50, "c95": c95, "load": os.getloadavg()[0]}
    )
    if pg_dsn:
        table = f"scale_{n}"
        with PostgresStore(pg_dsn, table=table) as store:
            store.drop_table()
        secs, _ = _cli("index", str(corpus), "--store", pg_dsn, "--table", table)
        with PostgresStore(pg_dsn, table=table, timeout_s=10.0) as store:
            assert store.count() == n
            size = store._run(f"SELECT pg_total_relation_size('{table}')", what="size")[0][0]
            p50, p95, c50, c95 = _latency(store, queries)
            store.drop_table()
        rows.append(
            {
                "store": "postgresql",
                "chunks": n,
                "load_s": secs,
                "size_mb": size / 1e6,
                "p50": p50,
                "p95": p95,
                "c50": c50,
                "c95": c95,
                "load": os.getloadavg()[0],
            }
        )
    return rows


def bench_dedup(corpus: Path, facts: dict[str, Any], work: Path) -> dict[str, Any]:
    """``contextwright dedup-corpus`` in a subprocess: time, peak memory, recall of planted pairs, agreement."""
    out = work / f"pairs_{facts['chunks']}.jsonl"
    secs, text = _cli("dedup-corpus", str(corpus), "--out", str(out), "--threshold", "0.8", "--stats")
    stats = json.loads(text.strip().splitlines()[-1])
    found = set()
    with out.open(encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            a, b = int(p["a_pos"]), int(p["b_pos"])
            found.add((min(a, b), max(a, b)))
    # the planted pairs that are really >= 0.8 by the exact Jaccard are the ones that must be found
    from contextwright.stages.shingles import jaccard, shingles

    texts = facts["texts"]
    due = [p for p in facts["pairs"] if jaccard(shingles(texts[p[0]], 3), shingles(texts[p[1]], 3)) >= 0.8]
    recall = sum(p in found for p in due) / len(due) if due else 1.0
    # agreement on a sample of reported pairs: each one's exact Jaccard really is >= threshold
    rng = random.Random(7)
    sample = rng.sample(sorted(found), min(500, len(found)))
    agree = sum(jaccard(shingles(texts[a], 3), shingles(texts[b], 3)) >= 0.8 for a, b in sample)
    return {
        "chunks": facts["chunks"],
        "wall_s": secs,
        "dedup_s": stats["seconds"],
        "timings": stats["timings"],
        "cpu_s": stats["cpu_s"],
        "peak_mb": stats["peak_rss_mb"],
        "pairs": len(found),
        "candidates": stats["candidates"],
        "planted_due": len(due),
        "recall": recall,
        "precision_sample": agree / len(sample) if sample else 1.0,
        "sample": len(sample),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--work", default="/tmp/contextwright-bench-scale")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-dedup", action="store_true")
    parser.add_argument("--no-stores", action="store_true")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pg = (
        None
        if args.no_postgres
        else (os.environ.get("CONTEXTWRIGHT_BENCH_PG_DSN") or os.environ.get("CONTEXTWRIGHT_TEST_PG_DSN"))
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    store_rows: list[dict[str, Any]] = []
    dedup_rows: list[dict[str, Any]] = []
    for n in (int(s) for s in args.sizes.split(",")):
        corpus = work / f"corpus_{n}_{args.seed}.jsonl"
        start = time.perf_counter()
        facts = generate(n, corpus, seed=args.seed)
        print(
            f"generated {n:,} chunks in {facts['docs']:,} documents ({corpus.stat().st_size / 1e6:.0f} MB) "
            f"in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        if not args.no_stores:
            for r in bench_stores(corpus, facts, work, pg):
                store_rows.append(r)
                print(
                    f"  {r['store']:<10} load {r['load_s']:6.1f} s ({r['chunks'] / r['load_s']:>9,.0f} chunks/s) "
                    f"size {r['size_mb']:7.1f} MB  expansion p50 {r['p50']:.2f} ms p95 {r['p95']:.2f} ms "
                    f"(CPU p50 {r['c50']:.2f} ms p95 {r['c95']:.2f} ms; load {r['load']:.1f})",
                    flush=True,
                )
        if not args.no_dedup and n >= 100_000:
            d = bench_dedup(corpus, facts, work)
            dedup_rows.append(d)
            print(
                f"  dedup-corpus {d['dedup_s']:.1f} s (process {d['wall_s']:.1f} s, CPU {d['cpu_s']:.1f} s), "
                f"peak {d['peak_mb']:.0f} MB, "
                f"{d['candidates']:,} candidates, {d['pairs']:,} pairs, planted recall {d['recall']:.3f} ({d['planted_due']:,}), "
                f"exact-Jaccard agreement {d['precision_sample']:.3f} on {d['sample']}; "
                f"signatures {d['timings']['signatures']:.1f} s, LSH {d['timings']['lsh']:.1f} s, "
                f"verification {d['timings']['verify']:.1f} s",
                flush=True,
            )
    if store_rows:
        print(
            "\nstore         chunks   load s   chunks/s   size MB   p50 ms   p95 ms  CPU p50  CPU p95  "
            "p95 / p95@smallest  CPU p95 / @smallest"
        )
        for kind in ("sqlite", "postgresql"):
            rows = [r for r in store_rows if r["store"] == kind]
            for r in rows:
                print(
                    f"{kind:<10} {r['chunks']:>9,} {r['load_s']:>8.1f} {r['chunks'] / r['load_s']:>10,.0f} "
                    f"{r['size_mb']:>9.1f} {r['p50']:>8.2f} {r['p95']:>8.2f} {r['c50']:>8.2f} {r['c95']:>8.2f} "
                    f"{r['p95'] / rows[0]['p95']:>18.2f}× {r['c95'] / rows[0]['c95']:>19.2f}×"
                )
    if len(dedup_rows) > 1:
        a, b = dedup_rows[0], dedup_rows[-1]
        print(
            f"\ndedup-corpus: {b['chunks'] / a['chunks']:.0f}× the chunks took {b['dedup_s'] / a['dedup_s']:.1f}× "
            f"the time and {b['peak_mb'] / a['peak_mb']:.1f}× the peak memory"
        )
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    if os.environ.get("CONTEXTWRIGHT_BENCH_KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
