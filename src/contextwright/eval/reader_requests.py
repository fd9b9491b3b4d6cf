"""The requests a reader run sends: one per strategy, budget and query, plus the references, and their answers scored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextwright.clients.chat import ChatReply
from contextwright.core.errors import LLMError
from contextwright.eval.data import EvalQuery
from contextwright.eval.reader_client import (
    BRIEF,
    CLOSED_BOOK,
    CLOSED_BOOK_PROMPT,
    ORACLE,
    Progress,
    Reader,
    logger,
)
from contextwright.eval.reader_results import ReaderAnswer, score_reply
from contextwright.eval.strategies import Strategy
from contextwright.render.cite import bare_citation, reask_wanted
from contextwright.render.messages import Message, build_messages, config_prompt, reask_prompt
from contextwright.tokens import CachedTokenizer, Tokenizer


@dataclass(frozen=True, slots=True)
class Request:
    query: EvalQuery
    strategy: str
    budget: int
    messages: list[dict[str, str]]
    blocks: tuple[str, ...]
    numbered: bool
    error: str | None = None
    #: The context's format (``"plain"`` for a baseline's text): what a re-ask fits its prompt to.
    format: Any = None
    #: The context's config ``reask`` (a profile's): what a re-ask under ``auto`` sends.
    reask: str | bool | None = None


def plain_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def tokens_sent(messages: Sequence[Mapping[str, str]], tokenizer: Tokenizer | CachedTokenizer) -> int:
    return sum(tokenizer.count(m["content"]) for m in messages)


def system_of(reader: Reader | str, format: Any = None) -> str:
    """The reader's system prompt for a context in ``format``, with :data:`BRIEF` appended.

    A named prompt (``default``, ``strict``, ``soft``, ``light``) takes the format's
    citation style, and its uncited form for a context without labels
    (``minimal``, and the baselines' plain text: ``format="plain"``), so a
    reader is never asked to cite numbers its context does not show. A
    literal prompt is used as it is.
    """
    from contextwright.render.format import get_format
    from contextwright.render.messages import system_prompt

    name = reader if isinstance(reader, str) else reader.system
    if format == "plain":
        format = get_format("minimal")
    return system_prompt(name, format=format) + BRIEF


def strategy_request(
    query: EvalQuery,
    strategy: Strategy,
    budget: int,
    *,
    tokenizer: CachedTokenizer,
    resources: Mapping[str, Any],
    system: str,
    prompt: str | None = None,
) -> Request:
    """The request of one strategy at one budget; ``prompt`` (a prompt name or text) is fitted
    to the context's format by :func:`system_of`, else ``system`` is used as it is."""
    try:
        out = strategy.run(
            query.question, query.chunks, budget=budget, tokenizer=tokenizer, resources=resources
        )
    except Exception as exc:  # a strategy failing on one query is recorded, not fatal
        logger.warning("strategy failed", extra={"strategy": strategy.name, "query_id": query.id})
        return Request(query, strategy.name, budget, [], (), False, error=f"assembly failed: {exc}")
    ctx = out.context
    if prompt is not None:  # a profile's own prompt stands in for the reader's "default"
        named = config_prompt(prompt, ctx.prompt if ctx is not None else None) or prompt
        system = system_of(named, ctx.format if ctx is not None else "plain")
    if ctx is not None:
        messages = plain_messages(ctx.messages(query.question, system=system))
        # Citations are scored only where the context shows `[n]` labels (not `minimal`'s bare blocks).
        numbered = bool(ctx.citations) and ctx.format is not None and ctx.format.citation_style() == "[{n}]"
        return Request(
            query, strategy.name, budget, messages, out.blocks, numbered, format=ctx.format, reask=ctx.reask
        )
    messages = plain_messages(build_messages(out.text, query.question, system=system))
    return Request(query, strategy.name, budget, messages, out.blocks, False, format="plain")


def reask_request(req: Request, prompt: str) -> Request:
    """``req`` asked again with the system prompt ``prompt`` (a prompt name, fitted to the
    context's format, or a literal): the same context and question, the new prompt first."""
    system = {"role": "system", "content": system_of(prompt, req.format)}
    rest = req.messages[1:] if req.messages and req.messages[0]["role"] == "system" else req.messages
    return replace(req, messages=[system, *rest])


def should_reask(req: Request, answer: ReaderAnswer) -> bool:
    """Whether an application would re-ask: the reply is a bare citation of a context with
    citation labels (``[1]``, ``[SOURCE 1]``), by :func:`~contextwright.render.cite.reask_wanted`,
    the rule :func:`contextwright.ask` follows."""
    if not (answer.ok and answer.bare) or req.format in (None, "plain"):  # no context, or plain text
        return False
    return reask_wanted(answer.answer, req.format, len(req.blocks))


def reasked(first: ReaderAnswer, again: ReaderAnswer) -> ReaderAnswer:
    """The answer of a re-asked request: the second reply, scored, with the tokens and time of
    both requests; the first reply when the second failed (what the application would show)."""
    if not again.ok:
        return replace(first, reasked=True, first_answer=first.answer)
    latency = None
    if first.latency_ms is not None and again.latency_ms is not None:
        latency = first.latency_ms + again.latency_ms
    prompt = None
    if first.prompt_tokens is not None and again.prompt_tokens is not None:
        prompt = first.prompt_tokens + again.prompt_tokens
    return replace(
        again,
        tokens_sent=first.tokens_sent + again.tokens_sent,
        prompt_tokens=prompt,
        latency_ms=latency,
        cached=first.cached and again.cached,
        reasked=True,
        first_answer=first.answer,
    )


def ask_again(
    requests: Sequence[Request],
    answers: Sequence[ReaderAnswer],
    prompt: str,
    reader: Reader,
    tokenizer: Tokenizer | CachedTokenizer,
    progress: Progress | None = None,
) -> tuple[tuple[ReaderAnswer, ...], list[tuple[Request, Any]]]:
    """``answers`` with each bare citation of a labelled context (:func:`should_reask`) asked once
    more under ``prompt`` (``auto``: each context's config ``reask``, else ``light``, as
    :func:`contextwright.ask`), and the ``(request, reply)`` pairs of those second requests (through
    the reader's cache). ``eval --reask-bare`` and ``fit --reask-bare`` both go through it.

    A second request that would be the first one again (the first was already asked under
    ``prompt``) is not sent, as :func:`contextwright.ask` does not send it: its reply is the first.
    """
    second_asks: list[tuple[int, Request]] = []
    for k, answer in enumerate(answers):
        again = reask_prompt(prompt, requests[k].reask)
        if again is not None and should_reask(requests[k], answer):
            second = reask_request(requests[k], again)
            if second.messages != requests[k].messages:
                second_asks.append((k, second))
    if not second_asks:
        return tuple(answers), []
    replies = reader.ask_many([r.messages for _, r in second_asks], progress=progress)
    out = list(answers)
    for (k, req), got in zip(second_asks, replies, strict=True):
        out[k] = reasked(answers[k], answer_of(req, got, tokenizer))
    return tuple(out), [(req, got) for (_, req), got in zip(second_asks, replies, strict=True)]


def oracle_request(query: EvalQuery, *, system: str) -> Request | None:
    if query.first_answer_rank is None:
        return None
    chunk = query.chunks[query.first_answer_rank]
    text = str(chunk.get("text", ""))
    messages = plain_messages(build_messages(text, query.question, system=system))
    return Request(query, ORACLE, 0, messages, (text,), False)


def closed_request(query: EvalQuery) -> Request:
    messages = [
        {"role": "system", "content": CLOSED_BOOK_PROMPT},
        {"role": "user", "content": f"Question: {query.question}"},
    ]
    return Request(query, CLOSED_BOOK, 0, messages, (), False)


def answer_of(
    req: Request, got: tuple[ChatReply, bool] | LLMError | None, tokenizer: Tokenizer | CachedTokenizer
) -> ReaderAnswer:
    q, s, b = req.query.id, req.strategy, req.budget
    if req.error is not None or got is None:
        return ReaderAnswer(q, s, b, ok=False, error=req.error or "not asked")
    sent = tokens_sent(req.messages, tokenizer)
    if isinstance(got, LLMError):
        return ReaderAnswer(q, s, b, ok=False, tokens_sent=sent, error=str(got))
    reply, cached = got
    sc = score_reply(reply.content, req.query.answers, req.blocks, numbered=req.numbered)
    return ReaderAnswer(
        q,
        s,
        b,
        ok=True,
        answer=reply.content,
        correct=bool(sc["correct"]),
        exact=bool(sc["exact"]),
        cites=bool(sc["cites"]),
        cited=int(sc["cited"]),
        cited_correct=int(sc["cited_correct"]),
        tokens_sent=sent,
        prompt_tokens=reply.prompt_tokens,
        latency_ms=reply.latency_ms,
        cached=cached,
        finish_reason=reply.finish_reason,
        numbered=req.numbered,
        bare=bare_citation(reply.content),
    )
