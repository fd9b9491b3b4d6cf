"""The reader flags the reader benchmarks share, and the Reader they open (llama.cpp or any OpenAI-compatible server)."""

from __future__ import annotations

import argparse
from typing import Any

from contextwright.eval.reader import Reader


def add_reader_args(ap: argparse.ArgumentParser) -> None:
    """``--reader --model --cache --label --offline --max-tokens``."""
    ap.add_argument("--reader", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--label", default=None, help="the reply cache's endpoint label")
    ap.add_argument("--offline", action="store_true", help="answer from the cache alone")
    ap.add_argument("--max-tokens", type=int, default=24)


def open_reader(args: argparse.Namespace, **extra: Any) -> Reader:
    """The Reader the flags name, one request at a time (a 2-core llama.cpp server takes one)."""
    return Reader(
        args.reader,
        model=args.model,
        cache=args.cache,
        cache_endpoint=args.label,
        max_tokens=args.max_tokens,
        max_concurrency=1,
        offline=args.offline,
        **extra,
    )
