"""Reports of an evaluation: a Rich table, JSON, and a self-contained HTML page with plots.

Rich and matplotlib are imported inside the functions that need them, so the
metrics stay importable without the ``eval`` extra. The HTML page embeds its
plots as inline SVG (text drawn as paths, no fonts to fetch) and references no
external asset: it opens offline, from a file or an e-mail attachment.

Example:
    >>> from rich.console import Console
    >>> Console().print(render_table(result))
    >>> write_html(result, "report.html")
"""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwright.core.errors import missing_extra
from contextwright.eval.metrics import REDUNDANCY_SHINGLE
from contextwright.eval.reader import ReaderResult
from contextwright.eval.runner import EvalResult, Summary

__all__ = [
    "COLUMNS",
    "DEFINITIONS",
    "READER_DEFINITIONS",
    "READER_HEADLINE",
    "render_html",
    "render_reader_table",
    "render_table",
    "to_json",
    "write_html",
]

#: What each column of the table means (also printed in the HTML report).
DEFINITIONS: dict[str, str] = {
    "ans%": "answer-text retention: share of answerable queries (some retrieved chunk bears an answer) "
    "whose output has a block containing an answer as whole words after normalization; "
    "a block cut mid-answer does not count",
    "chunk%": "answer-bearing chunk retention: answer-bearing input chunks among the output blocks' "
    "member ids (citation chunk_ids), pooled over queries; folded duplicates do not count",
    "pos": "mean normalized position (0 first block, 1 last) of the first answer-bearing block, "
    "over outputs that have one",
    "mid%": "share of those outputs whose first answer-bearing block lies in the middle third "
    "(1/3 <= position <= 2/3)",
    "hard …": "the same on the hard subset: answerable queries whose first answer-bearing chunk "
    "is not at retrieval rank 0",
    "E[acc]%": "expected accuracy under the positional prior, interpolated at the first "
    "answer-bearing block's position; closed-book accuracy when no block bears an answer",
    "tokens": "mean tokens of the output text, counted again independently with the tokenizer",
    "util%": "mean tokens / budget",
    "red%": f"redundancy: share of output words inside a word {REDUNDANCY_SHINGLE}-shingle "
    "that already occurred in an earlier block (overlaps and near-duplicates), pooled",
    "viol": "outputs over budget (independent count)",
    "p50/p95 ms": "median and 95th-percentile (nearest rank) latency of one assembly, with the token "
    "cache cleared before each (as for a query whose chunks were never seen)",
}

#: (header, subset, attribute, kind) of the table's columns.
COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("ans%", "all", "answer_retention", "pct"),
    ("chunk%", "all", "chunk_retention", "pct"),
    ("pos", "all", "position_mean", "pos"),
    ("mid%", "all", "middle_share", "pct"),
    ("hard ans%", "hard", "answer_retention", "pct"),
    ("hard pos", "hard", "position_mean", "pos"),
    ("hard mid%", "hard", "middle_share", "pct"),
    ("E[acc]%", "all", "expected_accuracy", "acc"),
    ("tokens", "all", "tokens_mean", "int"),
    ("util%", "all", "utilisation", "pct"),
    ("red%", "all", "redundancy", "pct"),
    ("viol", "all", "violations", "count"),
    ("p50 ms", "all", "latency_p50_ms", "ms"),
    ("p95 ms", "all", "latency_p95_ms", "ms"),
)


