"""Compatibility path: the code lives in ``contextwright.render.inspector``."""

from contextwright.render.inspector import (
    _CSS,
    _EXAMPLE,
    _FORM,
    _JS,
    _PAGE,
    _embed,
    block_rows,
    input_rows,
    inspection,
    render_page,
)

__all__ = [
    "_CSS",
    "_EXAMPLE",
    "_FORM",
    "_JS",
    "_PAGE",
    "_embed",
    "block_rows",
    "input_rows",
    "inspection",
    "render_page",
]
