"""A real model reads the context: answer accuracy per strategy, against any OpenAI-compatible endpoint.

Retention says the answer is *in* the context; only a reader says whether a
model *finds* it there. :func:`evaluate_reader` asks the model (through
:class:`~contextwright.clients.chat.ChatClient`) each question from each strategy's
context at each budget, plus two references:

* ``closed-book``: the question alone, no context (the floor: what the model
  knows by heart);
* ``oracle``: the first answer-bearing chunk alone (the ceiling of this
  reader with perfect retrieval and assembly; answerable queries only).

A pipeline strategy's messages are ``ctx.messages(system=...)`` of the
context it assembled; a baseline's (``naive``, ``greedy``, ``oracle``) are
built the same way from its text (:func:`~contextwright.render.messages.build_messages`).

Scoring is the open-QA accuracy of Liu et al. and NQ: a reply is correct when
some gold answer, normalized (lower-case, no punctuation, no articles), occurs
in the normalized reply as whole words (:func:`~contextwright.eval.metrics.answer_in_text`);
``exact`` is the stricter exact match of the whole reply. Citations ``[n]`` in
the reply are resolved with :func:`~contextwright.render.cite.resolve_citations`;
citation precision is the share of cited numbers whose block contains a gold
answer (a number that matches no block counts as imprecise).

Per strategy and budget: accuracy with a 95 % Wilson interval, the delta
against ``naive`` at the same budget on the queries both answered, with a
paired bootstrap interval and McNemar's exact p-value, tokens sent, and the
reader's latency. A request that fails (HTTP error after retries, timeout,
a context over the model's window, an empty or malformed reply) is recorded
per query with its error and left out of the accuracy, never scored as wrong;
an unreachable endpoint or a rejected key stops the run with a clear error
before any query is asked.

Replies are cached in a SQLite file keyed by (endpoint, model, messages,
generation settings): a re-run, or a run resumed after Ctrl-C, sends only what
is not cached yet. Failures are not cached, so a resumed run retries them.

Example:
    >>> from contextwright.eval import load_queries
    >>> from contextwright.eval.reader import Reader, evaluate_reader
    >>> reader = Reader("http://127.0.0.1:8080/v1", model="smollm2", cache="reader.sqlite")
    >>> result = evaluate_reader(load_queries("dev.jsonl.gz", limit=20), ["naive", "qa"], [500], reader=reader)
    >>> result.summary("qa", 500).accuracy

The code is in ``reader_client`` (:class:`Reader`, its cache),
``reader_requests`` (what is asked), ``reader_results`` (scoring and the
summary), ``reader_run`` (:func:`evaluate_reader`) and ``sweep``
(:func:`position_sweep`); this module gathers them under the path the docs use.
"""

from __future__ import annotations

from contextwright.eval.reader_client import (
    CLOSED_BOOK,
    CLOSED_BOOK_PROMPT,
    ORACLE,
    Reader,
    default_cache_path,
)
from contextwright.eval.reader_results import (
    PositionSweep,
    ReaderAnswer,
    ReaderResult,
    ReaderSummary,
    score_reply,
    summarize_reader,
)
from contextwright.eval.reader_run import evaluate_reader
from contextwright.eval.sweep import position_sweep

__all__ = [
    "CLOSED_BOOK",
    "CLOSED_BOOK_PROMPT",
    "ORACLE",
    "PositionSweep",
    "Reader",
    "ReaderAnswer",
    "ReaderResult",
    "ReaderSummary",
    "default_cache_path",
    "evaluate_reader",
    "position_sweep",
    "score_reply",
    "summarize_reader",
]
