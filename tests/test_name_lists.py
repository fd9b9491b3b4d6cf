"""Every name list the CLI and the service show is built from its registry, and every name gets one "did you mean"."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.cli.base import FORMAT_HELP, ORDER_HELP
from contextwright.render import format as formats
from contextwright.stages import budget, order
from contextwright.stages.base import is_order_stage, registered_stages

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from contextwright.service import (
    ServiceConfig,
    create_app,
    schemas,
)

runner = CliRunner()
CHUNKS = [{"id": "a", "text": "X-rays were discovered by Wilhelm Roentgen in 1895.", "score": 0.9}]


def test_format_names_are_the_format_registry_less_template() -> None:
    assert set(formats.format_names()) == set(formats._FORMATS) - {"template"}
    assert "lean" in formats.format_names()
    assert set(typing.get_args(schemas.FormatName)) == set(formats.format_names())
    assert ", ".join(formats.format_names()) + "." == FORMAT_HELP


def test_order_names_reach_every_registered_order_stage() -> None:
    stages = {cls for cls in registered_stages().values() if is_order_stage(cls)}
    classes = order.order_classes()
    assert set(classes.values()) == stages  # prior_order included: it was unreachable through order=
    for cls in stages:
        assert classes[cls.name] is cls
    assert set(typing.get_args(schemas.OrderName)) == set(classes)
    assert ", ".join(order.order_names()) + "." == ORDER_HELP
    assert len(order.order_names()) == len(stages)
    assert isinstance(order.order_stage("prior_order"), order.PriorOrder)
    assert isinstance(order.order_stage("Prior"), order.PriorOrder)


def test_every_policy_of_the_type_is_accepted_and_nothing_else() -> None:
    from contextwright.core.errors import ConfigError

    for policy in typing.get_args(budget.Policy):
        assert budget.TokenBudget(policy=policy).policy == policy
    with pytest.raises(ConfigError, match="Did you mean 'greedy'"):
        budget.TokenBudget(policy="Greedy")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flag", "value", "suggestion"),
    [
        ("--preset", "QA", "'qa'"),
        ("--preset", "fruga", "'frugal'"),
        ("--order", "bookends", "'bookend'"),
        ("--order", "lost-in-middle", "'lost_in_the_middle'"),
        ("--format", "numberd", "'numbered'"),
        ("--format", "LEAN", "'lean'"),
        ("--tokenizer", "cl100k", "'cl100k_base'"),
        ("--model", "gpt-4o-mni", "'gpt-4o-mini'"),
    ],
)
def test_every_cli_name_gets_a_suggestion(flag: str, value: str, suggestion: str, tmp_path: Any) -> None:
    import json

    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(CHUNKS), encoding="utf-8")
    args = ["assemble", str(path), "-q", "who?", flag, value]
    if flag != "--model":
        args += ["--budget", "300"]
    out = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert out.exit_code == 2, out.output
    assert f"Did you mean {suggestion}" in out.stderr.replace("\n", " ")


@pytest.fixture(scope="module")
def client() -> Any:
    with TestClient(create_app(ServiceConfig(budget=500))) as c:
        yield c


@pytest.mark.parametrize("name", formats.format_names())
def test_the_service_accepts_every_format_the_library_has(client: Any, name: str) -> None:
    r = client.post("/v1/assemble", json={"query": "who?", "chunks": CHUNKS, "format": name})
    assert r.status_code == 200, r.text


def test_the_service_accepts_every_order_name(client: Any) -> None:
    for name in order.order_classes():
        r = client.post("/v1/assemble", json={"query": "who?", "chunks": CHUNKS, "order": name})
        assert r.status_code == 200, (name, r.text)


@pytest.mark.parametrize(
    ("field", "value", "suggestion"),
    [("format", "numberd", "'numbered'"), ("order", "Bookend", "'bookend'"), ("preset", "QA", "'qa'")],
)
def test_the_service_names_every_valid_value_and_suggests_one(
    client: Any, field: str, value: str, suggestion: str
) -> None:
    r = client.post("/v1/assemble", json={"query": "who?", "chunks": CHUNKS, field: value})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert "more)" not in detail  # no valid name hidden behind "(and 1 more)"
    assert f"got {value!r}. Did you mean {suggestion}?" in detail
    if field == "format":
        assert "'lean'" in detail
