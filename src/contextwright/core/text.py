"""Text primitives every layer uses: valid Unicode (:func:`check_text`) and what a reader cannot see.

:func:`check_text` rejects text that is not Unicode where it enters. The
*ignorable* characters (``White_Space``, ``Cc``, ``Cf``,
``Default_Ignorable_Code_Point`` and U+2800; see
:mod:`contextwright.render.escape` for how formats use them) and
:func:`visible` live here, below the data model, because a chunk's text is
judged empty by them before anything is rendered.
"""

from __future__ import annotations

import re

from contextwright.core.errors import InputError

__all__ = [
    "ASCII_IGNORABLE",
    "IGNORABLE",
    "IGNORABLE_RANGES",
    "IGNORABLE_SET",
    "SPACES",
    "check_text",
    "visible",
]

#: The ignorable code points as inclusive ranges: ``White_Space``, ``Cc``,
#: ``Cf``, ``Default_Ignorable_Code_Point`` and U+2800. Spelled out (rather than
#: ``\p{...}`` classes of the ``regex`` package) because stdlib ``re`` matches an
#: explicit class several times faster; ``tests/render/test_escape.py`` checks the
#: table against the Unicode properties.
IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0009), (0x000B, 0x0020), (0x007F, 0x00A0), (0x00AD, 0x00AD), (0x034F, 0x034F),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x115F, 0x1160), (0x1680, 0x1680), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2000, 0x200F), (0x2028, 0x202F), (0x205F, 0x206F), (0x2800, 0x2800), (0x3000, 0x3000),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_CLASS_BODY = "".join(
    re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in IGNORABLE_RANGES
)
#: One ignorable character, ``\n`` excluded (see the module docstring): a ``re`` class.
IGNORABLE = f"[{_CLASS_BODY}]"
IGNORABLE_SET = frozenset(chr(c) for a, b in IGNORABLE_RANGES for c in range(a, b + 1)) | {"\n"}
#: The ignorable characters that read as a space; the others read as nothing.
SPACES = frozenset(ch for ch in IGNORABLE_SET if ch.isspace()) | set("\u115f\u1160\u2800\u3164\uffa0")
#: The ASCII ignorable characters, for ``str.strip`` at C speed.
ASCII_IGNORABLE = "".join(chr(c) for c in range(0x21) if c != 0x0A) + "\n\x7f"


def visible(text: str) -> bool:
    """Whether ``text`` has a character a reader can see (not only ignorable ones)."""
    stripped = text.strip(ASCII_IGNORABLE)  # C speed; nearly every text ends here
    if not stripped:
        return False
    return stripped[0] not in IGNORABLE_SET or any(ch not in IGNORABLE_SET for ch in stripped)


def check_text(value: str, where: str, *, error: type[Exception] = InputError) -> str:
    """``value`` unchanged, or ``error`` naming ``where`` when it holds a lone surrogate.

    A lone surrogate (``"\\ud800"``) is not a character: it cannot be encoded
    as UTF-8, so it would fail later in a hash, a tokenizer or a JSON encoder.
    It is rejected where it enters, never replaced silently.
    """
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(
            f"{where} contains a lone surrogate {value[exc.start]!r} at character {exc.start}; "
            "it is not valid Unicode text. Decode your input with errors='replace' (or fix its "
            "source) before assembly."
        ) from None
    return value
