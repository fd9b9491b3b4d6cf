"""Measure the context assembly gap: what retrieval found versus what the model reads.

Load labelled queries, run strategies (the ``naive`` and ``greedy``
baselines, the presets, your configs) at several budgets, and compare them on
answer retention, where the answer lands, redundancy, budget use and latency.
Every metric is also a plain function you can call on your own strings.

Importing this package loads neither Rich nor matplotlib; only the report
functions (:func:`render_table`, :func:`write_html`) do, when called.

Example:
    >>> from contextwright import eval as cweval
    >>> queries = cweval.load_queries("../shared/data/nq_bm25_dev300.jsonl.gz", limit=50)
    >>> result = cweval.evaluate(queries, ["naive", "greedy", "qa"], [300, 1000])
    >>> result.summary("qa", 300).answer_retention
    >>> cweval.answer_in_text("Wilhelm Conrad Röntgen won", ["Wilhelm Conrad Röntgen"])
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextwright.eval.data import EvalQuery, load_queries, query_from_dict
from contextwright.eval.metrics import (
    REDUNDANCY_SHINGLE,
    answer_in_text,
    chunk_retention,
    first_answer_block,
    in_middle_third,
    mcnemar_exact,
    median,
    normalize_answer,
    normalize_answer_unicode,
    normalized_position,
    paired_bootstrap_delta,
    percentile,
    redundancy,
    wilson_interval,
)
from contextwright.eval.reader import (
    PositionSweep,
    Reader,
    ReaderAnswer,
    ReaderResult,
    ReaderSummary,
    evaluate_reader,
    position_sweep,
)
from contextwright.eval.runner import (
    DEFAULT_BUDGETS,
    EvalResult,
    QueryResult,
    Summary,
    evaluate,
    evaluate_query,
    open_corpus_store,
    score_output,
    summarize,
)
from contextwright.eval.strategies import (
    GreedyStrategy,
    NaiveStrategy,
    PipelineStrategy,
    Strategy,
    StrategyOutput,
    build_strategy,
    cut_to_budget,
    default_strategies,
)
from contextwright.stages.priors import LIU_2024, PositionalPrior, load_prior

if TYPE_CHECKING:
    from contextwright.eval.report import render_html, render_reader_table, render_table, to_json, write_html

__all__ = [
    "DEFAULT_BUDGETS",
    "LIU_2024",
    "REDUNDANCY_SHINGLE",
    "EvalQuery",
    "EvalResult",
    "GreedyStrategy",
    "NaiveStrategy",
    "PipelineStrategy",
    "PositionSweep",
    "PositionalPrior",
    "QueryResult",
    "Reader",
    "ReaderAnswer",
    "ReaderResult",
    "ReaderSummary",
    "Strategy",
    "StrategyOutput",
    "Summary",
    "answer_in_text",
    "build_strategy",
    "chunk_retention",
    "cut_to_budget",
    "default_strategies",
    "evaluate",
    "evaluate_query",
    "evaluate_reader",
    "first_answer_block",
    "in_middle_third",
    "load_prior",
    "load_queries",
    "mcnemar_exact",
    "median",
    "normalize_answer",
    "normalize_answer_unicode",
    "normalized_position",
    "open_corpus_store",
    "paired_bootstrap_delta",
    "percentile",
    "position_sweep",
    "query_from_dict",
    "redundancy",
    "render_html",
    "render_reader_table",
    "render_table",
    "score_output",
    "summarize",
    "to_json",
    "wilson_interval",
    "write_html",
]

_REPORT = frozenset({"render_html", "render_reader_table", "render_table", "to_json", "write_html"})


def __getattr__(name: str) -> Any:
    # The report needs Rich and matplotlib; load it only when one of its functions is asked for.
    if name in _REPORT:
        from contextwright.eval import report

        return getattr(report, name)
    raise AttributeError(f"module 'contextwright.eval' has no attribute {name!r}")
