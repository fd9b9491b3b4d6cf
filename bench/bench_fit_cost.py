"""What the default ``contextwright fit`` costs a CPU reader: requests asked and sent, prompt tokens, minutes.

Issue 32 asks the default search for SmolLM2 to finish in about an hour on 2 cores. A search asks
more requests than it sends (a race's leader runs again in the next race, a capped context is the
same at every budget), and a request's time grows with its prompt. This re-runs the search offline
from a reply cache that holds its replies (the H200 lease's, under the engine's label), records every
distinct request with its size in the reader's own tokens (llama.cpp's tokenizer of the GGUF), and
then, with ``--sample N``, sends a random sample of them to a live server on a fresh cache and
scales its wall time to the whole search. A sample is an upper bound: the search asks every setting
the same query one after another, and llama.cpp's prompt-prefix cache serves what consecutive
prompts share, which a random sample loses. The stop-45 search, run end to end on a 2-core CPU,
took 35 minutes, and the sample had estimated 61 on a slower machine (docs/fit.md, "Cost").

    python bench/bench_fit_cost.py ../shared/data/nq_bm25_dev300.jsonl.gz \\
        --gguf SmolLM2-135M-Instruct.Q4_1.gguf --cache gpu_h200.sqlite \\
        --label transformers-bf16:SmolLM2-135M-Instruct.Q4_1.gguf --model SmolLM2-135M-Instruct.Q4_1 \\
        [--step 25] [--sample 60 --server http://127.0.0.1:8765/v1 --concurrency 1]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.eval import load_queries
from contextwright.eval.fit import fit_profile
from contextwright.eval.reader import Reader


def distinct_requests(args: argparse.Namespace, size: Any) -> dict[str, tuple[list[dict[str, str]], int]]:
    """Every distinct request of the search (by its ChatML text), with its prompt size."""
    seen: dict[str, tuple[list[dict[str, str]], int]] = {}
    asked = [0]
    original = Reader.ask_many

    def recording(self: Reader, many: Sequence[Sequence[Mapping[str, str]]], **kw: Any) -> Any:
        for msgs in many:
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
            if text not in seen:
                seen[text] = ([dict(m) for m in msgs], size(text))
        asked[0] += len(many)
        return original(self, many, **kw)

    Reader.ask_many = recording  # type: ignore[method-assign]
    try:
        queries = load_queries(args.data)
        with Reader(
            "http://127.0.0.1:9/v1",
            model=args.model,
            cache=args.cache,
            cache_endpoint=args.label,
            offline=True,
            max_tokens=args.max_tokens,
        ) as reader:
            result = fit_profile(queries, reader=reader, budgets=(500, 1000), step=args.step)
    finally:
        Reader.ask_many = original  # type: ignore[method-assign]
    print(
        f"step {args.step}: asked {asked[0]:,} requests, {len(seen):,} distinct "
        f"({result.meta['failed']} not in the cache); chose {' '.join(result.setting.values())}"
    )
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--gguf", required=True, help="the reader's GGUF (its tokenizer sizes the prompts)")
    ap.add_argument("--cache", required=True, help="a reply cache holding the search's replies")
    ap.add_argument("--label", required=True, help="the cache's endpoint label")
    ap.add_argument("--model", required=True, help="the model name the cache was filled under")
    ap.add_argument("--step", type=int, default=25)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--sample", type=int, default=0, help="send this many distinct requests, timed")
    ap.add_argument("--server", default="http://127.0.0.1:8765/v1", help="the live server for --sample")
    ap.add_argument("--concurrency", type=int, default=4, help="requests in flight (fit's default: 4)")
    args = ap.parse_args()
    from llama_cpp import Llama

    vocab = Llama(args.gguf, vocab_only=True, verbose=False)
    seen = distinct_requests(args, lambda text: len(vocab.tokenize(text.encode(), special=True)))
    sizes = [n for _, n in seen.values()]
    print(f"prompt tokens (the reader's): mean {sum(sizes) / len(sizes):.0f}, total {sum(sizes):,}")
    if not args.sample:
        return
    random.seed(0)
    sample = random.sample(list(seen.values()), min(args.sample, len(seen)))
    with (
        tempfile.TemporaryDirectory() as d,
        Reader(
            args.server,
            model=args.model,
            cache=f"{d}/c.sqlite",
            max_tokens=args.max_tokens,
            max_concurrency=args.concurrency,
        ) as reader,
    ):
        start = time.perf_counter()
        got = reader.ask_many([m for m, _ in sample])
        took = time.perf_counter() - start
    failed = sum(1 for g in got if not isinstance(g, tuple))
    share = sum(n for _, n in sample) / sum(sizes)
    print(
        f"sample of {len(sample)} ({share:.1%} of the prompt tokens), {args.concurrency} in flight: "
        f"{took:.0f} s, {failed} failed; "
        f"the whole search at that rate: ~{took / share / 60:.0f} min"
    )


if __name__ == "__main__":
    main()
