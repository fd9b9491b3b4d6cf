"""Tests of grounded prompts and chat messages."""

from __future__ import annotations

import pytest

from contextwright.core.errors import InputError
from contextwright.render.messages import PROMPTS, build_messages


def test_messages_put_context_in_the_user_turn_by_default() -> None:
    msgs = build_messages(
        "CTX", "Q?", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"] == PROMPTS["default"]
    assert msgs[-1]["content"] == "Context:\nCTX\n\nQuestion: Q?"


@pytest.mark.parametrize("name", ["default", "strict", "soft", "light"])
def test_named_prompts_ground_and_defuse_instructions(name: str) -> None:
    msgs = build_messages("CTX", "Q?", system=name, context_in="system")
    assert msgs[0]["content"].startswith(PROMPTS[name]) and msgs[0]["content"].endswith("Context:\nCTX")
    assert "instructions" in PROMPTS[name] and "[1]" in PROMPTS[name]
    assert msgs[-1] == {"role": "user", "content": "Q?"}


@pytest.mark.parametrize("name", ["default", "strict", "soft", "light"])
def test_named_prompts_ask_for_the_answer_before_its_citation(name: str) -> None:
    """A small model asked only to "cite the sources" replied with a bare [1] (Qwen2.5-0.5B: 35-38 %)."""
    prompt = PROMPTS[name]
    assert '"Paris [1]"' in prompt
    assert name in ("soft", "light") or "never reply with a citation alone" in prompt


def test_light_names_the_brackets_once_and_asks_for_no_refusal() -> None:
    """Stop 41: under it Qwen2.5-0.5B gave a bare [1] in 0-1 % of replies on nq_bm25_confirm500 (4-12 %
    under ``default``, which dwells on the brackets); SmolLM2 read it worse, so it is not the default."""
    prompt = PROMPTS["light"]
    assert prompt.startswith(
        "Use the numbered sources in the context to answer the question: the answer first"
    )
    assert prompt.count("[") == 1 and "square brackets" not in prompt and "know" not in prompt
    assert PROMPTS["default"] != prompt and "do not know" in PROMPTS["default"]


def test_an_uncited_format_gets_a_prompt_without_numbers() -> None:
    from contextwright.render.format import get_format
    from contextwright.render.messages import system_prompt

    assert "[1]" not in system_prompt("default", format=get_format("minimal"))
    assert '"Paris [SOURCE 1]"' in system_prompt("default", format=get_format("sources"))


def test_literal_system_prompt_and_no_system() -> None:
    assert build_messages("C", "Q", system="Be brief.")[0]["content"] == "Be brief."
    assert build_messages("C", "Q", system=None)[0]["role"] == "user"


def test_bad_history_turn_is_named() -> None:
    with pytest.raises(InputError, match=r"history\[1\] must have string 'role' and 'content'"):
        build_messages("C", "Q", history=[{"role": "user", "content": "a"}, {"role": "user"}])


# --- issue 11, item 11: prompts that match the format; one system message ---------------------

from contextwright import Assembler  # noqa: E402
from contextwright.render.format import get_format  # noqa: E402
from contextwright.render.messages import system_prompt  # noqa: E402

CHUNKS = [{"id": "a", "text": "Paris is in France.", "score": 2}, {"id": "b", "text": "Berlin.", "score": 1}]


@pytest.mark.parametrize("name", ["default", "strict", "soft", "light"])
@pytest.mark.parametrize(
    ("fmt", "present", "absent"),
    [
        ("numbered", ["[1]"], ["SOURCE"]),
        ("xml", ["[1]"], ["SOURCE"]),
        ("grouped", ["[1]"], ["SOURCE"]),
        ("markdown", ["[1]"], ["SOURCE"]),
        ("sources", ["[SOURCE 1]"], ["[1]", "[2, 3]"]),
        ("minimal", [], ["[1]", "[SOURCE", "numbered", "cite"]),
    ],
)
def test_grounded_prompts_ask_for_the_formats_citation_label(
    name: str, fmt: str, present: list[str], absent: list[str]
) -> None:
    ctx = Assembler("qa", budget=300, format=fmt).assemble("q", CHUNKS)
    prompt = ctx.messages(system=name)[0]["content"]
    assert prompt == system_prompt(name, format=get_format(fmt))
    for s in present:
        assert s in prompt
    for s in absent:
        assert s not in prompt.replace("Cite", "cite") if s == "cite" else s not in prompt
    assert "instructions" in prompt


def test_each_format_declares_how_its_blocks_are_cited() -> None:
    assert get_format("numbered").citation_style() == "[{n}]"
    assert get_format("sources").citation_style() == "[SOURCE {n}]"
    assert get_format("minimal").citation_style() is None
    template = get_format({"type": "template", "template": "{{ blocks }}", "label_format": "<{n}>"})
    assert template.citation_style() == "<{n}>"


def test_the_chat_preset_prompt_does_not_ask_for_numbers() -> None:
    ctx = Assembler("chat", budget=300).assemble("q", CHUNKS)
    assert "[1]" not in ctx.messages()[0]["content"]


def test_messages_emit_one_system_message_with_history_summary_and_system_turns() -> None:
    history = [
        {"role": "system", "content": "You are terse."},
        *[
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 30}
            for i in range(8)
        ],
        {"role": "user", "content": "latest"},
    ]
    asm = Assembler("qa", budget=300, history_tokens=120)
    ctx = asm.assemble(
        "q", CHUNKS, history=history, summarizer=lambda turns: f"{len(turns)} turns about words."
    )
    assert ctx.report.history is not None and ctx.report.history.summary
    for context_in in ("user", "system"):
        msgs = ctx.messages(context_in=context_in)  # type: ignore[arg-type]
        roles = [m["role"] for m in msgs]
        assert roles.count("system") == 1 and roles[0] == "system"
        system = msgs[0]["content"]
        assert "You are terse." in system and "turns about words." in system
        assert msgs[-1]["role"] == "user"


@pytest.mark.parametrize("role", ["root", "developer ", "", "function", "SYSTEM"])
def test_history_roles_are_system_user_assistant_tool_only(role: str) -> None:
    with pytest.raises(InputError, match=r"history\[0\]\.role must be one of system, user, assistant, tool"):
        build_messages("C", "Q", history=[{"role": role, "content": "x"}])
    with pytest.raises(InputError, match=r"history\[0\]\.role"):
        Assembler("qa", budget=100, history_tokens=100).assemble(
            "q", CHUNKS, history=[{"role": role, "content": "x"}]
        )
