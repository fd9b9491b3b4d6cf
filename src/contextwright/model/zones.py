"""What the chat zones kept: a chat message, the trimmed history, the fitted tool outputs.

Data only; :mod:`contextwright.render.history` and :mod:`contextwright.render.tools`
build them, and :class:`~contextwright.model.report.Report` carries them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

__all__ = ["HistoryResult", "Message", "ToolsResult"]


class Message(TypedDict):
    role: str
    content: Any  # a string; a list of text blocks when cache breakpoints are marked


@dataclass(frozen=True, slots=True)
class HistoryResult:
    """A trimmed history and what trimming did.

    Attributes:
        messages: The kept turns (and the summary message, if any), oldest first.
        tokens: Their cost, with ``per_message`` overhead, within ``budget``.
        budget: The history zone.
        dropped: Positions in the input history of the dropped turns.
        summary: The summarizer's text for the dropped turns, when it ran and fit.
        notes: Anything worth knowing (a summary that did not fit, ...).
    """

    messages: tuple[Message, ...]
    tokens: int
    budget: int
    dropped: tuple[int, ...] = ()
    summary: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "kept": len(self.messages),
            "dropped": list(self.dropped),
            "summary": self.summary,
            "notes": list(self.notes),
            "messages": [dict(m) for m in self.messages],
        }


@dataclass(frozen=True, slots=True)
class ToolsResult:
    """Tool outputs fitted to their zone.

    Attributes:
        text: The rendered section (empty when nothing fit or none was given).
        tokens: Its exact token count, ``<= budget``.
        budget: The tool zone.
        kept: Names of the outputs in ``text``, in input order.
        truncated: Names of the kept outputs that were cut at a line boundary.
        dropped: Names of the outputs left out.
    """

    text: str
    tokens: int
    budget: int
    kept: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "kept": list(self.kept),
            "truncated": list(self.truncated),
            "dropped": list(self.dropped),
            "text": self.text,
        }
