"""The exception hierarchy: one root, and each error is also the matching builtin."""

from __future__ import annotations

import pytest

from contextwright import errors


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.InputError, ValueError),
        (errors.ConfigError, ValueError),
        (errors.BudgetError, ValueError),
        (errors.TokenizerError, RuntimeError),
        (errors.StoreError, RuntimeError),
        (errors.CompressionError, RuntimeError),
        (errors.AssemblyCancelled, RuntimeError),
        (errors.MissingDependencyError, ImportError),
    ],
)
def test_every_error_is_a_contextwright_error_and_its_builtin(cls: type, builtin: type) -> None:
    assert issubclass(cls, errors.ContextwrightError) and issubclass(cls, builtin)
    with pytest.raises(builtin):
        raise cls("x")


def test_missing_extra_names_the_module_and_the_install_command() -> None:
    exc = errors.missing_extra("psycopg", "store")
    assert isinstance(exc, errors.MissingDependencyError)
    assert (
        str(exc)
        == "'psycopg' is not installed; it comes with the 'store' extra: pip install 'contextwright[store]'"
    )


def test_the_module_docstring_draws_every_error() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        if name[0].isupper():
            assert name in doc, name
