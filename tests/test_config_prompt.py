"""A config's ``prompt`` (issue 32): a profile carries the grounded prompt it was fitted with.

``default`` stands in for it wherever the messages are built (``ctx.messages()``, the system
zone, ``eval --reader`` and ``fit``); any other prompt the caller names wins.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import contextwright
from contextwright import Assembler, pipeline_from_config
from contextwright.core.errors import ConfigError
from contextwright.eval.fit_space import KNOBS, START, candidate_config, label, parse_space
from contextwright.render.format import get_format
from contextwright.render.messages import system_prompt

CHUNKS = [
    {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
    {"id": "b", "text": "Lyon is a large city in France.", "score": 0.5},
]
STAGES = [{"type": "token_budget", "policy": "fill"}]


def _system(ctx: contextwright.AssembledContext, **kw: object) -> str | None:
    msgs = ctx.messages(**kw)  # type: ignore[arg-type]
    return msgs[0]["content"] if msgs[0]["role"] == "system" else None


@pytest.mark.parametrize("fmt", ["lean", "numbered", "minimal"])
def test_a_configs_prompt_stands_in_for_default_and_a_named_prompt_wins(fmt: str) -> None:
    config = {"stages": STAGES, "format": fmt, "prompt": "strict"}
    ctx = contextwright.assemble("capital?", CHUNKS, preset=config, budget=200)
    form = get_format(fmt)
    assert _system(ctx) == system_prompt("strict", format=form)  # strict, in the format's form
    assert _system(ctx, system="default") == system_prompt("strict", format=form)
    assert _system(ctx, system="soft") == system_prompt("soft", format=form)  # the caller's name wins
    assert _system(ctx, system="Reply in French.") == "Reply in French."
    assert _system(ctx, system=None) is None
    plain = contextwright.assemble("capital?", CHUNKS, preset={"stages": STAGES, "format": fmt}, budget=200)
    assert _system(plain) == system_prompt("default", format=form)  # no prompt key: as before
    assert ctx.text == plain.text  # the prompt changes the messages, never the context


def test_a_literal_prompt_is_sent_as_written() -> None:
    text = "Answer from the passages only, in five words or fewer."
    ctx = contextwright.assemble("capital?", CHUNKS, preset={"stages": STAGES, "prompt": text}, budget=200)
    assert _system(ctx) == text


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("strcit", "Did you mean 'strict'"),
        ("", "prompt must be"),
        (3, "prompt must be"),
        (["strict"], "prompt must"),
    ],
)
def test_a_bad_prompt_is_refused_naming_the_key_the_value_and_the_names(value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        pipeline_from_config({"stages": STAGES, "prompt": value})
    assert err.value.loc == ("prompt",)
    assert "default, strict, soft" in str(err.value)


def test_the_prompt_survives_a_round_trip_through_the_config_and_overrides() -> None:
    from contextwright import pipeline_to_config
    from contextwright.assembly.presets import with_overrides

    pipe = pipeline_from_config({"stages": STAGES, "format": "lean", "prompt": "soft"})
    assert pipeline_to_config(pipe)["prompt"] == "soft"
    assert pipeline_from_config(pipeline_to_config(pipe)) == pipe
    assert with_overrides(pipe, format="numbered", order="relevance").prompt == "soft"
    assert "prompt" not in pipeline_to_config(pipeline_from_config("qa"))  # presets: as before


def test_the_system_zone_counts_the_profiles_prompt() -> None:
    strict = Assembler({"stages": STAGES, "prompt": "strict"}, model="gpt-4o-mini")
    default = Assembler({"stages": STAGES}, model="gpt-4o-mini")
    fmt = strict.pipeline.format
    assert strict.zones("").system == strict.tokenizer.count(system_prompt("strict", format=fmt))
    assert default.zones("").system == default.tokenizer.count(system_prompt("default", format=fmt))
    assert strict.zones("").system != default.zones("").system
    named = Assembler({"stages": STAGES, "prompt": "strict"}, model="gpt-4o-mini", system="soft")
    assert named.zones("").system == named.tokenizer.count(system_prompt("soft", format=fmt))


def test_a_profile_file_carries_its_prompt(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "p"\nformat = "lean"\nprompt = "soft"\n\n[[stages]]\ntype = "token_budget"\npolicy = "fill"\n'
    )
    ctx = contextwright.assemble("capital?", CHUNKS, preset=str(path), budget=200)
    assert _system(ctx) == system_prompt("soft", format=get_format("lean"))
    assert Assembler(str(path), budget=200).pipeline.prompt == "soft"


def test_eval_asks_the_reader_with_the_profiles_prompt(tmp_path: Path) -> None:
    from contextwright.eval import load_queries
    from contextwright.eval.reader_requests import strategy_request, system_of
    from contextwright.eval.strategies import PipelineStrategy
    from contextwright.tokens import CachedTokenizer, get_tokenizer

    data = tmp_path / "q.jsonl"
    row = {
        "id": "q1",
        "question": "capital?",
        "answers": ["Paris"],
        "chunks": [{**c, "has_answer": c["id"] == "a"} for c in CHUNKS],
    }
    data.write_text(json.dumps(row) + "\n")
    (query,) = load_queries(data)
    tok = CachedTokenizer(get_tokenizer("cl100k_base").base)
    lean = get_format("lean")

    def asked(config: dict[str, object], reader_prompt: str) -> str:
        req = strategy_request(
            query,
            PipelineStrategy("p", config),
            200,
            tokenizer=tok,
            resources={},
            system="",
            prompt=reader_prompt,
        )
        return req.messages[0]["content"]

    profile = {"stages": STAGES, "format": "lean", "prompt": "strict"}
    assert asked(profile, "default") == system_of("strict", lean)
    assert asked(profile, "soft") == system_of("soft", lean)  # a reader told another prompt keeps it
    assert asked({"stages": STAGES, "format": "lean"}, "default") == system_of("default", lean)


def test_fit_races_the_prompt_and_writes_it_into_the_profile() -> None:
    assert "prompt" not in candidate_config(START)  # the default setting: configs as before
    assert label(START) == "fill ends saves-containment lean"
    strict = candidate_config({**START, "prompt": "strict"})
    assert strict["prompt"] == "strict" and strict["name"] == "fill ends saves-containment lean strict"
    assert pipeline_from_config(strict).prompt == "strict"
    # raced by default since stop 45 (default against light: one step of the fit queries); one name fixes it
    assert parse_space([])["prompt"] == ("default", "light") and KNOBS[-1] == "prompt"  # raced last
    assert candidate_config({**START, "prompt": "light"})["prompt"] == "light"
    assert parse_space(["prompt=default"])["prompt"] == ("default",)
    assert parse_space(["prompt=default,strict,soft"])["prompt"] == ("default", "strict", "soft")
    with pytest.raises(ConfigError, match="Did you mean 'soft'") as err:
        parse_space(["prompt=default,sfot"])
    assert err.value.loc == ("prompt",)
    assert candidate_config({k: v for k, v in START.items() if k != "prompt"}) == candidate_config(START)


def test_a_preset_with_the_light_prompt_is_the_preset_with_other_messages(tmp_path: Path) -> None:
    """Stop 41: ``preset = "qa"`` and ``prompt = "light"`` (bench/plans/prompts/*.toml) is how a cited
    preset is measured, and used, under ``light``: the same context, the light prompt in its format."""
    path = tmp_path / "qa-light.toml"
    path.write_text('preset = "qa"\nprompt = "light"\n')
    light = contextwright.assemble("capital?", CHUNKS, preset=str(path), budget=200)
    qa = contextwright.assemble("capital?", CHUNKS, preset="qa", budget=200)
    assert light.text == qa.text and "[1]" in light.text
    assert _system(light) == system_prompt("light", format=get_format("lean"))
    assert _system(qa) == system_prompt("default", format=get_format("lean")) != _system(light)


@pytest.mark.parametrize("where", ["messages", "ask", "assembler"])
def test_a_one_word_system_that_names_no_prompt_is_refused_where_it_would_be_sent(where: str) -> None:
    """``system="lite"`` was sent as the whole system prompt; like a config's ``prompt``, it is now
    refused with the name it was close to. A prompt of more than one word is still sent as written."""
    ctx = contextwright.assemble("capital?", CHUNKS, preset={"stages": STAGES}, budget=200)
    sent: list[object] = []
    calls = {
        "messages": lambda: ctx.messages(system="lite"),
        "ask": lambda: contextwright.ask(ctx, lambda m: sent.append(m) or "Paris [1]", reask_bare="lite"),
        "assembler": lambda: Assembler("qa", model="gpt-4o-mini", system="lite"),
    }
    with pytest.raises(ConfigError, match=r"got 'lite'\. Did you mean 'light'"):
        calls[where]()
    assert sent == []  # ask refuses before its first request
    assert _system(ctx, system="Be brief.") == "Be brief."
