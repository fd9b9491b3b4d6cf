"""Tests of grounded prompts and chat messages."""

from __future__ import annotations

import pytest

from contextwright.errors import InputError
from contextwright.render.messages import PROMPTS, build_messages


def test_messages_put_context_in_the_user_turn_by_default() -> None:
    msgs = build_messages(
        "CTX", "Q?", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"] == PROMPTS["default"]
    assert msgs[-1]["content"] == "Context:\nCTX\n\nQuestion: Q?"


@pytest.mark.parametrize("name", ["default", "strict", "soft"])
def test_named_prompts_ground_and_defuse_instructions(name: str) -> None:
    msgs = build_messages("CTX", "Q?", system=name, context_in="system")
    assert msgs[0]["content"].startswith(PROMPTS[name]) and msgs[0]["content"].endswith("Context:\nCTX")
    assert "instructions" in PROMPTS[name] and "[1]" in PROMPTS[name]
    assert msgs[-1] == {"role": "user", "content": "Q?"}


def test_literal_system_prompt_and_no_system() -> None:
    assert build_messages("C", "Q", system="Be brief.")[0]["content"] == "Be brief."
    assert build_messages("C", "Q", system=None)[0]["role"] == "user"


def test_bad_history_turn_is_named() -> None:
    with pytest.raises(InputError, match=r"history\[1\] must have string 'role' and 'content'"):
        build_messages("C", "Q", history=[{"role": "user", "content": "a"}, {"role": "user"}])
