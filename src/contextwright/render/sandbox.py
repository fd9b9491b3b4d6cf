"""A bounded Jinja2 sandbox for user templates.

Jinja2's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` stops a
template from reaching Python internals, but not from burning CPU and memory:
``{{ 'a' * 10**9 }}`` allocates a gigabyte, a value doubled in a loop
(``{% set ns.s = ns.s ~ ns.s %}``) reaches gigabytes in 30 steps, and nested
``range(100000)`` loops run for hours. This environment bounds every way a
template can grow, and checks sizes *before* it allocates (issue 26):

* **Size.** Every operation that can grow a value is given its result's size
  before it runs and refused when that is over ``max_output_chars``:
  concatenation (``~``, ``+``), repetition (``*``), ``%`` and ``format``
  (each field counted at its argument's size), ``replace`` (its occurrences
  counted first), ``join`` (its items' sizes), ``indent``, ``wordwrap``,
  ``expandtabs``, ``translate``, ``batch``/``slice`` fill values, ``sum`` of
  lists (made linear), the body of a macro or ``{% set %}`` block, and every
  value written out or made a string (a list is as large as the text of its
  items). Integer arguments and format widths over ``max_output_chars`` are
  refused; ``range`` is capped by Jinja2 (100,000 items); powers and products
  of integers are capped at 10,000 bits. An operation whose result is at most
  a small constant multiple of its input (escaping, case, JSON) is checked
  right after it runs.
* **Total.** Every value an operation makes counts towards a total of
  ``32 × max_output_chars`` characters (a list item counts 8), so a template
  cannot keep many large values alive, or make a large one in every iteration.
* **Steps.** The template is compiled to Python; a trace function counts the
  lines it executes (every loop iteration executes at least one) and stops at
  ``max_steps``.
* **Depth.** The same trace function stops template calls nested more than
  100 deep (a macro calling itself, a recursive loop, ``caller()``); where
  the host process raised ``sys.setrecursionlimit`` past 4,000, a second one
  stops the compiler nesting more than 900 Python frames (an expression or
  blocks nested hundreds of levels). Both stop well inside the C stack:
  without them, a host that raised the limit to 100,000 let one template
  crash the process (a segmentation fault) instead of raising
  ``RecursionError``.
* **Time.** The same trace function, and every checked operation, compare the
  clock with ``timeout_s``: rendering stops inside loops and inside Python
  filters, in the thread that runs it.
* **Output.** Rendering is streamed; it stops when the output passes
  ``max_output_chars``.

Every violation, and every runtime error of the template, raises
:class:`~contextwright.core.errors.ConfigError` (HTTP 422 in the service) naming
``TemplateFormat.template``, the limit with its value, and the fix.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from typing import Any

from contextwright.core.errors import ConfigError, MissingDependencyError

__all__ = ["TemplateLimits", "compile_template", "render_template"]

_MAX_INT_BITS = 10_000
_WIDTH = re.compile(r"\d{6,}")  # a format width/precision of 6+ digits
_NUMBER = re.compile(r"\d{1,9}")
_TOTAL = 32  # the total of values made, in max_output_chars
_ITEM = 8  # what a list item counts in that total
_MAX_DEPTH = 100  # template calls nested in a render (macros, recursive loops, caller())
_MAX_COMPILE_FRAMES = 900  # Python frames nested while Jinja2 parses and generates code
_SAFE_RECURSION_LIMIT = 4_000  # at most this, RecursionError comes well inside the C stack
_WHAT = {
    "max_output_chars": "the output size limit",
    "max_steps": "the step limit",
    "timeout_s": "the time limit",
}


class TemplateLimits:
    """The bounds of one render (see the module docstring)."""

    __slots__ = ("max_output_chars", "max_steps", "timeout_s")

    def __init__(self, *, max_output_chars: int, max_steps: int, timeout_s: float) -> None:
        self.max_output_chars = max_output_chars
        self.max_steps = max_steps
        self.timeout_s = timeout_s


class _Stop(BaseException):
    """A limit was hit during a render. Not an ``Exception``: no Jinja2 or filter code that catches
    ``Exception`` (or ``ValueError``) can swallow it and go on with tracing switched off."""

    def __init__(self, what: str, limit: str | None = "max_output_chars") -> None:
        super().__init__(what)
        self.what = what
        self.limit = limit


class _Later(Exception):
    """A check failed while Jinja2 folds constants at compile time: it gives up folding, and the
    render checks again under the template's own limits."""


