"""``contextwright eval``: retention, and a real model reading the context."""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from contextwright.cli.base import (
    _csv,
    app,
    check_outputs,
    err,
    fail,
)
from contextwright.cli.output import warnings_once


def _run_reader(
    result: Any,
    queries: Any,
    strategies: list[str],
    budgets: list[int],
    *,
    url: str,
    model: str | None,
    key_env: str,
    cache: str | None,
    max_tokens: int,
    concurrency: int,
    timeout_s: float,
    tokenizer: str,
    corpus: str | None,
    positions: int | None,
    prior_out: str | None,
    cache_label: str | None = None,
    offline: bool = False,
    reask_bare: str | None = None,
) -> Any:
    """The reader part of ``eval``: ask the model, attach the answers to the result, write the prior."""
    import dataclasses

    from contextwright.eval.reader import evaluate_reader
    from contextwright.eval.runner import open_corpus_store

    if not model:
        fail("--reader needs --reader-model, the model name the endpoint expects (e.g. gpt-4o-mini).")
    if prior_out is not None and positions is None:
        fail("--prior-out writes the curve of the position sweep: pass --positions K too (e.g. 5).")
    resources = {"store": open_corpus_store(corpus)} if corpus else {}
    with (
        open_reader(
            url, model, key_env, cache, max_tokens, concurrency, timeout_s, cache_label, offline
        ) as rd,
        replies_bar() as bar,
    ):
        task = bar.add_task("reader", total=None, unit="replies")
        try:
            measured = evaluate_reader(
                queries,
                strategies,
                budgets,
                reader=rd,
                tokenizer=tokenizer,
                resources=resources,
                positions=positions,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                reask_bare=reask_bare,
            )
        except KeyboardInterrupt:
            interrupted(rd)
    _report_reader(measured, prior_out)
    return dataclasses.replace(result, reader=measured)


def open_reader(
    url: str,
    model: str,
    key_env: str,
    cache: str | None,
    max_tokens: int,
    concurrency: int,
    timeout_s: float,
    cache_label: str | None = None,
    offline: bool = False,
) -> Any:
    """The :class:`~contextwright.eval.reader.Reader` the ``--reader*`` options describe (``eval``, ``fit``).

    ``offline``: answer from the reply cache only (nothing is sent; a request not in it fails and is
    counted), e.g. to report on a CPU the replies a GPU engine cached under its own label.
    """
    import os

    from contextwright.eval.reader import Reader, default_cache_path

    return Reader(
        url,
        model=model,
        api_key=os.environ.get(key_env) if key_env else None,
        cache=cache or default_cache_path(),
        max_tokens=max_tokens,
        max_concurrency=concurrency,
        timeout_s=timeout_s,
        cache_endpoint=cache_label,
        offline=offline,
    )


