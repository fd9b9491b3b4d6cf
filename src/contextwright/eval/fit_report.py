"""What ``contextwright fit`` writes: the profile TOML, the table of trials, and the HTML report with its plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextwright.core.errors import missing_extra
from contextwright.eval.fit import FitResult
from contextwright.eval.report import _CSS, _e, _svg

__all__ = ["dump_toml", "render_fit_table", "write_fit_html", "write_profile"]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else json.dumps(k)


def dump_toml(data: Mapping[str, Any]) -> str:
    """``data`` as TOML: scalars first, then tables, then arrays of tables (``[[stages]]``).

    Enough for profiles (strings, numbers, booleans, lists, nested mappings);
    ``tomllib`` reads the result back to an equal mapping.

    Example:
        >>> dump_toml({"format": "lean", "stages": [{"type": "score_order"}]})
        'format = "lean"\\n\\n[[stages]]\\ntype = "score_order"\\n'
    """
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    arrays: list[tuple[str, list[Mapping[str, Any]]]] = []
    for k, v in data.items():
        if isinstance(v, Mapping):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, items in arrays:
        for item in items:
            lines.extend(["", f"[[{_key(k)}]]", *(f"{_key(a)} = {_value(b)}" for a, b in item.items())])
    for k, table in tables:
        lines.extend(["", f"[{_key(k)}]", *(f"{_key(a)} = {_value(b)}" for a, b in table.items())])
    return "\n".join(lines) + "\n"


def write_profile(result: FitResult, path: str | Path) -> Path:
    """Write the profile TOML (a config any preset argument accepts); returns the path."""
    p = Path(path)
    head = (
        "# A reader profile written by contextwright fit: use it wherever a preset goes\n"
        f"# (contextwright assemble --preset {p.name}, Assembler({p.name!r}), eval --config {p.name}).\n"
    )
    p.write_text(head + dump_toml(result.profile()), encoding="utf-8")
    return p


def render_fit_table(result: FitResult) -> Any:
    """The trials as a Rich table: per knob, each setting's fit accuracy, tokens, and when it was dropped."""
    try:
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        raise missing_extra("rich", "eval") from None
    table = Table(title="Fit: settings raced on the fit queries", title_justify="left")
    for name, justify in (
        ("knob", "left"),
        ("setting", "left"),
        ("n", "right"),
        ("acc%", "right"),
        ("ans%", "right"),
        ("tokens", "right"),
        ("race", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name != "setting")  # type: ignore[arg-type]
    previous = None
    for t in result.trials:
        if previous is not None and t.knob != previous:
            table.add_section()
        previous = t.knob
        chosen = t.dropped_after is None and t.setting[t.knob] == result.setting[t.knob]
        table.add_row(
            t.knob,
            escape(t.setting[t.knob]) + (" ✓" if chosen else ""),
            str(len(t.scores)),
            f"{100 * t.accuracy:.1f}" if t.scores else "—",
            f"{100 * sum(t.retained.values()) / max(1, len(t.retained)):.1f}",
            f"{t.tokens_mean:,.0f}",
            escape(t.outcome),
        )
    return table


def _plot(result: FitResult) -> str:
    """Accuracy against tokens sent, one series per knob (each setting a point), plus the confirmation."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": "contextwright", "svg.fonttype": "path"}):
        fig = Figure(figsize=(6.4, 4.2))
        ax = fig.subplots()
        knobs = list(dict.fromkeys(t.knob for t in result.trials if t.scores))
        for knob in knobs:
            ts = [t for t in result.trials if t.knob == knob and t.scores]  # not those the guard kept out
            xs, ys = [t.tokens_mean for t in ts], [100 * t.accuracy for t in ts]
            ax.scatter(xs, ys, label=f"fit: {knob}")
            for t, x, y in zip(ts, xs, ys, strict=True):
                ax.annotate(
                    t.setting[knob], (x, y), fontsize="x-small", xytext=(3, 2), textcoords="offset points"
                )
        for c in result.confirmations:
            ax.scatter([c.naive_tokens_mean], [100 * c.naive_accuracy], marker="x", color="0.3")
            ax.annotate(
                f"naive@{c.budget}", (c.naive_tokens_mean, 100 * c.naive_accuracy), fontsize="x-small"
            )
            ax.scatter([c.tokens_mean], [100 * c.accuracy], marker="*", s=90, color="crimson")
            ax.annotate(f"profile@{c.budget}", (c.tokens_mean, 100 * c.accuracy), fontsize="x-small")
        ax.set_xlabel("tokens sent (mean)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title("fit queries (dots) and held-out confirmation (x naive, * profile)", fontsize="small")
        ax.grid(alpha=0.3)
        if knobs:  # a search with every knob fixed raced nothing: only the confirmation is drawn
            ax.legend(fontsize="x-small")
        return _svg(fig, "fit-")


def write_fit_html(result: FitResult, path: str | Path) -> Path:
    """A self-contained HTML report: the verdict, the confirmation, every trial, and the accuracy/tokens plot.

    Raises:
        MissingDependencyError: without matplotlib (extra ``eval``).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise missing_extra("matplotlib", "eval") from None
    conf_head, rows = _confirm_rows(result)
    trial_head, trials = _trial_rows(result)
    said = [f"<li>{_e(c)}</li>" for c in result.cautions]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>contextwright fit</title><style>{_CSS}</style></head><body>",
        "<h1>contextwright fit</h1>",
        f"<p><b>Verdict:</b> {_e(result.verdict)}</p>",
        *(
            ["<p><b>Cautions</b> (what the confirmation does not support):</p><ul>", *said, "</ul>"]
            if said
            else []
        ),
        "<h2>Confirmation on the held-out queries</h2>",
        _table(conf_head, rows),
        "<h2>Accuracy against tokens sent, per knob</h2>",
        f"<figure>{_plot(result)}</figure>",
        "<h2>Every setting raced on the fit queries</h2>",
        _table(trial_head, trials),
        "<h2>The profile</h2>",
        f"<pre>{_e(dump_toml(result.profile()))}</pre>",
        "</body></html>",
    ]
    p = Path(path)
    p.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return p


