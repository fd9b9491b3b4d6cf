"""What a reader sees at the start of a line, and how formats escape it.

Invariant 4 (boundaries cannot be forged) is decided line by line: a line of
chunk text must not *read as* one of the format's delimiters. A reader — a
person or an LLM — does not see zero-width characters (U+200B), bidi
controls (U+202E, U+2066), soft hyphens, variation selectors or control
characters at all, sees no-break (U+00A0) and ideographic (U+3000) spaces as
spaces, and reads fullwidth ``［２］`` as ``[2]``. So "could this line be a
delimiter" is asked of the line's *reading* (:func:`reading`, :func:`fold`):
leading ignorable characters removed, invisible characters removed wherever
they are (``[1\u200b0]`` reads ``[10]``, ``[SOU\u200bRCE 2]`` reads
``[source 2]``), runs of spaces collapsed to one, NFKC compatibility forms
mapped to their plain form, case folded.

*Ignorable* means: Unicode ``White_Space``, control characters (``Cc``),
format characters (``Cf``: zero-width, bidi, BOM, soft hyphen),
``Default_Ignorable_Code_Point`` (Hangul fillers, variation selectors, ...)
and the Braille blank (U+2800), which renders as a blank cell. Of them, the
*spaces* (``str.isspace`` characters and the blank fillers U+115F, U+1160,
U+2800, U+3164, U+FFA0) read as a space; the rest are *invisible* and read as
nothing.

A delimiter line is escaped by a backslash before its first visible
character (``\\[2]``, ``\\### [5]``), which keeps the text readable and makes
the line start with a character no format uses for a delimiter. A line that
is only ignorable characters reads as a blank line and is dropped where blank
lines are delimiters (``minimal``). Bidi embedding, override and isolate
controls (U+202A–U+202E, U+2066–U+2069) are removed by :func:`clean` and
:func:`oneline`, so rendered text shows in the order the model reads it and
cannot reorder a header on screen.

Which lines are delimiters is each format's grammar
(:mod:`contextwright.render.grammar`), which the block parsers of
:mod:`contextwright.render.parse` use too, so the two cannot disagree.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from contextwright.core.text import (
    IGNORABLE,
    IGNORABLE_SET,
    MARK,
    MARK_RANGES,
    SPACES,
    visible,
)

__all__ = [
    "IGNORABLE",
    "clean",
    "drop_blank_lines",
    "escape_lines",
    "fold",
    "is_blank",
    "visible",
    "oneline",
    "reading",
    "split_indent",
]


def _char_class(chars: frozenset[str]) -> str:
    points = sorted(ord(ch) for ch in chars)
    ranges: list[list[int]] = []
    for cp in points:
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    body = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    )
    return f"[{body}]"


#: One invisible character (ignorable, not a space): a ``re`` class.
INVISIBLE = _char_class(IGNORABLE_SET - SPACES)
_SPACE_CLASS = _char_class(SPACES - {"\n"})
_INVISIBLE_RUN = re.compile(INVISIBLE + "+")
_SPACE_RUN = re.compile(_SPACE_CLASS + "+")
#: Bidi embedding, override and isolate controls: removed from rendered text.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_DROP = dict.fromkeys(map(ord, BIDI_CONTROLS))

_IGN_RUN = re.compile(IGNORABLE + "+")
_LEAD = re.compile(IGNORABLE + "*")
#: An ignorable character or a combining mark (``Mn``/``Me``): what may come before the first
#: character a reader sees on a line. A mark at the start of a line draws on nothing (or on the
#: line break) and takes no place, so ``\u0301[2]`` reads ``[2]``; within a line a mark only
#: accents the character before it, so ``[\u0301 2]`` reads ``[ 2]`` (issue 31, item 8).
IGNORABLE_OR_MARK = IGNORABLE[:-1] + MARK[1:]
_HIDDEN_RUN = re.compile(f"(?:{INVISIBLE}|{MARK})+")


def _probe(chars: frozenset[str]) -> re.Pattern[str]:
    """A search for any of ``chars`` or any character past the BMP: a class of BMP ranges plus one
    range, which ``re`` tests at C speed. The classes above reach past the BMP (marks, tags), and
    ``re`` then tests each character against every range: ~100 µs for the hidden ones of a
    500-character line with a dash or curly quote, ~5 µs for the probe. A text the probe finds
    nothing in holds none of ``chars``, so its substitution is skipped."""
    return re.compile(
        _char_class(frozenset(ch for ch in chars if ord(ch) < 0x10000))[:-1] + "\U00010000-\U0010ffff]"
    )


_INVISIBLE_SET = IGNORABLE_SET - SPACES
_HIDDEN_PROBE = _probe(_INVISIBLE_SET | frozenset(chr(cp) for a, b in MARK_RANGES for cp in range(a, b + 1)))
_INVISIBLE_PROBE = _probe(_INVISIBLE_SET)
# Where collapsing spaces changes the text: a run of two or more, or one space that is not " "
# (what _SPACE_RUN.sub(" ", ...) does, without a match per single space of ordinary text).
_SPACE_CHANGE = re.compile(f"{_SPACE_CLASS}{{2,}}|{_char_class(SPACES - {chr(10), ' '})}")
_LINEBREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_PROBE_CHARS = 96  # a delimiter is recognized from the start of its line


def clean(text: str) -> str:
    """One kind of line break (``\\n``), no ignorable characters at either end."""
    # Membership tests are memchr-speed scans (a regex class search is ~20x slower);
    # most texts need no substitution.
    if any(ch in text for ch in _ASCII_BREAKS) or (
        not text.isascii() and ("\x85" in text or "\u2028" in text or "\u2029" in text)
    ):
        text = _LINEBREAKS.sub("\n", text)
    text = text.strip()
    if not text.isascii() and any(ch in text for ch in BIDI_CONTROLS):
        text = text.translate(_BIDI_DROP).strip() or text
    if not text or (text[0] not in IGNORABLE_SET and text[-1] not in IGNORABLE_SET):
        return text
    # Invisible characters at either end go too, unless nothing visible is left
    # (input validation rejects such texts; a Chunk built by hand keeps them).
    start, end = 0, len(text)
    while start < end and text[start] in IGNORABLE_SET:
        start += 1
    while end > start and text[end - 1] in IGNORABLE_SET:
        end -= 1
    return text[start:end] or text


def oneline(value: object) -> str:
    """``value`` as one line: every line break and ignorable run becomes one space.

    Bidi controls go with the other ignorables, so a title cannot reorder its header line.
    """
    text = str(value)
    if text.isascii() and text.isprintable():
        return text.strip()
    return _IGN_RUN.sub(" ", _LINEBREAKS.sub(" ", text).replace("\n", " ")).strip()


def split_indent(line: str) -> tuple[str, str]:
    """``(leading ignorable characters, the rest)`` of one line."""
    m = _LEAD.match(line)
    end = m.end() if m else 0
    return line[:end], line[end:]


def reading(text: str) -> str:
    """How ``text`` reads: invisible characters removed, spaces collapsed, NFKC, case folded.

    Linear in ``len(text)``; callers pass a bounded window or a line once.
    """
    if text.isascii() and text.isprintable() and "  " not in text:
        return text.casefold()
    text = _visible(text)
    if not text.isascii():
        text = _visible(unicodedata.normalize("NFKC", text))
    return text.casefold()


def _visible(text: str) -> str:
    """``text`` with invisible characters removed and each run of spaces one ``" "``."""
    if _INVISIBLE_PROBE.search(text):
        text = _INVISIBLE_RUN.sub("", text)
    return _SPACE_CHANGE.sub(" ", text)


def fold(line: str) -> str:
    """How the start of ``line`` reads: leading ignorables removed, then :func:`reading`.

    Invisible characters and combining marks are removed from the whole line first (a marker
    can hide any number of them, and a mark only accents the character before it: ``\u0301[2]``
    and ``[\u0301 2]`` read as ``[2]`` and ``[ 2]``), then the first ``_PROBE_CHARS`` characters
    of the reading are returned.
    """
    _, rest = split_indent(line)
    window = rest[: _PROBE_CHARS * 4]
    if not (window.isascii() and window.isprintable()) and _HIDDEN_PROBE.search(rest):
        rest = _HIDDEN_RUN.sub("", rest)  # whole line: linear, once per line
        _, rest = split_indent(rest)  # spaces the leading marks stood before
        window = rest[: _PROBE_CHARS * 4]
    return reading(window)[:_PROBE_CHARS]


def is_blank(line: str) -> bool:
    """Whether ``line`` reads as a blank line (nothing but ignorable characters)."""
    m = _LEAD.match(line)
    return m is None or m.end() == len(line)


# Characters whose NFKC form starts with an ASCII delimiter character (computed
# over every code point once; see the tests), so a line can be picked out by
# its first visible character without folding every line.
_COMPAT = {
    "[": "\ufe47\uff3b",
    "#": "\ufe5f\uff03",
    "_": "\ufe33\ufe34\ufe4d\ufe4e\ufe4f\uff3f",
    "=": "\u207c\u208c\u2a75\u2a76\ufe66\uff1d",
    "-": "\ufe63\uff0d",
    "<": "\ufe64\uff1c",
    "`": "\u1fef\uff40",
    "~": "\uff5e",
}


@functools.lru_cache(maxsize=64)
def _line_starts(triggers: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(indent at the start of the text, ``\\n`` + indent of a later line), before a trigger."""
    chars = re.escape("".join(t + _COMPAT.get(t, "") for t in triggers))
    # The second pattern starts with a literal "\n", which the regex engine finds with a
    # fast scan; a MULTILINE "^" would be tried at every position of the text.
    lead = IGNORABLE_OR_MARK
    return re.compile(rf"{lead}*+(?=[{chars}])"), re.compile(rf"\n{lead}*+(?=[{chars}])")


