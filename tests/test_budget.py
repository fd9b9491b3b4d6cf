"""Tests of the model registry and the zone arithmetic."""

from __future__ import annotations

import pytest

from contextwright.core.errors import BudgetError, ConfigError
from contextwright.tokens.zones import ModelSpec, ZoneBudget, get_model, list_models, register_model


@pytest.mark.parametrize(
    ("name", "window", "tokenizer"),
    [
        ("gpt-4o-mini", 128_000, "o200k_base"),
        ("gpt-4o-2024-08-06", 128_000, "o200k_base"),
        ("openai/gpt-4.1", 1_047_576, "o200k_base"),
        ("gpt-5", 400_000, "o200k_base"),
        ("o3-mini", 200_000, "o200k_base"),
        ("claude-sonnet-4-5-20250929", 200_000, "cl100k_base"),
        ("llama-3.1-8b-instruct", 131_072, "hf:meta-llama/Llama-3.1-8B-Instruct"),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768, "hf:Qwen/Qwen2.5-7B-Instruct"),
        ("mistral-7b-instruct-v0.3", 32_768, "hf:mistralai/Mistral-7B-Instruct-v0.3"),
        ("gemma-2-9b-it", 8_192, "hf:google/gemma-2-9b-it"),
    ],
)
def test_registry_resolves_families_and_snapshots(name: str, window: int, tokenizer: str) -> None:
    spec = get_model(name)
    assert spec.context_window == window and spec.tokenizer == tokenizer


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown model 'gpt-4-omni'.*Did you mean"):
        get_model("gpt-4-omni")


def test_register_model_adds_and_overrides() -> None:
    register_model(ModelSpec("my-llm", 32_768, 1_024, "cl100k_base"))
    assert get_model("my-llm").max_output == 1_024
    register_model(name="my-llm", max_output=2_048)
    assert get_model("my-llm").context_window == 32_768 and get_model("my-llm").max_output == 2_048
    assert any(m.name == "my-llm" for m in list_models())
    with pytest.raises(ConfigError, match="context_window must be a positive integer"):
        ModelSpec("bad", 0, 1, "cl100k_base")


def test_zone_arithmetic() -> None:
    zones = ZoneBudget(window=8_192, system=100, history=500, query=20, output=1_000, buffer=72)
    assert zones.documents == 6_500
    assert zones.as_dict()["documents"] == 6_500


def test_explicit_budget_overrides_zones() -> None:
    assert ZoneBudget(window=10, output=100, budget=300).documents == 300


def test_no_room_for_documents_shows_the_arithmetic() -> None:
    with pytest.raises(
        BudgetError,
        match=r"window 8,192 − system 100 − history 0 − query 10 − output 8,192 − buffer 0 = documents -110",
    ):
        ZoneBudget(window=8_192, system=100, query=10, output=8_192)


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_zone_values_are_validated(value: object) -> None:
    with pytest.raises(ConfigError, match="zone 'history' must be a non-negative integer"):
        ZoneBudget(window=100, history=value)  # type: ignore[arg-type]
