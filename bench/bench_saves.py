"""Dedup before the budget's cut (what a copy frees is refilled) against after it (saved), with a reader.

`qa` dedups after its budget since stop 37 (docs/quality.md, "`qa` dedups after the cut"). This is
the measurement behind that change, for `qa` or any preset (`--preset`): its dedup stages
(exact, overlap, containment, near) are placed, in their order, just before its `token_budget`
and just after it, the rest of its stages unchanged. On every question of the data, both are assembled;
where the two contexts are the same, both send the same messages and get the same reply (a tie),
so only the questions whose contexts differ are asked, with both settings, through the reader's
reply cache. Prints the difference over all questions with its 95 % paired bootstrap interval and
McNemar's p, and the bare-citation replies of each setting.

``--challenger FILE`` compares the preset as shipped with any config file instead (the same
differing-questions-only pairing), e.g. ``--preset citations --challenger
bench/plans/citations-stop43.toml``; ``--preset`` may then be a config file too.

Run (a llama.cpp server, or any OpenAI-compatible endpoint):
    python bench/bench_saves.py ../shared/data/nq_bm25_confirm500.jsonl.gz --budget 500 \\
        --reader http://127.0.0.1:8765/v1 --model smollm2-135m-instruct \\
        --cache reader.sqlite --label llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf [--offline]
    # another preset; documents expands from a chunk store:
    python bench/bench_saves.py ../shared/data/nq_mirrors_dev300.jsonl.gz --preset documents \
        --corpus ../shared/data/nq_mirrors_corpus.jsonl.gz --budget 300 --reader ... --model ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _reader import add_reader_args, open_reader
from contextwright import Assembler, get_preset
from contextwright.assembly.presets import load_config_file
from contextwright.eval import load_queries
from contextwright.eval.metrics import mcnemar_exact, paired_bootstrap_delta
from contextwright.eval.reader import evaluate_reader
from contextwright.eval.runner import open_corpus_store
from contextwright.eval.strategies import PipelineStrategy

#: The stages that drop or strip copies: what they free is refilled before the cut, saved after it.
DEDUP = ("exact_dedup", "overlap_dedup", "containment_dedup", "near_dedup")


def placed(config: dict[str, Any], where: str, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """``config`` with its dedup stages, in their order, ``before`` or just ``after`` its budget; a
    preset whose dedup is already on that side is returned as it is (its own stage order). The
    stages named in ``keep`` stay where the preset has them.

    Example: ``qa`` (budget, exact, containment, order) placed ``before`` is ``qa`` as it was
    until stop 37 (exact, containment, budget, order); ``tight`` as it was until stop 41
    (bench/plans/tight-stop41.toml) placed ``after`` is compress, budget, exact, overlap,
    containment, order, and with ``keep=("overlap_dedup",)`` it is the shipped ``tight``.
    """
    stages = config["stages"]
    types = [s["type"] for s in stages]
    cut = types.index("token_budget")
    moved = tuple(t for t in DEDUP if t not in keep)
    dedup = [s for s in stages if s["type"] in moved]
    side = (
        all(t not in moved for t in types[cut:])
        if where == "before"
        else all(t not in moved for t in types[:cut])
    )
    if not side:
        rest = [s for s in stages if s["type"] not in moved]
        at = next(i for i, s in enumerate(rest) if s["type"] == "token_budget") + (where == "after")
        stages = rest[:at] + dedup + rest[at:]
    return {**config, "name": f"dedup-{where}-the-cut", "stages": stages}


def _named(path: str) -> dict[str, Any]:
    """A config file, named after the file unless it names itself."""
    return {"name": Path(path).stem, **load_config_file(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument(
        "--preset",
        default="qa",
        help="the preset whose dedup is placed before and after its cut (with --challenger, a config file too)",
    )
    ap.add_argument("--corpus", default=None, help="chunk corpus JSONL(.gz): the store that expand reads")
    ap.add_argument(
        "--keep",
        default="",
        help="comma-separated dedup stages that stay where the preset has them (e.g. overlap_dedup)",
    )
    ap.add_argument(
        "--challenger",
        default=None,
        help="a config file (TOML or JSON) to compare with the preset as shipped, instead of moving its dedup",
    )
    add_reader_args(ap)
    args = ap.parse_args()
    keep = tuple(t for t in args.keep.split(",") if t)
    if unknown := [t for t in keep if t not in DEDUP]:
        ap.error(f"--keep {','.join(unknown)!r}: not a dedup stage; valid: {', '.join(DEDUP)}")
    if args.challenger:
        is_file = Path(args.preset).suffix in (".toml", ".json")
        before = _named(args.preset) if is_file else {**get_preset(args.preset), "name": args.preset}
        after = _named(args.challenger)
    else:
        before = placed(get_preset(args.preset), "before", keep)
        after = placed(get_preset(args.preset), "after", keep)
    queries = load_queries(args.data)
    resources = {"store": open_corpus_store(args.corpus)} if args.corpus else {}
    a = Assembler(before, budget=args.budget, tokenizer="cl100k_base", **resources)
    b = Assembler(after, budget=args.budget, tokenizer="cl100k_base", **resources)
    differ = [
        q for q in queries if a.assemble(q.question, q.chunks).text != b.assemble(q.question, q.chunks).text
    ]
    print(
        f"{args.preset}: {len(queries)} questions, {len(differ)} with different contexts at {args.budget} tokens"
    )
    with open_reader(args) as reader:
        res = evaluate_reader(
            differ,
            [PipelineStrategy(before["name"], before), PipelineStrategy(after["name"], after)],
            [args.budget],
            reader=reader,
            closed_book=False,
            oracle=False,
            resources=resources,
        )
    got: dict[str, dict[str, Any]] = {}
    for ans in res.answers:
        got.setdefault(ans.query_id, {})[ans.strategy] = ans
    first, second = before["name"], after["name"]
    pairs = [(pair[first], pair[second]) for pair in got.values()]
    # The questions whose contexts are the same send the same messages: ties, whatever the reply.
    ties = [False] * (len(queries) - len(pairs))
    before = [bool(x.correct) for x, _ in pairs] + ties
    now = [bool(y.correct) for _, y in pairs] + ties
    delta, low, high = paired_bootstrap_delta(before, now) or (0.0, 0.0, 0.0)
    worse = sum(1 for x, y in zip(before, now, strict=True) if x and not y)
    better = sum(1 for x, y in zip(before, now, strict=True) if y and not x)
    failed = sum((not x.ok) + (not y.ok) for x, y in pairs)
    print(
        f"{second} - {first}: {100 * delta:+.1f} points [{100 * low:+.1f}, {100 * high:+.1f}] "
        f"(95 % paired bootstrap, n = {len(queries)}), McNemar p {mcnemar_exact(worse, better):.3f}; "
        f"right only with the first {worse}, only with the second {better}; bare citations "
        f"{sum(x.bare for x, _ in pairs)} / {sum(y.bare for _, y in pairs)} (of {len(differ)}); "
        f"failed requests {failed}"
    )


if __name__ == "__main__":
    main()
