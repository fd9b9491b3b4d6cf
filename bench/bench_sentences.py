"""Sentence splitters compared: accuracy on tricky cases, speed on the shared data.

Compares :func:`contextwright.core.sentences.split_sentences` with ``pysbd`` and
``blingfire`` when they are installed (``pip install pysbd blingfire``).
Accuracy is the share of fixture cases (``tests/fixtures/sentence_cases.json``)
split exactly right; speed is the time to split every chunk text of the
shared NQ dev data once, and its ratio to ours, measured in one run.

    python bench/bench_sentences.py [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Callable
from pathlib import Path

from contextwright.core.sentences import split_sentences

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "fixtures" / "sentence_cases.json"
DATA = ROOT.parent / "shared" / "data" / "nq_bm25_dev300.jsonl.gz"

Splitter = Callable[[str], list[str]]


def ours(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def splitters() -> dict[str, Splitter]:
    out: dict[str, Splitter] = {"contextwright": ours}
    try:
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False, char_span=False)
        out["pysbd"] = lambda t: [s.strip() for s in seg.segment(t) if s.strip()]
    except ImportError:
        print("pysbd not installed; skipped")
    try:
        import blingfire

        def bf(text: str) -> list[str]:
            _, offsets = blingfire.text_to_sentences_and_offsets(text)
            return [text[s:e].strip() for s, e in offsets if text[s:e].strip()]

        out["blingfire"] = bf
    except ImportError:
        print("blingfire not installed; skipped")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=300, help="queries of the shared data to time")
    parser.add_argument("--show", action="store_true", help="print each splitter's misses")
    args = parser.parse_args()
    cases = json.loads(CASES.read_text())
    texts: list[str] = []
    if DATA.exists():
        with gzip.open(DATA, "rt") as f:
            for i, line in enumerate(f):
                if i >= args.limit:
                    break
                texts.extend(c["text"] for c in json.loads(line)["chunks"])
    else:
        print(f"{DATA} not found; timing skipped")
    rows = []
    for name, split in splitters().items():
        right = 0
        for case in cases:
            text = case.get("text", " ".join(case["sentences"]))
            got = split(text)
            if got == case["sentences"]:
                right += 1
            elif args.show:
                print(f"  {name} misses {case['name']!r}: {got}")
        start = time.perf_counter()
        n = sum(len(split(t)) for t in texts)
        secs = time.perf_counter() - start
        rows.append((name, right, secs, n))
    base = rows[0][2] or 1e-9
    print(
        f"{'splitter':<14} {'fixture':>9} {'time (s)':>9} {'x ours':>7} {'sentences':>10}  ({len(texts)} chunks)"
    )
    for name, right, secs, n in rows:
        print(f"{name:<14} {right:>4}/{len(cases):<4} {secs:>9.3f} {secs / base:>7.1f} {n:>10}")


if __name__ == "__main__":
    main()
