"""The template sandbox checks sizes before it allocates, and its limits hold inside loops (issue 26)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
import tracemalloc

import pytest

from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.render.format import TemplateFormat

S = "{% set s = 'a' * 999999 %}"  # one value just under max_output_chars: allowed by itself
NS = "{% set ns = namespace(s='a', l=[1]) %}"

HOSTILE = {
    "concat doubling in a loop": NS
    + "{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "plus doubling in a loop": NS
    + "{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "list doubling in a loop": NS
    + "{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
    "doubling by recursion": "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s|length }}"
    "{% endif %}{% endmacro %}{{ d('a', 40) }}",
    "replace filter explosion": S + "{{ s|replace('a', s)|length }}",
    "replace method explosion": S + "{{ s.replace('a', s)|length }}",
    "replace chain": "{% set s = 'a' * 9999 %}{{ s.replace('a', s).replace('a', s)|length }}",
    "join filter explosion": S + "{{ range(99999)|join(s)|length }}",
    "join of one value many times": S + "{{ ([s] * 999)|join|length }}",
    "join method explosion": S + "{{ s.join(['x'] * 999)|length }}",
    "format repeats a field": S + "{{ ('{0}' * 1000).format(s)|length }}",
    "percent repeats a value": S + "{{ (('%s' * 1000) % ((s,) * 1000))|length }}",
    "percent with star widths": "{{ (('%*s' * 1000) % ((999999, 'x') * 1000))|length }}",
    "format with nested widths": "{{ ('{0:{1}}' * 1000).format('x', 999999)|length }}",
    "percent with precisions": "{{ (('%.99999f' * 100) % ((1.0,) * 100))|length }}",
    "format filter repeats a value": S + "{{ ('%s' * 1000)|format(*((s,) * 1000))|length }}",
    "indent of many lines": "{% set s = '\\n' * 999999 %}{{ s|indent(100)|length }}",
    "expandtabs": "{{ ('\\t' * 99999).expandtabs(99999)|length }}",
    "translate": "{{ ('a' * 99999).translate({97: 'b' * 99999})|length }}",
    "a list printed": S + "{{ [s] * 999 }}",
    "a list made a string": S + "{{ ([s] * 999)|string|length }}",
    "a macro repeats its argument": "{% macro m(s) %}"
    + "{{ s }}" * 300
    + "{% endmacro %}"
    + S
    + "{{ m(s)|length }}",
    "sum of lists": "{{ ([[1] * 999] * 9999)|sum(start=[])|length }}",
    "values kept in a list": NS
    + "{% for i in range(1000) %}{% set ns.l = ns.l + ['x'.center(999990) ~ i] %}{% endfor %}{{ ns.l|length }}",
    "values kept in variables": "".join(f"{{% set v{i} = 'x'.center(999990) ~ {i} %}}" for i in range(400)),
    "a big value made in every iteration": S
    + "{% for i in range(99999) %}{% set t = s.upper() %}{% endfor %}",
    "a big list made in every iteration": "{% for i in range(99999) %}{{ range(99999)|list|length }}{% endfor %}",
    "nested loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "big range": "{{ range(10**9)|list|length }}",
}
LIMIT_NAMED = r"TemplateFormat\b.*\b(max_output_chars|max_steps|timeout_s|range)\b.*(simplify|raise)"


def render(template: str, **settings: object) -> str:
    return TemplateFormat(template=template, **settings).render([Chunk("Paris.", id="a")])  # type: ignore[arg-type]


@pytest.mark.timeout(60)  # before the fix: gigabytes, or seconds past timeout_s
@pytest.mark.parametrize("template", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_templates_fail_fast_with_a_config_error_and_bounded_memory(template: str) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=LIMIT_NAMED):
        render(template)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"{elapsed:.2f} s"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 100_000  # KiB
    tracemalloc.start()  # again, with every allocation traced (slower, so not timed)
    try:
        with pytest.raises(ConfigError, match=LIMIT_NAMED):
            render(template)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_a_sum_of_lists_is_linear() -> None:
    start = time.perf_counter()
    assert render("{{ ([[1]] * 99999)|sum(start=[])|length }}") == "99999"  # sum() itself is quadratic
    assert time.perf_counter() - start < 1.0


def test_the_time_limit_holds_inside_a_loop_of_slow_steps() -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"timeout_s"):
        render(S + "{% for i in range(99999) %}{% if s.count('b') %}{% endif %}{% endfor %}", timeout_s=0.3)
    assert time.perf_counter() - start < 0.8


def test_the_error_names_the_limit_its_value_and_the_fix() -> None:
    with pytest.raises(ConfigError) as info:
        render(S + "{{ s.replace('a', s) }}", max_output_chars=2_000_000)
    message = str(info.value)
    assert "TemplateFormat.template" in message and "max_output_chars (2,000,000)" in message
    assert "simplify the template or raise TemplateFormat.max_output_chars" in message


BENIGN = [
    "{% for b in blocks %}{{ b.label }} {{ b.text|replace('\\n', ' ')|truncate(40) }}\n{% endfor %}",
    "{{ blocks|map(attribute='text')|join('\\n---\\n')|indent(2, true) }}",
    "{% for b in blocks %}{{ '{:>4} {}'.format(b.n, b.title) }} {{ '%s|%s' % (b.id, b.text|length) }}\n{% endfor %}",
    "{% set ns = namespace(out='') %}{% for b in blocks %}{% set ns.out = ns.out ~ b.text ~ '\\n' %}{% endfor %}"
    "{{ ns.out|wordwrap(30) }}",
    "{{ (blocks|map(attribute='text')|list + [query])|tojson }}{{ [[1, 2], [3]]|sum(start=[]) }}",
    "{% for b in blocks %}{{ b.text.split()|join(' ')|center(60)|title }}{{ ('x' ~ b.n) * 3 }}\n{% endfor %}",
]


@pytest.mark.parametrize("template", BENIGN)
def test_ordinary_templates_render_as_in_jinja2(template: str) -> None:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    chunks = [
        Chunk(f"Text {i} of the document,\nwith a second line about {i * 7}.", id=f"c{i}", title=f"T{i}")
        for i in range(60)
    ]
    fmt = TemplateFormat(template=template, escape_as="none")
    ours = fmt.render(chunks, query="what?")
    blocks = [
        {"n": n, "label": f"[{n}]", "text": c.text, "id": c.id, "title": c.title}
        for n, c in enumerate(chunks, 1)
    ]
    plain = ImmutableSandboxedEnvironment(keep_trailing_newline=True).from_string(template)
    assert ours == plain.render(blocks=blocks, query="what?").rstrip("\n")  # a context ends without one


def test_the_limit_error_is_built_with_the_tracer_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the deadline the tracer stops any Python call, 1 in 64 of them: one suite run got the
    internal ``_Stop`` from inside ``ConfigError.__init__`` instead of the ``ConfigError``."""
    import sys

    from contextwright.render import sandbox

    seen: list[object] = []
    message = sandbox._message

    def spy(stop: object, limits: object) -> str:
        seen.append(sys.gettrace())
        return message(stop, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "_message", spy)
    before = sys.gettrace()
    # Stopped by the sandbox's own checks, not by the tracer (CPython turns off a trace function
    # that raises): the tracer was still on when the error was built.
    for template, limit in (
        ("{% for i in range(999) %}{{ 'x' * 99 }}{% endfor %}", {"max_output_chars": 1000}),
        ("{{ range(99999)|map('string')|map('upper')|list|length }}", {"timeout_s": 0.01}),
    ):
        with pytest.raises(ConfigError, match=r"max_output_chars|timeout_s"):
            render(template, **limit)
    assert seen == [before, before]  # the caller's own trace (a debugger's, coverage's), not the sandbox's