def _stop(what: str, limit: str | None = "max_output_chars") -> BaseException:
    return _Stop(what, limit) if _current() is not None else _Later(what)


class _Render:
    """The render in progress on this thread: its limits, deadline and the total made so far."""

    __slots__ = ("deadline", "limits", "made", "total")

    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.deadline = time.perf_counter() + limits.timeout_s
        self.made = 0
        self.total = _TOTAL * limits.max_output_chars


_state = threading.local()
_DEFAULT = TemplateLimits(max_output_chars=1_000_000, max_steps=1_000_000, timeout_s=2.0)


def _current() -> _Render | None:
    return getattr(_state, "render", None)


def _limit() -> int:
    render = _current()
    return render.limits.max_output_chars if render is not None else _DEFAULT.max_output_chars


def _text_size(value: Any, cap: int) -> int:
    """About how many characters ``value`` becomes as a string (a list: its items' text), counted
    only until it passes ``cap``, so the count itself is bounded."""
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, (list, tuple, set, frozenset, dict)):
            total += 2 + 2 * len(v)
            if total <= cap:
                stack.extend(chain(v.keys(), v.values()) if isinstance(v, dict) else v)
        elif isinstance(v, (bytes, bytearray)):
            total += 4 * len(v)
        elif isinstance(v, int):  # digits (numbers are capped at 10,000 bits, under str()'s own limit)
            total += len(str(v)) if v.bit_length() <= _MAX_INT_BITS else v.bit_length() // 3 + 2
        elif isinstance(v, range):
            total += len(v) * (len(str(max(abs(v.start), abs(v.stop)))) + 2)
        elif type(v).__name__ == "Namespace":
            stack.append(getattr(v, "_Namespace__attrs", {}))
        else:
            total += 16
        if total > cap:
            break
    return total


