"""``fit --reask-bare``: the race and the confirmation score the reply an application following
:func:`contextwright.ask` would show, the second one after a bare citation.

The reader is the scripted chat server of ``test_reader`` (a real HTTP server whose replies are
known): it points at a block (``[1]``) under every prompt but ``light``, and under ``light`` gives
the answer and its block. So framings with ``[n]`` labels read 0 % on first replies and read every
answer their context holds once re-asked, and a race that re-asks must choose them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")

from contextwright import Assembler
from contextwright.eval import load_queries
from contextwright.eval.fit import fit_profile
from contextwright.eval.fit_report import write_profile
from contextwright.eval.metrics import answer_in_text
from contextwright.eval.reader import Reader, evaluate_reader
from contextwright.render.messages import PROMPTS

from .test_reader import ChatServer, Script, _queries, reply

LIGHT = PROMPTS["light"]
DEV = (
    Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    / "nq_bm25_dev300.jsonl.gz"
)
# Lean ([n] labels) against minimal (none), every other knob fixed: 16 queries, one budget.
SPACE = {
    "amount": ("cap:120",),
    "order": ("ends",),
    "dedup": ("containment",),
    "framing": ("minimal", "lean"),
}


@pytest.fixture(scope="module")
def dev16() -> list[Any]:
    if not DEV.exists():
        pytest.skip(f"shared data not found at {DEV}")
    return load_queries(DEV, limit=16)


def pointer(queries: list[Any]) -> Script:
    """The scripted reader: ``[1]`` when an answer of the question is in the context, and under
    ``light`` that answer before its ``[1]``; "I do not know." when no answer is there."""
    answers = {q.question: q.answers for q in queries}

    def script(body: dict[str, Any]) -> tuple[int, Any]:
        context, _, question = body["messages"][-1]["content"].rpartition("Question:")
        found = [a for a in answers.get(question.strip(), []) if answer_in_text(context, [a])]
        if not found:
            return reply("I do not know.")
        return reply(f"{found[0]} [1]" if body["messages"][0]["content"].startswith(LIGHT) else "[1]")

    return script


def _fit(server: ChatServer, queries: list[Any], cache: Path, reask: str | None) -> Any:
    with Reader(server.base_url, model="m", cache=cache, max_tokens=12) as reader:
        return fit_profile(
            queries, reader=reader, budgets=(250,), space=SPACE, step=4, min_per_part=4, reask_bare=reask
        )


def test_a_fit_that_reasks_judges_labelled_framing_on_the_second_reply(
    serve: Callable[[Script], ChatServer], dev16: list[Any], tmp_path: Path
) -> None:
    server = serve(pointer(dev16))
    cache = tmp_path / "c.sqlite"
    first = _fit(server, dev16, cache, None)
    sent_first = len(server.asked())
    (c0,) = first.confirmations
    # first replies: lean's "[1]" answers nothing and minimal's names no label; neither is re-asked
    assert c0.accuracy == 0.0 and c0.reask_share == 0.0 and c0.bare_share > 0
    assert first.meta["reask_bare"] is None and "reask_bare" not in first.profile()["fit"]
    assert "reask" not in first.profile()  # ask keeps its own default (light) for such a profile
    assert any("--reask-bare light" in s for s in first.cautions)

    again = _fit(server, dev16, cache, "light")
    (c,) = again.confirmations
    assert again.setting["framing"] == "lean"  # the labelled framing wins once its bare replies are re-asked
    race = {t.setting["framing"]: t.accuracy for t in again.trials}
    assert race["lean"] > 0.0 == race["minimal"]
    # every held-out context that holds an answer was answered; naive's plain text is never re-asked
    assert c.accuracy == pytest.approx(c.retention) and c.accuracy > 0.0 == c.naive_accuracy
    assert 0.0 < c.reask_share == pytest.approx(c.retention) and c.bare_share == 0.0
    assert c.delta > 0.0
    # what the cache did not hold was sent: the re-asks, and the first replies of the lean profile
    # on the held-out queries (the first fit confirmed minimal, the tie's first value)
    assert first.setting["framing"] == "minimal"
    assert again.meta["sent"] == len(server.asked()) - sent_first == again.meta["reasked"] + c.queries
    assert again.meta["reasked"] > c.queries * c.reask_share > 0
    assert "a bare citation asked again under light" in again.verdict
    assert not any("bare citation" in s for s in again.cautions)
    profile = tomllib.loads(write_profile(again, tmp_path / "p.toml").read_text())
    assert profile["fit"]["reask_bare"] == "light" and profile["fit"]["reasked"] == again.meta["reasked"]
    assert profile["fit"]["confirm"][0]["reask_share"] == pytest.approx(c.reask_share)
    assert profile["format"] == "lean"
    # the profile keeps the re-ask prompt its replies were scored with, and ask sends it
    assert profile["reask"] == "light"
    written = Assembler(str(tmp_path / "p.toml"), budget=250)
    assert written.pipeline.reask == "light"
    assert written.assemble(dev16[0].question, dev16[0].chunks).reask == "light"


def test_a_reask_under_the_first_requests_own_prompt_is_not_sent(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    """``default`` then ``default`` again is the same request: not sent, not counted, the first reply
    kept (as contextwright.ask does not send it)."""
    server = serve(lambda body: reply("[1]"))
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite") as reader:
        res = evaluate_reader(
            _queries(), ["qa"], [200], reader=reader, closed_book=False, oracle=False, reask_bare="default"
        )
    assert len(server.asked()) == 3 and res.meta["reasked"] == 0
    assert all(a.bare and not a.reasked for a in res.answers)


def test_fit_reask_bare_from_the_command_line(
    serve: Callable[[Script], ChatServer], dev16: list[Any], tmp_path: Path
) -> None:
    server = serve(pointer(dev16))
    profile = tmp_path / "p.toml"
    knobs = [x for k, vs in SPACE.items() for x in ("--knob", f"{k}={','.join(vs)}")]
    args = [str(DEV), "--limit", "16", "--min-queries", "4", "--step", "4", "--budget", "250", *knobs]
    args += ["--reader", server.base_url, "--reader-model", "m", "--reader-cache", str(tmp_path / "c.sqlite")]
    run = [sys.executable, "-m", "contextwright.cli", "fit", *args, "--out", str(profile)]
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run(
        [*run, "--reask-bare", "light"], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 0, out.stderr
    fitted = tomllib.loads(profile.read_text())["fit"]
    assert (
        fitted["reask_bare"] == "light" and fitted["reasked"] > 0 and fitted["setting"]["framing"] == "lean"
    )
    assert "asked again under light" in out.stdout
    bad = subprocess.run([*run, "--reask-bare", "lite"], capture_output=True, text=True, timeout=120, env=env)
    assert (
        bad.returncode == 2 and "--reask-bare must be a prompt name" in bad.stderr and "light" in bad.stderr
    )


def test_each_confirmed_budget_carries_the_interval_its_worse_gate_reads(
    serve: Callable[[Script], ChatServer], dev16: list[Any], tmp_path: Path
) -> None:
    """Two budgets: each confirmation also holds its paired interval simultaneous over the two
    (max-T), never narrower than its 95 % one, and the profile keeps it."""
    server = serve(pointer(dev16))
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite", max_tokens=12) as reader:
        result = fit_profile(
            dev16, reader=reader, budgets=(250, 400), space=SPACE, step=4, min_per_part=4, reask_bare="light"
        )
    for c in result.confirmations:
        assert c.family_low is not None and c.family_high is not None
        assert c.family_low <= c.delta_low <= c.delta <= c.delta_high <= c.family_high
    rows = tomllib.loads(write_profile(result, tmp_path / "p.toml").read_text())["fit"]["confirm"]
    assert [r["family_low"] for r in rows] == [c.family_low for c in result.confirmations]


def test_the_verdict_says_when_no_held_out_reply_needed_asking_again() -> None:
    """A ``minimal`` profile draws no bare citation to re-ask: the verdict says none was, not "up to 0.0 %"."""
    from contextwright.eval.fit import Confirmation, FitResult
    from contextwright.eval.fit_space import START, candidate_config

    def confirmed(share: float) -> Confirmation:
        return Confirmation(
            budget=500, queries=100, accuracy=0.36, naive_accuracy=0.30, delta=0.06, delta_low=-0.01,
            delta_high=0.14, p_value=0.1, tokens_mean=200.0, naive_tokens_mean=560.0, retention=0.8,
            naive_retention=0.94, bare_share=0.0, naive_bare_share=0.0, reask_share=share,
        )  # fmt: skip

    meta = {"model": "m", "confirm_queries": 100, "fit_queries": 100, "reask_bare": "light", "reasked": 4}
    none = FitResult(START, candidate_config(START), (), (confirmed(0.0),), meta)
    assert "(a bare citation asked again under light: none of its held-out replies was one)" in none.verdict
    some = FitResult(START, candidate_config(START), (), (confirmed(0.07),), meta)
    assert "(a bare citation asked again under light: up to 7.0 % of its held-out replies)" in some.verdict


def test_fit_reask_auto_is_light(
    serve: Callable[[Script], ChatServer], dev16: list[Any], tmp_path: Path
) -> None:
    """``auto`` names the re-ask ``ask`` sends for a config without ``reask``: ``light``; the
    profile records the prompt itself, not ``auto``."""
    server = serve(pointer(dev16))
    auto = _fit(server, dev16, tmp_path / "c.sqlite", "auto")
    assert auto.meta["reask_bare"] == "light" and auto.profile()["reask"] == "light"
    assert auto.meta["reasked"] > 0
