"""Run a plan of reader evaluations and fits with one batched engine loaded once (for a GPU lease).

A lease of an accelerator is short and counted from its start, so the model
is loaded once and every job of the plan runs against it in order: ``eval``
jobs (``evaluate_reader``: strategies × budgets, paired against naive) and
``fit`` jobs (``fit_profile``: the search on a fit split and its confirmation
on the held-out split). A later job may name a fitted profile as a strategy
(``"@<fit job name>"``), so "fit on dev, confirm once on confirm500" is one
plan. Every reply lands in the reply cache (label ``transformers-bf16:<gguf>``),
so the plan re-run on a CPU with the same cache answers every request from
it; each job writes ``<name>.json`` (and a fit its profile ``<name>.toml``
and ``<name>.html``) to ``--out`` as soon as it ends, and one failing job is
logged and skipped, not fatal.

A plan is JSON: a list of jobs, each ``{"name": ..., "eval"|"fit": data file,
...}`` (or a ``choose`` job: :func:`_choose_job`, the rule of stop 41's prompt
wordings) with ``strategies`` and ``budgets`` (eval), or ``budgets``, ``space``
(knob -> values), ``corpus`` (a chunk corpus: the ``expand`` knob) and
``min_per_part``, ``move_on`` (fit, default ``leader``) and ``step`` (fit, default
50: the lease's plans were raced in steps of 50, before ``fit``'s default became 25,
and re-run offline they must ask the same requests), and ``max_retention_loss`` (fit, a share,
e.g. 0.015: ``fit --max-retention-loss 1.5``; default none) and ``split`` (fit, ``stratified``
or ``hash``: the plans below say ``hash``, the split they ran on before stop 51). Relative paths
are read against ``--data``. ``bench/plans/issue32_*.json`` are the plans of
issue 32's H200 leases, whose figures are in docs/quality.md. The first was driven
by ``bench/plans/issue32_lease.sh`` (weights shipped in 60 MB parts, both models'
plans run side by side in the background); stop 41's plans are ``issue32_*5.json``,
driven by ``issue32_lease5.sh``.

    python bench/reader_grid.py plan.json --gguf /tmp/w/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --data /tmp/data --out /tmp/out/smol --cache /tmp/out/smol/cache.sqlite
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path
from typing import Any

from reader_engine import TransformersEngine


def _stamp(start: float) -> str:
    return f"[{time.perf_counter() - start:7.1f} s]"


def _line(row: dict[str, Any]) -> str:
    acc = "-" if row["accuracy"] is None else f"{100 * row['accuracy']:.1f}"
    delta = ""
    if row["delta"] is not None:
        delta = (
            f" d {100 * row['delta']:+.1f} [{100 * row['delta_low']:+.1f}, {100 * row['delta_high']:+.1f}]"
            f" p {row['p_value']:.3f}"
        )
    bare = "" if row["bare_share"] is None else f" bare {100 * row['bare_share']:.1f}%"
    tokens = "" if row["tokens_mean"] is None else f" tok {row['tokens_mean']:.0f}"
    return (
        f"  {row['strategy']:<40} @{row['budget']:<5} n {row['answered']:<4} acc {acc}{delta}{tokens}{bare}"
    )


def _progress(start: float) -> Any:
    """Print a fit's progress at most every 20 s, and at the end of each stage."""
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 20 or done == total:
            last[0] = now
            print(f"{_stamp(start)}   {stage}: {done}/{total}", flush=True)

    return progress


def _store(job: dict[str, Any], data: Path) -> dict[str, Any] | None:
    """A job's chunk store (its ``corpus``, for the stages that expand), or None."""
    from contextwright.eval.runner import open_corpus_store

    return {"store": open_corpus_store(str(data / job["corpus"]))} if job.get("corpus") else None


def _eval_job(job: dict[str, Any], *, reader: Any, data: Path, out: Path, profiles: dict[str, str]) -> None:
    from contextwright.eval import load_queries
    from contextwright.eval.reader import evaluate_reader

    queries = load_queries(str(data / job["eval"]), limit=job.get("limit"))
    strategies = [profiles.get(s[1:], s) if s.startswith("@") else s for s in job["strategies"]]
    store = _store(job, data)
    result = evaluate_reader(
        queries,
        strategies,
        job["budgets"],
        reader=reader,
        resources=store,
        closed_book=job.get("closed_book", False),
        oracle=job.get("oracle", False),
    )
    rows = [summary.to_dict() for summary in result.summaries]
    (out / f"{job['name']}.json").write_text(json.dumps({"job": job, "summaries": rows}, indent=1))
    for row in rows:
        print(_line(row), flush=True)


