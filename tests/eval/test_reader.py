"""The reader evaluation against a scripted chat-completions server (a real HTTP server).

The scripted server answers from the user message: it finds the question and
answers from a fixed key, so scoring, caching, resuming, statistics and every
failure mode can be checked exactly. The same machinery against a real model
(llama.cpp) is in ``test_reader_llama.py``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")

from contextwright.core.errors import ConfigError, LLMError
from contextwright.eval import load_prior, query_from_dict
from contextwright.eval.reader import (
    CLOSED_BOOK,
    ORACLE,
    Reader,
    evaluate_reader,
    position_sweep,
    score_reply,
)

Script = Callable[[dict[str, Any]], tuple[int, Any]]


class ChatServer:
    """``POST /v1/chat/completions`` answered by ``script(body) -> (status, body)``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    server.requests.append(body)
                status, payload = server.script(body)
                raw = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def asked(self) -> list[dict[str, Any]]:
        """Requests other than the reachability probe."""
        return [r for r in self.requests if r.get("max_tokens") != 1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def reply(content: str) -> tuple[int, Any]:
    return 200, {
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 3},
    }


def _queries() -> list[Any]:
    raw = [
        {
            "id": "q1",
            "question": "Who discovered X-rays?",
            "answers": ["Röntgen"],
            "chunks": [
                {"id": "a", "text": "Light is a wave.", "score": 0.9},
                {"id": "b", "text": "Wilhelm Röntgen discovered X-rays in 1895.", "score": 0.5},
                {"id": "c", "text": "Radio waves are long.", "score": 0.4},
            ],
        },
        {
            "id": "q2",
            "question": "What is the capital of France?",
            "answers": ["Paris"],
            "chunks": [
                {"id": "d", "text": "Paris is the capital of France.", "score": 0.8},
                {"id": "e", "text": "Lyon is a city.", "score": 0.3},
                {"id": "f", "text": "Rome is in Italy.", "score": 0.2},
            ],
        },
        {
            "id": "q3",
            "question": "Who wrote Hamlet?",
            "answers": ["Shakespeare"],
            "chunks": [{"id": "g", "text": "Hamlet is a play.", "score": 0.7}],
        },
    ]
    return [query_from_dict(r) for r in raw]


# An xml block, or a `[n]` header line (numbered/lean) and the text up to the next header.
_BLOCK = re.compile(r'<chunk id="(\d+)">(.*?)</chunk>|^\[(\d+)\][^\n]*\n(.*?)(?=^\[\d+\]|\Z)', re.S | re.M)


def reading_model(body: dict[str, Any]) -> tuple[int, Any]:
    """Answers when the answer is in the context, citing its block when blocks are numbered; else gives up."""
    context = body["messages"][-1]["content"].split("Question:")[0]
    for answer in ("Röntgen", "Paris"):
        if answer in context:
            cite = ""
            for m in _BLOCK.finditer(context):
                number, text = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                if answer in text:
                    cite = f" [{number}]"
            return reply(f"{answer}{cite}")
    return reply("I do not know.")


def test_score_reply_counts_normalized_match_exact_match_and_citation_precision() -> None:
    blocks = ["Rome is old.", "Paris is the capital."]
    assert score_reply("The answer is Paris [2].", ["Paris"], blocks, numbered=True) == {
        "correct": True,
        "exact": False,
        "cites": True,
        "cited": 1,
        "cited_correct": 1,
    }
    assert score_reply("the Paris.", ["Paris"], blocks)["exact"] is True
    wrong = score_reply("Parisian food [1, 7]", ["Paris"], blocks, numbered=True)
    assert (wrong["correct"], wrong["cited"], wrong["cited_correct"]) == (False, 2, 0)