def replies_bar() -> Any:
    """The transient progress bar of a reader run (``eval --reader``, ``fit``): a task's description, and
    how many of its ``unit`` (a task field: ``replies``; the fit's guard counts ``queries assembled``) are done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def interrupted(reader: Any) -> NoReturn:
    """Ctrl-C during a reader run: say where the replies are, exit 130 (a re-run resumes from the cache)."""
    err.print(
        f"interrupted: the replies so far are cached in {reader.cache_path}; "
        "run the same command again to resume.",
        highlight=False,
    )
    raise typer.Exit(130) from None


def print_uncut(table: Any, *, footer_line: bool = False) -> None:
    """Print a table on stdout; wider than the terminal (or a pipe's 80 columns) rather than cut.

    ``footer_line``: in a pipe or a file, the caption is one line of its own (never wrapped).
    """
    out = Console(highlight=False)
    needed = out.measure(table, options=out.options.update_width(1_000)).maximum
    if out.width < needed:  # a pipe or a narrow terminal: never cut numbers to "…"
        out = Console(highlight=False, width=needed)
    caption = table.caption
    if footer_line and isinstance(caption, str) and not out.is_terminal:
        table.caption = None
        out.print(table)
        out.print(caption, markup=False, soft_wrap=True)
        return
    out.print(table)


# -- eval (contextwright.eval) ---------------------------------------------


@app.command("eval")
def eval_cmd(
    data: Annotated[
        str, typer.Argument(help="JSONL(.gz) of queries with labelled chunks (has_answer) and answers.")
    ],
    budget: Annotated[
        str, typer.Option("--budget", "-b", help="Budgets in tokens, comma-separated.")
    ] = "300,500,1000,1500",
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="naive, greedy, preset names, comma-separated (default: all)."),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", "-c", help="A .toml/.json config to evaluate too (repeatable)."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N queries.")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes (results are identical to 1).")] = 1,
    engine: Annotated[
        str, typer.Option(help="local (processes) or ray (Ray Data actors; RAY_ADDRESS picks a cluster).")
    ] = "local",
    tokenizer: Annotated[str, typer.Option(help="Tokenizer that defines the budget.")] = "cl100k_base",
    prior: Annotated[
        str | None,
        typer.Option(help="Positional prior .json/.toml (default: Liu et al. 2024, GPT-3.5, 20 docs)."),
    ] = None,
    corpus: Annotated[
        str | None,
        typer.Option(help="Chunk corpus JSONL(.gz): opens a SQLite store for strategies that expand."),
    ] = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the full results as JSON here.")
    ] = None,
    html_out: Annotated[
        str | None, typer.Option("--html", help="Write a self-contained HTML report here.")
    ] = None,
    reader: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible API root of a reader model (e.g. http://127.0.0.1:8080/v1): "
            "the model answers each question from each strategy's context, plus closed-book and oracle."
        ),
    ] = None,
    reader_model: Annotated[
        str | None, typer.Option(help="The reader's model name (required with --reader).")
    ] = None,
    reader_key_env: Annotated[
        str,
        typer.Option(help="Environment variable holding the reader's API key (empty: send none)."),
    ] = "OPENAI_API_KEY",
    reader_cache: Annotated[
        str | None,
        typer.Option(
            help="SQLite file of cached replies (default: reader.sqlite in ~/.cache/contextwright)."
        ),
    ] = None,
    reader_cache_label: Annotated[
        str | None,
        typer.Option(
            help="What names the endpoint in the cache key (default: its URL): a stable label keeps the "
            "cache valid when a local server's port changes (llama.cpp:smollm2), and names an engine "
            "(transformers-bf16:<gguf> for bench/reader_engine.py)."
        ),
    ] = None,
    reader_offline: Annotated[
        bool,
        typer.Option(
            "--reader-offline",
            help="Answer from the reply cache only and send nothing; a request not in it fails and is counted.",
        ),
    ] = False,
    reader_max_tokens: Annotated[int, typer.Option(help="Most tokens per answer.")] = 32,
    reader_concurrency: Annotated[int, typer.Option(help="Reader requests in flight at once.")] = 4,
    reader_timeout: Annotated[float, typer.Option(help="Timeout of one reader request (s).")] = 120.0,
    positions: Annotated[
        int | None,
        typer.Option(
            help="With --reader: the position sweep with K chunks (answer chunk at each of K positions)."
        ),
    ] = None,
    prior_out: Annotated[
        str | None,
        typer.Option(help="With --positions: write the measured curve here as a prior file for --prior."),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="Print every metric and reader column (default: the headline ones, 80 columns).",
        ),
    ] = False,
    fail_if: Annotated[
        str | None,
        typer.Option(
            "--fail-if",
            help="With --reader: exit 3, after printing and writing everything, when any strategy's "
            "accuracy against naive's (the baselines greedy, closed-book and oracle aside) fails this "
            "rule at any budget: 'under-naive' (the paired delta below zero), 'worse' (its whole 95 % "
            "interval below zero) or 'not-better' (the interval reaches zero or below). A CI gate on "
            "what the reader reads.",
        ),
    ] = None,
    reask_bare: Annotated[
        str | None,
        typer.Option(
            "--reask-bare",
            help="With --reader: ask a question once more under this prompt (a name such as light, or "
            "the text of a prompt; auto: a profile's reask, else light) when the first reply is a bare "
            "citation of its labelled context ('[1]' and no answer), as an application would; the "
            "second reply is scored, and the reask% column counts them.",
        ),
    ] = None,
) -> None:
    """Measure the context assembly gap: answer retention, position, redundancy, budget use, latency.

    With --reader, a real model answers the questions: accuracy with 95 % intervals per strategy, the delta vs naive with a paired test, tokens sent and latency; replies are cached on disk, so an interrupted run resumes where it stopped.
    """  # one line per paragraph: the help reflows it to the terminal's width
    import logging

    from contextwright.core.errors import ContextwrightError
    from contextwright.eval import default_strategies, load_queries

    try:
        budgets = [int(b) for b in _csv(budget)]
    except ValueError:
        fail(f"--budget must be comma-separated integers, e.g. 300,500,1000; got {budget!r}.")
    if engine not in ("local", "ray"):
        fail(f"--engine must be local or ray; got {engine!r}.")
    check_outputs(("--json", json_out), ("--html", html_out), ("--prior-out", prior_out))
    names: list[str] = _csv(strategy) if strategy else default_strategies()
    _check_gate(fail_if, reader, names)
    check_reask(reask_bare, reader)
    handler = warnings_once()
    try:
        queries = load_queries(data, limit=limit)
        result = _retention(
            queries,
            [*names, *(config or [])],
            budgets,
            dict(tokenizer=tokenizer, prior=prior, corpus=corpus, workers=workers, engine=engine),
        )
        if reader is not None:
            result = _run_reader(
                result,
                queries,
                [*names, *(config or [])],
                budgets,
                url=reader,
                model=reader_model,
                key_env=reader_key_env,
                cache=reader_cache,
                max_tokens=reader_max_tokens,
                concurrency=reader_concurrency,
                timeout_s=reader_timeout,
                tokenizer=tokenizer,
                corpus=corpus,
                positions=positions,
                prior_out=prior_out,
                cache_label=reader_cache_label,
                offline=reader_offline,
                reask_bare=reask_bare,
            )
        elif positions is not None or prior_out is not None:
            fail("--positions and --prior-out need a reader model: pass --reader URL --reader-model NAME.")
        _publish(result, data=data, wide=wide, json_out=json_out, html_out=html_out)
    except ContextwrightError as exc:
        fail(str(exc))
    finally:
        logging.getLogger("contextwright").removeHandler(handler)
    if fail_if is not None:
        _exit_if_failing(result.reader, fail_if)


#: What ``eval --fail-if`` does not judge: the baselines and the bounds a reader's figures are read against.
_BASELINES = frozenset({"naive", "greedy", "closed-book", "oracle"})


def check_fail_rule(fail_if: str | None) -> None:
    """Refuse an unknown ``--fail-if`` rule before any work (``eval`` and ``fit``)."""
    from contextwright.eval.gate import FAIL_RULES

    if fail_if is not None and fail_if not in FAIL_RULES:
        fail(f"--fail-if must be one of {', '.join(FAIL_RULES)}; got {fail_if!r}. Use e.g. --fail-if worse.")


def _check_gate(fail_if: str | None, reader: str | None, names: list[str]) -> None:
    """``--fail-if`` refused before any work: an unknown rule, no reader, or no naive to compare with."""
    check_fail_rule(fail_if)
    if fail_if is None:
        return
    if reader is None:
        fail("--fail-if compares what a reader answers: pass --reader URL --reader-model NAME.")
    if "naive" not in names:
        fail(
            "--fail-if compares each strategy with naive at the same budget: add naive to --strategy "
            f"(e.g. --strategy naive,{','.join(names) or 'qa'})."
        )


def check_reask(reask_bare: str | None, reader: str | None) -> None:
    """``--reask-bare`` (``eval``, ``fit``) refused before any work: without a reader, or not a prompt."""
    if reask_bare is None:
        return
    from contextwright.core.errors import ContextwrightError
    from contextwright.render.messages import check_reask

    if reader is None:
        fail("--reask-bare asks the reader again: pass --reader URL --reader-model NAME.")
    try:
        check_reask(reask_bare, "--reask-bare")
    except ContextwrightError as exc:
        fail(f"{exc} Use e.g. --reask-bare light.")


def _exit_if_failing(measured: Any, rule: str) -> None:
    """``eval --fail-if RULE``: exit 3 when a strategy's reader delta against naive fails ``rule``."""
    from contextwright.eval.gate import FAIL_RULES, fails, gate_intervals, rule_test

    judged = [s for s in measured.summaries if s.strategy not in _BASELINES]
    # No paired replies (every request failed, on one side or the other): nothing shows it passes.
    unmeasured = [s for s in judged if s.delta is None or s.delta_low is None or s.delta_high is None]
    measured_ = [s for s in judged if s not in unmeasured]
    ends = gate_intervals(
        rule, measured.answers, [(s.strategy, s.budget, s.delta_low, s.delta_high) for s in measured_]
    )
    failing = [s for s in measured_ if fails(rule, s.delta, *ends[(s.strategy, s.budget)])]
    if not failing and not unmeasured:
        return
    what, test = FAIL_RULES[rule][0], rule_test(rule, len(measured_))
    shown = [(s, *ends[(s.strategy, s.budget)]) for s in failing]  # with the interval the rule read
    said = [
        f"{s.strategy} at {s.budget:,} ({100 * s.delta:+.1f}, {100 * lo:+.1f}…{100 * hi:+.1f})"
        for s, lo, hi in shown
    ] + [f"{s.strategy} at {s.budget:,} (no reply to compare with naive's)" for s in unmeasured]
    err.print(
        f"eval: {len(said)} strategy-budget pair(s) {what} (--fail-if {rule}: {test}): {'; '.join(said)}. Exit 3.",
        highlight=False,
    )
    raise typer.Exit(3)


def _report_reader(measured: Any, prior_out: str | None) -> None:
    """Say how many reader requests failed, and write the position sweep's prior when asked."""
    import json
    from pathlib import Path

    from contextwright.eval.reader_results import BARE_LIMIT

    for s in measured.summaries:  # the bare% column is in --wide; a prompt that draws them is said here too
        if s.bare_share is not None and s.bare_share >= BARE_LIMIT:
            err.print(
                f"[yellow]reader: {100 * s.bare_share:.0f} % of {escape(s.strategy)}'s replies at {s.budget} are a "
                "citation and nothing else (bare%, --wide): the prompt drew a citation instead of an answer.[/]",
                highlight=False,
            )
    failed = measured.meta.get("failed", 0)
    if failed:
        err.print(
            f"[yellow]reader: {failed} request(s) failed; they are listed with their errors in the JSON "
            "and left out of the accuracies.[/]",
            highlight=False,
        )
    if prior_out is not None and measured.sweep is not None:
        if not any(measured.sweep.answered):
            fail("the position sweep got no replies, so there is no prior to write.")
        Path(prior_out).write_text(json.dumps(measured.sweep.prior_dict(), indent=1) + "\n", encoding="utf-8")
        err.print(f"wrote {prior_out} (use it with --prior)", highlight=False)


def _publish(result: Any, *, data: str, wide: bool, json_out: str | None, html_out: str | None) -> None:
    """What was skipped or degraded on stderr, the tables on stdout, and the JSON and HTML files."""
    from contextwright.eval.report import render_table, to_json, write_html

    for name, reason in result.skipped.items():
        err.print(f"[yellow]skipped {escape(name)}:[/] {escape(reason)}", highlight=False)
    for name, note in result.notes.items():
        err.print(f"[yellow]note {escape(name)}:[/] {escape(note)}", highlight=False)
    print_uncut(render_table(result, wide=wide), footer_line=True)
    if result.reader is not None:
        from contextwright.eval.report import render_reader_table

        print_uncut(render_reader_table(result.reader, wide=wide))
    meta = {"data": data}
    if json_out:
        to_json(result, json_out, meta=meta)
        err.print(f"wrote {json_out}", highlight=False)
    if html_out:
        write_html(result, html_out, meta=meta)
        err.print(f"wrote {html_out}", highlight=False)


def _retention(queries: Any, strategies: list[str], budgets: list[int], options: dict[str, Any]) -> Any:
    """:func:`contextwright.eval.evaluate` with a progress bar on a terminal (nothing when piped)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from contextwright.eval import evaluate

    with Progress(
        TextColumn("eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("queries"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a bar on a terminal; nothing extra when piped
    ) as bar:
        task = bar.add_task("eval", total=len(queries))
        result = evaluate(
            queries,
            strategies,
            budgets,
            **options,
            progress=lambda done, total: bar.update(task, completed=done),
        )
    return result
