"""The table, JSON and HTML of an evaluation, on a small hand-made result."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextwright.eval.report import COLUMNS, DEFINITIONS, render_html, render_table, to_json, write_html
from contextwright.eval.runner import EvalResult, QueryResult, summarize
from contextwright.stages.priors import LIU_2024


def _r(qid: str, strategy: str, budget: int, **kw: object) -> QueryResult:
    base = {
        "query_id": qid, "strategy": strategy, "budget": budget, "tokens": budget - 10, "over_budget": False,
        "blocks": 3, "answerable": True, "hard": False, "answer_kept": True, "answer_chunks_kept": 1,
        "answer_chunks": 1, "first_answer_block": 0, "position": 0.0, "middle": False,
        "expected_accuracy": 75.8, "redundant_words": 0, "words": 100, "latency_ms": 2.0,
    }  # fmt: skip
    base.update(kw)
    return QueryResult(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def result() -> EvalResult:
    results = [
        _r("q1", "naive", 100),
        _r("q1", "naive", 200),
        _r("q1", "<b>odd</b>", 100, answer_kept=False, position=None, middle=None, first_answer_block=None),
        _r("q1", "<b>odd</b>", 200),
        _r(
            "q2",
            "naive",
            100,
            hard=True,
            position=0.5,
            middle=True,
            first_answer_block=1,
            expected_accuracy=54.0,
        ),
        _r("q2", "naive", 200, hard=True),
        _r("q2", "<b>odd</b>", 100, hard=True),
        _r("q2", "<b>odd</b>", 200, hard=True),
    ]
    return EvalResult(
        results=tuple(results),
        summaries=(*summarize(results), *summarize(results, subset="hard")),
        strategies=(("naive", {"type": "naive"}), ("<b>odd</b>", {"type": "pipeline"})),
        skipped={"needs-store": "stage 'expand' needs the resource 'store'"},
        budgets=(100, 200),
        meta={
            "queries": 2,
            "answerable": 2,
            "hard": 1,
            "tokenizer": "cl100k_base",
            "prior": LIU_2024.to_dict(),
        },
    )


def test_table_has_one_row_per_strategy_and_budget_with_formatted_cells(result: EvalResult) -> None:
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(render_table(result))
    text = console.export_text()
    assert "E[acc]%" in text  # a header with brackets is not taken for Rich markup
    assert re.search(
        r"│ naive\s+│\s+100 │\s+100\.0 │\s+100\.0 │\s+0\.25 │\s+50\.0 │\s+100\.0 │\s+0\.50 │\s+100\.0 │\s+64\.9 │",
        text,
    )
    assert re.search(r"│ <b>odd</b>\s+│\s+100 │\s+50\.0 │", text)
    assert "2 queries (2 answerable, 1 hard)" in text
    assert len(COLUMNS) + 2 == len(render_table(result).columns)


def test_json_holds_meta_definitions_summaries_and_results(result: EvalResult, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    text = to_json(result, path, meta={"data": "d.jsonl"})
    data = json.loads(path.read_text())
    assert data == json.loads(text)
    assert data["meta"]["data"] == "d.jsonl"
    assert data["meta"]["prior"]["closed_book"] == 56.1
    assert data["definitions"] == DEFINITIONS
    assert len(data["results"]) == 8
    assert data["skipped"] == {"needs-store": "stage 'expand' needs the resource 'store'"}
    first = data["summaries"][0]
    assert (first["strategy"], first["budget"], first["subset"], first["position_mean"]) == (
        "naive",
        100,
        "all",
        0.25,
    )


def test_html_escapes_names_and_lists_skips_definitions_and_the_prior(
    result: EvalResult, tmp_path: Path
) -> None:
    page = write_html(result, tmp_path / "r.html", title="T & co").read_text()
    assert page == render_html(result, title="T & co")  # and so it is deterministic
    assert "<title>T &amp; co</title>" in page
    assert "<b>odd</b>" not in page
    assert "&lt;b&gt;odd&lt;/b&gt;" in page
    assert "needs-store" in page
    assert "Liu et al., Lost in the Middle" in page
    assert all(f"<dt>{k.replace('&', '&amp;')}</dt>" in page for k in DEFINITIONS)
    assert page.count("<svg") == 6  # with the tokens-vs-retention (Pareto) plot
    assert "http://" not in page


def test_html_has_the_tokens_against_retention_plot(result: EvalResult) -> None:
    """The Pareto view (issue 23): one line per strategy, mean tokens on x, retention on y."""
    page = render_html(result)
    assert "Tokens sent vs answers kept" in page
    figure = page.split("Tokens sent vs answers kept", 1)[1].split("</figure>", 1)[0]
    assert "<svg" in figure and "mean tokens sent" in figure and "answer retained" in figure
    assert figure.count("<path") > 4  # two strategies' lines and markers, axes
