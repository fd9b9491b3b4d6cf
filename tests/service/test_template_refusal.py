"""A request template is refused before anything compiles it, and every template failure is a 4xx
(issue 31, item 3).

``TemplateFormat.__post_init__`` compiled the template before the service's vetting refused
templates, and Jinja's parser raised RecursionError on deep nesting (only TemplateSyntaxError was
caught): 9 of 10 nesting shapes gave a 500 with 177 KB of traceback in the log. Now a server with
templates disabled reads the request's format specs as data and refuses them first, and on a
server that allows them, or in the library, each failure is a ConfigError naming the limit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")

from fastapi.testclient import TestClient

from contextwright import ConfigError, assemble
from contextwright.render.format import TemplateFormat
from contextwright.service import ServiceConfig, create_app

CHUNKS = [{"id": "a", "text": "Hello world. This is fine.", "score": 0.5}]
N = 5000
SHAPES = {
    "parentheses": "{{" + "(" * N + "1" + ")" * N + "}}",
    "lists": "{{" + "[" * N + "1" + "]" * N + "}}",
    "dicts": "{{" + "{'a':" * N + "1" + "}" * N + "}}",
    "unary minus": "{{" + "-" * N + "1}}",
    "not": "{{" + "not " * N + "1}}",
    "calls": "{{" + "f(" * N + ")" * N + "}}",
    "filters": "{{ 1" + "|abs" * N + "}}",
    "attributes": "{{ a" + ".b" * N + "}}",
    "additions": "{{ 1" + "+1" * N + "}}",
    "tuples": "{{" + "(1," * N + ")" * N + "}}",
    "ifs": "{% if 1 %}" * 500 + "x" + "{% endif %}" * 500,
    "withs": "{% with a=1 %}" * 300 + "{% endwith %}" * 300,
    "25 loops": "{% for x in [1] %}" * 25 + "{{x}}" + "{% endfor %}" * 25,
    "200 loops": "{% for x in [1] %}" * 200 + "{{x}}" + "{% endfor %}" * 200,
    "recursive macro": "{% macro m(n) %}{{ m(n+1) }}{% endmacro %}{{ m(0) }}",
    "truncate's assert": "{% for b in blocks %}{{ b.text|truncate(5, true, 'x' * 1000000) }}{% endfor %}",
}


def _body(template: str, via: str) -> dict[str, Any]:
    spec = {"type": "template", "template": template}
    body: dict[str, Any] = {"query": "q", "budget": 100, "chunks": CHUNKS}
    if via == "format":
        body["format"] = spec
    else:
        body["config"] = {"format": spec}
    return body


@pytest.fixture(scope="module")
def refusing() -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(budget=300)), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="module")
def allowing() -> Iterator[TestClient]:
    app = create_app(ServiceConfig(budget=300, allow_templates=True))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("via", ["format", "config"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_server_without_templates_refuses_every_shape_before_compiling(
    refusing: TestClient, shape: str, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = _spy_on_compile(monkeypatch)
    r = refusing.post("/v1/assemble", json=_body(SHAPES[shape], via))
    assert r.status_code == 422, r.text[:300]
    problem = r.json()
    assert problem["code"] == "template-not-allowed"
    assert problem["loc"] == (["body", "format"] if via == "format" else ["body", "config", "format"])
    assert compiled == []  # refused as data: the template never reached Jinja


def _spy_on_compile(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources TemplateFormat compiles from now on."""
    from contextwright.render import format as format_module

    compiled: list[str] = []
    real = format_module.compile_template

    def spy(source: str) -> Any:
        compiled.append(source)
        return real(source)

    monkeypatch.setattr(format_module, "compile_template", spy)
    return compiled


def test_the_spy_sees_what_a_server_with_templates_compiles(
    allowing: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = _spy_on_compile(monkeypatch)
    r = allowing.post("/v1/assemble", json=_body("{% for b in blocks %}{{ b.text }}{% endfor %}", "format"))
    assert r.status_code == 200 and compiled


@pytest.mark.parametrize("spelling", ["template", " Template", "TEMPLATE"])
def test_every_spelling_of_the_type_is_refused(refusing: TestClient, spelling: str) -> None:
    body = {
        "query": "q",
        "budget": 100,
        "chunks": CHUNKS,
        "format": {"type": spelling, "template": "{{ 1 }}"},
    }
    r = refusing.post("/v1/assemble", json=body)
    assert r.status_code == 422 and r.json()["code"] in {"template-not-allowed", "invalid-option"}, r.text


@pytest.mark.parametrize("via", ["format", "config"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_server_with_templates_answers_every_shape_with_a_4xx_naming_the_limit(
    allowing: TestClient, shape: str, via: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        r = allowing.post("/v1/assemble", json=_body(SHAPES[shape], via))
    assert r.status_code == 422, r.text[:300]
    detail = r.json()["detail"]
    assert "TemplateFormat" in detail and len(detail) < 600
    assert any(word in detail for word in ("limit", "recursion", "refuses", "nests", "max_steps")), detail
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_library_raises_config_error_for_every_shape(shape: str) -> None:
    with pytest.raises(ConfigError, match="TemplateFormat"):
        assemble("q", CHUNKS, budget=100, format=TemplateFormat(template=SHAPES[shape]))


def test_truncate_with_an_ellipsis_longer_than_the_length_is_a_config_error() -> None:
    fmt = TemplateFormat(
        template="{% for b in blocks %}{{ b.text|truncate(5, true, 'x' * 1000000) }}{% endfor %}"
    )
    with pytest.raises(ConfigError, match="filter with arguments it refuses: expected length >= 1000000"):
        assemble("q", CHUNKS, budget=100, format=fmt)


def test_an_unhandled_error_logs_only_its_innermost_frames() -> None:
    import traceback

    from contextwright.service.problems import LOGGED_FRAMES, _last_frames

    def down(n: int) -> None:
        if n == 0:
            raise RuntimeError("bottom")
        down(n - 1)

    try:
        down(500)
    except RuntimeError as exc:
        tb = _last_frames(exc.__traceback__)
        lines = traceback.format_exception(type(exc), exc, tb)
    assert len(traceback.extract_tb(tb)) == LOGGED_FRAMES
    assert "bottom" in lines[-1] and len("".join(lines)) < 5_000
