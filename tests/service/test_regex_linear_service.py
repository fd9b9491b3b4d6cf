"""Text from a request never meets a super-linear pattern in the service (issue 26, finding 2).

The 422 handler used ``.*\\[.*\\].*`` on every error-location part, on the event loop: an unknown
top-level key of 200,000 ``[`` froze the whole server for about 30 s. Each function of the
service package that reads request text (keys, header values, library messages that quote the
request) is timed here on 100k- and 200k-character adversarial inputs; linear code takes
milliseconds, a quadratic one seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from contextwright.service import ServiceConfig, create_app
from contextwright.service.middleware import _REQUEST_ID
from contextwright.service.problems import _union_tag, config_loc, dotted_loc, input_loc
from contextwright.service.references import reference_kind
from contextwright.service.security import _NETWORK_SETTING

BOUND_S = 0.5  # linear code needs a few ms for these sizes, even on a loaded machine
SIZES = (100_000, 200_000)


def adversarial(n: int) -> list[str]:
    """Runs that make backtracking patterns over brackets, word characters and digits try every split."""
    return [
        "[" * n,
        "[" * (n // 2) + "]" * (n // 2) + "\n",
        "a[" * (n // 2),
        "function-" + "a" * n + "!",
        "constrained-" + "a" * n + "\n[",
        "chunks[" + "1" * n,
        "chunks[1]." + "a" * n + "!",
        "history[" + "2" * n + "].",
        "stages[" + "9" * n,
        "a" * n + "!",
        "/" * n,
        "x:" * (n // 2),
        "_env" * (n // 4) + "!",
        "[1]" * (n // 3),
        "a." * (n // 2),
    ]


def timed(fn: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


FUNCTIONS: dict[str, Callable[[str], Any]] = {
    "problems._union_tag": _union_tag,
    "problems.input_loc": input_loc,
    "problems.dotted_loc": dotted_loc,
    "problems.config_loc": lambda s: config_loc(s, ["body", "config"]),
    "middleware._REQUEST_ID": _REQUEST_ID.match,
    "security._NETWORK_SETTING": _NETWORK_SETTING.search,
    "references.reference_kind": reference_kind,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("n", SIZES)
def test_each_function_on_request_text_is_linear(name: str, n: int) -> None:
    fn = FUNCTIONS[name]
    for text in adversarial(n):
        took = timed(fn, text)
        assert took < BOUND_S, f"{name} took {took:.2f} s on {text[:20]!r}… ({len(text)} characters)"


def test_union_tags_are_still_recognised() -> None:
    tags = ["str", "int", "none", "constrained-str", "function-after[check(), str]", "list[ChunkIn]"]
    tags += ["dict[str,list[ChunkIn]]", "literal['a','b']"]
    assert all(_union_tag(t) for t in tags)
    fields = ["chunks", "text", "metadata", "a[b", "b]a[", "line\n[x]", "constrained-", "function-a b", 3]
    assert not any(_union_tag(f) for f in fields)


def test_stage_and_chunk_paths_keep_their_numbers() -> None:
    assert input_loc("chunks[12].metadata.page: bad") == ["body", "chunks", 12, "metadata", "page"]
    assert input_loc("history[2].role: bad") == ["body", "history", 2, "role"]
    assert config_loc("stages[3]: bad", ["body", "config"]) == ["body", "config", "stages", 3]
    assert input_loc("chunks[" + "1" * 5000 + "]: bad") == ["body", "chunks"]  # no int() of 5,000 digits
    assert dotted_loc("body.chunks[0].metadata.12") == ["body", "chunks", 0, "metadata", "12"]
    assert dotted_loc("body.history[2][3].x[") == ["body", "history", 2, 3, "x["]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(budget=100, max_body_bytes=3_000_000))) as c:
        yield c


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("shape", ["[", "a[]", "x"])
def test_an_adversarial_unknown_key_is_answered_at_once(client: TestClient, n: int, shape: str) -> None:
    key = (shape * n)[:n]
    body = {"query": "q", "budget": 100, "chunks": [{"text": "a"}], key: 1}
    start = time.perf_counter()
    r = client.post("/v1/assemble", json=body)
    took = time.perf_counter() - start
    assert r.status_code == 422
    assert took < 1.0, f"{took:.2f} s for a key of {n} characters"
    problem = r.json()
    assert len(r.content) < 4_000, "the key is echoed whole"
    assert problem["loc"][0] == "body" and len(problem["loc"][1]) < 200
    assert problem["loc"][1].startswith(key[:50]) and f"{n} characters" in problem["loc"][1]
    assert "unknown field" in problem["detail"] and "Valid fields" in problem["detail"]


def test_an_adversarial_list_name_is_answered_at_once(client: TestClient) -> None:
    # A named list's name over 100 characters is refused with the name in the error's location.
    start = time.perf_counter()
    r = client.post("/v1/assemble", json={"query": "q", "chunks": {"[" * 200_000: [{"text": "a"}]}})
    assert time.perf_counter() - start < 1.0
    assert r.status_code == 422 and len(r.content) < 4_000


@pytest.mark.parametrize("key", ["1" * 5000, "a" * 200_000, "12"])
def test_a_lone_surrogate_under_any_metadata_key_is_a_short_422(client: TestClient, key: str) -> None:
    # The surrogate check's message names the key; it used to become the loc through int() of
    # every digit run (a 500 over 4,300 digits) and be echoed whole.
    body = '{"query":"q","chunks":[{"text":"a","metadata":{"' + key + '":"\\ud800"}}]}'
    start = time.perf_counter()
    r = client.post("/v1/assemble", content=body, headers={"content-type": "application/json"})
    assert time.perf_counter() - start < 1.0
    assert r.status_code == 422, r.text[:300]
    problem = r.json()
    assert problem["code"] == "invalid-text" and len(r.content) < 4_000
    assert problem["loc"][:5] == [
        "body",
        "chunks",
        0,
        "metadata",
        key if len(key) < 100 else problem["loc"][4],
    ]
    assert "lone surrogate" in problem["detail"]