#: What each column of the reader table means.
READER_DEFINITIONS: dict[str, str] = {
    "n": "questions answered (a failed request is not scored; see 'fail')",
    "fail": "requests that failed (HTTP error after retries, timeout, context over the model's window, "
    "empty or malformed reply); each is listed with its error in the JSON",
    "acc%": "accuracy: replies containing a gold answer as whole words after NQ normalization "
    "(lower-case, no punctuation, no articles), / answered",
    "95% CI": "Wilson score interval of the accuracy",
    "EM%": "exact match: the normalized reply equals a normalized gold answer",
    "Δ naive": "accuracy minus naive's at the same budget, on the queries both answered "
    "(closed-book and oracle: against naive at the smallest budget)",
    "Δ 95% CI": "paired bootstrap interval of the delta (2,000 resamples of queries)",
    "p": "McNemar's exact two-sided p-value of the paired comparison with naive",
    "cite%": "replies citing at least one [n], / answered (numbered contexts only)",
    "cite prec%": "cited numbers whose block contains a gold answer, / cited numbers "
    "(a number with no block counts as imprecise)",
    "bare%": "replies that are a citation and nothing else ('[1]', '[2, 3].'), / answered: "
    "no answer given, so the prompt drew a citation instead of an answer",
    "reask%": "replies asked again because the first was a bare citation of its labelled context "
    "(eval --reask-bare; bare% and acc% are then of the second replies), / answered; – without re-asking",
    "tokens": "mean tokens sent (the messages' contents, counted with the evaluation's tokenizer)",
    "p50 ms": "median reader latency per request (a cached reply keeps its original latency)",
}


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "pct":
        return f"{100 * value:.1f}"
    if kind == "pos":
        return f"{value:.2f}"
    if kind == "acc":
        return f"{value:.1f}"
    if kind == "int":
        return f"{value:,.0f}"
    if kind == "ms":
        return f"{value:.1f}"
    return str(value)


def _rows(result: EvalResult) -> list[tuple[str, int, list[str]]]:
    index: dict[tuple[str, int, str], Summary] = {
        (s.strategy, s.budget, s.subset): s for s in result.summaries
    }
    rows = []
    for name, _ in result.strategies:
        for budget in result.budgets:
            cells = []
            for _, subset, attr, kind in COLUMNS:
                s = index.get((name, budget, subset))
                cells.append(_fmt(getattr(s, attr) if s is not None else None, kind))
            rows.append((name, budget, cells))
    return rows


def _caption(result: EvalResult) -> str:
    m = result.meta
    n = m.get("queries", "?")
    return (
        f"{n} quer{'y' if n == 1 else 'ies'} ({m.get('answerable', '?')} answerable, {m.get('hard', '?')} hard) · "
        f"tokenizer {m.get('tokenizer', '?')} · prior {m.get('prior', {}).get('name', '?')}"
    )


#: The headline metrics of the compact table (``contextwright eval`` without ``--wide``).
HEADLINE = ("ans%", "pos", "E[acc]%", "tokens", "red%", "p50 ms")


def render_table(result: EvalResult, *, title: str | None = None, wide: bool = True) -> Any:
    """The summary as a Rich :class:`~rich.table.Table`, one row per strategy and budget.

    ``wide=False`` keeps the :data:`HEADLINE` metrics only, so the table fits
    80 columns; the JSON and HTML reports always have every metric.

    Raises:
        MissingDependencyError: without Rich (extra ``eval``).
    """
    try:
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        raise missing_extra("rich", "eval") from None
    keep = [i for i, (header, *_) in enumerate(COLUMNS) if wide or header in HEADLINE]
    table = Table(title=title, caption=_caption(result), title_justify="left", caption_justify="left")
    table.add_column("strategy", no_wrap=True)
    table.add_column("budget", justify="right")
    for i in keep:
        table.add_column(escape(COLUMNS[i][0]), justify="right", no_wrap=True)
    previous = None
    for name, budget, cells in _rows(result):
        if previous is not None and name != previous:
            table.add_section()
        table.add_row(escape(name), str(budget), *(cells[i] for i in keep))
        previous = name
    return table


def _reader_rows(reader: ReaderResult) -> list[tuple[str, str, list[str]]]:
    rows = []
    for s in reader.summaries:
        ci = (
            f"{100 * s.accuracy_low:.1f}–{100 * s.accuracy_high:.1f}"
            if s.accuracy_low is not None and s.accuracy_high is not None
            else "–"
        )
        dci = (
            f"{100 * s.delta_low:+.1f}…{100 * s.delta_high:+.1f}"
            if s.delta_low is not None and s.delta_high is not None
            else "–"
        )
        rows.append(
            (
                s.strategy,
                str(s.budget) if s.budget else "–",
                [
                    str(s.answered),
                    str(s.failed),
                    _fmt(s.accuracy, "pct"),
                    ci,
                    _fmt(s.exact, "pct"),
                    f"{100 * s.delta:+.1f}" if s.delta is not None else "–",
                    dci,
                    f"{s.p_value:.3g}" if s.p_value is not None else "–",
                    _fmt(s.cite_share, "pct"),
                    _fmt(s.cite_precision, "pct"),
                    _fmt(s.bare_share, "pct"),
                    _fmt(s.reask_share, "pct"),
                    _fmt(s.tokens_mean, "int"),
                    _fmt(s.latency_p50_ms, "ms"),
                ],
            )
        )
    return rows


