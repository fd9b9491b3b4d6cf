"""Invariant 5 pinned: every preset's output on 30 dev queries at two budgets, as digests.

``bench/bench_digest.py`` hashes ``ctx.to_dict()`` (timings removed) for every
preset and budget. Run on the first 30 dev questions at 300 and 1,000 tokens,
its lines are kept in tests/fixtures/digest_dev30.txt, so a refactor that
should move no byte is checked here rather than by a hand-run before/after
(issue 34). The bench runs in a fresh process under a hash seed this test picks
at random and names on failure: the output must not depend on it.

A change that *should* change the output (a new escaping rule, a better
compressor) updates the file with the command in :data:`REGENERATE` and says in
its commit which presets and budgets moved and why.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from .conftest import CORPUS, DEV_QUERIES, REPO

PINNED = REPO / "tests" / "fixtures" / "digest_dev30.txt"
REGENERATE = (
    "python bench/bench_digest.py --limit 30 --budgets 300,1000 --write tests/fixtures/digest_dev30.txt"
)


@pytest.mark.skipif(
    not (DEV_QUERIES.exists() and CORPUS.exists()), reason=f"needs the shared data at {DEV_QUERIES.parent}"
)
def test_every_preset_gives_the_pinned_bytes_on_30_dev_queries() -> None:
    seed = random.randrange(1, 4_294_967_295)
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "bench_digest.py"),
            *("--data", str(DEV_QUERIES), "--corpus", str(CORPUS)),
            *("--limit", "30", "--budgets", "300,1000"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    got = out.stdout.splitlines()
    got[-1] = got[-1].rsplit(" (", 1)[0]  # the overall line's run time
    pinned = PINNED.read_text(encoding="utf-8").splitlines()
    moved = [f"  pinned {p}\n  now    {g}" for p, g in zip(pinned, got, strict=False) if p != g]
    assert got == pinned, (
        f"assembly output changed (PYTHONHASHSEED={seed}) on {len(moved)} line(s):\n"
        + "\n".join(moved)
        + "\nIf the change is intended, regenerate the pinned digests with\n  "
        + REGENERATE
        + "\nand explain in the commit which presets/budgets moved and why. If it is not intended, "
        "find the change (a refactor must keep every byte; a different hash seed must not matter)."
    )
