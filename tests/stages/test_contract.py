"""The stage contract, run over every registered stage (like scikit-learn's check_estimator).

For each stage: the input is not mutated; empty input gives empty output and
a report; the result is deterministic; a to_dict/from_dict round trip gives
an equal stage; every input chunk is accounted for (invariant 2).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import StageResult
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.base import registered_stages, stage_from_dict, stage_to_dict
from contextwright.tokens import get_tokenizer

# Settings for stages that cannot be built from defaults alone. An unreachable
# local endpoint makes the LLM stage exercise its failure path deterministically.
EXAMPLE_SETTINGS: dict[str, dict[str, Any]] = {
    "llm_compress": {"base_url": "http://127.0.0.1:9/v1", "model": "test", "timeout_s": 0.2, "retries": 0},
}

WORDS = "the quick brown fox jumps over the lazy dog while a cat sleeps in the warm sun".split()


def make_chunks() -> tuple[Chunk, ...]:
    items = []
    for i in range(8):
        text = (
            " ".join(WORDS[(i + j) % len(WORDS)] for j in range(30))
            + ". It ends here. Another sentence follows."
        )
        items.append(
            {
                "id": f"c{i}",
                "text": text,
                "score": round(1 - i * 0.1, 2),
                "doc_id": f"d{i % 3}",
                "index": i // 3,
                "source": f"s{i % 3}.md",
                "embedding": [1.0, float(i % 2), 0.5],
            }
        )
    items.append({**items[0], "id": "copy", "score": 0.05})
    return chunks_from_dicts(items)


def build(cls: type) -> Any:
    return cls(**EXAMPLE_SETTINGS.get(cls.name, {}))


class OverlapReranker:
    """A reranker (``score(query, texts)``): shared words with the query, deterministic."""

    def score(self, query: str, texts: Any) -> list[float]:
        q = set(query.split())
        return [float(len(q & set(t.split()))) for t in texts]


def _letters(texts: list[str]) -> list[list[float]]:
    return [[float(t.count(ch)) + 0.01 for ch in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


def environment(budget: int) -> dict[str, Any]:
    tok = get_tokenizer("cl100k_base")
    env: dict[str, Any] = {
        "query": "what does the fox do",
        "tokenizer": tok,
        "budget": budget,
        "meter": Meter(get_format("xml"), tok),
        "format": get_format("xml"),
        "reranker": OverlapReranker(),
    }
    try:
        from contextwright.clients.embed import CallableEmbedder

        env["embedder"] = CallableEmbedder(_letters)
    except ImportError:
        pass
    try:
        from contextwright.stores import InMemoryStore

        env["store"] = InMemoryStore(make_chunks())
    except ImportError:
        pass
    return env


def call(stage: Any, chunks: tuple[Chunk, ...], budget: int) -> StageResult:
    env = environment(budget)
    needs = {k: env[k] for k in stage.requires if k in env}
    missing = [k for k in stage.requires if k not in env]
    if missing:
        pytest.fail(f"contract test has no {missing} for stage {stage.name}; add it to environment()")
    for k in getattr(stage, "optional", ()):
        if k in env:
            needs[k] = env[k]
    return stage(chunks, **needs)


STAGES = sorted(registered_stages().items())


@pytest.mark.parametrize(("name", "cls"), STAGES, ids=[n for n, _ in STAGES])
def test_stage_is_a_frozen_keyword_only_dataclass(name: str, cls: type) -> None:
    stage = build(cls)
    assert dataclasses.is_dataclass(stage) and stage.name == name
    field = next((f for f in dataclasses.fields(stage) if f.init), None)
    if field is not None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(stage, field.name, getattr(stage, field.name))
    assert isinstance(cls.requires, tuple)


@pytest.mark.parametrize(("name", "cls"), STAGES, ids=[n for n, _ in STAGES])
def test_stage_settings_round_trip(name: str, cls: type) -> None:
    stage = build(cls)
    assert stage_from_dict(stage_to_dict(stage)) == stage


@pytest.mark.parametrize(("name", "cls"), STAGES, ids=[n for n, _ in STAGES])
def test_empty_input_gives_empty_output_and_a_report(name: str, cls: type) -> None:
    result = call(build(cls), (), 1_000)
    assert result.chunks == () and result.report.stage == name
    assert result.report.chunks_in == 0 and result.report.chunks_out == 0


@pytest.mark.parametrize("budget", [10_000, 60])
@pytest.mark.parametrize(("name", "cls"), STAGES, ids=[n for n, _ in STAGES])
def test_no_mutation_determinism_and_nothing_lost(name: str, cls: type, budget: int) -> None:
    stage = build(cls)
    chunks = make_chunks()
    snapshot = [(dataclasses.replace(c), dict(c.metadata), c.embedding) for c in chunks]
    first = call(stage, chunks, budget)
    assert [(c, dict(c.metadata), c.embedding) for c in chunks] == snapshot
    second = call(stage, chunks, budget)
    assert first.chunks == second.chunks
    assert first.report.dropped == second.report.dropped
    out_ids = {i for c in first.chunks for i in (*c.member_ids, *c.duplicates)}
    dropped = {d.chunk_id for d in first.report.dropped}
    missing = {c.id for c in chunks} - out_ids - dropped
    assert not missing, f"{name} lost {missing}"
    assert first.report.chunks_in == len(chunks) and first.report.chunks_out == len(first.chunks)