def _reader_caption(reader: ReaderResult) -> str:
    m = reader.meta
    return (
        f"reader {m.get('model', '?')} {'cached from' if m.get('offline') else 'at'} {m.get('endpoint', '?')} · "
        f"{m.get('queries', '?')} queries · "
        f"max_tokens {m.get('max_tokens', '?')}, temperature {m.get('temperature', '?')} · "
        f"{m.get('requests', 0)} requests, {m.get('cached', 0)} cached, {m.get('failed', 0)} failed"
    )


#: The headline columns of the compact reader table (``contextwright eval --reader`` without ``--wide``).
READER_HEADLINE = ("n", "acc%", "95% CI", "Δ naive", "Δ 95% CI", "p")


def _short_p(cell: str) -> str:
    """A p-value cell of the compact table: ``<0.001`` instead of ``1.16e-06``."""
    try:
        return "<0.001" if float(cell) < 0.001 else cell
    except ValueError:
        return cell


def render_reader_table(
    reader: ReaderResult, *, title: str | None = "Reader accuracy", wide: bool = True
) -> Any:
    """The reader summary as a Rich table, one row per strategy and budget.

    ``wide=False`` keeps the :data:`READER_HEADLINE` columns (answered, accuracy
    with its interval, Δ naive with its interval, p) in a borderless table that
    fits 80 columns; the JSON and HTML reports always have every column.

    Raises:
        MissingDependencyError: without Rich (extra ``eval``).
    """
    try:
        from rich import box
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        raise missing_extra("rich", "eval") from None
    headers = list(READER_DEFINITIONS)
    keep = [i for i, header in enumerate(headers) if wide or header in READER_HEADLINE]
    caption = _reader_caption(reader)
    if wide:
        table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    else:
        table = Table(
            title=title,
            caption=caption,
            title_justify="left",
            caption_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,  # two spaces between columns: the widest cells fit 80
        )
    table.add_column("strategy", no_wrap=True)
    table.add_column("budget", justify="right", no_wrap=True)
    for i in keep:
        table.add_column(escape(headers[i]), justify="right", no_wrap=True)
    p_at = headers.index("p")
    for name, budget, cells in _reader_rows(reader):
        shown = [cells[i] if wide or i != p_at else _short_p(cells[i]) for i in keep]
        table.add_row(escape(name), budget, *shown)
    if reader.sweep is not None:
        sw = reader.sweep
        table.caption = (table.caption or "") + (
            f"\nposition sweep (k={sw.k}, {sw.queries} queries): "
            + " ".join(f"{i}:{_fmt(a, 'pct')}" for i, a in enumerate(sw.accuracy, 1))
            + f" · closed-book {_fmt(sw.closed_book, 'pct')}"
        )
    return table


def to_json(
    result: EvalResult, path: str | Path | None = None, *, meta: Mapping[str, Any] | None = None
) -> str:
    """The result as JSON (written to ``path`` when given); ``meta`` is merged into its ``meta``."""
    data = result.to_dict()
    data["meta"] = {**data["meta"], **(meta or {})}
    data["definitions"] = DEFINITIONS
    if result.reader is not None:
        data["reader_definitions"] = READER_DEFINITIONS
    text = json.dumps(data, ensure_ascii=False, indent=1)
    if path is not None:
        Path(path).write_text(text + "\n", encoding="utf-8")
    return text


# -- HTML ----------------------------------------------------------------------------------------------

_SVG_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_SVG_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_SVG_ID = re.compile(r'\bid="([^"]+)"')
_SVG_REF = re.compile(r'(\bid="|"#|\(#)([^")]+)')


