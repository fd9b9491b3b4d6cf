"""``contextwright fit``: measure how much, in what order and through which stages a reader reads best; write a profile."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from contextwright.cli.base import _csv, app, err, fail


def _writable(path: str | None, flag: str) -> None:
    """Fail before any work when ``path``'s folder does not exist (a finished search is never thrown away)."""
    from pathlib import Path

    if path is not None and not Path(path).resolve().parent.is_dir():
        fail(f"cannot write {flag} {path}: the folder {Path(path).parent} does not exist. Create it first.")


def _budgets(budget: str) -> list[int]:
    """``--budget``'s comma-separated budgets, or a refusal naming the value."""
    try:
        return [int(b) for b in _csv(budget)]
    except ValueError:
        fail(f"--budget must be comma-separated integers, e.g. 500,1000; got {budget!r}.")


def _check_guard(points: float | None, guard_data: str | None) -> None:
    """Fail before any work when --max-retention-loss is no share of points, or --guard-data has no guard."""
    if points is not None and not 0.0 <= points < 100.0:
        fail(
            f"--max-retention-loss is in points of answer retention, from 0 to under 100; got {points:g}. Use e.g. 1.5."
        )
    if guard_data is not None and points is None:
        fail(
            f"--guard-data {guard_data} gives queries to the retention guard, which is off: pass "
            "--max-retention-loss too (e.g. 1.5), or drop --guard-data."
        )


