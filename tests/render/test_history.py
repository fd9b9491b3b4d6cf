"""Conversation history trimmed to its zone: oldest first, system and latest user turn kept."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler, get_tokenizer
from contextwright.core.errors import BudgetError, ConfigError, HistoryBudgetError, InputError
from contextwright.render.history import SUMMARY_PREFIX, trim_history

TOK = get_tokenizer("cl100k_base")


def turn(role: str, words: int, tag: str) -> dict[str, str]:
    return {"role": role, "content": f"{tag} " + " ".join(["word"] * words)}


HISTORY = [
    turn("system", 10, "S"),
    turn("user", 30, "U1"),
    turn("assistant", 30, "A1"),
    turn("user", 30, "U2"),
    turn("assistant", 30, "A2"),
    turn("user", 30, "U3"),
    turn("assistant", 30, "A3"),
]


def cost(messages: Any) -> int:
    return sum(TOK.count(m["content"]) + 4 for m in messages)


def test_history_that_fits_is_unchanged() -> None:
    result = trim_history(HISTORY, budget=10_000, tokenizer=TOK)
    assert list(result.messages) == HISTORY and result.dropped == () and result.tokens == cost(HISTORY)


def test_oldest_turns_go_first_and_system_and_latest_user_stay() -> None:
    budget = cost(HISTORY) - 50
    result = trim_history(HISTORY, budget=budget, tokenizer=TOK)
    assert result.dropped == (1, 2)  # U1 and A1, the oldest droppable turns
    assert [m["content"].split()[0] for m in result.messages] == ["S", "U2", "A2", "U3", "A3"]
    assert result.tokens == cost(result.messages) <= budget


def test_the_latest_user_turn_survives_even_when_older_turns_after_it_go() -> None:
    result = trim_history(HISTORY, budget=cost([HISTORY[0], HISTORY[5]]), tokenizer=TOK)
    assert [m["content"].split()[0] for m in result.messages] == ["S", "U3"]
    assert result.dropped == (1, 2, 3, 4, 6)


def test_summary_of_dropped_turns_counts_inside_the_zone() -> None:
    seen: list[list[str]] = []

    def summarize(turns: list[Any]) -> str:
        seen.append([t["content"].split()[0] for t in turns])
        return "The user asked about " + ", ".join(t["content"].split()[0] for t in turns) + "."

    budget = cost(HISTORY) - 50
    result = trim_history(HISTORY, budget=budget, tokenizer=TOK, summarizer=summarize)
    assert result.tokens <= budget and result.tokens == cost(result.messages)
    assert result.messages[1]["role"] == "system" and result.messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert result.summary is not None and result.summary in result.messages[1]["content"]
    assert seen[-1] == [HISTORY[i]["content"].split()[0] for i in result.dropped]


def test_a_failing_summarizer_drops_without_summary_and_says_so() -> None:
    def broken(turns: list[Any]) -> str:
        raise RuntimeError("model down")

    result = trim_history(HISTORY, budget=cost(HISTORY) - 50, tokenizer=TOK, summarizer=broken)
    assert result.summary is None and "summarizer failed" in result.notes[0]
    assert all(not m["content"].startswith(SUMMARY_PREFIX) for m in result.messages)


def test_protected_turns_over_the_zone_raise_a_budget_error() -> None:
    with pytest.raises(BudgetError, match=r"never dropped\. Raise history_tokens"):
        trim_history(HISTORY, budget=20, tokenizer=TOK)


def test_malformed_turn_is_named() -> None:
    with pytest.raises(InputError, match=r"history\[1\] must have string 'role' and 'content'"):
        trim_history([HISTORY[0], {"role": "user"}], budget=100, tokenizer=TOK)


def test_messages_trim_history_to_the_assemblers_history_zone() -> None:
    zone = cost(HISTORY) - 50
    ctx = Assembler("qa", budget=200, history_tokens=zone).assemble(
        "q?", [{"text": "Some text.", "score": 1}]
    )
    assert ctx.report.zones["history"] == zone
    messages = ctx.messages(history=HISTORY)
    contents = [m["content"].split()[0] for m in messages]
    assert "U1" not in contents and "A1" not in contents and "U3" in contents
    assert messages[-1]["role"] == "user" and messages[-1]["content"].endswith("Question: q?")
    untrimmed = Assembler("qa", budget=200).assemble("q?", [{"text": "Some text.", "score": 1}])
    # no zone: history untouched (its system turn merged into the one system message)
    assert len(untrimmed.messages(history=HISTORY)) == len(HISTORY) + 1
    assert len(untrimmed.messages(history=HISTORY, history_budget=zone)) == len(HISTORY) - 1


def test_assemble_trims_history_and_the_report_shows_what_was_dropped() -> None:
    zone = cost(HISTORY) - 50
    asm = Assembler("qa", budget=200, history_tokens=zone)
    ctx = asm.assemble("q?", [{"text": "Some text.", "score": 1}], history=HISTORY)
    trimmed = ctx.report.history
    assert trimmed is not None and trimmed.dropped == (1, 2) and trimmed.tokens <= zone
    as_dict = ctx.report.to_dict()["history"]
    assert as_dict["dropped"] == [1, 2] and as_dict["kept"] == len(HISTORY) - 2
    assert [m["content"] for m in as_dict["messages"]] == [t["content"] for t in HISTORY[:1] + HISTORY[3:]]
    # messages() sends the kept turns by default, then the context and the question
    messages = ctx.messages()
    kept = trimmed.messages
    assert [m["content"] for m in messages[1:-1]] == [m["content"] for m in kept if m["role"] != "system"]
    assert all(m["content"] in messages[0]["content"] for m in kept if m["role"] == "system")
    assert messages[-1]["content"].endswith("Question: q?")
    # the dry run trims the same way
    assert asm.plan("q?", [{"text": "Some text.", "score": 1}], history=HISTORY).history == trimmed
    # without history, the report has no history entry
    assert "history" not in asm.assemble("q?", [{"text": "Some text."}]).report.to_dict()


def test_assemble_summarizes_dropped_turns_inside_the_zone() -> None:
    zone = cost(HISTORY) - 50
    seen: list[list[str]] = []

    def summarize(turns: list[Any]) -> str:
        seen.append([t["content"].split()[0] for t in turns])
        return "they talked about words"

    asm = Assembler("qa", budget=200, history_tokens=zone)
    ctx = asm.assemble("q?", [{"text": "Some text."}], history=HISTORY, summarizer=summarize)
    trimmed = ctx.report.history
    assert trimmed is not None and trimmed.summary == "they talked about words"
    assert seen[-1][:2] == ["U1", "A1"] and trimmed.tokens <= zone
    assert trimmed.tokens == cost(trimmed.messages)
    assert SUMMARY_PREFIX + "they talked about words" in ctx.messages()[0]["content"]


def test_assemble_with_history_but_no_zone_says_how_to_fix_it() -> None:
    with pytest.raises(ConfigError, match=r"history_tokens=0.*history_tokens=N"):
        Assembler("qa", budget=200).assemble("q?", [{"text": "x"}], history=HISTORY)
    with pytest.raises(InputError, match="history must be a list"):
        Assembler("qa", budget=200, history_tokens=100).assemble("q?", [], history="hello")  # type: ignore[arg-type]
    with pytest.raises(HistoryBudgetError, match="never dropped"):
        Assembler("qa", budget=200, history_tokens=20).assemble("q?", [{"text": "x"}], history=HISTORY)
