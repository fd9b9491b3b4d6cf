"""``evaluate(..., workers=2)`` where workers cannot be spawned: one warning, in-process results, no endless restarts.

Each case runs a real Python process, as the user would, bounded in time: before the fix,
``python - <<EOF`` printed 10,369 tracebacks and never finished (issue 34).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "chunks.json"

BODY = """
from contextwright import eval as cweval
queries = cweval.load_queries({data!r})
result = cweval.evaluate(queries, ["naive", "qa"], [100, 300], workers=2)
print("retention", result.summary("qa", 300, "all").answer_retention)
"""


@pytest.fixture
def data(tmp_path: Path) -> str:
    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    rows = [
        {
            "id": f"q-{i}",
            "question": "who discovered x-rays?",
            "answers": ["Röntgen"],
            "chunks": [{**c, "has_answer": "Röntgen" in c["text"]} for c in chunks],
        }
        for i in range(4)
    ]
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _python(args: list[str], *, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_code_from_stdin_runs_in_process_with_one_warning(data: str, tmp_path: Path) -> None:
    done = _python(["-"], stdin=BODY.format(data=data), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "retention" in done.stdout
    assert done.stderr.count("workers=2: the main program was read from <stdin>") == 1, done.stderr[-2000:]
    assert "evaluating in this process instead (same results)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_script_without_a_main_guard_runs_in_process_with_one_warning(data: str, tmp_path: Path) -> None:
    script = tmp_path / "noguard.py"
    script.write_text(BODY.format(data=data), encoding="utf-8")
    done = _python([str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count('noguard.py has no `if __name__ == "__main__":` guard') == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_a_guarded_script_uses_its_workers_and_gets_the_same_result(data: str, tmp_path: Path) -> None:
    guarded = tmp_path / "guarded.py"
    body = "\n".join("    " + line for line in BODY.format(data=data).strip().splitlines())
    guarded.write_text(f'if __name__ == "__main__":\n{body}\n', encoding="utf-8")
    done = _python([str(guarded)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "workers=2" not in done.stderr  # no warning: it spawned its workers
    unguarded = tmp_path / "noguard.py"
    unguarded.write_text(BODY.format(data=data), encoding="utf-8")
    assert _python([str(unguarded)], cwd=tmp_path).stdout == done.stdout


def test_spawn_blocker_is_none_in_this_test_process() -> None:
    from contextwright.core.spawn import spawn_blocker

    assert spawn_blocker() is None  # pytest's entry point is guarded (or a -m __main__)


def test_batch_workers_in_an_unguarded_script_run_in_process_with_one_warning(tmp_path: Path) -> None:
    script = tmp_path / "batch_noguard.py"
    script.write_text(
        "import json\n"
        "from contextwright.batch import assemble_many\n"
        f"chunks = json.loads(open({str(EXAMPLE)!r}, encoding='utf-8').read())\n"
        "rows = [{'id': f'q{i}', 'question': 'who?', 'chunks': chunks} for i in range(4)]\n"
        "print(len(list(assemble_many(rows, budget=300, workers=2))))\n",
        encoding="utf-8",
    )
    done = _python([str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "4"
    assert done.stderr.count("workers=2: batch_noguard.py has no") == 1, done.stderr[-2000:]
    assert "assembling in this process instead (same rows)" in done.stderr
