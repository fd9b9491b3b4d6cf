"""Each built-in format's grammar, the one place that says what a delimiter is.

A format escapes chunk text with its grammar and :mod:`contextwright.render.parse`
splits a rendered context with the same grammar, so the escape marks every line
the parser would take for a header, and the two cannot disagree (issue 26,
finding 4: ``[SOURCE2]`` was a header to the parser and text to the escape).

Line formats (``numbered``, ``lean``, ``grouped``, ``sources``, ``markdown``) judge
a line by its :func:`~contextwright.render.escape.fold`: leading ignorable
characters removed, invisible characters removed (``[1\\u200b0]`` reads ``[10]``),
NFKC, case folded. A :class:`LineGrammar` has

* ``header``: the block header, its group 1 the block number (``[SOURCE 2]``);
* ``breaks``: lines that break the grammar without being a header (a markdown
  heading, code fence or HTML block start), which a parser reports as block 0;
* ``setext``: whether ``===``/``---`` under a line of text is a heading (markdown);
* ``also``: lines escaped though they break nothing, because they impersonate
  another line of a header (``_Source: ...`` in markdown).

A line is escaped when any of them matches. ``xml`` is not line based: every
``<`` that could open markup (:data:`XML_OPEN`) is escaped as ``&lt;``, and the
parser starts a tag, comment or declaration only at such a ``<``.

Every pattern here is linear: line patterns run on a fold of at most 96
characters, and the ``xml`` pattern is one possessive run then one character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextwright.render.escape import IGNORABLE, escape_lines, fold, is_blank, reading

__all__ = [
    "GROUPED",
    "MARKDOWN",
    "NUMBERED",
    "SOURCES",
    "XML_OPEN",
    "LineGrammar",
    "escape_xml",
    "parse_xml",
]

_SETEXT = re.compile(r"(?:=+|-+) ?\Z")


@dataclass(frozen=True, slots=True)
class LineGrammar:
    """What a line of a line-based format can be (see the module docstring)."""

    header: re.Pattern[str]
    breaks: re.Pattern[str] | None = None
    setext: bool = False
    also: re.Pattern[str] | None = None
    #: The ASCII characters a delimiter line can start with (the escape's fast path).
    triggers: str = "["

    def classify(self, folded: str, *, after_text: bool = True) -> int | None:
        """The block number of a header line, 0 for a line that breaks the grammar, else None."""
        m = self.header.match(folded)
        if m:
            return int(m.group(1))
        if self.breaks is not None and self.breaks.match(folded):
            return 0
        if self.setext and after_text and _SETEXT.match(folded):
            return 0
        return None

    def is_delimiter(self, folded: str) -> bool:
        """Whether a line must be escaped: it could be read as any part of the grammar."""
        if self.classify(folded) is not None:
            return True
        return self.also is not None and self.also.match(folded) is not None

    def escape(self, text: str) -> str:
        """``text`` (cleaned) with a backslash before every delimiter line."""
        return escape_lines(text, self.is_delimiter, triggers=self.triggers)

    def parse(self, text: str) -> list[int]:
        """The block numbers in ``text``, 0 where the grammar breaks (see :mod:`.parse`)."""
        out: list[int] = []
        after_text = False
        for line in text.split("\n"):
            kind = self.classify(fold(line), after_text=after_text)
            if kind is not None:
                out.append(kind)
            after_text = not is_blank(line)
        return out


_NUMBER = re.compile(r"\[ ?(\d+) ?\]")
# A markdown heading (any level: one that is not a block header breaks the grammar), a code
# fence (it would swallow every later header), an HTML block that runs past blank lines
# (CommonMark types 1-5: comments, processing instructions, declarations, CDATA, script/pre/
# style/textarea).
_BLOCKS = r"```|~~~|<(?:[!?]|script|pre|style|textarea)"
_MARKDOWN_BREAKS = rf"#|{_BLOCKS}"

NUMBERED = LineGrammar(header=_NUMBER)
SOURCES = LineGrammar(header=re.compile(r"\[ ?source ?(\d+) ?\]"), also=re.compile(r"\[ ?source"))
MARKDOWN = LineGrammar(
    header=re.compile(r"#{1,6} ?\[ ?(\d+) ?\]"),
    breaks=re.compile(_MARKDOWN_BREAKS),
    setext=True,
    also=re.compile(r"_source:|\[ ?\d+ ?\]"),
    triggers="#_=-[`~<",
)
#: ``grouped``: ``[n]`` headers under ``## Document:`` headings (which chunk text cannot imitate
#: either: headings are escaped like markdown's, but only fences and HTML blocks break the grammar).
GROUPED = LineGrammar(
    header=_NUMBER,
    breaks=re.compile(_BLOCKS),
    also=re.compile(r"#|_source:|(?:=+|-+) ?\Z"),
    triggers="#_=-[`~<",
)

#: A ``<`` (or its fullwidth/small form) that could open markup: the next character on its
#: line, past ignorable ones, is a letter (any script), ``_``, ``:``, ``/``, ``!`` or ``?``.
#: ``x < 5``, ``a <= b`` and a ``<`` at a line end stay as they are.
XML_OPEN = re.compile(rf"[<\uff1c\ufe64](?={IGNORABLE}*+[A-Za-z_:/!?\x80-\U0010ffff])")
_GAP = re.compile(f"{IGNORABLE}*+")
_NAME = re.compile(r"(/?) ?([\w.:\-]+)")
_ID = re.compile(r"""\bid\s*=\s*["']\s*(\d+)\s*["']""")
_TAG_STOP = re.compile(r"""[>"']""")


def escape_xml(text: str) -> str:
    """``text`` with every ``<`` that could open markup written ``&lt;``."""
    if "<" in text or (not text.isascii() and ("\uff1c" in text or "\ufe64" in text)):
        return XML_OPEN.sub("&lt;", text)
    return text


def _find_end(text: str, marker: str, start: int) -> int:
    end = text.find(marker, start)
    return len(text) if end < 0 else end + len(marker)


def _tag_end(text: str, start: int) -> int:
    """The end of a tag opened before ``start``: its ``>``, quoted values skipped (to the end if open)."""
    pos = start
    while True:
        m = _TAG_STOP.search(text, pos)
        if m is None:
            return len(text)
        if m.group() == ">":
            return m.end()
        close = text.find(m.group(), m.end())
        if close < 0:
            return len(text)  # an attribute value never closed runs to the end
        pos = close + 1


def _xml_tokens(text: str) -> list[tuple[bool, str, str]]:
    """``(closing, name, attributes)`` of each tag, comments and declarations skipped."""
    out: list[tuple[bool, str, str]] = []
    pos = 0
    while (m := XML_OPEN.search(text, pos)) is not None:
        start = _GAP.match(text, m.end()).end()  # type: ignore[union-attr]
        head = reading(text[start : start + 64])
        if head.startswith("!--"):
            pos = _find_end(text, "-->", start)
        elif head.startswith("![cdata["):
            pos = _find_end(text, "]]>", start)
        elif head[:1] in ("!", "?"):
            pos = _find_end(text, ">", start)
        else:
            pos = _tag_end(text, start)
            name = _NAME.match(head)
            if name:
                out.append((bool(name.group(1)), name.group(2), text[start:pos]))
    return out


def parse_xml(text: str) -> list[int]:
    """The ``chunk`` ids in order; 0 for a stray ``</chunk>``, a nested or an unclosed chunk."""
    out: list[int] = []
    open_chunk = False
    for closing, name, attributes in _xml_tokens(text):
        if name != "chunk":
            continue
        if closing:
            if not open_chunk:
                out.append(0)
            open_chunk = False
            continue
        if open_chunk:
            out.append(0)  # a chunk inside a chunk
        ident = _ID.search(attributes)
        out.append(int(ident.group(1)) if ident else 0)
        open_chunk = True
    if open_chunk:
        out.append(0)
    return out
