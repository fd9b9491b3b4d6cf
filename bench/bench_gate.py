"""How often the ``worse`` gate fails a change that reads exactly as naive: per comparison at 95 %,
and Bonferroni over the comparisons (:func:`contextwright.eval.gate.family_confidence`), the rule
``eval --fail-if worse`` and ``fit --fail-if worse`` apply since stop 59.

Each simulated run judges ``k`` comparisons (strategies × budgets) of ``--queries`` paired questions
on which the change and naive disagree on ``--discordant`` of them, as often either way (a true
difference of zero). A comparison fails when the upper end of its percentile bootstrap interval
(``--iterations`` resamples of the pairs, the rule of
:func:`contextwright.eval.metrics.paired_bootstrap_delta`) is below zero; the run fails when any does.
numpy stands in for the library's pure-Python bootstrap so a thousand runs take seconds.

    python bench/bench_gate.py [--runs 1000] [--queries 150] [--discordant 0.10] [--comparisons 1,2,6,18]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contextwright.eval.gate import family_confidence


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--discordant", type=float, default=0.10)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--comparisons", default="1,2,6,18")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        import numpy as np
    except ImportError:
        raise SystemExit("bench_gate needs numpy: pip install numpy") from None
    rng = np.random.default_rng(args.seed)
    n, b = args.queries, args.iterations
    print(
        f"{args.runs} runs reading as naive; {n} paired questions, {100 * args.discordant:.0f} % discordant "
        f"(half each way); {b} bootstrap resamples"
    )
    print(f"{'comparisons':>11}  {'fails at 95 % each':>18}  {'fails, Bonferroni':>17}  level")
    for k in (int(x) for x in args.comparisons.split(",")):
        level = family_confidence(k)
        plain = corrected = 0
        for _ in range(args.runs):
            u = rng.random((k, n))
            d = np.where(u < args.discordant / 2, -1.0, np.where(u < args.discordant, 1.0, 0.0))
            idx = rng.integers(0, n, size=(k, b, n))
            means = np.sort(np.take_along_axis(d[:, None, :].repeat(b, 1), idx, 2).mean(axis=2), axis=1)
            plain += bool((means[:, min(b - 1, int(0.975 * b))] < 0).any())
            corrected += bool((means[:, min(b - 1, int((1 + level) / 2 * b))] < 0).any())
        print(
            f"{k:>11}  {100 * plain / args.runs:>17.1f}%  {100 * corrected / args.runs:>16.1f}%  "
            f"{100 * level:.2f} %"
        )
    print("target: at most ~2.5 % at any number of comparisons (one-sided 95 %)")


if __name__ == "__main__":
    main()
