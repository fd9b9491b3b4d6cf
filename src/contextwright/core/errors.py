"""The one exception hierarchy of contextwright.

Every error raised on purpose by the library derives from
:class:`ContextwrightError`, and each subclass also inherits the builtin that
fits it, so ``except ValueError`` keeps working for callers who never heard of
us::

    ContextwrightError
    ├── InputError(ValueError)        a chunk or request is malformed
    ├── ConfigError(ValueError)       a stage, preset, model or option is invalid
    ├── BudgetError(ValueError)       the zone arithmetic leaves no room for documents
    │   └── HistoryBudgetError        the turns never dropped exceed the history zone
    ├── TokenizerError(RuntimeError)  a tokenizer cannot be loaded (offline, missing file)
    ├── StoreError(RuntimeError)      a chunk store failed or timed out
    ├── CompressionError(RuntimeError) a compressor failed (callers fall back)
    ├── AssemblyCancelled(RuntimeError) stopped from outside (core.cancel: its request was cancelled)
    │   └── DeadlineExceeded(TimeoutError)  stopped because its timeout_s passed
    ├── LLMError(RuntimeError)        a model endpoint failed or replied with no chat completion
    └── MissingDependencyError(ImportError)  an optional extra is not installed

Messages name the setting or field, show the value that was received, and say
how to fix it. An error about one field also carries its path as data in
:attr:`ContextwrightError.loc` (``("stages", 1, "threshold")``), so a caller (the
HTTP service, an editor) never has to parse the message for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

__all__ = [
    "AssemblyCancelled",
    "BudgetError",
    "HistoryBudgetError",
    "CompressionError",
    "ConfigError",
    "ContextwrightError",
    "DeadlineExceeded",
    "InputError",
    "LLMError",
    "MissingDependencyError",
    "StoreError",
    "TokenizerError",
    "did_you_mean",
    "located",
    "missing_extra",
]

#: A field path: mapping keys (``str``) and list positions (``int``), outermost first.
Loc = tuple[str | int, ...]


class ContextwrightError(Exception):
    """Root of every error contextwright raises on purpose.

    Attributes:
        loc: The path of the field the error is about, outermost first, relative to
            what the raising function was given: ``("stages", 1, "threshold")`` from
            :func:`~contextwright.assembly.presets.pipeline_from_config`, ``("threshold",)`` from a
            stage's constructor. Empty when the error is about no one field, or when
            its raise site does not know the field (the message still names it).
    """

    def __init__(self, *args: object, loc: Loc = ()) -> None:
        super().__init__(*args)
        self.loc: Loc = tuple(loc)


class InputError(ContextwrightError, ValueError):
    """Input data (chunks, requests, files) is malformed."""


class ConfigError(ContextwrightError, ValueError):
    """A setting of a stage, preset, model or format is invalid."""


class BudgetError(ContextwrightError, ValueError):
    """The token budget for documents is zero or negative."""


class HistoryBudgetError(BudgetError):
    """The turns that are never dropped (system messages, the latest user turn) exceed the history zone."""


class TokenizerError(ContextwrightError, RuntimeError):
    """A tokenizer could not be loaded or used."""


class StoreError(ContextwrightError, RuntimeError):
    """A chunk store failed, timed out or was misconfigured."""


class CompressionError(ContextwrightError, RuntimeError):
    """A compressor failed; pipelines fall back to the original chunk."""


class AssemblyCancelled(ContextwrightError, RuntimeError):
    """An assembly was cancelled from outside and stopped at its next check (:mod:`contextwright.core.cancel`).

    The checks run before every stage and inside the loops of the stages whose work grows
    with the input, so a cancelled assembly frees its thread within a fraction of a second.
    """


class DeadlineExceeded(AssemblyCancelled, TimeoutError):
    """An assembly ran past its ``timeout_s`` and stopped at its next check.

    Also a :class:`TimeoutError`, so ``except TimeoutError`` catches it; the HTTP service answers 504.
    """


class LLMError(ContextwrightError, RuntimeError):
    """A model endpoint failed (after retries) or replied with something that is not a chat completion.

    Attributes:
        status: The HTTP status of the last response, ``None`` when none came
            (connection refused, timeout).
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class MissingDependencyError(ContextwrightError, ImportError):
    """An optional dependency (an extra) is not installed."""


def missing_extra(module: str, extra: str) -> MissingDependencyError:
    """Build the error for an optional import that failed.

    Args:
        module: The module that could not be imported.
        extra: The contextwright extra that installs it.
    """
    return MissingDependencyError(
        f"{module!r} is not installed; it comes with the {extra!r} extra: "
        f"pip install 'contextwright[{extra}]'"
    )


@contextlib.contextmanager
def located(*prefix: str | int) -> Iterator[None]:
    """Prefix ``prefix`` to the :attr:`~ContextwrightError.loc` of an error raised in the block.

    The error itself is re-raised (same type, message and traceback); only its path
    grows, so a caller that knows the field (a setting's name, a stage's position)
    says so once, around the call that checks it::

        with located(key):
            check_settings(cls, {key: value})
    """
    try:
        yield
    except ContextwrightError as exc:
        exc.loc = (*prefix, *exc.loc)
        raise


def did_you_mean(name: str, valid: Iterable[str], *, n: int = 1, cutoff: float = 0.6) -> str:
    """``" Did you mean 'format'?"`` for the valid name closest to ``name`` (difflib), or ``""`` when none is close.

    The one suggestion helper of the library, the CLI and the service: case-insensitive.
    """
    import difflib

    # Case and "-"/"_" never decide: "QA" means "qa", "lost-in-the-middle" means "lost_in_the_middle".
    folded: dict[str, str] = {}
    for v in valid:
        folded.setdefault(str(v).replace("-", "_").lower(), str(v))
    key = str(name).replace("-", "_").lower()
    close = [key] if key in folded else difflib.get_close_matches(key, list(folded), n=n, cutoff=cutoff)
    return f" Did you mean {', '.join(repr(folded[c]) for c in close)}?" if close else ""
