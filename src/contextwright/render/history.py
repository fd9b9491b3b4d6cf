"""Conversation history trimmed to its zone budget.

The history zone (``Assembler(history_tokens=...)``) is a hard budget like the
documents zone. :func:`trim_history` drops the oldest turns first until the
history fits. Two kinds of message are never dropped: a ``system`` message,
which carries the instructions, and the latest ``user`` turn, which the
answer responds to. An optional ``summarizer`` receives the dropped turns
and returns a text that replaces them, as one ``system`` message after the
kept system messages; the summary is counted inside the zone, so more turns
are dropped when it needs the room. The result says what was dropped.

Each message costs its content's tokens plus ``per_message`` tokens for the
chat format's role and separators (OpenAI documents 3 to 4 per message; the
default 4 is the safe end).

Example:
    >>> trimmed = trim_history(history, budget=500, tokenizer=get_tokenizer("cl100k_base"))
    >>> trimmed.messages, trimmed.dropped, trimmed.tokens
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.core.errors import ConfigError, HistoryBudgetError, InputError
from contextwright.core.text import check_text
from contextwright.model.zones import HistoryResult
from contextwright.render.messages import Message, check_role

__all__ = ["SUMMARY_PREFIX", "HistoryResult", "trim_history"]

logger = logging.getLogger(__name__)

#: How the summarizer's text is introduced in its system message.
SUMMARY_PREFIX = "Summary of the earlier conversation: "

Summarizer = Callable[[list[Message]], str]


def trim_history(
    history: Sequence[Mapping[str, str]],
    *,
    budget: int,
    tokenizer: Any,
    summarizer: Summarizer | None = None,
    per_message: int = 4,
) -> HistoryResult:
    """Drop the oldest turns until ``history`` fits ``budget`` tokens.

    Args:
        history: Turns ``{"role", "content"}``, oldest first.
        budget: The history zone in tokens.
        tokenizer: Anything with ``count(text) -> int`` (a contextwright tokenizer).
        summarizer: Called with the dropped turns; its text replaces them,
            counted inside the budget. An exception in it is logged and the
            turns are dropped without a summary.
        per_message: Tokens each message costs beyond its content.

    Raises:
        InputError: for a turn without string ``role`` and ``content``.
        ConfigError: for a negative budget or ``per_message``.
        HistoryBudgetError: (a ``BudgetError``) when the system messages and the
            latest user turn alone exceed the budget (they are never dropped).
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"history budget must be a non-negative integer; got {budget!r}.")
    if isinstance(per_message, bool) or not isinstance(per_message, int) or per_message < 0:
        raise ConfigError(f"per_message must be a non-negative integer; got {per_message!r}.")
    turns = _read_turns(history)
    costs = [tokenizer.count(t["content"]) + per_message for t in turns]
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    protected = {i for i, t in enumerate(turns) if t["role"] == "system"} | (
        {last_user} if last_user is not None else set()
    )
    floor = sum(costs[i] for i in protected)
    if floor > budget:
        raise HistoryBudgetError(
            f"the system messages and the latest user turn of the history need {floor} tokens, more than the "
            f"history zone of {budget}; they are never dropped. Raise history_tokens, or shorten them."
        )
    droppable = [i for i in range(len(turns)) if i not in protected]  # oldest first
    kept = set(range(len(turns)))
    total = sum(costs)
    dropped: list[int] = []
    while total > budget and droppable:
        i = droppable.pop(0)
        kept.discard(i)
        dropped.append(i)
        total -= costs[i]
    summary: str | None = None
    notes: list[str] = []
    if summarizer is not None and dropped:
        summary, total = _summarize(
            summarizer,
            turns,
            _Trim(costs, droppable, kept, dropped, total),
            budget,
            per_message,
            tokenizer,
            notes,
        )
    out = _with_summary(turns, kept, summary)
    if dropped:
        logger.info("history trimmed", extra={"dropped": len(dropped), "tokens": total, "budget": budget})
    return HistoryResult(tuple(out), total, budget, tuple(sorted(dropped)), summary, tuple(notes))


def _read_turns(history: Sequence[Mapping[str, str]]) -> list[Message]:
    """The turns as messages, each with a string role and valid text content."""
    turns: list[Message] = []
    for i, turn in enumerate(history):
        role, content = turn.get("role"), turn.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InputError(f"history[{i}] must have string 'role' and 'content'; got {dict(turn)!r}.")
        check_role(role, f"history[{i}].role")
        check_text(content, f"history[{i}].content")
        turns.append({"role": role, "content": content})
    return turns


@dataclass
class _Trim:
    """Where trimming stands: each turn's cost, the turns still droppable (oldest first), the
    kept and dropped positions, and the total cost of the kept turns."""

    costs: list[int]
    droppable: list[int]
    kept: set[int]
    dropped: list[int]
    total: int


def _summarize(
    summarizer: Summarizer,
    turns: list[Message],
    trim: _Trim,
    budget: int,
    per_message: int,
    tokenizer: Any,
    notes: list[str],
) -> tuple[str | None, int]:
    """The summary of the dropped turns and the new total, dropping more turns to make it fit.

    ``trim.kept`` and ``trim.dropped`` are updated in place; what went wrong goes to ``notes``.
    """
    while True:
        try:
            text = summarizer([turns[i] for i in trim.dropped])
        except Exception as exc:  # a user hook: never let it break assembly
            logger.warning("history summarizer failed", extra={"error": repr(exc)})
            notes.append(f"summarizer failed: {exc!r}; dropped turns not summarized")
            return None, trim.total
        if not isinstance(text, str) or not text.strip():
            notes.append("summarizer returned no text")
            return None, trim.total
        cost = tokenizer.count(SUMMARY_PREFIX + text) + per_message
        if trim.total + cost <= budget:
            return text, trim.total + cost
        if not trim.droppable:
            notes.append(f"summary of {cost} tokens did not fit the history zone; left out")
            return None, trim.total
        i = trim.droppable.pop(0)  # make room for the summary: drop one more turn and summarize again
        trim.kept.discard(i)
        trim.dropped.append(i)
        trim.total -= trim.costs[i]


def _with_summary(turns: list[Message], kept: set[int], summary: str | None) -> list[Message]:
    """The kept turns in order, the summary (if any) as a system message before the first non-system turn."""
    out: list[Message] = []
    summary_placed = summary is None
    for i, t in enumerate(turns):
        if not summary_placed and t["role"] != "system":
            out.append({"role": "system", "content": SUMMARY_PREFIX + str(summary)})
            summary_placed = True
        if i in kept:
            out.append(t)
    if not summary_placed:
        out.append({"role": "system", "content": SUMMARY_PREFIX + str(summary)})
    return out