def test_reader_eval_scores_every_strategy_and_the_references(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    server = serve(reading_model)
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite") as reader:
        result = evaluate_reader(_queries(), ["naive", "qa"], [200], reader=reader)
    naive, qa = result.summary("naive", 200), result.summary("qa", 200)
    closed, oracle = result.summary(CLOSED_BOOK), result.summary(ORACLE)
    assert (naive.answered, naive.accuracy) == (3, 2 / 3)
    assert (closed.accuracy, oracle.queries, oracle.accuracy) == (0.0, 2, 1.0)
    assert qa.accuracy == 2 / 3 and qa.delta == 0.0 and qa.p_value == 1.0 and qa.paired == 3
    # qa numbers its blocks; the scripted model cites the block with the answer
    assert qa.cite_share == 2 / 3 and qa.cite_precision == 1.0
    assert naive.cite_share is None and naive.cite_precision is None  # naive shows no numbers
    assert closed.delta == -2 / 3 and closed.paired == 3
    assert naive.accuracy_low is not None and naive.accuracy_low < 2 / 3 < (naive.accuracy_high or 0)
    assert naive.tokens_mean and naive.tokens_mean > 10 and naive.latency_p50_ms is not None
    # the pipeline strategy's messages are ctx.messages(): its system prompt asks for citations
    qa_request = next(r for r in server.asked() if re.search(r"^\[1\]", r["messages"][-1]["content"], re.M))
    assert "Give the answer itself first, then cite" in qa_request["messages"][0]["content"]
    # naive's plain text has no numbers: its prompt asks for none
    naive_request = next(
        r
        for r in server.asked()
        if r["messages"][-1]["content"].startswith("Context:\n")
        and not re.search(r"^\[1\]", r["messages"][-1]["content"], re.M)
        and r["messages"][0]["role"] == "system"
        and "passages" in r["messages"][0]["content"]
    )
    assert "[1]" not in naive_request["messages"][0]["content"]
    assert result.meta["requests"] == len(server.asked())
    data = result.to_dict()
    assert {a["strategy"] for a in data["answers"]} == {"naive", "qa", CLOSED_BOOK, ORACLE}


def test_rerun_is_answered_from_the_cache(serve: Callable[[Script], ChatServer], tmp_path: Path) -> None:
    server = serve(reading_model)
    cache = tmp_path / "c.sqlite"
    with Reader(server.base_url, model="m", cache=cache) as reader:
        first = evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    sent = len(server.requests)
    with Reader(server.base_url, model="m", cache=cache) as reader:
        second = evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    assert len(server.requests) == sent  # not even the probe
    assert second.meta["cached"] == second.meta["requests"] == first.meta["requests"]
    assert [a.answer for a in second.answers] == [a.answer for a in first.answers]
    # another model is another key
    with Reader(server.base_url, model="other", cache=cache) as reader:
        evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    assert len(server.requests) > sent


def test_an_interrupted_run_resumes_from_what_was_cached(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    def slow_model(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(0.2)  # a request is always in flight when Ctrl-C comes
        return reading_model(body)

    server = serve(slow_model)
    cache = tmp_path / "c.sqlite"

    def stop_after_two(done: int, total: int) -> None:
        if done >= 2:
            raise KeyboardInterrupt

    with (
        Reader(server.base_url, model="m", cache=cache, max_concurrency=1) as reader,
        pytest.raises(KeyboardInterrupt),
    ):
        evaluate_reader(_queries(), ["naive"], [200], reader=reader, progress=stop_after_two)
    kept = sqlite3.connect(cache).execute("SELECT count(*) FROM replies").fetchone()[0]
    assert 2 <= kept < 8
    before = len(server.asked())
    assert kept == before  # the request in flight at Ctrl-C was waited for: every reply paid for is kept
    with Reader(server.base_url, model="m", cache=cache) as reader:
        result = evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    assert result.meta["cached"] == kept
    assert len(server.asked()) - before == result.meta["requests"] - kept


def test_failures_are_recorded_per_query_and_the_run_goes_on(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    def flaky(body: dict[str, Any]) -> tuple[int, Any]:
        user = body["messages"][-1]["content"]
        if body.get("max_tokens") == 1:
            return reply("OK")
        if "Hamlet" in user and "Context" in user:
            return 400, {"error": {"message": "Requested tokens (5000) exceed context window of 2048"}}
        if "France" in user and "Context" not in user:
            return reply("   ")  # empty
        if "France" in user:
            return 200, "<html>not json</html>"
        return reading_model(body)

    server = serve(flaky)
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite", retries=0) as reader:
        result = evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    naive = result.summary("naive", 200)
    assert (naive.queries, naive.answered, naive.failed, naive.accuracy) == (3, 1, 2, 1.0)
    errors = {(a.query_id, a.strategy): a.error for a in result.answers if not a.ok}
    assert "exceed context window" in str(errors[("q3", "naive")])
    assert "invalid JSON" in str(errors[("q2", "naive")])
    assert "empty reply" in str(errors[("q2", CLOSED_BOOK)])
    assert result.meta["failed"] == len(errors) == 4  # q2 oracle is malformed JSON too
    # failures are not cached: a rerun asks again
    before = len(server.asked())
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite", retries=0) as reader:
        evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    assert len(server.asked()) - before == 4


def test_a_rejected_key_stops_the_run_with_a_clear_error(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    server = serve(lambda body: (401, {"error": {"message": "Incorrect API key provided"}}))
    with (
        Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite", api_key="bad") as reader,
        pytest.raises(LLMError, match=r"HTTP 401.*Incorrect API key.*reader-key-env"),
    ):
        evaluate_reader(_queries(), ["naive"], [200], reader=reader)
    assert len(server.requests) == 1  # the probe only


def test_an_unreachable_endpoint_stops_the_run_with_a_clear_error(tmp_path: Path) -> None:
    with (
        Reader("http://127.0.0.1:9/v1", model="m", cache=tmp_path / "c.sqlite", retries=0) as reader,
        pytest.raises(LLMError, match=r"127\.0\.0\.1:9/v1.*cannot be used.*connection"),
    ):
        evaluate_reader(_queries(), ["naive"], [200], reader=reader)


def test_position_sweep_moves_only_the_answer_chunk_and_writes_a_prior(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    def first_only(body: dict[str, Any]) -> tuple[int, Any]:
        # A reader that only reads block [1]: accuracy 1 at position 1, 0 elsewhere.
        user = body["messages"][-1]["content"]
        first = user.split("[1] ", 1)[1].split("\n\n")[0] if "[1] " in user else ""
        for answer in ("Röntgen", "Paris"):
            if answer in first:
                return reply(answer)
        return reply("unknown")

    server = serve(first_only)
    with Reader(server.base_url, model="m", cache=tmp_path / "c.sqlite") as reader:
        sweep = position_sweep(_queries(), reader=reader, k=3)
    assert (sweep.k, sweep.queries, sweep.accuracy) == (3, 2, (1.0, 0.0, 0.0))
    contexts = [
        r["messages"][-1]["content"] for r in server.asked() if "Röntgen" in r["messages"][-1]["content"]
    ]
    assert len(contexts) == 3 and all("Light is a wave" in c and "Radio waves" in c for c in contexts)
    path = tmp_path / "prior.json"
    path.write_text(json.dumps(sweep.prior_dict()))
    prior = load_prior(path)
    assert prior.accuracy(0.0) == 100.0 and prior.accuracy(1.0) == 0.0 and prior.closed_book == 0.0
    with pytest.raises(ConfigError, match="positions must be an integer >= 2"):
        position_sweep(_queries(), reader=reader, k=1)


# -- a real model: SmolLM2-135M-Instruct on llama.cpp (the session fixture in conftest.py) ----------


def test_reader_eval_with_a_real_model(llama_server: Any, tmp_path: Path) -> None:
    long_text = " ".join(f"Sentence {i} of a very long page about nothing in particular." for i in range(400))
    queries = [
        *_queries()[:2],
        query_from_dict(
            {
                "id": "q-long",
                "question": "What is this page about?",
                "answers": ["zebra"],  # not answerable: no oracle request
                "chunks": [{"id": "l", "text": long_text, "score": 1.0}],
            }
        ),
    ]
    cache = tmp_path / "reader.sqlite"
    with Reader(llama_server.base_url, model=llama_server.model, cache=cache, max_tokens=16) as reader:
        result = evaluate_reader(queries, ["naive"], [200, 3000], reader=reader)
    answers = {(a.query_id, a.strategy, a.budget): a for a in result.answers}
    # the context over the model's window (2,048 tokens) is a recorded failure, not a wrong answer
    over = answers[("q-long", "naive", 3000)]
    assert not over.ok and over.error and "context" in over.error.lower() and "2048" in over.error
    assert result.summary("naive", 3000).failed == 1
    # everything else was read and answered by the real model through its chat template
    ok = [a for a in result.answers if a != over]
    assert all(a.ok and a.answer.strip() and a.prompt_tokens for a in ok), [a.error for a in ok if not a.ok]
    # with the answer-bearing sentence alone in its context, even a 135M model names Paris
    assert answers[("q2", "oracle", 0)].correct
    assert result.summary("oracle").accuracy is not None
    requests = result.meta["requests"]
    with Reader(llama_server.base_url, model=llama_server.model, cache=cache, max_tokens=16) as reader:
        again = evaluate_reader(queries, ["naive"], [200, 3000], reader=reader)
    assert again.meta["cached"] == requests - 1  # all but the failure, which is asked again
    assert [a.answer for a in again.answers] == [a.answer for a in result.answers]


def test_offline_reader_answers_from_the_cache_under_a_stable_endpoint_label(
    serve: Callable[[Script], ChatServer], tmp_path: Path
) -> None:
    server = serve(reading_model)
    cache = tmp_path / "c.sqlite"
    with Reader(server.base_url, model="m", cache=cache, cache_endpoint="local:smollm") as reader:
        first = evaluate_reader(_queries()[:2], ["naive"], [200], reader=reader)
    sent = len(server.requests)
    # another port, same label, offline: everything cached is answered, nothing is sent
    with Reader(
        "http://127.0.0.1:9/v1", model="m", cache=cache, cache_endpoint="local:smollm", offline=True
    ) as r:
        again = evaluate_reader(_queries(), ["naive"], [200], reader=r)
    assert len(server.requests) == sent
    by_query = {(a.query_id, a.strategy): a for a in again.answers}
    assert all(by_query[(a.query_id, a.strategy)].answer == a.answer for a in first.answers)
    missing = [a for a in again.answers if not a.ok]
    assert {a.query_id for a in missing} == {"q3"} and all("offline" in str(a.error) for a in missing)


@pytest.mark.parametrize(
    ("reply", "bare"),
    [
        ("[1]", True),
        ("[2, 3].", True),
        ("[1 and 2]", True),  # as resolve_citations reads it: two citations
        ("[SOURCE 2]", True),
        ("Source: [1]", True),
        ("The answer is [1].", True),
        ("Paris [1]", False),
        ("in 1912 [2, 3]", False),
        ("Paris", False),
        ("[Paris]", False),
        ("", False),
    ],
)
def test_bare_citations_are_told_from_answers(reply: str, bare: bool) -> None:
    from contextwright.render.cite import bare_citation

    assert bare_citation(reply) is bare


def test_the_summary_counts_bare_citations_per_strategy() -> None:
    from contextwright.eval.reader_results import ReaderAnswer, summarize_reader

    answers = [
        ReaderAnswer("q1", "naive", 500, ok=True, answer="Paris", correct=True),
        ReaderAnswer("q2", "naive", 500, ok=True, answer="Rome", correct=False),
        ReaderAnswer("q1", "frugal", 500, ok=True, answer="[1]", bare=True, numbered=True, cites=True),
        ReaderAnswer("q2", "frugal", 500, ok=True, answer="Rome [2]", numbered=True, cites=True),
    ]
    by = {s.strategy: s for s in summarize_reader(answers)}
    assert by["naive"].bare_share == 0.0 and by["frugal"].bare_share == 0.5


def test_eval_warns_when_bare_citations_reach_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """`eval --reader` says on stderr which strategy drew bare citations, from 3 % (the issue's
    target is under 3 %), and says nothing for a strategy under it."""
    from contextwright.cli.eval import _report_reader
    from contextwright.eval.reader_results import BARE_LIMIT, ReaderAnswer, ReaderResult, summarize_reader

    def answers(strategy: str, bare: int, n: int = 100) -> list[ReaderAnswer]:
        return [
            ReaderAnswer(
                f"q{i}",
                strategy,
                500,
                ok=True,
                answer="[1]" if i < bare else "Paris [1]",
                bare=i < bare,
                numbered=True,
                cites=True,
            )
            for i in range(n)
        ]

    at = round(BARE_LIMIT * 100)
    got = answers("frugal", at) + answers("qa", at - 1)
    _report_reader(ReaderResult(tuple(got), tuple(summarize_reader(got))), None)
    said = capsys.readouterr().err
    assert f"{at} % of frugal's replies at 500 are a citation and nothing else" in said
    assert "qa's" not in said