def _svg(fig: Any, prefix: str) -> str:
    """The figure as inline SVG, without the prolog, metadata and namespace URLs HTML does not need.

    Element ids get ``prefix`` so that several figures inlined in one page
    cannot resolve each other's ``#id`` references.
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = _SVG_PROLOG.sub("", buf.getvalue(), count=1)
    text = _SVG_METADATA.sub("", text)
    text = _SVG_XMLNS.sub("", text)
    ids = set(_SVG_ID.findall(text))
    return _SVG_REF.sub(
        lambda m: m.group(1) + (prefix + m.group(2) if m.group(2) in ids else m.group(2)), text
    )


def _colors(names: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {n: cmap(i % 10) for i, n in enumerate(names)}


def _line_plot(
    result: EvalResult, attr: str, ylabel: str, *, subsets: Sequence[str], scale: float, prefix: str
) -> str:
    from matplotlib.figure import Figure

    names = [n for n, _ in result.strategies]
    colors = _colors(names)
    fig = Figure(figsize=(5.2 * len(subsets), 3.6))
    axes = fig.subplots(1, len(subsets), squeeze=False)[0]
    for ax, subset in zip(axes, subsets, strict=True):
        for name in names:
            xs, ys = [], []
            for s in result.summaries:
                value = getattr(s, attr)
                if s.strategy == name and s.subset == subset and value is not None:
                    xs.append(s.budget)
                    ys.append(value * scale)
            ax.plot(xs, ys, marker="o", label=name, color=colors[name])
        if attr == "tokens_mean":
            ax.plot(list(result.budgets), list(result.budgets), ls="--", color="0.5", label="budget")
        ax.set_xlabel("budget (tokens)")
        ax.set_ylabel(ylabel)
        ax.set_title("all queries" if subset == "all" else "hard subset (answer not at rank 0)")
        ax.set_xticks(list(result.budgets))
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="small", loc="best")
    return _svg(fig, prefix)


def _position_plot(result: EvalResult, prefix: str, *, hard: bool = False) -> str:
    from matplotlib.figure import Figure

    names = [n for n, _ in result.strategies]
    budgets = list(result.budgets)
    cols = min(3, max(1, len(names)))
    rows = max(1, -(-len(names) // cols))
    fig = Figure(figsize=(4.2 * cols, 2.9 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    bins = [i / 10 for i in range(11)]
    from matplotlib import colormaps

    shades = colormaps["viridis"]
    for k, ax in enumerate(axes.flat):
        if k >= len(names):
            ax.set_visible(False)
            continue
        name = names[k]
        for j, budget in enumerate(budgets):
            pos = [
                r.position
                for r in result.results
                if r.strategy == name
                and r.budget == budget
                and r.position is not None
                and (r.hard or not hard)
            ]
            color = shades(j / max(1, len(budgets) - 1) * 0.85)
            ax.hist(pos, bins=bins, histtype="step", lw=1.6, color=color, label=str(budget))
        ax.axvspan(1 / 3, 2 / 3, color="0.9", zorder=0)
        ax.set_title(name, fontsize="medium")
        ax.set_xlim(0, 1)
        ax.set_xlabel("position of first answer-bearing block")
        if k % cols == 0:
            ax.set_ylabel("queries")
        if k == 0:
            ax.legend(title="budget", fontsize="x-small", title_fontsize="x-small")
    fig.tight_layout()
    return _svg(fig, prefix)


def _pareto_plot(result: EvalResult, prefix: str) -> str:
    """Mean tokens sent (x) against answer retention (y), one line per strategy over the budgets.

    The view a user decides from: a strategy up and to the left keeps as many answers for fewer
    tokens (``frugal`` against ``qa``).
    """
    from matplotlib.figure import Figure

    names = [n for n, _ in result.strategies]
    colors = _colors(names)
    fig = Figure(figsize=(5.6, 3.8))
    ax = fig.subplots()
    for name in names:
        points = sorted(
            (s.tokens_mean, 100 * s.answer_retention, s.budget)
            for s in result.summaries
            if s.strategy == name
            and s.subset == "all"
            and s.tokens_mean is not None
            and s.answer_retention is not None
        )
        if not points:
            continue
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name, color=colors[name])
        for x, y, budget in points:
            ax.annotate(
                f"{budget:,}", (x, y), textcoords="offset points", xytext=(3, -9), fontsize=6, color="0.4"
            )
    ax.set_xlabel("mean tokens sent")
    ax.set_ylabel("answer retained (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return _svg(fig, prefix)


def _plots(result: EvalResult) -> list[tuple[str, str]]:
    try:
        import matplotlib
    except ImportError:
        raise missing_extra("matplotlib", "eval") from None
    with matplotlib.rc_context({"svg.hashsalt": "contextwright", "svg.fonttype": "path"}):
        return [
            (
                "Answer-text retention vs budget",
                _line_plot(
                    result,
                    "answer_retention",
                    "answer retained (%)",
                    subsets=("all", "hard"),
                    scale=100,
                    prefix="f1-",
                ),
            ),
            (
                "Expected accuracy under the positional prior",
                _line_plot(
                    result,
                    "expected_accuracy",
                    "expected accuracy (%)",
                    subsets=("all", "hard"),
                    scale=1,
                    prefix="f2-",
                ),
            ),
            (
                "Position of the first answer-bearing block, all queries (grey: the middle third)",
                _position_plot(result, "f3-"),
            ),
            (
                "Position of the first answer-bearing block, hard subset (answer not at rank 0)",
                _position_plot(result, "f5-", hard=True),
            ),
            (
                "Tokens used vs budget",
                _line_plot(result, "tokens_mean", "mean tokens", subsets=("all",), scale=1, prefix="f4-"),
            ),
            (
                "Tokens sent vs answers kept, per strategy (labels: the budget; up and left is better)",
                _pareto_plot(result, "f6-"),
            ),
        ]


def _reader_plot(reader: ReaderResult, prefix: str) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 3.8))
    ax = fig.subplots()
    refs = {s.strategy: s for s in reader.summaries if s.budget == 0}
    rows = [s for s in reader.summaries if s.budget != 0]
    names = list(dict.fromkeys(s.strategy for s in rows))
    budgets = sorted({s.budget for s in rows})
    colors = _colors(names)
    width = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        xs, ys, lo, hi = [], [], [], []
        for i, b in enumerate(budgets):
            s = next((r for r in rows if r.strategy == name and r.budget == b), None)
            if s is None or s.accuracy is None:
                continue
            xs.append(i + (j - (len(names) - 1) / 2) * width)
            ys.append(100 * s.accuracy)
            lo.append(100 * (s.accuracy - (s.accuracy_low or 0.0)))
            hi.append(100 * ((s.accuracy_high or 0.0) - s.accuracy))
        ax.bar(xs, ys, width=width * 0.9, color=colors[name], label=name)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="0.2", capsize=2, lw=1)
    for name, style in (("closed-book", ":"), ("oracle", "--")):
        s = refs.get(name)
        if s is not None and s.accuracy is not None:
            ax.axhline(100 * s.accuracy, ls=style, color="0.3", label=f"{name} {100 * s.accuracy:.1f}%")
    ax.set_xticks(range(len(budgets)), [str(b) for b in budgets])
    ax.set_xlabel("budget (tokens)")
    ax.set_ylabel("reader accuracy (%)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize="small", loc="best")
    return _svg(fig, prefix)


def _sweep_plot(reader: ReaderResult, prefix: str) -> str:
    from matplotlib.figure import Figure

    sw = reader.sweep
    assert sw is not None
    fig = Figure(figsize=(5.2, 3.6))
    ax = fig.subplots()
    xs = [i + 1 for i, a in enumerate(sw.accuracy) if a is not None]
    ys = [100 * a for a in sw.accuracy if a is not None]
    lo = [100 * (a - (lo or 0.0)) for a, lo in zip(sw.accuracy, sw.low, strict=True) if a is not None]
    hi = [100 * ((h or 0.0) - a) for a, h in zip(sw.accuracy, sw.high, strict=True) if a is not None]
    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=sw.model)
    if sw.closed_book is not None:
        ax.axhline(100 * sw.closed_book, ls=":", color="0.3", label="closed-book")
    ax.set_xticks(list(range(1, sw.k + 1)))
    ax.set_xlabel(f"position of the answer chunk among {sw.k}")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"{sw.queries} queries, 95% Wilson intervals", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig, prefix)


def _reader_html(reader: ReaderResult) -> list[str]:
    import matplotlib

    parts = [
        "<h2>Reader accuracy</h2>",
        f'<p class="meta">{_e(_reader_caption(reader))}</p>',
        "<table><thead><tr><th>strategy</th><th>budget</th>",
        *(f"<th>{_e(h)}</th>" for h in READER_DEFINITIONS),
        "</tr></thead><tbody>",
    ]
    for name, budget, cells in _reader_rows(reader):
        parts.append(
            f"<tr><td>{_e(name)}</td><td>{_e(budget)}</td>" + "".join(f"<td>{_e(x)}</td>" for x in cells)
        )
        parts.append("</tr>")
    parts.append("</tbody></table>")
    with matplotlib.rc_context({"svg.hashsalt": "contextwright", "svg.fonttype": "path"}):
        parts.append("<h2>Reader accuracy by strategy and budget (95% intervals)</h2>")
        parts.append(f"<figure>{_reader_plot(reader, 'r1-')}</figure>")
        if reader.sweep is not None and any(reader.sweep.answered):
            parts.append("<h2>Accuracy by the answer's position (the U-curve, Liu et al. on this model)</h2>")
            parts.append(f"<figure>{_sweep_plot(reader, 'r2-')}</figure>")
            parts.append(
                "<p>As a prior file for <code>--prior</code>:</p>"
                f"<pre>{_e(json.dumps(reader.sweep.prior_dict(), indent=1))}</pre>"
            )
    failures = [a for a in reader.answers if not a.ok][:20]
    if failures:
        parts.append("<h2>Failed reader requests (first 20)</h2><ul>")
        parts.extend(
            f"<li>{_e(a.query_id)} · {_e(a.strategy)} {a.budget or ''}: {_e(a.error)}</li>" for a in failures
        )
        parts.append("</ul>")
    parts.append("<h3>Reader columns</h3><dl>")
    parts.extend(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in READER_DEFINITIONS.items())
    parts.append("</dl>")
    return parts


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;
padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child{text-align:left}
tr.first td{border-top:2px solid #999}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:600}dd{margin:0}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}
.meta{color:#555}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render_html(
    result: EvalResult, *, title: str = "contextwright eval", meta: Mapping[str, Any] | None = None
) -> str:
    """The HTML report as a string (see :func:`write_html`)."""
    info = {**result.meta, **(meta or {})}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">{_e(_caption(result))}'
        + (f" · data {_e(info['data'])}" if "data" in info else "")
        + f" · budgets {_e(', '.join(str(b) for b in result.budgets))}</p>",
        "<h2>Summary</h2><table><thead><tr><th>strategy</th><th>budget</th>",
        *(f"<th>{_e(h)}</th>" for h, *_ in COLUMNS),
        "</tr></thead><tbody>",
    ]
    previous = None
    for name, budget, cells in _rows(result):
        cls = ' class="first"' if previous is not None and name != previous else ""
        parts.append(
            f"<tr{cls}><td>{_e(name)}</td><td>{budget}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells)
        )
        parts.append("</tr>")
        previous = name
    parts.append("</tbody></table>")
    if result.skipped:
        parts.append("<h2>Skipped strategies</h2><ul>")
        parts.extend(f"<li><b>{_e(n)}</b>: {_e(r)}</li>" for n, r in result.skipped.items())
        parts.append("</ul>")
    if result.notes:
        parts.append("<h2>Notes</h2><ul>")
        parts.extend(f"<li><b>{_e(n)}</b>: {_e(r)}</li>" for n, r in result.notes.items())
        parts.append("</ul>")
    if result.reader is not None:
        parts.extend(_reader_html(result.reader))
    for heading, svg in _plots(result):
        parts.append(f"<h2>{_e(heading)}</h2><figure>{svg}</figure>")
    parts.append("<h2>Definitions</h2><dl>")
    parts.extend(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in DEFINITIONS.items())
    parts.append("</dl>")
    prior = info.get("prior", {})
    parts.append(f"<h2>Positional prior</h2><p>{_e(prior.get('source', ''))}</p>")
    parts.append(f"<pre>{_e(json.dumps(prior, indent=1))}</pre>")
    parts.append("<h2>Strategies</h2>")
    for name, description in result.strategies:
        parts.append(
            f"<h3>{_e(name)}</h3><pre>{_e(json.dumps(description, indent=1, ensure_ascii=False))}</pre>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html(
    result: EvalResult,
    path: str | Path,
    *,
    title: str = "contextwright eval",
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write the self-contained HTML report: summary table, plots as inline SVG, definitions.

    Plots: answer retention vs budget per strategy (all queries and the hard
    subset), expected accuracy vs budget, histograms of the first
    answer-bearing block's position per strategy and budget (all queries and
    the hard subset), and tokens used vs budget.

    Raises:
        MissingDependencyError: without matplotlib (extra ``eval``).
    """
    out = Path(path)
    out.write_text(render_html(result, title=title, meta=meta), encoding="utf-8")
    return out