def test_the_time_limit_holds_inside_python_filters() -> None:
    start = time.perf_counter()  # no template line runs while map() does its 200,000 calls
    with pytest.raises(ConfigError, match=r"timeout_s \(0\.2 s\)"):
        render("{{ range(99999)|map('string')|map('upper')|list|length }}", timeout_s=0.2)
    assert time.perf_counter() - start < 0.6


RECURSIVE = "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{% else %}bottom{% endif %}{% endmacro %}"


def test_template_calls_nest_to_100_and_a_loop_of_calls_is_not_nesting() -> None:
    assert render(RECURSIVE + "{{ m(90) }}").strip() == "bottom"
    with pytest.raises(ConfigError, match=r"nests template calls more than 100 deep \(recursion"):
        render(RECURSIVE + "{{ m(101) }}")
    # 5,000 calls one after another, caller() blocks, and a recursive loop: each returns first
    calls = (
        "{% macro m(x) %}{{ x }}{% endmacro %}{% for i in range(5000) %}{{ m(i) if i == 4999 }}{% endfor %}"
    )
    assert render(calls).strip() == "4999"
    wrap = "{% macro w() %}<{{ caller() }}>{% endmacro %}"
    assert (
        render(wrap + "{% for i in range(2000) %}{% call w() %}{% endcall %}{% endfor %}").count("<>") == 2000
    )
    tree = "{% set ns = namespace(t=[]) %}{% for i in range(60) %}{% set ns.t = [ns.t] %}{% endfor %}"
    assert render(tree + "{% for x in ns.t recursive %}.{{ loop(x) }}{% endfor %}").count(".") == 60


def test_a_host_that_raised_the_recursion_limit_gets_config_errors_not_a_crash() -> None:
    """With the limit at 200,000, one template crashed the process (SIGSEGV) by recursing through a
    macro or by nesting an expression 45,000 attributes deep: both overflow the C stack before
    RecursionError. Run in a child process, so a crash fails this test, not the test run."""
    script = (
        "import sys\n"
        "sys.setrecursionlimit(200_000)\n"
        "from contextwright.core.errors import ConfigError\n"
        "from contextwright.model.chunk import Chunk\n"
        "from contextwright.render.format import TemplateFormat\n"
        "for source in ('{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}', '{{ x' + '.a' * 45000 + ' }}',\n"
        "               '{{ 1' + '+1' * 45000 + ' }}'):\n"
        "    try:\n"
        "        TemplateFormat(template=source).render([Chunk('Paris.', id='a')])\n"
        "    except ConfigError as exc:\n"
        "        print(str(exc)[:80])\n"
        "print(sys.getrecursionlimit())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("TemplateFormat.template: the template nests template calls more than 100")
    assert lines[1].startswith("TemplateFormat.template nests too deeply to compile")
    assert lines[2].startswith("TemplateFormat.template nests too deeply to compile")
    assert lines[3] == "200000"  # the host's limit is left as it was
