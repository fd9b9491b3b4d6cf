"""``eval --reask-bare``: a reply that is a bare citation of its labelled context is asked once more.

Exact checks against the scripted chat server of ``test_reader`` (a real HTTP server whose replies
are known), then the second request answered by a real model (llama.cpp, SmolLM2), its first,
bare, reply recorded in the reply cache under the same endpoint label.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")

from contextwright.eval.reader import Reader, evaluate_reader
from contextwright.eval.reader_requests import system_of
from contextwright.render.format import get_format
from contextwright.render.messages import PROMPTS

from .test_reader import _BLOCK, ChatServer, Script, _queries, reply

LIGHT = PROMPTS["light"]


def pointing_model(body: dict[str, Any]) -> tuple[int, Any]:
    """Under ``light``: the answer and its block's number. Under any other prompt: the block's
    number alone (``[2]``), or ``[1]`` for a context without numbers; "I do not know." without the answer."""
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Question:")[0]
    for answer in ("Röntgen", "Paris"):
        if answer in context:
            number = next(
                (
                    m.group(1) or m.group(3)
                    for m in _BLOCK.finditer(context)
                    if answer in (m.group(2) or m.group(4))
                ),
                "1",
            )
            return reply(f"{answer} [{number}]" if system.startswith(LIGHT) else f"[{number}]")
    return reply("I do not know.")


def _both(server: ChatServer, cache: Path, reask: str | None) -> Any:
    """naive and qa at 200 tokens on the three queries, no references, re-asking under ``reask``."""
    with Reader(server.base_url, model="m", cache=cache) as reader:
        return evaluate_reader(
            _queries(),
            ["naive", "qa"],
            [200],
            reader=reader,
            closed_book=False,
            oracle=False,
            reask_bare=reask,
        )


def test_a_bare_citation_is_asked_again_under_the_reask_prompt(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    server = serve(pointing_model)
    cache = tmp_path / "c.sqlite"
    plain = _both(server, cache, None)
    first_round = len(server.asked())
    assert first_round == 6
    assert plain.meta["reask_bare"] is None and plain.summary("qa", 200).reask_share is None
    assert plain.summary("qa", 200).accuracy == 0.0  # "[n]" names no answer

    res = _both(server, cache, "light")
    by = {(a.query_id, a.strategy): a for a in res.answers}
    # qa numbers its blocks: the two bare replies are asked again (two requests, nothing else sent)
    assert len(server.asked()) == first_round + 2 and res.meta["reasked"] == 2
    for q, answer in (("q1", "Röntgen"), ("q2", "Paris")):
        a = by[(q, "qa")]
        first = next(p for p in plain.answers if (p.query_id, p.strategy) == (q, "qa"))
        assert a.reasked and a.first_answer == first.answer and a.first_answer.startswith("[")
        assert a.answer.startswith(answer) and a.correct and not a.bare and a.cites
        assert a.tokens_sent > first.tokens_sent and a.prompt_tokens == 84  # both requests
    # "I do not know." is not a citation; naive's "[1]" cites no block of its plain text: neither is re-asked
    assert not by[("q3", "qa")].reasked
    assert all(by[(q, "naive")].answer == "[1]" or q == "q3" for q in ("q1", "q2", "q3"))
    assert not any(by[(q, "naive")].reasked for q in ("q1", "q2", "q3"))
    qa, naive = res.summary("qa", 200), res.summary("naive", 200)
    assert (
        qa.accuracy == pytest.approx(2 / 3)
        and qa.reask_share == pytest.approx(2 / 3)
        and qa.bare_share == 0.0
    )
    assert naive.reask_share == 0.0 and naive.bare_share == pytest.approx(2 / 3)

    # the second request: the same context and question, under light in the context's own form
    second = server.asked()[first_round:]
    firsts = {m["messages"][-1]["content"]: m for m in server.asked()[:first_round]}
    for body in second:
        assert body["messages"][0]["content"] == system_of("light", get_format("numbered"))
        assert body["messages"][-1]["content"] in firsts
        assert len(body["messages"]) == len(firsts[body["messages"][-1]["content"]]["messages"])

    # a re-run is answered from the cache, re-asks included
    again = _both(server, cache, "light")
    assert len(server.asked()) == first_round + 2
    assert [a.answer for a in again.answers] == [a.answer for a in res.answers]


def test_a_failed_reask_keeps_the_first_reply(serve: Callable[[Script], ChatServer], tmp_path: Path) -> None:
    """What the application would show when the second request fails: the first reply, still bare."""

    def refusing(body: dict[str, Any]) -> tuple[int, Any]:
        if body["messages"][0]["content"].startswith(LIGHT):
            return 400, {"error": {"message": "no"}}
        return pointing_model(body)

    server = serve(refusing)
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite", retries=0) as reader:
        res = evaluate_reader(
            _queries()[:1], ["qa"], [200], reader=reader, closed_book=False, oracle=False, reask_bare="light"
        )
    (a,) = res.answers
    assert a.ok and a.reasked and a.bare and a.answer == a.first_answer and not a.correct


def test_a_reask_prompt_that_is_not_a_prompt_is_refused(tmp_path: Path) -> None:
    from contextwright.core.errors import ConfigError

    with (
        Reader("http://127.0.0.1:9/v1", model="m", cache=tmp_path / "c.sqlite", offline=True) as reader,
        pytest.raises(ConfigError, match=r"lite.*light"),
    ):
        evaluate_reader(_queries(), ["qa"], [200], reader=reader, reask_bare="lite")


def test_the_second_request_is_answered_by_a_real_model(
    llama_server: Any, serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    """The first replies recorded under the endpoint's label (bare, from the scripted server); the
    re-asks sent to SmolLM2 under ``light`` and scored as its answers."""
    cache, label = tmp_path / "c.sqlite", "llama.cpp:smollm2"
    queries = _queries()[:2]
    recorded = serve(pointing_model)
    with Reader(
        recorded.base_url, model=llama_server.model, cache=cache, cache_endpoint=label, max_tokens=16
    ) as r:
        evaluate_reader(queries, ["qa"], [200], reader=r, closed_book=False, oracle=False)
    with Reader(
        llama_server.base_url, model=llama_server.model, cache=cache, cache_endpoint=label, max_tokens=16
    ) as reader:
        res = evaluate_reader(
            queries, ["qa"], [200], reader=reader, closed_book=False, oracle=False, reask_bare="light"
        )
    assert res.meta["reasked"] == 2 and res.meta["cached"] == 2  # the first replies, from the cache
    for a in res.answers:
        assert a.ok and a.reasked and a.first_answer.startswith("[") and a.answer.strip()
        assert a.answer != a.first_answer and not a.cached  # the real model's reply to the second request
    with Reader(
        llama_server.base_url, model=llama_server.model, cache=cache, cache_endpoint=label, max_tokens=16
    ) as reader:
        again = evaluate_reader(
            queries, ["qa"], [200], reader=reader, closed_book=False, oracle=False, reask_bare="light"
        )
    assert [a.answer for a in again.answers] == [a.answer for a in res.answers] and all(
        a.cached for a in again.answers
    )


def test_eval_cli_reask_bare_end_to_end_with_a_real_model(llama_server: Any, tmp_path: Path) -> None:
    """``--reask-bare light`` runs, says so in the JSON and adds the reask% column; SmolLM2 gives no bare
    citation, so nothing is re-asked and the accuracy is the first replies'."""
    from typer.testing import CliRunner

    from contextwright.cli import app

    from ..conftest import DEV_QUERIES

    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    out = tmp_path / "r.json"
    args = [
        *("eval", str(DEV_QUERIES), "--limit", "2", "--strategy", "naive,qa", "--budget", "300"),
        *("--reader", llama_server.base_url, "--reader-model", llama_server.model),
        *("--reader-cache", str(tmp_path / "c.sqlite"), "--reader-max-tokens", "16", "--wide"),
        *("--reask-bare", "light", "--json", str(out)),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "reask%" in result.stdout
    data = json.loads(out.read_text())
    assert data["reader"]["meta"]["reask_bare"] == "light"
    rows = {(s["strategy"], s["budget"]): s for s in data["reader"]["summaries"]}
    assert (
        rows[("qa", 300)]["reask_share"]
        == sum(a["reasked"] for a in data["reader"]["answers"] if a["strategy"] == "qa") / 2
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--reask-bare", "light"], "--reask-bare asks the reader again"),
        (
            ["--reask-bare", "lite", "--reader", "http://127.0.0.1:9/v1", "--reader-model", "m"],
            "Did you mean",
        ),
    ],
)
def test_eval_cli_refuses_a_reask_it_cannot_do(args: list[str], said: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from contextwright.cli import app

    result = CliRunner().invoke(app, ["eval", str(tmp_path / "none.jsonl"), *args])
    assert result.exit_code == 2 and said in result.output, result.output


def test_a_bare_citation_of_a_sources_label_is_asked_again_too(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    """``[SOURCE 1]`` is a citation of a ``sources`` context, as ``resolve_citations`` reads it (its
    ``[n]`` numbers are not scored there, but a reply of a label alone still answers nothing)."""
    from contextwright import get_preset
    from contextwright.eval.strategies import PipelineStrategy

    light = system_of("light", get_format("sources"))

    def labelled(body: dict[str, Any]) -> tuple[int, Any]:
        return reply("Paris [SOURCE 1]" if body["messages"][0]["content"] == light else "[SOURCE 1]")

    server = serve(labelled)
    strategy = PipelineStrategy("qa-sources", {**get_preset("qa"), "format": "sources"})
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite") as reader:
        res = evaluate_reader(
            _queries()[1:2],
            [strategy],
            [200],
            reader=reader,
            closed_book=False,
            oracle=False,
            reask_bare="light",
        )
    (a,) = res.answers
    assert a.reasked and a.first_answer == "[SOURCE 1]" and a.answer == "Paris [SOURCE 1]" and a.correct


def test_reask_auto_asks_each_profile_again_with_its_own_reask(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    """``--reask-bare auto``: a config's ``reask`` is what its bare citations are asked again with
    (``false``: never), and a config without one is asked again under ``light``, as ``ask`` does."""
    server = serve(pointing_model)
    (tmp_path / "never.toml").write_text('preset = "qa"\nname = "never"\nreask = false\n')
    (tmp_path / "strict.toml").write_text('preset = "qa"\nname = "strict"\nreask = "strict"\n')
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite") as reader:
        res = evaluate_reader(
            _queries(),
            ["qa", str(tmp_path / "never.toml"), str(tmp_path / "strict.toml")],
            [200],
            reader=reader,
            closed_book=False,
            oracle=False,
            reask_bare="auto",
        )
    by = {(a.query_id, a.strategy): a for a in res.answers}
    assert [by[(q, "qa")].reasked for q in ("q1", "q2", "q3")] == [True, True, False]
    assert not any(by[(q, "never")].reasked for q in ("q1", "q2", "q3"))
    assert [by[(q, "strict")].reasked for q in ("q1", "q2", "q3")] == [True, True, False]
    assert by[("q1", "qa")].correct and by[("q1", "strict")].bare  # strict draws "[n]" again here
    numbered = get_format("numbered")
    # the three configs send the same first requests (one each, through the cache), then the re-asks
    assert len(server.asked()) == 3 + 4
    seconds = [b["messages"][0]["content"] for b in server.asked()[3:]]
    assert sorted(seconds) == sorted([system_of("light", numbered)] * 2 + [system_of("strict", numbered)] * 2)
    assert res.meta["reasked"] == 4
