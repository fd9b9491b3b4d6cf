"""``contextwright fit`` from the command line: refusals before any work, and a real model end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(
    os.environ.get(
        "CONTEXTWRIGHT_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)
DEV = SHARED / "nq_bm25_dev300.jsonl.gz"


def _fit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwright.cli", "fit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "100"},
    )


@pytest.fixture
def dev() -> Path:
    if not DEV.exists():
        pytest.skip(f"shared data not found at {DEV}")
    return DEV


def _unreachable(dev: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``fit`` against a reader nobody serves: what it refuses before asking anything."""
    reader = ["--reader", "http://127.0.0.1:9/v1", "--reader-model", "m"]
    return _fit(str(dev), *reader, "--reader-cache", str(tmp_path / "c.sqlite"), *args)


def test_fit_refuses_too_few_queries_and_says_how_many(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--limit", "30", "--out", str(tmp_path / "p.toml"))
    assert out.returncode == 2
    assert "at least 50 labelled queries to fit on and 50 to confirm on" in out.stderr
    assert "Give about 100 or more" in out.stderr
    assert not (tmp_path / "p.toml").exists()


def test_fit_checks_its_output_paths_before_any_work(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--html", str(tmp_path / "no" / "such" / "fit.html"))
    assert out.returncode == 2
    assert "cannot write --html" in out.stderr and "does not exist" in out.stderr


def test_fit_names_a_bad_knob(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--knob", "amount=all")
    assert out.returncode == 2 and "amount 'all' is not a setting" in out.stderr and "cap:N" in out.stderr


def test_fit_refuses_a_retention_guard_out_of_range_and_says_it_is_in_points(
    dev: Path, tmp_path: Path
) -> None:
    for value in ("-1", "150"):
        out = _unreachable(dev, tmp_path, "--max-retention-loss", value, "--out", str(tmp_path / "p.toml"))
        assert out.returncode == 2 and "--max-retention-loss is in points" in out.stderr
        assert "Use e.g. 1.5" in out.stderr and value.lstrip("-") in out.stderr
    assert not (tmp_path / "p.toml").exists()


def test_fit_refuses_guard_data_without_a_guard(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--guard-data", str(dev), "--out", str(tmp_path / "p.toml"))
    assert out.returncode == 2 and f"--guard-data {dev} gives queries to the retention guard" in out.stderr
    assert "--max-retention-loss too" in out.stderr and not (tmp_path / "p.toml").exists()


def test_fit_refuses_a_split_that_is_none_and_names_the_two(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--split", "random", "--out", str(tmp_path / "p.toml"))
    assert out.returncode == 2 and "split must be one of stratified, hash; got 'random'" in out.stderr
    assert not (tmp_path / "p.toml").exists()


def test_fit_refuses_an_unknown_fail_rule_and_two_rules_before_any_work(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--fail-if", "lower", "--out", str(tmp_path / "p.toml"))
    assert out.returncode == 2
    assert "--fail-if must be one of under-naive, worse, not-better; got 'lower'" in out.stderr
    both = _unreachable(
        dev, tmp_path, "--fail-if", "worse", "--fail-under-naive", "--out", str(tmp_path / "p.toml")
    )
    assert both.returncode == 2 and "--fail-if worse names another rule: give one of them" in both.stderr
    assert not (tmp_path / "p.toml").exists()


def test_fit_measures_the_guard_on_guard_data_and_says_on_how_many(
    llama_server: Any, dev: Path, tmp_path: Path
) -> None:
    """The fit reads 12 queries; the guard measures their fit part and the other 288 dev queries
    (those 12 are held out or already there), so the reader sees the confirmation only."""
    from contextwright.eval import load_queries

    profile = tmp_path / "guarded.toml"
    args = [str(dev), "--limit", "12", "--min-queries", "4", "--budget", "150"]
    args += ["--knob", "amount=cap:40,fill", "--knob", "order=ends", "--knob", "dedup=containment"]
    args += ["--knob", "framing=lean", "--knob", "prompt=default", "--max-retention-loss", "1.5"]
    args += [
        "--guard-data",
        str(dev),
        "--reader",
        llama_server.base_url,
        "--reader-model",
        llama_server.model,
    ]
    args += ["--reader-max-tokens", "12", "--reader-cache", str(tmp_path / "c.sqlite"), "--out", str(profile)]
    out = _fit(*args, timeout=600)
    assert out.returncode == 0, out.stderr
    every = load_queries(dev)
    data = tomllib.loads(profile.read_text())["fit"]
    n_fit, n_confirm = data["fit_queries"], data["confirm_queries"]
    assert n_fit + n_confirm == sum(1 for q in every[:12] if q.answers) and abs(n_fit - n_confirm) <= 1
    unlabelled = sum(1 for q in every if not q.answers)
    measured = n_fit + len(every) - 12 - sum(1 for q in every[12:] if not q.answers)
    assert data["guard_queries"] == measured
    assert data["guard_left_out"] == {
        "held_out": n_confirm,
        "repeated": n_fit,
        "unlabelled": unlabelled,
    }
    assert f"within 1.5 points of naive's answer retention on {measured:,} queries." in out.stdout
    assert data["setting"]["amount"] == "fill" and data["requests"] == 2 * n_confirm
    assert "guarded: answer retention" in out.stdout
    # a log (not a terminal) gets the guard's progress as lines, counted in queries, not replies
    assert f"guard amount: {2 * measured}/{2 * measured} queries assembled (no reader)" in out.stderr
    # and how to try the profile on one question: the command, with this fit's reader and profile
    assert (
        f"contextwright ask CHUNKS.json -q '...' --preset {profile} --reader {llama_server.base_url} "
        f"--reader-model {llama_server.model}"
    ) in out.stderr


def test_fit_fail_under_naive_exits_3_where_the_profile_reads_under_naive(
    llama_server: Any, dev: Path, tmp_path: Path
) -> None:
    """A profile that sends almost nothing (a 5-token cap) against naive on 12 held-out queries: here
    SmolLM2 reads it 8.3 points under naive at 150 tokens, so ``--fail-under-naive`` exits 3 after
    writing the profile; the exit code follows the confirmation whatever a machine's replies give."""
    profile = tmp_path / "starved.toml"
    args = [str(dev), "--limit", "24", "--min-queries", "4", "--step", "4", "--budget", "150"]
    args += ["--knob", "amount=cap:5", "--knob", "order=ends", "--knob", "dedup=containment"]
    args += ["--knob", "framing=lean", "--knob", "prompt=default", "--reader", llama_server.base_url]
    args += ["--reader-model", llama_server.model, "--reader-max-tokens", "12", "--reader-concurrency", "1"]
    args += ["--reader-cache", str(tmp_path / "c.sqlite"), "--out", str(profile), "--fail-under-naive"]
    out = _fit(*args, timeout=600)
    data = tomllib.loads(profile.read_text())  # written before the exit code is decided
    under = [c["budget"] for c in data["fit"]["confirm"] if c["delta"] < 0]
    assert out.returncode == (3 if under else 0), out.stderr
    if under:
        assert (
            "reads under naive at 150 tokens on the held-out queries (--fail-under-naive): exit 3"
            in out.stderr
        )
        assert data["fit"]["cautions"][0].startswith("The profile reads under naive at every budget")


def test_fit_refuses_expand_without_a_corpus_and_names_the_flag(dev: Path, tmp_path: Path) -> None:
    out = _unreachable(dev, tmp_path, "--knob", "expand=off,on")
    assert out.returncode == 2 and "expand=on" in out.stderr and "--corpus FILE" in out.stderr
    missing = _unreachable(dev, tmp_path, "--corpus", str(tmp_path / "x.jsonl"))
    assert missing.returncode == 2 and "x.jsonl" in missing.stderr


def test_fit_end_to_end_with_a_real_model(llama_server: Any, dev: Path, tmp_path: Path) -> None:
    profile = tmp_path / "smollm2.toml"
    out = _fit(
        str(dev),
        "--limit",
        "12",
        "--min-queries",
        "4",
        "--step",
        "4",
        "--budget",
        "150",
        "--knob",
        "amount=cap:100,fill",
        "--knob",
        "order=ends",
        "--knob",
        "dedup=containment",
        "--knob",
        "framing=lean",
        "--reader",
        llama_server.base_url,
        "--reader-model",
        llama_server.model,
        "--reader-max-tokens",
        "12",
        "--reader-cache",
        str(tmp_path / "c.sqlite"),
        "--reader-cache-label",
        "llama.cpp:smollm2-test",
        "--out",
        str(profile),
        "--html",
        str(tmp_path / "fit.html"),
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "Verdict: on " + llama_server.model in out.stdout and "confirmed on" in out.stdout
    assert "cap:100" in out.stdout and "fill" in out.stdout
    data = tomllib.loads(profile.read_text())
    assert data["fit"]["model"] == llama_server.model and data["fit"]["budgets"] == [150]
    # the split, stratified by default: each stratum's fit / confirm counts, said and kept
    strata = data["fit"]["strata"]
    assert data["fit"]["split"] == "stratified" and all(abs(f - c) <= 1 for f, c in strata.values())
    said_split = next(line for line in out.stderr.splitlines() if line.startswith("split (fit / confirm"))
    assert all(f"{f} / {c}" in said_split for f, c in strata.values())
    # no --knob prompt: the shipped prompt races light (the one without bare "[1]" replies), and the
    # profile holds the winner (a name only when it is not the default)
    assert " lean light" in out.stdout
    chosen = data["fit"]["setting"]["prompt"]
    assert chosen in ("default", "light") and data.get("prompt", "default") == chosen
    assert (tmp_path / "fit.html").read_text().count("<svg") == 1
    # what the confirmation does not support is said under the verdict and kept in the profile
    said = [
        line.removeprefix("Caution: ") for line in out.stdout.splitlines() if line.startswith("Caution: ")
    ]
    assert said == data["fit"].get("cautions", [])
    # the same fit again from the reply cache alone: nothing served, the same profile (a GPU lease's
    # replies are re-derived on a CPU this way, under the engine's label)
    again = tmp_path / "again.toml"
    offline = [str(dev), "--limit", "12", "--min-queries", "4", "--step", "4", "--budget", "150"]
    offline += ["--knob", "amount=cap:100,fill", "--knob", "order=ends", "--knob", "dedup=containment"]
    offline += ["--knob", "framing=lean", "--reader", "http://127.0.0.1:9/v1", "--reader-offline"]
    offline += ["--reader-cache-label", "llama.cpp:smollm2-test", "--reader-model", llama_server.model]
    offline += [
        "--reader-max-tokens",
        "12",
        "--reader-cache",
        str(tmp_path / "c.sqlite"),
        "--out",
        str(again),
    ]
    rerun = _fit(*offline)
    assert rerun.returncode == 0, rerun.stderr
    redone = tomllib.loads(again.read_text())
    assert (
        redone["fit"]["setting"] == data["fit"]["setting"]
        and redone["fit"]["confirm"] == data["fit"]["confirm"]
    )
    assert redone["fit"]["failed"] == 0
    # the first run sent what it asked for the first time; the re-run sent nothing, and says so
    assert 0 < data["fit"]["sent"] <= data["fit"]["requests"] and redone["fit"]["sent"] == 0
    assert (
        f"asked {data['fit']['requests']} requests: {data['fit']['sent']} answered by the reader now"
        in out.stderr
    )
    assert f"asked {redone['fit']['requests']} requests: 0 answered by the reader now" in rerun.stderr
    # --fail-under-naive: exit 3 exactly when a confirmed budget reads under naive, every file written
    strict_out = tmp_path / "strict.toml"
    strict = _fit(*offline[:-1], str(strict_out), "--fail-under-naive")
    under = [c["budget"] for c in data["fit"]["confirm"] if c["delta"] < 0]
    assert strict.returncode == (3 if under else 0), strict.stderr
    assert strict_out.exists() and ("(--fail-under-naive): exit 3" in strict.stderr) == bool(under)
    # --fail-if: the same exit on the interval's ends, every file written whatever the rule decides
    confirm = data["fit"]["confirm"]
    for rule, failing in (
        ("under-naive", [c["budget"] for c in confirm if c["delta"] < 0]),
        ("worse", [c["budget"] for c in confirm if c["delta_high"] < 0]),
        ("not-better", [c["budget"] for c in confirm if c["delta_low"] <= 0]),
    ):
        ruled_out = tmp_path / f"{rule}.toml"
        ruled = _fit(*offline[:-1], str(ruled_out), "--fail-if", rule)
        assert ruled.returncode == (3 if failing else 0), (rule, ruled.stderr)
        assert ruled_out.exists() and (f"(--fail-if {rule}): exit 3" in ruled.stderr) == bool(failing)
        if failing:
            assert f"at {', '.join(f'{b:,}' for b in failing)} tokens on the held-out queries" in ruled.stderr
    # under a label the cache does not hold, every request fails: refused, no profile written
    offline[offline.index("llama.cpp:smollm2-test")] = "llama.cpp:other"
    offline[-1] = str(tmp_path / "none.toml")
    refused = _fit(*offline)
    assert refused.returncode != 0 and not (tmp_path / "none.toml").exists()
    assert "no profile was written" in refused.stderr and "llama.cpp:other" in refused.stderr
    used = subprocess.run(
        [
            sys.executable,
            "-m",
            "contextwright.cli",
            "assemble",
            str(dev),
            "--limit",
            "1",
            "--budget",
            "250",
            "--preset",
            str(profile),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert used.returncode == 0, used.stderr
    assert used.stdout.startswith("# nq-")
