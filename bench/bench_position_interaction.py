"""Does the order effect differ between two readers? The reader x position interaction, offline.

Reads two readers' position sweeps (``contextwright eval DATA --strategy naive --budget 500
--limit N --positions 5 --reader ...``, one per reader, into the same reply cache) back from the
cache, asking nothing, and compares per question the gap between the answer chunk first and last
(and first against the mean of the other slots): the mean of (gap under reader B - gap under
reader A) over the questions both answered, its 95 % paired bootstrap interval, and a sign-flip
permutation p. A gap that differs between readers is what "the best order is a property of the
reader" predicts; a difference near zero says both readers share one curve.

    python bench/bench_position_interaction.py ../shared/data/nq_bm25_confirm500.jsonl.gz \\
        --cache reader.sqlite --limit 80 \\
        --reader smollm2-135m-instruct=llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf \\
        --reader qwen2.5-coder-0.5b-instruct=llama.cpp:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

Each ``--reader`` is ``MODEL=CACHE_LABEL`` (the ``--reader-model`` and ``--reader-cache-label`` the
sweep ran with); the sweeps must have used the default prompt, 24 tokens and greedy decoding.
A reply missing from the cache is an error naming it (run the sweep first).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from contextwright.eval import load_queries
from contextwright.eval.metrics import paired_bootstrap_delta
from contextwright.eval.reader_client import Reader
from contextwright.eval.reader_requests import answer_of, system_of
from contextwright.eval.sweep import sweep_requests
from contextwright.tokens import CachedTokenizer, get_tokenizer

K = 5


def sweep_answers(data: str, limit: int, model: str, label: str, cache: str) -> dict[int, dict[str, float]]:
    """{position: {query id: 1.0 if answered correctly}} of one reader's k = 5 sweep, from the cache."""
    queries = load_queries(data)[:limit]
    reader = Reader(
        base_url="http://127.0.0.1:1/v1",  # never asked: offline, every reply from the cache
        model=model,
        cache=cache,
        max_tokens=24,
        temperature=0.0,
        offline=True,
        cache_endpoint=label,
    )
    requests = sweep_requests(queries, K, system=system_of(reader))
    replies = reader.ask_many([r.messages for r in requests])
    tokenizer = CachedTokenizer(get_tokenizer("cl100k_base").base)
    out: dict[int, dict[str, float]] = {}
    for request, reply in zip(requests, replies, strict=True):
        answer = answer_of(request, reply, tokenizer)
        if not answer.ok:
            raise SystemExit(
                f"{model}: no reply in {cache} under {label!r} for question {request.query.id!r} "
                f"with the answer at position {request.budget} (run its sweep first)"
            )
        out.setdefault(answer.budget, {})[answer.query_id] = float(bool(answer.correct))
    return out


def sign_flip_p(diffs: Sequence[float], rounds: int = 20000, seed: int = 0) -> float:
    """Two-sided p of a mean of zero: each question's difference flips sign at random."""
    rnd = random.Random(seed)
    observed = abs(sum(diffs))
    hits = sum(
        abs(sum(d if rnd.random() < 0.5 else -d for d in diffs)) >= observed - 1e-12 for _ in range(rounds)
    )
    return (hits + 1) / (rounds + 1)


def gaps(sweep: dict[int, dict[str, float]], ids: list[str], against: str) -> list[float]:
    """Per question: position 1 minus position 5 (``last``) or minus the mean of 2..5 (``rest``)."""
    if against == "last":
        return [sweep[1][i] - sweep[K][i] for i in ids]
    return [sweep[1][i] - sum(sweep[p][i] for p in range(2, K + 1)) / (K - 1) for i in ids]


def interval(values: Sequence[float], base: Sequence[float] | None = None) -> str:
    got = paired_bootstrap_delta(list(base) if base is not None else [0.0] * len(values), list(values))
    assert got is not None
    mean, lo, hi = got
    return f"{100 * mean:+.1f} ({100 * lo:+.1f}…{100 * hi:+.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--cache", required=True, help="the reply cache the sweeps filled")
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--reader", action="append", required=True, help="MODEL=CACHE_LABEL, twice")
    args = ap.parse_args()
    if len(args.reader) != 2 or not all("=" in r for r in args.reader):
        ap.error("--reader MODEL=CACHE_LABEL, given twice (reader A, then reader B)")
    readers = [tuple(r.split("=", 1)) for r in args.reader]
    sweeps = [sweep_answers(args.data, args.limit, m, label, args.cache) for m, label in readers]
    ids = sorted(set(sweeps[0][1]) & set(sweeps[1][1]))
    print(f"{args.data}: {len(ids)} answerable questions of the first {args.limit}; k = {K}")
    for (model, _), sweep in zip(readers, sweeps, strict=True):
        acc = " / ".join(f"{100 * sum(sweep[p][i] for i in ids) / len(ids):.1f}" for p in range(1, K + 1))
        print(f"  {model}: positions 1-{K} {acc} %")
    for against, name in (("last", f"position 1 - position {K}"), ("rest", f"position 1 - mean of 2..{K}")):
        a, b = (gaps(s, ids, against) for s in sweeps)
        print(f"  {name}: {readers[0][0]} {interval(a)}, {readers[1][0]} {interval(b)}")
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        print(
            f"    interaction ({readers[1][0]} - {readers[0][0]}): {interval(b, a)}, sign-flip p {sign_flip_p(diffs):.3f}"
        )


if __name__ == "__main__":
    main()
