"""The public surface: ``__all__`` is exactly the public names, sorted."""

from __future__ import annotations

import inspect

import contextwright


def test_all_lists_exactly_the_public_names_sorted() -> None:
    public = {
        name
        for name, value in vars(contextwright).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(contextwright.__all__) - {"__version__"} == public
    assert contextwright.__all__ == sorted(contextwright.__all__)