def _made_size(value: Any) -> int:
    """What a new value counts towards the total: characters, or 8 a list item."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return _ITEM * len(value)
    return 1


def _precheck(size: int, what: str) -> None:
    """Refuse before allocating: an operation would make ``size`` characters."""
    if size > _limit():
        raise _stop(f"{what} {size:,} characters")


def _admit(value: Any) -> Any:
    """Count a value just made against the limits (size, total, time); return it."""
    size = _made_size(value)
    limit = _limit()
    if size > limit * (_ITEM if isinstance(value, (list, tuple, set, frozenset, dict)) else 1):
        raise _stop(f"builds a value of {size:,} characters or list items")
    render = _current()
    if render is not None:
        render.made += size
        if render.made > render.total:
            raise _stop(
                f"makes values of more than {render.total:,} characters in all ({_TOTAL} times the limit)"
            )
        if time.perf_counter() > render.deadline:
            raise _stop("runs longer than its time limit", "timeout_s")
    return value


def _check_args(args: Iterable[Any]) -> None:
    limit = _limit()
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > limit:
            raise _stop(f"passes the argument {a:,}")


def _check_width(template: str) -> None:
    """A format string (``%``, ``format``) may not ask for a width or precision over the limit."""
    if ("%" in template or "{" in template) and _WIDTH.search(template):
        raise _stop("uses a format width")


def _field_size(template: str, args: Iterable[Any]) -> int:
    """The most text one format field of ``template`` can take from ``args``: an argument's text,
    or a width or precision, written in the template or taken from an argument (``%*s``,
    ``{0:{1}}``)."""
    limit = _limit()
    widest = max((int(n) for n in _NUMBER.findall(template)), default=0)
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool):
            widest = max(widest, abs(a))
        elif isinstance(a, str) and a.isdigit() and len(a) < 10:
            widest = max(widest, int(a))
        widest = max(widest, _text_size(a, limit))
        if widest > limit:
            break
    return widest


def _percent_size(left: str, right: Any) -> int:
    args = right.values() if isinstance(right, Mapping) else right if isinstance(right, tuple) else (right,)
    return len(left) + left.count("%") * _field_size(left, args)


def _join_size(items: list[Any], sep: str) -> int:
    limit = _limit()
    total = len(sep) * max(0, len(items) - 1)
    for item in items:
        total += _text_size(item, limit)
        if total > limit:
            break
    return total


def _replace_size(s: str, old: str, new: str, count: int | None = None) -> int:
    times = s.count(old) if old else len(s) + 1
    if count is not None and count >= 0:
        times = min(times, count)
    return len(s) + max(0, len(new) - len(old)) * times


def _str_method_size(owner: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int | None:
    """The result size of ``owner.name(*args)`` for the str methods that can grow, before they run."""
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = args[2] if len(args) > 2 and isinstance(args[2], int) else None
        return _replace_size(owner, args[0], args[1], count)
    if name == "join" and args and isinstance(args[0], list):
        return _join_size(args[0], owner)
    if name in ("format", "format_map"):
        values = chain(args, kwargs.values(), *(a.values() for a in args if isinstance(a, Mapping)))
        return len(owner) + owner.count("{") * _field_size(owner, values)
    if name == "expandtabs":
        size = args[0] if args and isinstance(args[0], int) else kwargs.get("tabsize", 8)
        return len(owner) + owner.count("\t") * max(0, int(size))
    if name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        return len(owner) * max(1, longest)
    return None


def _filter_size(name: str, value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int | None:
    """The result size of the filters that can grow by more than a constant factor, before they run."""
    limit = _limit()
    text = value if isinstance(value, str) else None
    if name == "replace" and text is not None and len(args) >= 2:
        count = args[2] if len(args) > 2 and isinstance(args[2], int) else kwargs.get("count")
        return _replace_size(text, str(args[0]), str(args[1]), count if isinstance(count, int) else None)
    if name == "format" and text is not None:
        _check_width(text)
        return _percent_size(text, tuple(args) or dict(kwargs))
    if name == "indent" and text is not None:
        width = args[0] if args else kwargs.get("width", 4)
        unit = len(width) if isinstance(width, str) else max(0, int(width))
        return len(text) + (text.count("\n") + 1) * unit
    if name == "wordwrap" and text is not None:
        width = args[0] if args else kwargs.get("width", 79)
        wrap = args[2] if len(args) > 2 else kwargs.get("wrapstring")
        unit = len(wrap) if isinstance(wrap, str) else 1
        spaces = sum(text.count(c) for c in " \t\n\r\x0b\x0c-")  # a break replaces one, or follows "-"
        return len(text) + spaces * unit + ((len(text) - spaces) // max(1, int(width)) + 1) * unit
    if name in ("batch", "slice") and args:
        fill = args[1] if len(args) > 1 else kwargs.get("fill_with")
        return _text_size(value, limit) + abs(int(args[0])) * _text_size(fill, limit)
    if name in ("string", "pprint", "tojson", "xmlattr", "urlencode", "escape", "e", "forceescape"):
        return _text_size(value, limit)
    return None


def _concat(markup: bool, parts: tuple[Any, ...]) -> str:
    """``a ~ b ~ ...``: sized first, then joined as Jinja2 joins them."""
    from jinja2.runtime import markup_join, str_join

    _precheck(_join_size(list(parts), ""), "concatenates")
    return _admit(markup_join(parts) if markup else str_join(parts))  # type: ignore[no-any-return]


def _sized_concat_generator() -> Any:
    """Jinja2's code generator, with ``~`` compiled to the environment's sized join."""
    from jinja2.compiler import CodeGenerator

    class SizedConcat(CodeGenerator):  # type: ignore[misc]
        """``~`` goes through the environment, which sizes it before it joins."""

        def visit_Concat(self, node: Any, frame: Any) -> None:
            if frame.eval_ctx.volatile:
                markup = "context.eval_ctx.autoescape"
            else:
                markup = "True" if frame.eval_ctx.autoescape else "False"
            self.write(f"environment.sized_concat({markup}, (")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    return SizedConcat


@functools.cache
def _environment() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise MissingDependencyError("jinja2 is needed for templates: pip install jinja2") from exc

    class BoundedEnvironment(ImmutableSandboxedEnvironment):  # type: ignore[misc]
        code_generator_class = _sized_concat_generator()
        intercepted_binops = frozenset({"+", "*", "**", "%"})
        sized_concat = staticmethod(_concat)

        def concat(self, pieces: Iterable[str]) -> str:  # the body of a macro, set block or filter block
            parts = list(pieces)
            _precheck(sum(map(len, parts)), "builds a block of")
            return _admit("".join(parts))  # type: ignore[no-any-return]

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _binop_precheck(operator, left, right)
            if operator == "%":
                return _admit(left % right)
            return _admit(super().call_binop(context, operator, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_args(args)
            _check_args(kwargs.values())
            owner = getattr(__obj, "__self__", None)
            if isinstance(owner, str):
                name = getattr(__obj, "__name__", "")
                if name == "join" and args:
                    args = (list(args[0]), *args[1:])  # sized, then joined: an iterator is read once
                size = _str_method_size(owner, name, args, kwargs)
                if size is not None:
                    _precheck(size, "builds a string of")
            return _admit(super().call(__context, __obj, *args, **kwargs))

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            owner = getattr(value, "__self__", None)
            if wrapped is None or not isinstance(owner, str):
                return wrapped
            _check_width(owner)  # "{:>999999999}".format(...)
            name = getattr(value, "__name__", "format")

            def sized(*args: Any, **kwargs: Any) -> Any:
                _precheck(_str_method_size(owner, name, args, kwargs) or 0, "formats a string of")
                return wrapped(*args, **kwargs)

            return sized

    env = BoundedEnvironment(autoescape=False, keep_trailing_newline=True, finalize=_written)
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    for name, flt in list(env.filters.items()):
        env.filters[name] = _guard_filter(name, flt)
    return env


def _binop_precheck(operator: str, left: Any, right: Any) -> None:
    """Refuse ``left <operator> right`` before it runs when its result would be too large."""
    limit = _limit()
    sequences = (str, list, tuple)
    numbers = isinstance(left, int) and isinstance(right, int)
    if operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        if len(left) + len(right) > limit:
            raise _stop(f"concatenates to {len(left) + len(right):,} characters or items")
    elif operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, sequences) and isinstance(times, int) and len(seq) * times > limit:
                raise _stop(f"repeats a sequence to {len(seq) * times:,} characters or items")
        if numbers and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
            raise _stop(
                f"multiplies numbers of more than {_MAX_INT_BITS:,} bits (the number size limit)", None
            )
    elif operator == "**" and numbers and right > 0:
        if max(1, abs(left).bit_length()) * right > _MAX_INT_BITS:
            raise _stop(f"computes a power of more than {_MAX_INT_BITS:,} bits (the number size limit)", None)
    elif operator == "%" and isinstance(left, str):
        _check_width(left)
        _precheck(_percent_size(left, right), "formats a string of")


def _written(value: Any) -> Any:
    """Every ``{{ value }}``, before it is made a string: its text must fit."""
    if not isinstance(value, str):
        _precheck(_text_size(value, _limit()), "writes a value of")
    return value


def _guard_filter(name: str, flt: Callable[..., Any]) -> Callable[..., Any]:
    takes_context = getattr(flt, "jinja_pass_arg", None) is not None  # eval context, context or environment

    @functools.wraps(flt)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        head, value, rest = (args[:1], args[1], args[2:]) if takes_context else ((), args[0], args[1:])
        _check_args(rest)
        _check_args(kwargs.values())
        if name == "join":
            return _join(head, value, rest, kwargs, flt)
        if name == "sum":
            return _sum(head, value, rest, kwargs, flt)
        size = _filter_size(name, value, rest, kwargs)
        if size is not None:
            _precheck(size, f"makes, with the filter {name!r}, a value of")
        return _admit(flt(*args, **kwargs))

    return guarded


def _items(env_or_ctx: Any, value: Any, attribute: Any) -> list[Any]:
    from jinja2.filters import make_attrgetter

    items = list(value)
    if attribute is not None:
        env = getattr(env_or_ctx, "environment", env_or_ctx)
        getter = make_attrgetter(env, attribute)
        items = [getter(item) for item in items]
    return items


def _join(head: tuple[Any, ...], value: Any, rest: tuple[Any, ...], kwargs: dict[str, Any], flt: Any) -> Any:
    sep = rest[0] if rest else kwargs.get("d", "")
    items = _items(head[0], value, rest[1] if len(rest) > 1 else kwargs.get("attribute"))
    _precheck(_join_size(items, str(sep)), "joins to")
    return _admit(flt(*head, items, sep))


def _sum(head: tuple[Any, ...], value: Any, rest: tuple[Any, ...], kwargs: dict[str, Any], flt: Any) -> Any:
    attribute = rest[0] if rest else kwargs.get("attribute")
    start = rest[1] if len(rest) > 1 else kwargs.get("start", 0)
    items = _items(head[0], value, attribute)
    if isinstance(start, (list, tuple)) and all(type(i) is type(start) for i in items):
        size = len(start) + sum(map(len, items))  # lists: joined in linear time, not sum()'s quadratic one
        if size > _limit():
            raise _stop(f"sums lists to {size:,} items")
        return _admit(type(start)(chain(start, *items)))
    return _admit(flt(*head, items, start=start))


@functools.lru_cache(maxsize=64)
def compile_template(source: str) -> Any:
    """Compile ``source`` in the bounded sandbox.

    Raises:
        ConfigError: for a syntax error, with its line.
    """
    from jinja2 import TemplateSyntaxError

    previous_trace = sys.gettrace()
    if sys.getrecursionlimit() > _SAFE_RECURSION_LIMIT:  # a host raised it: bound the compiler here
        sys.settrace(_compile_guard())  # (it triples compile time, so only where it is needed)
    try:
        return _environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise ConfigError(f"TemplateFormat.template: line {exc.lineno}: {exc.message}") from None
    except (RecursionError, MemoryError):  # Jinja's parser and code generator recurse per level
        limit = sys.getrecursionlimit()
        frames = _MAX_COMPILE_FRAMES if limit > _SAFE_RECURSION_LIMIT else limit
        raise ConfigError(
            "TemplateFormat.template nests too deeply to compile (brackets, parentheses, filters, "
            "attribute chains or blocks nested hundreds of levels; the compiler may nest "
            f"{frames:,} frames); flatten the template."
        ) from None
    except SyntaxError as exc:  # the generated Python is past what Python compiles (e.g. > 20 nested loops)
        raise ConfigError(
            f"TemplateFormat.template compiles to code Python refuses ({exc.msg}); flatten the template "
            "(fewer nested loops and blocks)."
        ) from None
    finally:
        sys.settrace(previous_trace)


def _compile_guard() -> Callable[..., Any]:
    """A trace function for compiling: raises ``RecursionError`` when Jinja2's parser and code
    generator nest more than ``_MAX_COMPILE_FRAMES`` frames below it, whatever the interpreter's
    recursion limit. Only calls and returns: line events are switched off frame by frame."""
    depth = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal depth
        if event == "return":
            depth -= 1
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal depth
        depth += 1
        if depth > _MAX_COMPILE_FRAMES:
            raise RecursionError("the template nests too deeply to compile")
        frame.f_trace_lines = False
        return local

    return trace


def _message(stop: _Stop, limits: TemplateLimits) -> str:
    if stop.limit is None:
        return f"TemplateFormat.template: the template {stop.what}; simplify the template."
    value = getattr(limits, stop.limit)
    shown = f"{value:g} s" if stop.limit == "timeout_s" else f"{value:,}"
    return (
        f"TemplateFormat.template: the template {stop.what}, over {_WHAT[stop.limit]} "
        f"{stop.limit} ({shown}); simplify the template or raise TemplateFormat.{stop.limit}."
    )


def render_template(source: str, limits: TemplateLimits, **context: Any) -> str:
    """Render ``source`` with ``context`` within ``limits``.

    Raises:
        ConfigError: when a limit is hit, the sandbox refuses an operation, or
            the template fails at run time.
    """
    template = compile_template(source)
    render = _Render(limits)
    previous_trace = sys.gettrace()
    previous = _current()
    _state.render = render
    sys.settrace(_tracer(render, template.filename or "<template>"))
    try:
        try:
            return _stream(template, limits, context)
        finally:
            sys.settrace(previous_trace)
            _state.render = previous
    except _Stop as exc:
        # Built with the tracer off: past the deadline it stops any Python call, and it once
        # stopped this error's own __init__, so the caller got the internal _Stop (a suite run).
        raise ConfigError(_message(exc, limits)) from None


def _tracer(render: _Render, filename: str) -> Callable[..., Any]:
    """A trace function: counts template lines (steps), checks the clock, in filters too, and
    stops template calls nested more than ``_MAX_DEPTH`` deep (each template frame's call and
    return; a generator's resume and yield are those too)."""
    limits = render.limits
    steps = calls = depth = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal steps, depth
        if event == "line":
            steps += 1
            if steps > limits.max_steps:
                raise _stop(
                    f"runs more than {limits.max_steps:,} steps (loop iterations or recursion)", "max_steps"
                )
            if steps % 16 == 0 and time.perf_counter() > render.deadline:
                raise _stop("runs longer than its time limit", "timeout_s")
        elif event == "return":
            depth -= 1
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal calls, depth
        calls += 1
        if calls % 64 == 0 and time.perf_counter() > render.deadline:
            raise _stop("runs longer than its time limit", "timeout_s")
        if frame.f_code.co_filename != filename:
            return None
        depth += 1
        if depth > _MAX_DEPTH:
            raise _stop(
                f"nests template calls more than {_MAX_DEPTH} deep (recursion: a macro calling "
                "itself, a recursive loop or caller())",
                None,
            )
        return local

    return trace


def _stream(template: Any, limits: TemplateLimits, context: dict[str, Any]) -> str:
    from jinja2.exceptions import SecurityError, TemplateError

    out: list[str] = []
    size = 0
    try:
        for piece in template.generate(**context):
            size += len(piece)
            if size > limits.max_output_chars:
                raise _stop(f"renders more than {limits.max_output_chars:,} characters")
            out.append(piece)
    except (_Stop, ConfigError):
        raise
    except SecurityError as exc:
        raise ConfigError(f"TemplateFormat: the template attempted an unsafe operation: {exc}") from None
    except RecursionError:
        raise _stop("recurses too deeply (recursion)", "max_steps") from None
    except OverflowError as exc:
        if "range" in str(exc).lower():
            raise _stop(
                "asks for a range of more than 100,000 items (the sandbox's range limit)", None
            ) from None
        raise _stop(f"asks for too much (size): {exc}") from None
    except MemoryError:
        raise _stop("needs more memory than this process has") from None
    except AssertionError as exc:  # Jinja's filters check their arguments with assert (truncate)
        raise ConfigError(
            f"TemplateFormat: the template called a filter with arguments it refuses: {_clip(str(exc))}"
        ) from None
    except (
        TemplateError,
        ArithmeticError,
        TypeError,
        ValueError,
        LookupError,
        AttributeError,
        RuntimeError,
    ) as exc:
        raise ConfigError(
            f"TemplateFormat: the template failed: {type(exc).__name__}: {_clip(str(exc))}"
        ) from None
    return "".join(out)


def _clip(message: str, limit: int = 300) -> str:
    """An error message as a problem's detail shows it: at most ``limit`` characters."""
    return message if len(message) <= limit else message[: limit - 3] + "..."
