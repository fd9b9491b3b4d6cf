"""The 422's ``loc`` for a bad pipeline config comes from the library error's ``loc`` (issue 25).

The answers are the ones the service gave when it read the field path out of the message
(``stages[2]: ...``): the response names the stage, and ``config_loc`` over the detail (the
message reader that remains as the fallback) agrees with it. The modules of the service
import the library modules they use, never the package root.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

import contextwright
from contextwright.core.errors import ConfigError, InputError
from contextwright.service import ServiceConfig, create_app
from contextwright.service.problems import config_error_loc, config_loc, input_error_loc

CHUNKS = [{"id": "a", "text": "Wilhelm Röntgen discovered X-rays in 1895.", "score": 0.9}]
SERVICE = Path(contextwright.__file__).parent / "service"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(budget=300))) as c:
        yield c


def _stages(*stages: Any) -> dict[str, Any]:
    return {"stages": [{"type": "exact_dedup"}, *stages]}


@pytest.mark.parametrize(
    ("config", "library_loc", "response_loc"),
    [
        (_stages({"type": "near_dedup", "treshold": 1}), ("stages", 1, "treshold"), ["stages", 1]),
        (_stages({"type": "near_dedup", "num_perm": 10**9}), ("stages", 1, "num_perm"), ["stages", 1]),
        (_stages({"type": "top_k", "k": 10**9}), ("stages", 1, "k"), ["stages", 1]),
        (_stages({"type": "bogus"}), ("stages", 1, "type"), ["stages", 1]),
        (_stages({"type": "top_k", "k": -1}), ("stages", 1, "k"), ["stages", 1]),
        (_stages(5), ("stages", 1), ["stages", 1]),
        ({"stages": "x"}, ("stages",), []),
        ({"stages": [], "fromat": "xml"}, ("fromat",), []),
        ({"stages": [], "format": "yaml"}, ("format",), []),
    ],
)
def test_the_422_names_the_stage_the_library_error_locates(
    client: TestClient, config: dict[str, Any], library_loc: tuple[Any, ...], response_loc: list[Any]
) -> None:
    with pytest.raises(ConfigError) as info:
        contextwright.pipeline_from_config(config)
    assert info.value.loc == library_loc
    r = client.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, "config": config})
    body = r.json()
    assert r.status_code == 422 and body["code"] == "invalid-option", body
    assert body["detail"] == str(info.value)  # the message is the library's, unchanged
    assert body["loc"] == ["body", "config", *response_loc]
    assert body["loc"] == config_loc(body["detail"], ["body", "config"])  # what the message reader said


def test_the_loc_wins_over_the_message() -> None:
    base = ["body", "config"]
    exc = ConfigError("stages[7]: k must be positive", loc=("stages", 2, "k"))
    assert config_error_loc(exc, base) == ["body", "config", "stages", 2]
    assert config_error_loc(ConfigError("stages[7]: bad"), base) == [
        "body",
        "config",
        "stages",
        7,
    ]  # fallback
    assert config_error_loc(exc, ["body", "preset"]) == ["body", "preset"]  # only body.config narrows
    assert config_error_loc(ConfigError("x", loc=("format",)), base) == base


def test_an_input_error_with_a_loc_is_located_by_it() -> None:
    exc = InputError("chunks[9].page: bad", loc=("chunks", 3, "score"))
    assert input_error_loc(exc) == ["body", "chunks", 3, "score"]
    assert input_error_loc(InputError("chunks[9].page: bad")) == ["body", "chunks", 9, "page"]  # fallback
    assert input_error_loc(InputError("bad", loc=("chunks", "k" * 500)))[2] == f"{'k' * 60}… (500 characters)"


def test_the_version_served_is_the_package_version(client: TestClient) -> None:
    assert client.get("/healthz").json()["version"] == contextwright.__version__
    assert client.get("/openapi.json").json()["info"]["version"] == contextwright.__version__


def test_no_service_module_imports_the_package_root() -> None:
    """``import contextwright`` or a name from its ``__init__`` would point up the layers;
    ``from contextwright import tokens`` (a module) does not."""
    for path in sorted(SERVICE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                assert all(a.name != "contextwright" for a in node.names), path.name
            elif isinstance(node, ast.ImportFrom) and node.module == "contextwright" and not node.level:
                for alias in node.names:
                    assert importlib.util.find_spec(f"contextwright.{alias.name}"), (path.name, alias.name)


def test_a_stage_constructor_names_its_setting_in_loc() -> None:
    """The stages' own checks carry ``loc`` too; through a config it is prefixed with the stage."""
    import pytest

    from contextwright.assembly.presets import pipeline_from_config
    from contextwright.core.errors import ConfigError
    from contextwright.stages.budget import TokenBudget
    from contextwright.stages.expand import ExpandNeighbors
    from contextwright.stages.filter import TopKFilter

    cases = [
        (lambda: TopKFilter(k=-1), ("k",)),
        (lambda: TokenBudget(policy="most"), ("policy",)),
        (lambda: ExpandNeighbors(factor=2.0), ("factor",)),
    ]
    for build, loc in cases:
        with pytest.raises(ConfigError) as err:
            build()
        assert err.value.loc == loc
    config = {"stages": [{"type": "exact_dedup"}, {"type": "top_k", "k": -1}]}
    with pytest.raises(ConfigError) as err:
        pipeline_from_config(config)
    assert err.value.loc == ("stages", 1, "k")


@pytest.mark.parametrize(
    ("extra", "loc", "detail"),
    [
        # the format's error comes from building it (no pre-check): its loc names the field, with
        # or without a config beside it
        ({"format": {"type": "yaml"}, "config": {"preset": "qa"}}, ["body", "format"], "unknown format type"),
        ({"format": {"type": "yaml"}, "config": _stages()}, ["body", "format"], "unknown format type"),
        ({"config": {"stages": [], "format": "yaml"}}, ["body", "config"], "unknown format 'yaml'"),
        ({"tokenizer": "o300k_base"}, ["body", "tokenizer"], "o300k_base"),
    ],
)
def test_an_option_is_checked_where_it_is_used_and_its_loc_names_the_field(
    client: TestClient, extra: dict[str, Any], loc: list[Any], detail: str
) -> None:
    r = client.post("/v1/assemble", json={"query": "q", "chunks": CHUNKS, **extra})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["loc"] == loc
    assert detail in body["detail"]
