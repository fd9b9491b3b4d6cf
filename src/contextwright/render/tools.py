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
section), then counts the final section exactly with the tokenizer and trims
until it fits: ``drop_largest`` drops whole outputs, largest first;
``truncate`` cuts the largest output at a line boundary (whole lines kept,
``[... truncated: k of n lines]`` marked), and drops it only when not even one
line fits. The result says what was kept, truncated and dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextwright.errors import ConfigError, InputError
from contextwright.render.format import Format, _attr
from contextwright.render.parse import reads_as_tool_tag
from contextwright.textcheck import check_text

__all__ = ["ToolsResult", "fit_tools"]

ToolPolicy = Literal["drop_largest", "truncate"]
TOOL_POLICIES = ("drop_largest", "truncate")
_LT = re.compile("[<\ufe64\uff1c]")  # "<" and what NFKC reads as one


@dataclass(frozen=True, slots=True)
class ToolsResult:
    """Tool outputs fitted to their zone.

    Attributes:
        text: The rendered section (empty when nothing fit or none was given).
        tokens: Its exact token count, ``<= budget``.
        budget: The tool zone.
        kept: Names of the outputs in ``text``, in input order.
        truncated: Names of the kept outputs that were cut at a line boundary.
        dropped: Names of the outputs left out.
    """

    text: str
    tokens: int
    budget: int
    kept: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "kept": list(self.kept),
            "truncated": list(self.truncated),
            "dropped": list(self.dropped),
            "text": self.text,
        }


def _render(fmt: Format, items: Sequence[tuple[str, str]]) -> str:
    parts = []
    for name, content in items:
        body = fmt.escape(content)
        body = _escape_tags(body)
        parts.append(f'<tool_output name="{_attr(name)}">\n{body}\n</tool_output>\n')
    return "".join(parts).rstrip("\n")


def _escape_tags(body: str) -> str:
    """``body`` with every ``<`` (or a look-alike) that reads as a tool_output tag written ``&lt;``."""
    cuts = [m.start() for m in _LT.finditer(body) if reads_as_tool_tag(body[m.start() :])]
    for i in reversed(cuts):
        body = body[:i] + "&lt;" + body[i + 1 :]
    return body


def fit_tools(
    tools: Sequence[Mapping[str, Any]],
    *,
    budget: int,
    tokenizer: Any,
    format: Format,
    policy: ToolPolicy = "drop_largest",
) -> ToolsResult:
    """Render ``tools`` in at most ``budget`` tokens (see the module docstring).

    Raises:
        InputError: a tool without a string ``name`` and ``content``.
        ConfigError: an unknown policy or a negative budget.
    """
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
    names = [n for n, _ in items]
    truncated: set[int] = set()
    alive = list(range(len(items)))
    contents = {i: c for i, (_, c) in enumerate(items)}
    for _ in range(64 * len(items) + 4):  # each pass drops or shortens one output
        text = _render(format, [(items[i][0], contents[i]) for i in alive])
        total = tokenizer.count(text) if text else 0
        if total <= budget:
            return ToolsResult(
                text,
                total,
                budget,
                tuple(names[i] for i in alive),
                tuple(names[i] for i in alive if i in truncated),
                tuple(names[i] for i in range(len(items)) if i not in alive),
            )
        largest = max(alive, key=lambda i: (tokenizer.count(contents[i]), -i))
        if policy == "truncate":
            lines = items[largest][1].splitlines()
            shown = _shown(contents[largest], len(lines))

            def cost(k: int, largest: int = largest, lines: list[str] = lines) -> int:
                trial = dict(contents)
                trial[largest] = _cut(lines, k)
                return int(tokenizer.count(_render(format, [(items[i][0], trial[i]) for i in alive])))

            lo, hi, best = 1, shown - 1, 0
            while lo <= hi:  # the most whole lines that make the section fit
                mid = (lo + hi) // 2
                if cost(mid) <= budget:
                    best, lo = mid, mid + 1
                else:
                    hi = mid - 1
            if best or shown > 1:
                # none fits with the others as they are: halve this one and shrink the next largest
                contents[largest] = _cut(lines, best or shown // 2)
                truncated.add(largest)
                continue
        alive.remove(largest)
    raise AssertionError("fit_tools did not converge")  # pragma: no cover - every pass shrinks


def _cut(lines: list[str], k: int) -> str:
    return "\n".join(lines[:k]) + f"\n[... truncated: {k} of {len(lines)} lines]"


def _shown(content: str, total: int) -> int:
    """How many of the original lines ``content`` still shows."""
    marker = content.rfind("\n[... truncated: ")
    return content.count("\n", 0, marker) + 1 if marker >= 0 else total
