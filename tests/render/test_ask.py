"""``contextwright.ask``: the question over a context, asked once more when the reply is a bare citation.

The model is a real one (llama.cpp serving SmolLM2-135M through ``ChatClient``). SmolLM2 does not
answer with a bare ``[1]`` under the shipped prompt, so where a test needs one, the ``llm`` it
passes (the user's own function, which ``ask`` only calls) says ``[1]`` to the first request and
hands the second to the real model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")

from contextwright import Answer, Assembler, InputError, ask
from contextwright.clients.chat import ChatClient
from contextwright.render.cite import resolve_citations
from contextwright.render.messages import system_prompt

CHUNKS = [
    {"id": "a", "text": "Paris is the capital and largest city of France.", "score": 0.9},
    {"id": "b", "text": "The Eiffel Tower was finished in 1889.", "score": 0.5},
]
QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def ctx() -> Any:
    return Assembler("qa", budget=300).assemble(QUESTION, CHUNKS)


@pytest.fixture
def model(llama_server: Any) -> Iterator[Any]:
    """The real model as an ``llm`` for ``ask``, recording the messages of each request."""
    client = ChatClient(llama_server.base_url, model=llama_server.model)

    class Model:
        def __init__(self) -> None:
            self.calls: list[list[dict[str, str]]] = []
            self.replies: list[str] = []

        def __call__(self, messages: list[Any]) -> str:
            self.calls.append([dict(m) for m in messages])
            self.replies.append(client.chat(messages, max_tokens=16).content)
            return self.replies[-1]

    yield Model()
    client.close()


def test_a_real_model_is_asked_and_its_answer_resolved(ctx: Any, model: Any) -> None:
    got = ask(ctx, model)
    assert isinstance(got, Answer) and got.text.strip()
    assert got.citations == resolve_citations(got.text, ctx)
    assert len(model.calls) == 1 + got.reasked  # asked again only after a bare citation
    assert model.calls[0] == [dict(m) for m in ctx.messages()]


def test_a_bare_citation_is_asked_again_under_light(ctx: Any, model: Any) -> None:
    first: list[list[dict[str, str]]] = []

    def llm(messages: list[Any]) -> str:
        """The first request answered "[1]"; the second by the real model."""
        if not first:
            first.append([dict(m) for m in messages])
            return "[1]"
        return str(model(messages))

    got = ask(ctx, llm)
    assert got.reasked and got.first == "[1]" and got.text == model.replies[0]
    (second,) = model.calls
    assert second[0] == {"role": "system", "content": system_prompt("light", format=ctx.format)}
    assert second[1:] == first[0][1:]  # the same context and question
    assert got.text.strip() and got.citations == resolve_citations(got.text, ctx)


def test_no_reask_when_turned_off_or_when_it_would_be_the_same_request(ctx: Any) -> None:
    calls: list[str] = []

    def bare(messages: list[Any]) -> str:
        calls.append(messages[0]["content"])
        return "[2]"

    off = ask(ctx, bare, reask_bare=None)
    assert not off.reasked and off.text == "[2]" and off.citations.bare and len(calls) == 1
    same = ask(ctx, bare, system="light")
    assert not same.reasked and len(calls) == 2  # light again would be the same request
    again = ask(ctx, bare)
    assert again.reasked and again.first == "[2]" and again.citations.bare  # asked; still bare
    assert calls[2:] == [
        system_prompt("default", format=ctx.format),
        system_prompt("light", format=ctx.format),
    ]


def test_a_year_in_brackets_is_an_answer_not_a_bare_citation(ctx: Any) -> None:
    calls: list[Any] = []
    got = ask(ctx, lambda m: calls.append(m) or "[1889]")
    assert not got.reasked and len(calls) == 1 and got.text == "[1889]"


def test_an_llm_that_does_not_return_text_is_refused_with_the_fix(ctx: Any) -> None:
    with pytest.raises(InputError, match=r"got dict.*choices\[0\]\.message\.content"):
        ask(ctx, lambda m: {"choices": []})  # type: ignore[arg-type,return-value]


def test_aask_awaits_an_async_model_and_asks_again_after_a_bare_citation(ctx: Any, model: Any) -> None:
    """The async ``llm`` of an async app: the real model in a thread, behind a first reply of ``[1]``."""
    import asyncio

    from contextwright import aask

    sent: list[str] = []

    async def llm(messages: list[Any]) -> str:
        sent.append(messages[0]["content"])
        if len(sent) == 1:
            return "[1]"
        return str(await asyncio.to_thread(model, messages))

    got = asyncio.run(aask(ctx, llm))
    assert got.reasked and got.first == "[1]" and got.text == model.replies[0]
    assert sent == [system_prompt("default", format=ctx.format), system_prompt("light", format=ctx.format)]
    assert got.citations == resolve_citations(got.text, ctx)
    plain = asyncio.run(aask(ctx, llm, reask_bare=None))  # the real model's reply, taken as it is
    assert not plain.reasked and len(sent) == 3


def test_a_context_without_labels_is_not_asked_again() -> None:
    """``minimal`` shows no numbers and its prompt asks for none: a "[1]" there is not re-asked (as
    ``eval --reask-bare`` leaves a plain context's reply alone)."""
    bare_ctx = Assembler({"preset": "qa", "format": "minimal"}, budget=300).assemble(QUESTION, CHUNKS)
    assert bare_ctx.format.citation_style() is None and resolve_citations("[1]", bare_ctx).bare
    calls: list[Any] = []
    got = ask(bare_ctx, lambda m: calls.append(m) or "[1]")
    assert not got.reasked and len(calls) == 1 and got.text == "[1]" and got.citations.bare
