"""A bounded Jinja2 sandbox for user templates.

Jinja2's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` stops a
template from reaching Python internals, but not from burning CPU and memory:
``{{ 'a' * 10**9 }}`` allocates a gigabyte and nested ``range(100000)`` loops
run for hours. This environment bounds every way a template can grow:

* **Size.** ``*``, ``**`` and ``%`` are intercepted: a string or list result
  longer than ``max_output_chars``, an exponent result beyond 10,000 bits, or
  a ``%``/``format`` width beyond ``max_output_chars`` is refused before it
  is computed. Any integer argument beyond ``max_output_chars`` to a filter
  or call (``indent``, ``center``, ``wordwrap``...) is refused too.
  ``range`` is capped by Jinja2 itself (100,000 items).
* **Steps.** The template is compiled to Python; a trace function counts the
  lines it executes (every loop iteration executes at least one) and stops at
  ``max_steps``. Recursion ends there too.
* **Time.** The same trace function checks the clock and stops at
  ``timeout_s``: rendering can be stopped, in the thread that runs it.
* **Output.** Rendering is streamed; it stops when the output passes
  ``max_output_chars``.

Every violation, and every runtime error of the template, raises
:class:`~contextwright.errors.ConfigError` (HTTP 422 in the service) saying
which limit was hit.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from contextwright.errors import ConfigError, MissingDependencyError

__all__ = ["TemplateLimits", "compile_template", "render_template"]

_MAX_POWER_BITS = 10_000
_WIDTH = re.compile(r"\d{6,}")  # a format width/precision of 6+ digits


class TemplateLimits:
    """The bounds of one render (see the module docstring)."""

    __slots__ = ("max_output_chars", "max_steps", "timeout_s")

    def __init__(self, *, max_output_chars: int, max_steps: int, timeout_s: float) -> None:
        self.max_output_chars = max_output_chars
        self.max_steps = max_steps
        self.timeout_s = timeout_s


class _Stop(Exception):
    """Raised from the trace function (not a ConfigError, so a template cannot catch-and-go-on)."""


_state = threading.local()


def _limits() -> TemplateLimits:
    limits: TemplateLimits | None = getattr(_state, "limits", None)
    if limits is None:  # rendering outside render_template: the defaults
        return TemplateLimits(max_output_chars=1_000_000, max_steps=1_000_000, timeout_s=2.0)
    return limits


def _too_big(what: str) -> ConfigError:
    return ConfigError(f"TemplateFormat: the template {what}; simplify the template.")


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, list, tuple, bytes)) and len(value) > _limits().max_output_chars:
        raise _too_big(f"builds a value of {len(value):,} items, over the output size limit")
    return value


def _check_args(args: Iterable[Any]) -> None:
    limit = _limits().max_output_chars
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > limit:
            raise _too_big(f"passes the argument {a} (over the size limit of {limit:,})")
        if isinstance(a, str) and _WIDTH.search(a) and ("%" in a or "{" in a):
            raise _too_big("uses a format width over the size limit")


@functools.cache
def _environment() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise MissingDependencyError("jinja2 is needed for templates: pip install jinja2") from exc

    class BoundedEnvironment(ImmutableSandboxedEnvironment):  # type: ignore[misc]
        intercepted_binops = frozenset({"*", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            limit = _limits().max_output_chars
            if operator == "*":
                for seq, times in ((left, right), (right, left)):
                    if (
                        isinstance(seq, (str, list, tuple))
                        and isinstance(times, int)
                        and len(seq) * times > limit
                    ):
                        raise _too_big(
                            f"multiplies a sequence to {len(seq) * times:,} items (output size limit)"
                        )
                return _check_size(left * right)
            if operator == "**":
                if (
                    isinstance(left, int)
                    and isinstance(right, int)
                    and right > 0
                    and max(1, abs(left).bit_length()) * right > _MAX_POWER_BITS
                ):
                    raise _too_big("computes a power too large (size limit)")
                return left**right
            if isinstance(left, str):
                _check_args([left])
            return _check_size(left % right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_args(args)
            _check_args(kwargs.values())
            return _check_size(super().call(__context, __obj, *args, **kwargs))

        def wrap_str_format(self, value: Any) -> Any:
            owner = getattr(value, "__self__", None)
            if isinstance(owner, str):
                _check_args([owner])  # "{:>999999999}".format(...)
            return super().wrap_str_format(value)

    env = BoundedEnvironment(autoescape=False, keep_trailing_newline=True)
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    for name, flt in list(env.filters.items()):
        env.filters[name] = _guard_filter(flt)
    return env


def _guard_filter(flt: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(flt)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check_args(args[1:] if args and not isinstance(args[0], str) else args)
        _check_args(kwargs.values())
        return _check_size(flt(*args, **kwargs))

    return guarded


@functools.lru_cache(maxsize=64)
def compile_template(source: str) -> Any:
    """Compile ``source`` in the bounded sandbox.

    Raises:
        ConfigError: for a syntax error, with its line.
    """
    from jinja2 import TemplateSyntaxError

    try:
        return _environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise ConfigError(f"TemplateFormat.template: line {exc.lineno}: {exc.message}") from None


def render_template(source: str, limits: TemplateLimits, **context: Any) -> str:
    """Render ``source`` with ``context`` within ``limits``.

    Raises:
        ConfigError: when a limit is hit, the sandbox refuses an operation, or
            the template fails at run time.
    """
    from jinja2.exceptions import SecurityError, TemplateError

    template = compile_template(source)
    deadline = time.perf_counter() + limits.timeout_s
    steps = 0
    filename = template.filename or "<template>"

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > limits.max_steps:
                raise _Stop(f"runs more than {limits.max_steps:,} steps (loop iterations or recursion)")
            if steps % 256 == 0 and time.perf_counter() > deadline:
                raise _Stop(f"runs longer than its time limit of {limits.timeout_s:g} s")
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == filename else None

    previous_trace = sys.gettrace()
    previous_limits = getattr(_state, "limits", None)
    _state.limits = limits
    out: list[str] = []
    size = 0
    sys.settrace(trace)
    try:
        for piece in template.generate(**context):
            size += len(piece)
            if size > limits.max_output_chars:
                raise _too_big(
                    f"renders more than {limits.max_output_chars:,} characters (output size limit)"
                )
            out.append(piece)
    except ConfigError:
        raise
    except _Stop as exc:
        raise ConfigError(f"TemplateFormat: the template {exc}; simplify the template.") from None
    except SecurityError as exc:
        raise ConfigError(f"TemplateFormat: the template attempted an unsafe operation: {exc}") from None
    except RecursionError:
        raise ConfigError("TemplateFormat: the template recurses too deeply (steps limit).") from None
    except OverflowError as exc:
        raise ConfigError(f"TemplateFormat: the template asks for too much (range or size): {exc}") from None
    except (TemplateError, ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
        raise ConfigError(f"TemplateFormat: the template failed: {type(exc).__name__}: {exc}") from None
    finally:
        sys.settrace(previous_trace)
        _state.limits = previous_limits
    return "".join(out)