def _fit_job(job: dict[str, Any], *, reader: Any, data: Path, out: Path, start: float) -> str:
    """Run one fit; returns the path of the profile it wrote."""
    from contextwright.eval import load_queries
    from contextwright.eval.fit import fit_profile
    from contextwright.eval.fit_report import write_fit_html, write_profile

    queries = load_queries(str(data / job["fit"]), limit=job.get("limit"))
    space = {k: tuple(v) for k, v in job.get("space", {}).items()} or None
    resources = _store(job, data)
    fitted = fit_profile(
        queries,
        reader=reader,
        budgets=job["budgets"],
        space=space,
        resources=resources,
        min_per_part=job.get("min_per_part", 50),
        progress=_progress(start),
        data_name=Path(job["fit"]).name,
        move_on=job.get("move_on", "leader"),
        step=job.get("step", 50),
        max_retention_loss=job.get("max_retention_loss"),  # a share: 0.015 is 1.5 points
        split=job.get("split", "stratified"),  # the plans of the shipped profiles say "hash"
    )
    toml = out / f"{job['name']}.toml"
    write_profile(fitted, toml)
    write_fit_html(fitted, out / f"{job['name']}.html")
    (out / f"{job['name']}.json").write_text(json.dumps(fitted.to_dict(), indent=1, default=str))
    print(f"{_stamp(start)} {job['name']}: setting {dict(fitted.setting)}", flush=True)
    print(f"  verdict: {fitted.verdict}", flush=True)
    return str(toml)


def _choose_job(job: dict[str, Any], *, out: Path, profiles: dict[str, str]) -> None:
    """Pick one wording per the rule declared before the lease, from an eval job's summaries.

    ``{"name": ..., "choose": <eval job>, "wordings": [...], "presets": [...]}`` reads
    ``<eval job>.json``, where each preset ran with each wording as the config
    ``bench/plans/prompts/<preset>-<wording>.toml`` (strategy ``<preset>+<wording>``). The rule: the
    wordings whose bare-citation share is under 3 % in every preset and budget, the most accurate of
    them (mean accuracy over presets and budgets); if none is, the one with the lowest worst bare
    share. The first wording wins a tie. Then ``@pick:<preset>`` names the chosen config in later jobs.
    """
    rows = json.loads((out / f"{job['choose']}.json").read_text())["summaries"]
    stats = {}
    for wording in job["wordings"]:
        mine = [r for r in rows if r["strategy"] in {f"{p}+{wording}" for p in job["presets"]}]
        accuracy = sum(r["accuracy"] or 0.0 for r in mine) / max(1, len(mine))
        worst = max((r["bare_share"] or 0.0 for r in mine), default=1.0)
        stats[wording] = {"cells": len(mine), "mean_accuracy": accuracy, "worst_bare": worst}
    under = [w for w in job["wordings"] if stats[w]["worst_bare"] < 0.03 and stats[w]["cells"]]
    if under:
        chosen = max(under, key=lambda w: (stats[w]["mean_accuracy"], -job["wordings"].index(w)))
    else:
        chosen = min(job["wordings"], key=lambda w: (stats[w]["worst_bare"], job["wordings"].index(w)))
    for preset in job["presets"]:
        profiles[f"pick:{preset}"] = f"bench/plans/prompts/{preset}-{chosen}.toml"
    (out / f"{job['name']}.json").write_text(
        json.dumps({"job": job, "stats": stats, "chosen": chosen}, indent=1)
    )
    print(f"  chose {chosen}: {stats}", flush=True)


def run_plan(plan: list[dict[str, Any]], *, reader: Any, data: Path, out: Path, start: float) -> None:
    """Run each job of ``plan`` in order; a job that fails is logged and the plan goes on."""
    profiles: dict[str, str] = {}
    for job in plan:
        name = job["name"]
        try:
            if "choose" in job:
                print(f"{_stamp(start)} {name}: choose a wording from {job['choose']}", flush=True)
                _choose_job(job, out=out, profiles=profiles)
            elif "eval" in job:
                print(
                    f"{_stamp(start)} {name}: eval {job['eval']} × {job['strategies']} × {job['budgets']}",
                    flush=True,
                )
                _eval_job(job, reader=reader, data=data, out=out, profiles=profiles)
            else:
                print(f"{_stamp(start)} {name}: fit {job['fit']} × {job['budgets']}", flush=True)
                profiles[name] = _fit_job(job, reader=reader, data=data, out=out, start=start)
        except Exception:  # one failing job is logged, the plan goes on
            print(f"{_stamp(start)} {name}: FAILED", flush=True)
            traceback.print_exc()
        print(f"{_stamp(start)} {name}: done", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data", required=True, help="the folder the plan's data paths are read against")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=24)
    args = ap.parse_args()

    start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    engine = TransformersEngine(Path(args.gguf), device=args.device, dtype=args.dtype, batch_size=args.batch)
    print(f"{_stamp(start)} engine {engine.url} loaded", flush=True)
    plan = json.loads(Path(args.plan).read_text())
    with engine.reader(args.cache, max_tokens=args.max_tokens) as reader:
        run_plan(plan, reader=reader, data=Path(args.data), out=out, start=start)
    print(f"{_stamp(start)} plan done", flush=True)
    (out / "DONE").write_text("done\n")


if __name__ == "__main__":
    main()