@app.command("fit")
def fit_cmd(
    data: Annotated[str, typer.Argument(help="JSONL(.gz) of labelled queries (the eval format).")],
    reader: Annotated[
        str, typer.Option(help="OpenAI-compatible API root of the reader (e.g. http://127.0.0.1:8080/v1).")
    ],
    reader_model: Annotated[str, typer.Option(help="The reader's model name.")],
    out: Annotated[str, typer.Option("--out", "-o", help="Write the profile TOML here.")] = "profile.toml",
    budget: Annotated[
        str, typer.Option("--budget", "-b", help="The budgets the profile must serve, comma-separated.")
    ] = "500,1000",
    knob: Annotated[
        list[str] | None,
        typer.Option(
            help="Values of one knob to search, knob=v1,v2 (repeatable; one value fixes it). Knobs: amount "
            "(fill, cap:N, stop:R, stop:R+cap:N), order (first, last, ends, prior), dedup (none, exact, "
            "containment, saves-exact, saves-containment), expand (off, on: needs --corpus), framing "
            "(lean, numbered, minimal), prompt (default, strict, soft, light; default and light unless given)."
        ),
    ] = None,
    confirm_share: Annotated[float, typer.Option(help="Share of queries held out to confirm on.")] = 0.5,
    step: Annotated[
        int,
        typer.Option(
            help="Queries per race step: after each, the worse half of the settings stops (25: the default search on 300 queries sent SmolLM2 919 requests, 35 minutes on 2 cores; 50: a wider race, ~1,170, ~44 minutes)."
        ),
    ] = 25,
    min_queries: Annotated[
        int, typer.Option(help="The fewest queries per part (fit, confirm); below 50 the intervals are wide.")
    ] = 50,
    move_on: Annotated[
        str,
        typer.Option(
            help="leader: each race's leader becomes the knob's value (the held-out confirmation is the "
            "guard); evidence: a knob leaves its current value only for one whose 95 % paired interval "
            "against it is above zero."
        ),
    ] = "leader",
    max_retention_loss: Annotated[
        float | None,
        typer.Option(
            help="The retention guard, in points: a setting whose answer retention (the share of fit queries "
            "whose context holds an answer string) falls more than this under naive's at any budget does not "
            "race and is never sent to the reader, e.g. 1.5. Default: no guard (the reader alone decides)."
        ),
    ] = None,
    guard_data: Annotated[
        str | None,
        typer.Option(
            help="More labelled queries (the eval format) for the retention guard alone: it measures them "
            "beside the fit queries, never the reader, so they cost assembly time only. Queries whose "
            "question is held out for the confirmation are left out. Needs --max-retention-loss."
        ),
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            help="How the queries are split into fit and confirm: stratified (by where naive's context holds "
            "an answer at each budget, so both parts hold their share of the queries whose answer only a "
            "larger budget reaches; assembled, no reader) or hash (by a hash of the id alone, the split "
            "the shipped profiles were fitted on)."
        ),
    ] = "stratified",
    limit: Annotated[int | None, typer.Option(help="Use only the first N queries.")] = None,
    prior: Annotated[
        str | None, typer.Option(help="A measured positional prior file, for order=prior.")
    ] = None,
    tokenizer: Annotated[str, typer.Option(help="Tokenizer that defines the budget.")] = "cl100k_base",
    corpus: Annotated[
        str | None,
        typer.Option(
            help="Chunk corpus JSONL(.gz) of your chunks: opens a SQLite store, and the search tries "
            "expand=off,on (each chunk's neighbours fetched from it)."
        ),
    ] = None,
    reader_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the reader's API key (empty: send none).")
    ] = "OPENAI_API_KEY",
    reader_cache: Annotated[
        str | None, typer.Option(help="SQLite file of cached replies (default: the eval cache).")
    ] = None,
    reader_cache_label: Annotated[
        str | None,
        typer.Option(
            help="What names the endpoint in the cache key (default: its URL); a stable label keeps the "
            "cache valid when a local server's port changes, e.g. llama.cpp:smollm2."
        ),
    ] = None,
    reader_offline: Annotated[
        bool,
        typer.Option(
            "--reader-offline",
            help="Answer from the reply cache only and send nothing (re-derive a fit from cached replies, "
            "e.g. a GPU engine's); a request not in it fails and is counted.",
        ),
    ] = False,
    reader_max_tokens: Annotated[int, typer.Option(help="Most tokens per answer.")] = 32,
    reader_concurrency: Annotated[
        int,
        typer.Option(
            help="Reader requests in flight at once (1 for one local llama.cpp server: it answers one at a time)."
        ),
    ] = 4,
    reader_timeout: Annotated[float, typer.Option(help="Timeout of one reader request (s).")] = 120.0,
    json_out: Annotated[str | None, typer.Option("--json", help="Write every trial as JSON here.")] = None,
    html_out: Annotated[
        str | None, typer.Option("--html", help="Write an HTML report with the plot.")
    ] = None,
    fail_under_naive: Annotated[
        bool,
        typer.Option(
            "--fail-under-naive",
            help="Exit 3, after writing every file, when the profile reads under naive on the held-out "
            "queries at any budget (its confirmed delta below zero): a script or CI job then keeps naive "
            "for this reader. Without it, such a fit exits 0 and says so in its cautions. The same as "
            "--fail-if under-naive.",
        ),
    ] = False,
    reask_bare: Annotated[
        str | None,
        typer.Option(
            "--reask-bare",
            help="Ask a question once more under this prompt (a name such as light, or the text of a "
            "prompt; auto: light) when the first reply is a bare citation of its labelled context ('[1]' "
            "and no answer), in the race and the confirmation, and score the second reply: what "
            "contextwright.ask does at run time. The profile's reask key keeps the prompt, so ask "
            "re-asks as fitted. Fit with it when you deploy with ask.",
        ),
    ] = None,
    fail_if: Annotated[
        str | None,
        typer.Option(
            "--fail-if",
            help="Exit 3, after writing every file, when any confirmed budget fails this rule against naive "
            "on the held-out queries: 'under-naive' (the point estimate below zero), 'worse' (the whole 95 % "
            "interval below zero: fail only on a loss the queries show) or 'not-better' (the interval reaches "
            "zero or below: ship only a gain the queries show).",
        ),
    ] = None,
) -> None:
    """Fit the context to a reader: race settings of how much to send, the order, dedup, framing and prompt on part of your labelled queries, confirm the winner against naive on the rest, and write it as a profile.

    The profile is a config TOML: pass it wherever a preset goes (--preset profile.toml). Replies are cached, so an interrupted or repeated run is free where it asked before.
    """  # one line per paragraph: the help reflows it to the terminal's width
    from pathlib import Path

    from contextwright.cli.eval import check_reask, open_reader
    from contextwright.core.errors import ContextwrightError
    from contextwright.eval import load_queries
    from contextwright.eval.fit_space import parse_space, with_store

    for path, flag in ((out, "--out"), (json_out, "--json"), (html_out, "--html")):
        _writable(path, flag)
    rule = _fail_rule(fail_if, fail_under_naive)  # refused now, not after an hour of replies
    budgets = _budgets(budget)
    _check_guard(max_retention_loss, guard_data)
    check_reask(reask_bare, reader)
    try:
        if prior is not None:  # inline in the profile, so it does not depend on where it is read
            from contextwright.assembly.presets import load_config_file

            prior_data: Any = load_config_file(prior)
        else:
            prior_data = None
        space = parse_space(knob or [], prior=prior_data)
        resources: dict[str, Any] = {}
        if corpus is not None:
            from contextwright.eval.runner import open_corpus_store

            resources["store"] = open_corpus_store(corpus)
            space = with_store(space, knob or [])
        queries = load_queries(data, limit=limit)
        guard_queries = () if guard_data is None else load_queries(guard_data)
        reader_obj = open_reader(
            reader,
            reader_model,
            reader_key_env,
            reader_cache,
            reader_max_tokens,
            reader_concurrency,
            reader_timeout,
            reader_cache_label,
            reader_offline,
        )
        options = dict(
            budgets=budgets,
            space=space,
            tokenizer=tokenizer,
            confirm_share=confirm_share,
            step=step,
            prior=prior_data,
            min_per_part=min_queries,
            data_name=Path(data).name,
            move_on=move_on,
            resources=resources,
            max_retention_loss=None if max_retention_loss is None else max_retention_loss / 100.0,
            guard_queries=guard_queries,
            split=split,
            reask_bare=reask_bare,
        )
        result = _search(queries, reader_obj, options)
    except ContextwrightError as exc:
        fail(str(exc))
    _publish(result, out=out, json_out=json_out, html_out=html_out, fail_if=rule, reader=reader)