_BLANK_LINES = re.compile(rf"\n(?:{IGNORABLE}*+\n)+")


def escape_lines(text: str, is_delimiter: Callable[[str], bool], *, triggers: str) -> str:
    """Put a backslash before the first visible character of every delimiter line.

    Args:
        text: Cleaned text (``\\n`` line breaks, see :func:`clean`).
        is_delimiter: Called with a candidate line's :func:`fold`; True when
            the line would read as one of the format's delimiters.
        triggers: The ASCII characters a delimiter can start with; only lines
            whose first visible character is one of them (or a compatibility
            form of one) are folded and tested.
    """
    if text.isascii() and not any(t in text for t in triggers):
        return text
    first, later = _line_starts(triggers)

    def escaped(m: re.Match[str]) -> str:
        end = text.find("\n", m.end())
        rest = text[m.end() : end if end >= 0 else len(text)]
        return f"{m.group()}\\" if is_delimiter(fold(rest)) else m.group()

    m = first.match(text)
    head = escaped(m) if m else ""
    start = m.end() if m else 0
    if "\n" not in text:
        return head + text[start:] if m and len(head) != m.end() else text
    return head + later.sub(escaped, text[start:]) if m else later.sub(escaped, text)


def drop_blank_lines(text: str) -> str:
    """Remove the lines of cleaned ``text`` that read as blank (``minimal``'s delimiter).

    Cleaning strips blank edges only where something visible is left, so a text of ignorable
    characters alone (a document summary of zero-width spaces) can still start or end with a
    blank line; those go too, or the line after the summary would read as a new block.
    """
    if "\n" not in text:
        return text
    text = str(_BLANK_LINES.sub("\n", text))
    lines = text.split("\n")
    if is_blank(lines[0]) or is_blank(lines[-1]):
        return "\n".join(line for line in lines if not is_blank(line))
    return text
