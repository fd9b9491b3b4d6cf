"""Template abuse is a ConfigError, bounded in output, steps and time (issue 11, item 8)."""

from __future__ import annotations

import resource
import time

import pytest

from contextwright import Assembler, assemble
from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.render.format import TemplateFormat

CHUNKS = [{"id": "a", "text": "Paris.", "score": 2}, {"id": "b", "text": "Berlin.", "score": 1}]
EACH = "{% for b in blocks %}{{ b.label }} {{ b.text }}\n{% endfor %}"


def render(template: str, **settings: object) -> str:
    return TemplateFormat(template=template, **settings).render([Chunk("Paris.", id="a")])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ blocks.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "steps|recursion"),
        ("{% for i in range(10**9) %}{% endfor %}", "range|size"),
        ("{{ 'a' * 10**9 }}", "output|size"),
        ("{{ [1] * 10**8 }}", "output|size"),
        ("{{ 2 ** 100000000 }}", "size|power"),
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"),
        ("{{ '%999999999s' % 'x' }}", "size|width"),
        ("{{ '{:>999999999}'.format('x') }}", "size|width"),
        ("{{ 'x'|indent(999999999, true) }}", "size|argument"),
        ("{{ 'x'|center(999999999) }}", "size|argument"),
        ("{{ lipsum(10**6) }}", "lipsum|undefined"),
        ("{% for i in range(99999) %}{{ 'x' * 99 }}{% endfor %}", "output"),
        ("{{ undefined_thing.attr }}", "undefined"),
    ],
)
def test_template_abuse_is_a_config_error_quickly_and_without_memory_growth(
    template: str, message: str
) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=rf"(?i)TemplateFormat.*({message})"):
        render(template)
    assert time.perf_counter() - start < 3.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: < 200 MB


def test_template_time_limit_stops_rendering() -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="time"):
        render(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            max_steps=10**8,
            timeout_s=0.3,
        )
    assert time.perf_counter() - start < 1.5


def test_template_limits_are_bounded_settings() -> None:
    with pytest.raises(ConfigError, match="max_output_chars"):
        TemplateFormat(template=EACH, max_output_chars=10**12)
    with pytest.raises(ConfigError, match="max_steps"):
        TemplateFormat(template=EACH, max_steps=10**12)
    with pytest.raises(ConfigError, match="timeout_s"):
        TemplateFormat(template=EACH, timeout_s=1e9)
    with pytest.raises(ConfigError, match="template"):
        TemplateFormat(template="x" * 1_000_001)


def test_a_template_that_renders_no_block_reports_no_citation() -> None:
    ctx = assemble(
        "q", CHUNKS, budget=300, format={"type": "template", "template": "{{ blocks|length }} blocks"}
    )
    assert ctx.citations == ()
    assert {d.chunk_id: d.reason for d in ctx.report.dropped} == {"a": "not_rendered", "b": "not_rendered"}


def test_a_template_that_renders_some_blocks_cites_only_those() -> None:
    template = "{% for b in blocks %}{% if b.id == 'b' %}{{ b.label }} {{ b.text }}{% endif %}{% endfor %}"
    ctx = Assembler("qa", budget=300, format={"type": "template", "template": template}).assemble("q", CHUNKS)
    assert [c.chunk_ids for c in ctx.citations] == [("b",)]
    assert ctx.text == "[1] Berlin."


def test_an_ordinary_template_still_renders() -> None:
    ctx = assemble("q", CHUNKS, budget=300, format={"type": "template", "template": EACH})
    assert ctx.text == "[1] Paris.\n[2] Berlin." and len(ctx.citations) == 2
