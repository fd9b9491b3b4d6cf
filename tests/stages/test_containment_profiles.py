"""Containment looks for the kept chunk holding a shingle only where a chunk shares some (issue 33),
with the same outcome as looking up every shingle in one map of the text kept: checked against that
walk, written out here as the oracle, on the mirrors lists (copies across chunkers) and the BM25
lists, at budgets where drops give tokens back and the walk reaches past its first batch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from contextwright.core.caches import clear_all
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages import containment
from contextwright.stages.containment import ContainmentDedup
from contextwright.stages.dedup import fold_duplicate
from contextwright.stages.filter import relevance_key
from contextwright.tokens import get_tokenizer

from ..conftest import SHARED_DATA, _read_jsonl_gz

MIRRORS = SHARED_DATA / "nq_mirrors_dev300.jsonl.gz"


def _ints(hashes: tuple[int, ...] | bytes) -> tuple[int, ...]:
    """A profile's hashes as ints (the C path keeps them as bytes of 8-byte values)."""
    return tuple(memoryview(hashes).cast("Q")) if isinstance(hashes, bytes) else hashes


def oracle(stage: ContainmentDedup, chunks: Sequence[Chunk], meter: Meter | None, budget: int | None) -> Any:
    """The walk before issue 33: every shingle of each chunk looked up in one map of the text kept."""
    k = stage.shingle_size
    boiler = containment._boilerplate(chunks)
    order = sorted(range(len(chunks)), key=lambda i: relevance_key(chunks[i]))
    owner: dict[int, int] = {}
    current, dropped, drops = list(chunks), set(), []
    room = stage.reach * budget if meter is not None and budget is not None and stage.reach else None
    for i in order:
        if room is not None and meter is not None:
            if room <= 0:
                break
            room -= meter.tokens(chunks[i])
        c = chunks[i]
        view = containment._views([c.text], k, boiler)[0]
        sh = _ints(view.shingles)
        if not sh:
            continue
        found = [owner.get(h) for h in sh]
        if all(o is None for o in found):
            owner.update(dict.fromkeys(sh, i))
            continue
        counts = Counter(o for o in found if o is not None)
        runs = containment._covered_runs([p for p, o in enumerate(found) if o is not None], k)
        main = max(counts, key=counts.__getitem__)
        share = sum(b - a for a, b in runs) / view.n_words
        if share >= stage.threshold:
            current[main] = fold_duplicate(current[main], c)
            dropped.add(i)
            drops.append((c.id, chunks[main].id))
            if room is not None and meter is not None:
                room += meter.tokens(c)
            continue
        stripped = stage._strip(c, view, runs, chunks[main].id, meter)
        if stripped is not None:
            current[i] = stripped[0]
        for h in sh:
            owner.setdefault(h, i)
    return [c.to_dict() for i, c in enumerate(current) if i not in dropped], drops


def _lists(path: Any, n: int) -> list[tuple[Chunk, ...]]:
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return [chunks_from_dicts(q["chunks"], empty=[]) for q in _read_jsonl_gz(path, n)]


def test_the_walk_matches_the_full_map_walk() -> None:
    clear_all(per_object=False)
    meter_for = lambda: Meter(get_format("lean"), get_tokenizer("cl100k_base"))  # noqa: E731
    lists = _lists(MIRRORS, 40) + _lists(SHARED_DATA / "nq_bm25_dev300.jsonl.gz", 20)
    compared = dropped = 0
    for chunks in lists:
        for stage, budget in (
            (ContainmentDedup(), 150),
            (ContainmentDedup(), 1000),
            (ContainmentDedup(reach=0), None),
        ):
            meter = meter_for()
            got = stage(chunks, meter=meter, budget=budget)
            want_chunks, want_drops = oracle(stage, chunks, meter, budget)
            assert [c.to_dict() for c in got.chunks] == want_chunks
            assert [(d.chunk_id, d.related) for d in got.report.dropped] == want_drops
            compared += 1
            dropped += len(want_drops)
    assert compared == 180 and dropped > 100  # the mirrors lists hold many copies
    clear_all(per_object=False)


@pytest.mark.parametrize("scan_kept", [0, 32])
def test_the_owner_map_past_many_kept_chunks_matches_the_full_map_walk(
    scan_kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``_SCAN_KEPT`` kept chunks the walk looks owners up in a map: on 420-chunk lists (21
    mirror lists joined, as bench_copies_cost does) and with the map from the first chunk on,
    the same chunks, strips and drops as the full-map oracle."""
    from contextwright.stages import containment

    monkeypatch.setattr(containment, "_SCAN_KEPT", scan_kept)
    clear_all(per_object=False)
    small = _lists(MIRRORS, 42)
    wide = [tuple(c for chunks in small[g : g + 21] for c in chunks) for g in (0, 21)]
    wide = [chunks_from_dicts([dict(c.to_dict(), id=f"{k}", rank=k) for k, c in enumerate(w)]) for w in wide]
    dropped = 0
    for chunks, budget in [(w, b) for w in wide for b in (1000, 4000)] + [(s, 150) for s in small[:10]]:
        meter = Meter(get_format("lean"), get_tokenizer("cl100k_base"))
        stage = ContainmentDedup()
        got = stage(chunks, meter=meter, budget=budget)
        want_chunks, want_drops = oracle(stage, chunks, meter, budget)
        assert [c.to_dict() for c in got.chunks] == want_chunks
        assert [(d.chunk_id, d.related) for d in got.report.dropped] == want_drops
        dropped += len(want_drops)
    assert dropped > 100
    clear_all(per_object=False)