def _table(head: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    out.extend("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    out.append("</tbody></table>")
    return "\n".join(out)


def _confirm_rows(result: FitResult) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    conf_head: tuple[str, ...] = (
        "budget",
        "n",
        "acc%",
        "naive%",
        "Δ",
        "Δ 95% CI",
        "p",
        "tokens",
        "naive tokens",
        "ans%",
        "naive ans%",
        "bare%",
    )
    rows: list[tuple[Any, ...]] = [
        (
            c.budget,
            c.queries,
            f"{100 * c.accuracy:.1f}",
            f"{100 * c.naive_accuracy:.1f}",
            f"{100 * c.delta:+.1f}",
            f"{100 * c.delta_low:+.1f}…{100 * c.delta_high:+.1f}",
            f"{c.p_value:.3g}",
            f"{c.tokens_mean:.0f}",
            f"{c.naive_tokens_mean:.0f}",
            f"{100 * c.retention:.1f}",
            f"{100 * c.naive_retention:.1f}",
            f"{100 * c.bare_share:.1f}",
        )
        for c in result.confirmations
    ]
    if result.meta.get("reask_bare") is not None:  # fit --reask-bare: how many were asked again
        conf_head = (*conf_head, "reask%")
        rows = [
            (*row, f"{100 * c.reask_share:.1f}") for row, c in zip(rows, result.confirmations, strict=True)
        ]
    return conf_head, rows


def _trial_rows(result: FitResult) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    trial_head = ("knob", "setting", "n", "acc%", "ans%", "tokens", "race")
    trials = [
        (
            t.knob,
            t.label,
            len(t.scores),
            f"{100 * t.accuracy:.1f}" if t.scores else "—",
            f"{100 * sum(t.retained.values()) / max(1, len(t.retained)):.1f}",
            f"{t.tokens_mean:.0f}",
            t.outcome,
        )
        for t in result.trials
    ]
    return trial_head, trials
