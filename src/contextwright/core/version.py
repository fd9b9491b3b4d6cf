"""The package version (the same as ``version`` in pyproject.toml; a test checks they agree)."""

__version__ = "0.1.0"
