"""Split a rendered context into blocks by the format's own grammar.

These parsers read a context the way its reader would: a line is a block
header when, folded (leading ignorable characters removed, invisible ones
removed wherever they are, NFKC, case folded; see
:mod:`contextwright.render.escape`), it starts with the format's label. They
are deliberately *more* lenient than the formats' own output, so that a chunk
text that merely looks like a header counts as one. Each built-in parser is
its format's grammar (:mod:`contextwright.render.grammar`), the same object
the format escapes with. Invariant 4
then reads: ``parse_blocks(ctx.text, fmt) == [1, 2, ..., len(ctx.citations)]``.

Every built-in format has a parser. A new format registers its own::

    from contextwright.render.parse import register_block_parser

    def parse_lean(text: str) -> list[int]:
        return [int(m.group(1)) for m in re.finditer(r"^#(\\d+)", text, re.M)]

    register_block_parser("lean", parse_lean)

A parser returns the block numbers in the order it finds them (``[1, 2, 3]``
for a format without numbers but three blocks); ``0`` stands for something
that breaks the grammar (a heading that is no block header, an unbalanced
tag), which makes the list differ from the expected numbering.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable

from contextwright.core.errors import ConfigError
from contextwright.render.escape import IGNORABLE, is_blank
from contextwright.render.grammar import GROUPED, MARKDOWN, NUMBERED, SOURCES, parse_xml

__all__ = [
    "BlockParser",
    "block_parsers",
    "parse_blocks",
    "parse_tool_outputs",
    "reads_as_tool_tag",
    "register_block_parser",
]

BlockParser = Callable[[str], list[int]]

_PARSERS: dict[str, BlockParser] = {}
_LOCK = threading.Lock()


def register_block_parser(name: str, parser: BlockParser) -> None:
    """Register (or replace) the block parser of the format called ``name``."""
    if not isinstance(name, str) or not name or not callable(parser):
        raise ConfigError(
            f"register_block_parser needs a format name and a callable; got {name!r}, {parser!r}."
        )
    with _LOCK:
        _PARSERS[name] = parser


def block_parsers() -> dict[str, BlockParser]:
    """Every registered parser by format name."""
    return dict(sorted(_PARSERS.items()))


def parse_blocks(text: str, fmt: object) -> list[int]:
    """The block numbers a reader of format ``fmt`` (a name or a format) finds in ``text``.

    Raises:
        ConfigError: when no parser is registered for the format.
    """
    name = fmt if isinstance(fmt, str) else str(getattr(fmt, "name", ""))
    parser = _PARSERS.get(name)
    if parser is None:
        raise ConfigError(
            f"no block parser for format {name!r}; registered: {', '.join(sorted(_PARSERS))}. "
            "Register one with contextwright.render.parse.register_block_parser."
        )
    return parser(text)


def _minimal(text: str) -> list[int]:
    runs = 0
    inside = False
    for line in text.split("\n"):
        if is_blank(line):
            inside = False
        elif not inside:
            inside = True
            runs += 1
    return list(range(1, runs + 1))


# The line formats' parsers are their grammars' (contextwright.render.grammar), the ones the
# formats escape with; xml starts markup only where its escape would have written "&lt;".
register_block_parser("minimal", _minimal)
register_block_parser("numbered", NUMBERED.parse)
register_block_parser("lean", NUMBERED.parse)  # the numbered grammar, leaner headers
register_block_parser("grouped", GROUPED.parse)
register_block_parser("sources", SOURCES.parse)
register_block_parser("markdown", MARKDOWN.parse)
register_block_parser("xml", parse_xml)

# The tool-output section (``render/tools.py``) read the same lenient way: ignorable
# characters other than the ASCII space removed, NFKC, case folded; ``tool output``
# tags in any spelling a reader would take for one.
_IGNORABLE_NOT_SPACE = re.compile(f"(?! ){IGNORABLE}")
_TOOL_TAG = re.compile(r"<\s*+(/?)\s*+tool[\s_-]?output", re.IGNORECASE)  # possessive: linear
_TOOL_NAME = re.compile(r'\s*name\s*=\s*"([^"\n]*)"')


def _reading(text: str) -> str:
    return unicodedata.normalize("NFKC", _IGNORABLE_NOT_SPACE.sub("", text)).casefold()


@functools.lru_cache(maxsize=4_096)
def ends_tag_start(ch: str) -> bool:
    """Whether a ``<`` followed directly by ``ch`` reads as no tool tag, whatever comes after.

    True only for a visible character that a reader keeps as itself and that reads as
    neither a gap, ``/`` nor the ``t`` of ``tool``: a letter, digit, punctuation or symbol,
    no combining mark (it could compose with the ``<``), not ignorable, whose NFKC
    case-folded reading starts with none of those. The escapes judge each ``<`` on a probe
    of what follows it; this lets a run of ``<`` look-alikes (``"＜" * 100_000``) skip the
    probe, so the escape is not only linear but fast.
    """
    if (
        unicodedata.category(ch)[0] not in "LNPS"
        or unicodedata.combining(ch)
        or _IGNORABLE_NOT_SPACE.match(ch)
    ):
        return False
    read = _reading(ch)
    return bool(read) and not read[0].isspace() and read[0] not in "/t"


def reads_as_tool_tag(text: str) -> bool:
    """Whether ``text`` starts with something a reader takes for a ``<tool_output`` or ``</tool_output`` tag."""
    return _TOOL_TAG.match(_reading(text[:96])) is not None


def parse_tool_outputs(text: str) -> list[str]:
    """The names of the tool outputs in a rendered tool section, in order.

    ``""`` stands for something that breaks the grammar (a closing tag without
    an open one, a tag inside an open output, an output never closed), so a
    section rendered from outputs named ``names`` parses to exactly ``names``.
    """
    out: list[str] = []
    reading = _reading(text)
    open_tool = False
    for m in _TOOL_TAG.finditer(reading):
        if m.group(1):
            if not open_tool:
                out.append("")
            open_tool = False
            continue
        if open_tool:
            out.append("")
        name = _TOOL_NAME.match(reading, m.end())
        out.append(name.group(1) if name else "")
        open_tool = True
    if open_tool:
        out.append("")
    return out
