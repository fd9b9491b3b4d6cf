"""A batched reader engine for an accelerator: transformers generating from the same GGUF as llama.cpp.

``eval --reader`` and ``fit`` ask one request at a time through an
OpenAI-compatible server, which is right on a CPU (llama.cpp answers
SmolLM2-135M at ~30 requests a minute on 2 cores) and wasteful on a GPU.
:class:`TransformersEngine` loads the GGUF with transformers
(``from_pretrained(..., gguf_file=...)``, dequantised to bf16), applies the
model's own chat template, pads on the left and generates greedily in
batches. It plugs into :class:`~contextwright.eval.reader.Reader` as its
client (``Reader.ask_many`` hands a client with ``chat_many`` whole batches),
so it fills the *same* reply cache ``eval --reader`` reads, under a cache
label that names the engine (``transformers-bf16:<gguf>``): replies from two
engines never mix, and a run on the GPU machine can be reported later on a
CPU with ``eval --reader-offline --reader-cache-label transformers-bf16:<gguf>``
(``--reader-model`` is the GGUF's stem).

    # on the GPU machine (measured: SmolLM2, 37,713 requests, batch 256, 273 s on one H200)
    python bench/reader_engine.py eval ../shared/data/nq_bm25_dev300.jsonl.gz --model smollm2 \\
        --strategies naive,qa,frugal --budgets 500,1000 --cache reader.sqlite
    python bench/reader_engine.py fit ../shared/data/nq_bm25_dev300.jsonl.gz --model qwen --out qwen.toml

    # a smoke test on CPU (slow, a few requests): --device cpu --dtype float32 --limit 4

transformers 5.17 mis-converts Gemma's GGUF tokenizer (twice the tokens,
garbled text); SmolLM2 and Qwen2.5 convert correctly. On CPU, llama.cpp stays
the engine (``bench/bench_reader.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from _data import REPO
from contextwright.clients.chat import ChatReply
from contextwright.core.errors import LLMError
from contextwright.eval.reader import Reader


class TransformersEngine:
    """Greedy chat generation in batches from a GGUF file, with the model's chat template.

    Args:
        gguf: The GGUF file (llama.cpp's, unchanged).
        device: ``cuda`` or ``cpu``.
        dtype: ``bfloat16`` (GPU) or ``float32`` (CPU).
        batch_size: Requests per ``generate`` call (sorted by length inside a call).
    """

    max_concurrency = 1

    def __init__(
        self, gguf: Path, *, device: str = "cuda", dtype: str = "bfloat16", batch_size: int = 256
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.device = device
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.lm = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype)
        ).to(device)
        self.lm.eval()
        short = "bf16" if dtype == "bfloat16" else dtype
        #: The cache label: names the engine and the weights, so engines never share replies.
        self.url = f"transformers-{short}:{gguf.name}"
        #: The model name in the cache key (the Reader reads ``client.model``).
        self.model = gguf.stem

    def close(self) -> None:
        """Nothing to close (the Reader calls it)."""

    def reader(self, cache: str | Path, *, max_tokens: int) -> Reader:
        """A :class:`~contextwright.eval.reader.Reader` asking this engine, caching under its label."""
        return Reader(self.url, model=self.model, client=self, cache=cache, max_tokens=max_tokens)  # type: ignore[arg-type]

    def chat_many(
        self, requests: Sequence[Sequence[Mapping[str, str]]], *, temperature: float, max_tokens: int
    ) -> list[ChatReply | LLMError]:
        """One reply per request; greedy whatever ``temperature`` says (the readers here are greedy)."""
        prompts = [
            self.tokenizer.apply_chat_template(
                [dict(m) for m in r], tokenize=False, add_generation_prompt=True
            )
            for r in requests
        ]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[ChatReply | LLMError] = [LLMError("not generated")] * len(prompts)
        start = time.perf_counter()
        enc = self.tokenizer(
            [prompts[i] for i in order], return_tensors="pt", padding=True, add_special_tokens=False
        )
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with self.torch.inference_mode():
            gen = self.lm.generate(
                **enc, max_new_tokens=max_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
            )
        ms = 1000 * (time.perf_counter() - start) / max(1, len(prompts))
        width = enc["input_ids"].shape[1]
        eos = self.tokenizer.eos_token_id
        for row, i in enumerate(order):
            new = gen[row, width:].tolist()
            ended = eos in new
            if ended:
                new = new[: new.index(eos)]
            text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
            out[i] = ChatReply(
                content=text,
                finish_reason="stop" if ended else "length",
                prompt_tokens=int(enc["attention_mask"][row].sum()),
                completion_tokens=len(new),
                latency_ms=ms,
            )
        return out


def _gguf(name: str) -> Path:
    from bench_reader import MODELS

    return MODELS[name]() if name in MODELS else Path(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("eval", "fit"))
    ap.add_argument("data")
    ap.add_argument("--model", default="smollm2", help="smollm2, qwen, or a .gguf path")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--budgets", default="500,1000")
    ap.add_argument("--strategies", default="naive,qa,frugal", help="eval: strategies or config files")
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--cache", default=str(REPO / ".bench_reader_cache.sqlite"))
    ap.add_argument("--out", default="profile.toml", help="fit: the profile to write")
    ap.add_argument("--min-queries", type=int, default=50, help="fit: fewest queries per part")
    args = ap.parse_args()

    from rich.console import Console

    from contextwright.eval import load_queries
    from contextwright.eval.fit import fit_profile
    from contextwright.eval.fit_report import render_fit_table, write_profile
    from contextwright.eval.reader import evaluate_reader
    from contextwright.eval.report import render_reader_table

    engine = TransformersEngine(
        _gguf(args.model), device=args.device, dtype=args.dtype, batch_size=args.batch
    )
    queries = load_queries(args.data, limit=args.limit)
    budgets = [int(b) for b in args.budgets.split(",")]
    console = Console(width=200, highlight=False)
    start = time.perf_counter()
    with engine.reader(args.cache, max_tokens=args.max_tokens) as reader:
        if args.mode == "eval":
            result = evaluate_reader(queries, args.strategies.split(","), budgets, reader=reader)
            console.print(render_reader_table(result))
            m = result.meta
            print(f"{m['requests']} requests ({m['cached']} cached) in {time.perf_counter() - start:.0f} s")
        else:
            fitted = fit_profile(
                queries,
                reader=reader,
                budgets=budgets,
                min_per_part=args.min_queries,
                data_name=Path(args.data).name,
            )
            console.print(render_fit_table(fitted))
            print(f"Verdict: {fitted.verdict}")
            write_profile(fitted, args.out)
            print(f"wrote {args.out} in {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
