"""What a reader sees at the start of a line, and how formats escape it.

Invariant 4 (boundaries cannot be forged) is decided line by line: a line of
chunk text must not *read as* one of the format's delimiters. A reader — a
person or an LLM — does not see leading no-break spaces (U+00A0), ideographic
spaces (U+3000), zero-width characters (U+200B), bidi controls (U+202E,
U+2066) or control characters, and reads fullwidth ``［２］`` as ``[2]``. So
"could this line be a delimiter" is asked of the *folded* line: leading
ignorable characters removed, runs of them collapsed to one space, NFKC
compatibility forms mapped to their plain form, case folded.

*Ignorable* means: Unicode ``White_Space``, control characters (``Cc``),
format characters (``Cf``: zero-width, bidi, BOM, soft hyphen),
``Default_Ignorable_Code_Point`` (Hangul fillers, variation selectors, ...)
and the Braille blank (U+2800), which renders as a blank cell.

A delimiter line is escaped by a backslash before its first visible
character (``\\[2]``, ``\\### [5]``), which keeps the text readable and makes
the line start with a character no format uses for a delimiter. A line that
is only ignorable characters reads as a blank line and is dropped where blank
lines are delimiters (``minimal``).

The same folding drives the block parsers in :mod:`contextwright.render.parse`,
which split a rendered context by the format's own grammar; the tests check
that the two agree (one parsed block per citation) for hostile texts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

import regex  # a dependency of tiktoken; stdlib ``re`` has no Unicode property classes

__all__ = [
    "IGNORABLE",
    "clean",
    "escape_lines",
    "fold",
    "is_blank",
    "oneline",
    "split_indent",
]

#: One ignorable character, line breaks excluded (see the module docstring).
IGNORABLE = r"[[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]--[\n]]"

_IGN = regex.compile(IGNORABLE, regex.V1)
_IGN_RUN = regex.compile(IGNORABLE + "+", regex.V1)
_LEAD = regex.compile(r"\A" + IGNORABLE + "*", regex.V1)
_OUTER = regex.compile(r"\A[" + IGNORABLE + r"\n]+|[" + IGNORABLE + r"\n]+\Z", regex.V1)
_LINEBREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
#: Characters no ASCII text needs to be folded for (printable ASCII and ``\n``).
_PLAIN_ASCII = re.compile(r"[\x21-\x7e][\x20-\x7e\n]*\Z")
_PROBE_CHARS = 96  # a delimiter is recognized from the start of its line


def clean(text: str) -> str:
    """One kind of line break (``\\n``), no ignorable characters at either end."""
    # Membership tests are C-speed scans; most texts need no substitution.
    if any(ch in text for ch in _ASCII_BREAKS) or (
        not text.isascii() and ("\x85" in text or "\u2028" in text or "\u2029" in text)
    ):
        text = _LINEBREAKS.sub("\n", text)
    if _PLAIN_ASCII.match(text) and not text.endswith((" ", "\n")):
        return text
    return _OUTER.sub("", text)


def oneline(value: object) -> str:
    """``value`` as one line: every line break and ignorable run becomes one space."""
    text = str(value)
    if text.isascii() and text.isprintable():
        return text.strip()
    return _IGN_RUN.sub(" ", _LINEBREAKS.sub(" ", text).replace("\n", " ")).strip()


def split_indent(line: str) -> tuple[str, str]:
    """``(leading ignorable characters, the rest)`` of one line."""
    m = _LEAD.match(line)
    end = m.end() if m else 0
    return line[:end], line[end:]


def fold(line: str) -> str:
    """How the start of ``line`` reads: ignorables collapsed, NFKC, case folded."""
    _, rest = split_indent(line)
    head = _IGN_RUN.sub(" ", rest[: _PROBE_CHARS * 4])[:_PROBE_CHARS]
    if not head.isascii():
        head = _IGN_RUN.sub(" ", unicodedata.normalize("NFKC", head))
    return head.casefold()


def is_blank(line: str) -> bool:
    """Whether ``line`` reads as a blank line (nothing but ignorable characters)."""
    return not line or _LEAD.match(line).end() == len(line)  # type: ignore[union-attr]


def escape_lines(
    text: str, is_delimiter: Callable[[str], bool], *, triggers: str = "", drop_blank: bool = False
) -> str:
    """Put a backslash before the first visible character of every delimiter line.

    Args:
        text: Cleaned text (``\\n`` line breaks).
        is_delimiter: Called with a line's :func:`fold`; True when the line
            would read as one of the format's delimiters.
        triggers: ASCII characters one of which every delimiter contains;
            an ASCII text without any of them is returned as is (fast path).
        drop_blank: Also remove lines that read as blank.
    """
    if triggers and text.isascii() and not any(t in text for t in triggers):
        if not drop_blank or "\n" not in text:
            return text
    out: list[str] = []
    changed = False
    for line in text.split("\n"):
        if drop_blank and is_blank(line):
            changed = True
            continue
        indent, rest = split_indent(line)
        if rest and is_delimiter(fold(rest)):
            line = f"{indent}\\{rest}"
            changed = True
        out.append(line)
    return "\n".join(out) if changed else text
