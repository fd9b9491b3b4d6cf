"""Split a rendered context into blocks by the format's own grammar.

These parsers read a context the way its reader would: a line is a block
header when, folded (leading ignorable characters removed, NFKC, case
folded; see :mod:`contextwright.render.escape`), it starts with the format's
label. They are deliberately *more* lenient than the formats' own output, so
that a chunk text that merely looks like a header counts as one. Invariant 4
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

import re
import threading
import unicodedata
from collections.abc import Callable

from contextwright.errors import ConfigError
from contextwright.render.escape import IGNORABLE, fold, is_blank

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


def _headers(pattern: re.Pattern[str], *, headings_are_blocks: bool = False) -> BlockParser:
    def parse(text: str) -> list[int]:
        out: list[int] = []
        previous_blank = True
        for line in text.split("\n"):
            folded = fold(line)
            m = pattern.match(folded)
            if m:
                out.append(int(m.group(1)))
            elif headings_are_blocks and (
                folded.startswith("#") or (not previous_blank and _SETEXT.match(folded))
            ):
                out.append(0)  # a heading that is not a block header
            previous_blank = is_blank(line)
        return out

    return parse


_SETEXT = re.compile(r"(?:=+|-+) ?\Z")


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


# The XML grammar, leniently: comments, CDATA sections, processing instructions
# and declarations hide what they contain; tags may have ignorable characters
# after the ``<``. Only the outcome for ``chunk`` elements is reported.
_XML_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)|<\?.*?(?:\?>|\Z)|<![^>]*(?:>|\Z)"
    rf"|<{IGNORABLE}*(/?){IGNORABLE}*([A-Za-z_][\w.\-]*)([^>]*)>",
    re.DOTALL,
)
_ID = re.compile(r"""\bid\s*=\s*["']\s*(\d+)\s*["']""")


def _xml(text: str) -> list[int]:
    out: list[int] = []
    open_chunk = False
    for m in _XML_TOKEN.finditer(text):
        name = m.group(2)
        if name is None or name.casefold() != "chunk":
            continue
        if m.group(1):  # </chunk>
            if not open_chunk:
                out.append(0)
            open_chunk = False
            continue
        if open_chunk:
            out.append(0)  # a chunk inside a chunk
        ident = _ID.search(m.group(3))
        out.append(int(ident.group(1)) if ident else 0)
        open_chunk = True
    if open_chunk:
        out.append(0)
    return out


_NUMBER = re.compile(r"\[ ?(\d+) ?\]")
register_block_parser("minimal", _minimal)
register_block_parser("numbered", _headers(_NUMBER))
register_block_parser("lean", _headers(_NUMBER))  # the numbered grammar, leaner headers
register_block_parser("grouped", _headers(_NUMBER))
register_block_parser("sources", _headers(re.compile(r"\[ ?source ?(\d+) ?\]")))
register_block_parser("markdown", _headers(re.compile(r"#{1,6} ?\[ ?(\d+) ?\]"), headings_are_blocks=True))
register_block_parser("xml", _xml)

# The tool-output section (``render/tools.py``) read the same lenient way: ignorable
# characters other than the ASCII space removed, NFKC, case folded; ``tool output``
# tags in any spelling a reader would take for one.
_IGNORABLE_NOT_SPACE = re.compile(f"(?! ){IGNORABLE}")
_TOOL_TAG = re.compile(r"<\s*(/?)\s*tool[\s_-]?output", re.IGNORECASE)
_TOOL_NAME = re.compile(r'\s*name\s*=\s*"([^"\n]*)"')


def _reading(text: str) -> str:
    return unicodedata.normalize("NFKC", _IGNORABLE_NOT_SPACE.sub("", text)).casefold()


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
