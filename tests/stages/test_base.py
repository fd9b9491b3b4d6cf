"""The stage registry under concurrency (the service assembles in a thread pool)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RACE = textwrap.dedent(
    """
    import threading
    from contextwright.stages.base import get_stage_class

    names = ["exact_dedup", "token_budget", "auto_order", "score_order", "min_score", "top_k"]
    barrier = threading.Barrier(16)
    failures = []

    def look_up():
        barrier.wait()
        for name in names:
            try:
                get_stage_class(name)
            except Exception as exc:
                failures.append(repr(exc))

    threads = [threading.Thread(target=look_up) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(failures), failures[:1])
    """
)


def test_threads_that_look_up_stages_during_the_first_import_all_find_them() -> None:
    # A fresh interpreter each time: the race is only on the first load of the built-ins.
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("0 "), run.stdout
