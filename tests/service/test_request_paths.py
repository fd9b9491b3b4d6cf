"""No stage setting a request sends may name a file or URL on the server (issue 26, finding 1).

Every registered stage's every setting gets path-like and URL-like values through the real
FastAPI app. Files the server would open are traps: a FIFO under ``tmp_path`` (opening it for
reading blocks until a writer comes, so a request that opens it never answers; after each request
the test checks that nobody holds it open) and a canary that is a valid prior file (a request that
read it would succeed). ``/dev/zero`` would grow the process without end: those cases run last in
each group, after the FIFO and the canary have shown that nothing is opened.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from contextwright.core.errors import ConfigError
from contextwright.service import ServiceConfig, create_app
from contextwright.stages.base import registered_stages

CHUNKS = [
    {
        "id": f"c{i}",
        "doc_id": f"d{i % 2}",
        "index": i,
        "text": f"Chunk {i} says fact {i}.",
        "score": 1 - i / 10,
    }
    for i in range(4)
]
PRIOR = {"name": "canary", "positions": [1, 2, 3], "accuracy": [90.0, 50.0, 70.0], "closed_book": 40.0}
# Settings whose values are only ever text in the output or names sent elsewhere, never opened:
# a path-like value there is kept as the literal text.
TEXT = {("doc_summaries", "summaries"), ("doc_summaries", "metadata_keys"), ("llm_compress", "model")}
FIXED = ["/etc/passwd", "../x", "~/.ssh/id_rsa", "file:///etc/passwd", "C:\\x", "http://127.0.0.1:1/x"]


@pytest.fixture(scope="module")
def traps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("traps")
    fifo = root / "fifo.json"
    os.mkfifo(fifo)
    canary = root / "canary.json"
    canary.write_text(json.dumps(PRIOR))
    return {"fifo": fifo, "canary": canary}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(budget=200))) as c:
        yield c


def hostile(traps: dict[str, Path]) -> list[str]:
    """The values to send, the traps first and /dev/zero last."""
    return [str(traps["fifo"]), str(traps["canary"]), *FIXED, "/dev/zero"]


def assert_fifo_unopened(fifo: Path) -> None:
    """Nobody holds the FIFO open for reading (a non-blocking writer would find them)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        return
    os.close(fd)  # a reader was there: this also lets it go
    raise AssertionError(f"the server opened {fifo}")


def post(client: TestClient, body: dict[str, Any], fifo: Path) -> Any:
    """POST from a thread with a time limit: a server blocked on the FIFO fails the test, not hangs it."""
    out: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: out.update(r=client.post("/v1/assemble", json=body)), daemon=True
    )
    thread.start()
    thread.join(20)
    if thread.is_alive():
        assert_fifo_unopened(fifo)  # releases a reader blocked on it, then fails
        raise AssertionError("the request did not answer within 20 s")
    assert_fifo_unopened(fifo)
    return out["r"]


def shaped(stage: str, setting: str, value: str) -> Any:
    """The value in the shape the setting takes where it holds text (pairs, a list of keys)."""
    if (stage, setting) == ("doc_summaries", "summaries"):
        return [["d0", value]]
    if (stage, setting) == ("doc_summaries", "metadata_keys"):
        return [value]
    return value


def cases() -> list[tuple[str, str]]:
    out = []
    for name, cls in registered_stages().items():
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        out.extend((name, f) for f in fields or ["path"])  # a stage without settings: an unknown one
    return out


@pytest.mark.parametrize(("stage", "setting"), sorted(cases(), key=lambda c: c[0] != "prior_order"))
def test_no_stage_setting_names_a_file_or_url(
    client: TestClient, traps: dict[str, Path], stage: str, setting: str
) -> None:
    for value in hostile(traps):
        body = {
            "query": "q",
            "budget": 200,
            "chunks": CHUNKS,
            "config": {"stages": [{"type": stage, setting: shaped(stage, setting, value)}]},
        }
        r = post(client, body, traps["fifo"])
        problem = r.json()
        if (stage, setting) in TEXT:
            if stage == "llm_compress":  # refused as a whole: it calls other hosts
                assert r.status_code == 422 and problem["code"] == "network-stage-not-allowed", problem
            else:
                assert r.status_code == 200, (value, problem)
            continue
        assert r.status_code == 422, (value, problem)
        assert problem["loc"] == ["body", "config", "stages", 0, setting], (value, problem)
        assert setting in problem["detail"], problem


