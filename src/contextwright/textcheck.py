"""Text that enters the library must be valid Unicode: :func:`check_text`.

Its own module (it imports only the errors) so that every module taking text
in (``types``, ``render.messages``, ``render.history``, ``render.format``) can use
it without importing each other.
"""

from __future__ import annotations

from contextwright.errors import InputError

__all__ = ["check_text"]


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
