"""Batch throughput: local processes vs Ray Data, 1 and 2 workers, one run.

The 300 dev queries of ``../shared/data/nq_bm25_dev300.jsonl.gz`` are repeated
``--repeat`` times (ids made unique) and assembled with ``run_batch`` (preset
``qa``, budget 1,000) by each engine and worker count. Prints queries/s with
the start-up (worker processes or Ray actors) included, and the overhead of
Ray against local processes at equal workers. Ray's own start (``ray.init``)
is timed separately; it is paid once per job. Ray runs twice at 2 workers:
one ordered file written by the driver, and part files written by Ray's write
tasks (a directory OUT). Every run's output (the part files concatenated in
name order) is checked to be byte-identical to the first.

Usage:
    python bench/bench_batch.py [--repeat 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
import time
from pathlib import Path

from contextwright.batch import run_batch

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "nq_bm25_dev300.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    work = Path(tempfile.mkdtemp(prefix="cw-bench-batch-"))
    lines = gzip.decompress(DATA.read_bytes()).decode().splitlines()
    src = work / "queries.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for r in range(args.repeat):
            for line in lines:
                q = json.loads(line)
                q["id"] = f"{q['id']}-{r}"
                f.write(json.dumps(q) + "\n")
    n = len(lines) * args.repeat
    print(f"{n:,} queries (preset qa, budget {args.budget}); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip
    results: dict[tuple[str, int], float] = {}
    reference: bytes | None = None
    runs = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2), ("ray-parts", 2))
    for engine, workers in runs:
        if engine.startswith("ray") and not any(k[0] == "ray" for k in results):
            import ray

            start = time.perf_counter()
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
            print(f"ray.init: {time.perf_counter() - start:.1f} s (once per job, not counted below)")
        if engine == "ray-parts":  # part files written by Ray's write tasks, not by this process
            parts = work / "parts"
            stats = run_batch(src, f"{parts}/", engine="ray", workers=workers, budget=args.budget)
            data = b"".join(p.read_bytes() for p in sorted(parts.glob("*.jsonl")))
        else:
            out = work / f"out_{engine}_{workers}.jsonl"
            stats = run_batch(src, out, engine=engine, workers=workers, budget=args.budget)  # type: ignore[arg-type]
            data = out.read_bytes()
        results[(engine, workers)] = stats.seconds
        reference = reference or data
        same = "identical" if data == reference else "DIFFERENT"
        print(
            f"{engine:<9} × {workers}: {stats.seconds:6.1f} s  {n / stats.seconds:7.1f} queries/s  "
            f"({stats.rows:,} rows, {stats.errors} errors, output {same})",
            flush=True,
        )
    for w in (1, 2):
        local, on_ray = results[("local", w)], results[("ray", w)]
        print(f"ray vs local at {w} worker(s): {on_ray / local:.2f}× the time ({on_ray - local:+.1f} s)")
    parts_vs = results[("ray-parts", 2)] / results[("ray", 2)]
    print(f"ray part files vs one file through the driver at 2 workers: {parts_vs:.2f}× the time")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