def test_a_refusal_tells_nothing_about_the_file(client: TestClient, traps: dict[str, Path]) -> None:
    details = []
    for value in ["/etc/passwd", "/etc/no-such-file-here", str(traps["canary"]), "/etc"]:
        body = {
            "query": "q",
            "chunks": CHUNKS,
            "config": {"stages": [{"type": "prior_order", "prior": value}]},
        }
        problem = post(client, body, traps["fifo"]).json()
        assert problem["status"] == 422 and problem["loc"] == ["body", "config", "stages", 0, "prior"]
        details.append(problem["detail"].replace(value, "VALUE"))
        for leak in ("root:", "No such file", "not valid", "cannot read", "Is a directory", "canary"):
            assert leak not in problem["detail"].replace(value, "VALUE")
    assert len(set(details)) == 1, details  # the same words whether the file exists or not


def test_an_inline_prior_orders_over_http(client: TestClient, traps: dict[str, Path]) -> None:
    body = {"query": "q", "chunks": CHUNKS, "config": {"stages": [{"type": "prior_order", "prior": PRIOR}]}}
    r = post(client, body, traps["fifo"])
    assert r.status_code == 200, r.json()
    notes = [n for s in r.json()["report"]["stages"] if s["stage"] == "prior_order" for n in s["notes"]]
    assert notes == ["prior canary"]
    # accuracy 90 / 50 / 70 at positions 1-3 of 3 (then 4 blocks: 90, 63, 57, 70): best first,
    # second best last
    assert [c["chunk_ids"][0] for c in r.json()["citations"]] == ["c0", "c2", "c3", "c1"]
    bad = {**PRIOR, "accuracy": [90.0]}
    body["config"]["stages"][0]["prior"] = bad
    problem = post(client, body, traps["fifo"]).json()
    assert problem["status"] == 422 and problem["loc"] == ["body", "config", "stages", 0, "prior"]
    assert "3 positions but 1 accuracies" in problem["detail"]


def test_named_priors_are_the_servers_own(tmp_path: Path, traps: dict[str, Path]) -> None:
    path = tmp_path / "reader.json"
    path.write_text(json.dumps({**PRIOR, "name": "our-reader"}))
    with TestClient(create_app(ServiceConfig(budget=200, priors={"reader": str(path)}))) as c:
        for name, note in (("reader", "prior our-reader"), ("liu2024", "prior liu2024-gpt35-20doc")):
            body = {
                "query": "q",
                "chunks": CHUNKS,
                "config": {"stages": [{"type": "prior_order", "prior": name}]},
            }
            r = post(c, body, traps["fifo"])
            assert r.status_code == 200, r.json()
            assert note in r.json()["report"]["stages"][0]["notes"]
        body = {
            "query": "q",
            "chunks": CHUNKS,
            "config": {"stages": [{"type": "prior_order", "prior": "readr"}]},
        }
        problem = post(c, body, traps["fifo"]).json()
        assert problem["status"] == 422 and problem["code"] == "unknown-prior"
        assert "liu2024, reader" in problem["detail"]


def test_a_registered_prior_is_read_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"service setting 'priors'.*'reader'"):
        create_app(ServiceConfig(budget=200, priors={"reader": str(tmp_path / "missing.json")}))
    with pytest.raises(ConfigError, match=r"service setting 'priors'.*'liu2024'.*built in"):
        ServiceConfig(priors={"liu2024": str(tmp_path / "x.json")})


def test_priors_come_from_toml_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(PRIOR))
    toml = tmp_path / "service.toml"
    toml.write_text('[service]\nbudget = 100\n\n[service.priors]\nreader = "p.json"\n')
    cfg = ServiceConfig.load(toml, env={})
    assert dict(cfg.priors) == {"reader": str(tmp_path / "p.json")}  # relative to the TOML file
    again = ServiceConfig.load(env=cfg.to_env())
    assert again.priors == cfg.priors


def test_a_tokenizer_refusal_tells_nothing_about_the_working_directory(
    client: TestClient, traps: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keys.txt").write_text("secret")
    (tmp_path / ".env").write_text("X=1")
    (tmp_path / "tok").mkdir()
    monkeypatch.chdir(tmp_path)
    details = set()
    for value in ("keys.txt", ".env", "tok", "tokenizer.json", "nothing-here.txt", "no-such-name"):
        problem = post(client, {"query": "q", "chunks": CHUNKS, "tokenizer": value}, traps["fifo"]).json()
        assert problem["status"] == 422 and problem["loc"] == ["body", "tokenizer"], problem
        details.add(problem["detail"].replace(repr(value), "VALUE"))
    assert len(details) == 1, details
    for value in ("cl100k_base", "o200k_base", "gpt-4o", "chars:4"):
        r = post(client, {"query": "q", "chunks": CHUNKS, "tokenizer": value}, traps["fifo"])
        assert r.status_code == 200, r.json()
