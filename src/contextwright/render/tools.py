"""Tool outputs trimmed to their zone and rendered in their own delimited section.

Agents put tool results (a search API's JSON, a SQL row dump, a shell
command's output) in the prompt next to the retrieved documents. The tool
zone (``Assembler(tool_tokens=N)``) is a hard budget like the history zone:
:func:`fit_tools` renders ``tools=[{"name", "content"}]`` as::

    <tool_output name="search">
    ...content, escaped...
    </tool_output>

escapes the content with the context format's own escaping (so a tool
output cannot open a ``<chunk>`` or a ``[SOURCE 3]`` line) and also escapes
``<tool_output``/``</tool_output`` inside it (so it cannot close its own
section), then trims until it fits: ``drop_largest`` drops whole outputs,
largest first; ``truncate`` shares the zone: the outputs over an equal share
are cut to it at a line boundary (whole lines kept, ``[... truncated: k of n
lines]`` marked), the share of the smaller ones going to the rest, and an
output is dropped only when not even its first line fits its share. The
result says what was kept, truncated and dropped.

The work is bounded and linear in the outputs' size, whatever they hold (issue
26): each output is escaped once, in linear time, and counted once in pieces;
a plan is made from those counts, and only the planned section, at most the
zone's size, is rendered and counted exactly. When the exact count says the
plan is over (piece counts are estimates), the next plan aims lower by the
overshoot and more, so a handful of passes end it. ``checkpoint`` is called
between passes (the assembler passes its cancellation check: a request past
its deadline stops there), and the service counts :data:`TOOL_WORK` units of
``max_request_work`` per output. The section's real token count is always
``<= budget``.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal

from contextwright.core.errors import ConfigError, InputError
from contextwright.core.text import check_text
from contextwright.model.zones import ToolsResult
from contextwright.render.escape import IGNORABLE
from contextwright.render.format import Format, attr_value
from contextwright.render.parse import ends_tag_start, reads_as_tool_tag

__all__ = ["TOOL_WORK", "ToolsResult", "fit_tools"]

ToolPolicy = Literal["drop_largest", "truncate"]
TOOL_POLICIES = ("drop_largest", "truncate")
#: Units of the service's ``max_request_work`` one tool output costs (escape, count, plan, check).
TOOL_WORK = 4
# How a reader of the tags (``parse.reads_as_tool_tag``) skips characters: invisible ones
# (``_HIDDEN``) vanish, and whitespace runs match its ``\s*``; a non-ASCII character may
# read as anything after NFKC.
_HIDDEN = f"(?:(?! ){IGNORABLE})"
_GAP = re.compile(f"(?:\\n|{IGNORABLE})+")
_NON_ASCII = "[^\\x00-\\x7f]"


def _spelled(word: str) -> str:
    """A pattern for ``word``'s letters, in any case, with hidden characters between them;
    a non-ASCII character ends it (it may read as the rest)."""
    pattern = ""
    for c in reversed(word):
        rest = f"{_HIDDEN}*+{pattern}" if pattern else ""
        pattern = f"(?:{_NON_ASCII}|[{c}{c.upper()}]{rest})"
    return pattern


# A "<" (or what NFKC reads as one) that may start a tool_output tag: a cheap, linear
# prefilter (possessive quantifiers, one lookahead per "<"); the reader decides the rest.
_TAG_START = re.compile(
    f"[<\ufe64\uff1c](?=(?:\\n|{IGNORABLE})*+(?:{_NON_ASCII}|/(?:\\n|{IGNORABLE})*+"
    f"(?:{_NON_ASCII}|{_spelled('tool')})|{_spelled('tool')}))"
)
_REMOVED = re.compile(_HIDDEN)
_ASCII_HIDDEN = re.compile(  # the same, for ASCII text: a small class is several times faster
    "[" + re.escape("".join(c for c in map(chr, range(128)) if _REMOVED.match(c))) + "]"
)
_SPACES = re.compile("[ \\n]+")
_KEPT = re.compile("[ \\n]")  # what the reader keeps of a gap (as a space)
_PROBE = 32  # characters of a would-be tag the reader is shown, gaps made one space: "< / tool output" fits
_WINDOW = 64  # raw characters the fast probe reads
_PIECES = 64  # most pieces one output is counted in
_PIECE_CHARS = 512  # and their least size
_MAX_PASSES = 64  # each miss lowers the aim by more than the last: about log2(budget) at most


def _escape_tags(body: str) -> str:
    """``body`` with every ``<`` (or a look-alike) that reads as a tool_output tag written ``&lt;``.

    Linear: a ``<`` is judged on a bounded probe (repeated probes judged once), and
    the result is built once.
    """
    parts: list[str] = []
    last = 0
    judged: dict[str, bool] = {}
    for m in _TAG_START.finditer(body):
        i = m.start()
        if i + 1 < len(body) and ends_tag_start(body[i + 1]):
            continue
        probe = _probe(body, i)
        tag = judged.get(probe)
        if tag is None:
            if len(judged) >= 4096:
                judged.clear()
            tag = judged[probe] = reads_as_tool_tag(probe)
        if tag:
            parts += (body[last:i], "&lt;")
            last = i + 1
    if not parts:
        return body
    parts.append(body[last:])
    return "".join(parts)


def _probe(body: str, i: int) -> str:
    """The text at ``body[i]`` as a reader of tags sees it: each gap of whitespace or invisible
    characters, however long, becomes one space (or nothing, when it holds no space or newline),
    so no run of them can hide a tag from the escape; :data:`_PROBE` characters."""
    window = body[i : i + _WINDOW]
    hidden = _ASCII_HIDDEN if window.isascii() else _REMOVED
    fast = _SPACES.sub(" ", hidden.sub("", window))
    if len(fast) > _PROBE or i + _WINDOW >= len(body):  # a gap cut at the window's end is past the probe
        return fast[:_PROBE]
    parts: list[str] = []
    size, pos, end = 0, i, len(body)
    while size < _PROBE and pos < end:  # long gaps: skip each in one regex call
        gap = _GAP.match(body, pos)
        if gap is not None:
            if _KEPT.search(body, pos, gap.end()):
                parts.append(" ")
                size += 1
            pos = gap.end()
            continue
        stop = min(end, pos + _PROBE - size)
        nxt = _GAP.search(body, pos, stop)
        stop = nxt.start() if nxt is not None else stop
        parts.append(body[pos:stop])
        size += stop - pos
        pos = stop
    return "".join(parts)


def _open_tag(name: str) -> str:
    return f'<tool_output name="{attr_value(name)}">\n'


_CLOSE_TAG = "\n</tool_output>\n"


@dataclass(slots=True)
class _Output:
    """One tool output, escaped once, with the token estimates its plans are made from.

    ``xs``/``ys`` map a character offset of the escaped body to the tokens before it
    (the body counted in pieces cut at newlines); a cut after ``k`` lines is
    placed proportionally (``ends``: characters of the first ``k`` raw lines).
    """

    index: int
    name: str
    lines: list[str]
    escaped: str
    frame: int  # tokens of the open and close tags
    marker: int  # tokens of the truncation marker
    ends: array[int]
    xs: list[int]  # knots: character offsets in ``escaped``
    ys: list[int]  # and the tokens before them
    whole: int = 0  # estimated tokens of the output kept whole
    least: int = 0  # the fewest it can be kept in: its first line, or whole when it has one line

    def __post_init__(self) -> None:
        self.whole = self.frame + self.ys[-1]
        self.least = self.cost(1) if len(self.lines) > 1 else self.whole

    def cost(self, k: int) -> int:
        """Estimated tokens of this output cut to its first ``k`` lines (``k < len(lines)``)."""
        at = self.ends[k] / max(1, self.ends[-1]) * self.xs[-1]
        j = min(bisect_left(self.xs, at), len(self.xs) - 1)
        x0, y0 = (self.xs[j - 1], self.ys[j - 1]) if j else (0, 0)
        before = y0 + (self.ys[j] - y0) * (at - x0) / max(1, self.xs[j] - x0)
        return self.frame + math.ceil(before) + self.marker

    def lines_within(self, cap: float) -> int:
        """The most lines (``1 <= k < len(lines)``) whose estimated cost is ``<= cap``; 0 if none."""
        lo, hi, best = 1, len(self.lines) - 1, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.cost(mid) <= cap:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    def body(self, k: int, fmt: Format) -> str:
        """The escaped body kept whole (``k >= len(lines)``) or cut to ``k`` lines and marked."""
        if k >= len(self.lines):
            return self.escaped
        cut = "\n".join(self.lines[:k]) + f"\n[... truncated: {k} of {len(self.lines)} lines]"
        return _escape_tags(fmt.escape(cut))


def _measure(i: int, name: str, content: str, fmt: Format, counter: Any) -> _Output:
    """Escape ``content`` once and count it in pieces (linear in its size)."""
    escaped = _escape_tags(fmt.escape(content))
    lines = content.splitlines()
    size = max(_PIECE_CHARS, len(escaped) // _PIECES)
    pieces: list[str] = []
    pos = 0
    while pos < len(escaped):
        cut = escaped.find("\n", pos + size)
        cut = len(escaped) if cut < 0 else cut + 1
        pieces.append(escaped[pos:cut])
        pos = cut
    overhead = counter.count("")  # a tokenizer that adds special tokens to every text
    xs, ys = [0], [0]
    for piece, n in zip(pieces, counter.count_many(pieces), strict=True):
        xs.append(xs[-1] + len(piece))
        ys.append(ys[-1] + max(0, n - overhead))
    frame = counter.count(_open_tag(name)) + counter.count(_CLOSE_TAG) - 2 * overhead
    marker = counter.count(f"\n[... truncated: {len(lines)} of {len(lines)} lines]") - overhead
    ends = array("q", accumulate((len(line) + 1 for line in lines), initial=0))
    return _Output(i, name, lines, escaped, frame, marker, ends, xs, ys)


def _render(outputs: Sequence[_Output], plan: Mapping[int, int], fmt: Format) -> str:
    parts = [
        f"{_open_tag(o.name)}{o.body(plan[o.index], fmt)}{_CLOSE_TAG}" for o in outputs if o.index in plan
    ]
    return "".join(parts).rstrip("\n")


def _level(wholes: Sequence[int], target: float) -> float:
    """The water level: the share that lets ``sum(min(w, level)) == target`` (wholes ascending)."""
    remaining = target
    for j, w in enumerate(wholes):
        if w * (len(wholes) - j) > remaining:
            return remaining / (len(wholes) - j)
        remaining -= w
    return math.inf


def _plan(outputs: Sequence[_Output], target: int, policy: ToolPolicy) -> dict[int, int]:
    """Lines kept per output index (absent: dropped), from the estimates, aiming at ``target``."""
    alive = sorted(outputs, key=lambda o: (o.whole, -o.index))  # the largest last
    if target <= 0:
        return {}
    if policy == "drop_largest":
        total = sum(o.whole for o in alive)
        while alive and total > target:
            total -= alive.pop().whole
        return {o.index: len(o.lines) for o in alive}
    while alive:
        level = _level([o.whole for o in alive], target)
        misfits = [o for o in alive if o.whole > level and o.least > level]
        if not misfits:
            return {o.index: len(o.lines) if o.whole <= level else o.lines_within(level) for o in alive}
        gone = {o.index for o in misfits}
        best = _level([o.whole for o in alive if o.index not in gone], target)
        hopeless = {o.index for o in misfits if o.least > best}  # too big even with every misfit gone
        gone = hopeless or {misfits[-1].index}  # else the largest misfit goes first
        alive = [o for o in alive if o.index not in gone]
    return {}


def fit_tools(
    tools: Sequence[Mapping[str, Any]],
    *,
    budget: int,
    tokenizer: Any,
    format: Format,
    policy: ToolPolicy = "drop_largest",
    checkpoint: Callable[[str], None] | None = None,
) -> ToolsResult:
    """Render ``tools`` in at most ``budget`` tokens (see the module docstring).

    Args:
        checkpoint: Called with ``"tools"`` between passes; it may raise to stop
            (the assembler's cancellation check raises
            :class:`~contextwright.core.errors.AssemblyCancelled`).

    Raises:
        InputError: a tool without a string ``name`` and ``content``.
        ConfigError: an unknown policy or a negative budget.
    """
    items = _check(tools, budget, policy)
    check = checkpoint or (lambda where: None)
    counter = getattr(tokenizer, "base", tokenizer)  # one-off texts stay out of the shared count cache
    outputs = []
    for i, (name, content) in enumerate(items):
        check("tools")
        outputs.append(_measure(i, name, content, format, counter))
    estimate = sum(o.whole for o in outputs)
    slack = sum(len(o.xs) + 2 for o in outputs)  # piece counts may exceed the whole's by ~1 a cut
    target = budget if estimate > budget + slack else estimate  # then the first pass keeps all
    for attempt in range(_MAX_PASSES):
        check("tools")
        plan = _plan(outputs, target, policy)
        text = _render(outputs, plan, format)
        total = counter.count(text) if text else 0
        if total <= budget:
            return ToolsResult(
                text,
                total,
                budget,
                tuple(o.name for o in outputs if o.index in plan),
                tuple(o.name for o in outputs if o.index in plan and plan[o.index] < len(o.lines)),
                tuple(o.name for o in outputs if o.index not in plan),
            )
        target = min(target, budget) - (total - budget) - (1 << attempt) + 1
    raise AssertionError("fit_tools did not converge")  # pragma: no cover - the aim reaches 0


def _check(tools: Sequence[Mapping[str, Any]], budget: int, policy: str) -> list[tuple[str, str]]:
    """The ``(name, content)`` pairs of ``tools``, checked."""
    if policy not in TOOL_POLICIES:
        raise ConfigError(f"tool_policy must be one of {', '.join(TOOL_POLICIES)}; got {policy!r}.")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"tool_tokens must be a non-negative integer; got {budget!r}.")
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise InputError(
            f'tools must be a list of {{"name", "content"}} objects; got {type(tools).__name__}.'
        )
    items: list[tuple[str, str]] = []
    for i, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        content = tool.get("content") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not name or not isinstance(content, str):
            raise InputError(
                f'tools[{i}] must be an object with a non-empty string "name" and a string "content"; '
                f"got {tool!r:.80}."
            )
        check_text(name, f"tools[{i}].name")
        check_text(content, f"tools[{i}].content")
        items.append((name, content))
    return items
