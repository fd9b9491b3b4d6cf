"""Corpus near-duplicate detection: MinHash LSH finds what brute-force exact Jaccard finds."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.batch.corpus_dedup import near_duplicate_pairs
from contextwright.cli import app
from contextwright.core.errors import ConfigError
from contextwright.stages.shingles import jaccard, shingles

pytest.importorskip("numpy")
runner = CliRunner()


def _corpus(seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]
    texts = [" ".join(rng.choices(vocab, k=rng.randint(80, 120))) for _ in range(400)]
    for _ in range(25):  # near copies: one or two words replaced
        words = rng.choice(texts).split()
        for _ in range(rng.randint(1, 2)):
            words[rng.randrange(len(words))] = rng.choice(vocab)
        texts.insert(rng.randrange(len(texts)), " ".join(words))
    texts.append(texts[5])  # an exact copy
    texts.append("short")  # fewer words than a shingle
    texts.append("!!!")  # no words at all
    return texts


def _brute(texts: list[str], t: float) -> set[tuple[int, int]]:
    sets = [shingles(x, 3) for x in texts]
    return {(a, b) for a, b in itertools.combinations(range(len(texts)), 2) if jaccard(sets[a], sets[b]) >= t}


def _clusters(pairs: set[tuple[int, int]]) -> list[set[int]]:
    groups: list[set[int]] = []
    for a, b in sorted(pairs):
        hit = [g for g in groups if a in g or b in g]
        merged = {a, b}.union(*hit)
        groups = [g for g in groups if g not in hit] + [merged]
    return groups


@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_lsh_pairs_equal_brute_force_exact_jaccard(threshold: float) -> None:
    texts = _corpus()
    result = near_duplicate_pairs(texts, threshold=threshold, batch=100)
    expected = _brute(texts, threshold)
    assert len(expected) >= 10
    assert {(p.a, p.b) for p in result.pairs} == expected
    assert all(p.a < p.b and p.jaccard >= threshold for p in result.pairs)
    # each cluster keeps its first chunk: the chunks to drop are the others
    in_pairs = {x for p in expected for x in p}
    firsts = {min(c) for c in _clusters(expected)}
    assert result.duplicates == in_pairs - firsts
    assert result.chunks == len(texts) and result.candidates >= len(expected)


def test_streamed_with_reread_equals_in_memory() -> None:
    texts = _corpus(5)
    reread_calls: list[int] = []

    def reread(positions: set[int]) -> dict[int, str]:
        reread_calls.append(len(positions))
        return {i: texts[i] for i in positions}

    streamed = near_duplicate_pairs(iter(texts), threshold=0.85, reread=reread, batch=64)
    assert streamed.pairs == near_duplicate_pairs(texts, threshold=0.85).pairs
    assert reread_calls and reread_calls[0] < len(texts)  # only the candidates' texts are read again


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        near_duplicate_pairs(["a b c"], threshold=1.5)
    with pytest.raises(ConfigError, match="num_perm"):
        near_duplicate_pairs(["a b c"], num_perm=4)
    assert near_duplicate_pairs([]).pairs == ()


def test_cli_dedup_corpus_writes_pairs_and_stats(tmp_path: Path) -> None:
    texts = _corpus()
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"c{i}", "text": t}) for i, t in enumerate(texts)) + "\n")
    out = tmp_path / "pairs.jsonl"
    result = runner.invoke(
        app, ["dedup-corpus", str(corpus), "--out", str(out), "--threshold", "0.8", "--stats"]
    )
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout.strip().splitlines()[-1])
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    assert stats["pairs"] == len(pairs) == len(_brute(texts, 0.8)) and stats["peak_rss_mb"] > 0
    assert all(p["a"] == f"c{p['a_pos']}" and p["jaccard"] >= 0.8 for p in pairs)
    bad = runner.invoke(app, ["dedup-corpus", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code == 2 and "missing.jsonl" in bad.output


def test_worker_processes_give_the_same_pairs() -> None:
    texts = _corpus(7)
    one = near_duplicate_pairs(texts, threshold=0.8, batch=50)
    two = near_duplicate_pairs(texts, threshold=0.8, batch=50, workers=2)
    assert (two.pairs, two.duplicates, two.candidates) == (one.pairs, one.duplicates, one.candidates)
    assert one.pairs
