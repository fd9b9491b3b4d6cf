"""Memory soak: hundreds of assemblies of distinct ~100 KB chunks, and what the process keeps.

Every request carries ``--chunks`` (19) chunks of ``--chars`` (100,000) characters that no
other request carries (random lower-case "words", sentences ended with periods), the shape of
the attack in issue 31 (360 requests of 19 distinct 99k-character chunks grew a worker by
+4.9 MB a request, without a plateau). The library is driven directly (the service runs the
same assemblers: one per configuration, all of whose text caches are the process-wide ones
measured here).

Printed: the resident set size (``VmRSS``) after a warm-up, every ``--every`` requests and at
the end; the growth over the warm-up; the bytes the registered caches hold against their caps
(:func:`contextwright.core.caches.stats`), largest first. The documented ceiling
(docs/production.md, "Memory"): growth <= +300 MB for 300 requests in the ``qa`` preset.

Run: python bench/bench_memory.py [--requests 300] [--chunks 19] [--chars 100000]
                                  [--preset qa] [--budget 1000] [--tokenizer cl100k_base]
"""

from __future__ import annotations

import argparse
import base64
import gc
import random
import resource
import time
from typing import Any

import contextwright
from contextwright.core import caches

CEILING_MB = 300.0


def rss_mb() -> float:
    """The resident set size now (Linux ``/proc``), or the peak where there is no ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def distinct_text(rng: random.Random, chars: int) -> str:
    """``chars`` characters of random lower-case words (2-7 as spaces, some '.'), unlike any other."""
    raw = base64.b32encode(rng.randbytes(chars * 5 // 8 + 8)).decode("ascii").lower()
    text = raw.translate(str.maketrans("234567", "     .")).replace(".", ". ")
    return text[:chars]


def request(rng: random.Random, n: int, chars: int, r: int) -> list[dict[str, Any]]:
    return [
        {"id": f"r{r}-c{i}", "text": distinct_text(rng, chars), "score": 1.0 - i / (n + 1), "source": f"s{i}"}
        for i in range(n)
    ]


def soak(args: argparse.Namespace, *, report: bool = True) -> dict[str, float]:
    """Run the soak; return RSS growth (MB), the caches' bytes and their cap."""
    rng = random.Random(args.seed)
    assembler = contextwright.Assembler(args.preset, budget=args.budget, tokenizer=args.tokenizer)
    for r in range(min(5, args.requests)):  # warm-up: imports, tokenizer tables, the allocator's arenas
        assembler.assemble("what does the text say", request(rng, args.chunks, args.chars, -1 - r))
    gc.collect()
    start, t0 = rss_mb(), time.perf_counter()
    peak = start
    if report:
        print(f"after warm-up: RSS {start:.0f} MB")
    for r in range(args.requests):
        assembler.assemble("what does the text say", request(rng, args.chunks, args.chars, r))
        if (r + 1) % args.every == 0 or r + 1 == args.requests:
            now = rss_mb()
            peak = max(peak, now)
            if report:
                print(
                    f"{r + 1:>5} requests  RSS {now:>7.0f} MB  ({now - start:+.0f} MB)  "
                    f"caches {caches.total_bytes() / 2**20:>6.1f} MiB  {time.perf_counter() - t0:>6.1f} s"
                )
    gc.collect()
    end = rss_mb()
    return {
        "growth_mb": end - start,
        "peak_growth_mb": peak - start,
        "cache_bytes": caches.total_bytes(),
        "cache_max_bytes": caches.total_max_bytes(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--chunks", type=int, default=19)
    ap.add_argument("--chars", type=int, default=100_000)
    ap.add_argument("--preset", default="qa")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    print(
        f"{args.requests} requests x {args.chunks} distinct chunks of {args.chars:,} characters "
        f"· preset {args.preset} · budget {args.budget} · {args.tokenizer}"
    )
    out = soak(args)
    print(
        f"RSS growth {out['growth_mb']:+.0f} MB (peak {out['peak_growth_mb']:+.0f} MB; ceiling +{CEILING_MB:.0f} MB) · "
        f"caches hold {out['cache_bytes'] / 2**20:.1f} MiB of at most {out['cache_max_bytes'] / 2**20:.1f} MiB"
    )
    for s in sorted(caches.stats(), key=lambda s: -s.bytes):
        print(
            f"  {s.name:<60} {s.entries:>6} entries {s.bytes / 2**20:>7.2f} / {s.max_bytes / 2**20:>6.1f} MiB"
        )
    print("ok" if out["growth_mb"] <= CEILING_MB else "OVER THE CEILING")


if __name__ == "__main__":
    main()