def _fail_rule(fail_if: str | None, fail_under_naive: bool) -> str | None:
    """The ``--fail-if`` rule (``--fail-under-naive`` is ``under-naive``), or None; refuses an unknown
    rule, and the two flags naming different rules."""
    from contextwright.cli.eval import check_fail_rule

    check_fail_rule(fail_if)
    if fail_under_naive and fail_if not in (None, "under-naive"):
        fail(
            f"--fail-under-naive is --fail-if under-naive, and --fail-if {fail_if} names another rule: "
            "give one of them."
        )
    return "under-naive" if fail_under_naive else fail_if


def _exit_if_failing(result: Any, out: str, rule: str) -> None:
    """``--fail-if RULE``: exit 3 when any confirmed budget fails ``rule`` (``FitResult.failing``)."""
    from contextwright.eval.gate import FAIL_RULES, rule_test

    budgets = result.failing(rule)
    if not budgets:
        return
    at = ", ".join(f"{b:,}" for b in budgets)
    where = "that budget" if len(budgets) == 1 else "those budgets"
    flag = "--fail-under-naive" if rule == "under-naive" else f"--fail-if {rule}"
    what, test = FAIL_RULES[rule][0], rule_test(rule, len(result.confirmations))
    err.print(
        f"fit: the profile {what} at {at} tokens on the held-out queries ({flag}): exit 3 ({test}). "
        f"Keep naive for this reader at {where}, or search again on more labelled queries; the profile "
        f"written to {out} is the record of the search.",
        highlight=False,
    )
    raise typer.Exit(3)


def _search(queries: Any, reader: Any, options: dict[str, Any]) -> Any:
    """:func:`~contextwright.eval.fit.fit_profile` with a progress bar per stage; Ctrl-C exits 130, replies kept."""
    import time

    from contextwright.cli.eval import interrupted, replies_bar
    from contextwright.eval.fit import fit_profile

    with reader as rd, replies_bar() as bar:
        tasks: dict[str, Any] = {}
        said = [0.0]

        def progress(stage: str, done: int, total: int) -> None:
            unit = "queries assembled (no reader)" if stage.startswith(("guard", "split")) else "replies"
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total, unit=unit)
            bar.update(tasks[stage], completed=done, total=total)
            now = time.monotonic()
            if not err.is_terminal and (
                done == total or now - said[0] > 30
            ):  # a log gets a line now and then
                said[0] = now
                err.print(f"{stage}: {done}/{total} {unit}", highlight=False)

        try:
            return fit_profile(queries, reader=rd, progress=progress, **options)
        except KeyboardInterrupt:
            interrupted(rd)


def _publish(
    result: Any,
    *,
    out: str,
    json_out: str | None,
    html_out: str | None,
    fail_if: str | None = None,
    reader: str,
) -> None:
    """The trials table and the verdict on stdout; the profile, JSON and HTML files; then, with
    ``--fail-if`` (or ``--fail-under-naive``), exit 3 when a confirmed budget fails its rule."""
    import json
    from pathlib import Path

    from contextwright.cli.eval import print_uncut
    from contextwright.eval.fit_report import render_fit_table, write_fit_html, write_profile

    if result.meta.get("failed"):
        err.print(
            f"[yellow]fit: {result.meta['failed']} reader request(s) failed and were scored as wrong; "
            "see the log lines above, fix the endpoint and run again (the replies so far are cached).[/]",
            highlight=False,
        )
    print_uncut(render_fit_table(result))
    print(f"Verdict: {result.verdict}")
    for caution in result.cautions:  # what the held-out confirmation does not support
        print(f"Caution: {caution}")
    m = result.meta
    if m.get("strata"):  # the parts per stratum: where naive's context holds an answer
        parts = "; ".join(
            f"{'answer at ' + k if k != 'none' else 'no answer'}: {f} / {c}"
            for k, (f, c) in m["strata"].items()
        )
        err.print(
            f"split (fit / confirm queries) by the budgets at which naive holds an answer: {parts}",
            highlight=False,
        )
    err.print(
        f"asked {m['requests']:,} requests: {m['sent']:,} answered by the reader now, the rest from its cache "
        "(a race's leader runs again in the next race; a context capped below every budget is asked once)",
        highlight=False,
    )
    write_profile(result, out)
    err.print(f"wrote {out} (use it as a preset: --preset {out})", highlight=False)
    err.print(  # one question of the user's own, through the profile, before wiring it in
        f"try it on a question of yours: contextwright ask CHUNKS.json -q '...' --preset {out} "
        f"--reader {reader} --reader-model {m['model']}",
        highlight=False,
        markup=False,
    )
    if json_out:
        Path(json_out).write_text(
            json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        err.print(f"wrote {json_out}", highlight=False)
    if html_out:
        write_fit_html(result, html_out)
        err.print(f"wrote {html_out}", highlight=False)
    if fail_if is not None:
        _exit_if_failing(result, out, fail_if)
