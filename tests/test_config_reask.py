"""A config's ``reask`` (issue 32): a profile fitted with ``fit --reask-bare`` carries the prompt its
bare citations were asked again with, and :func:`contextwright.ask` asks again with it.

``reask_bare="auto"`` (``ask``'s default, the service's, ``eval --reask-bare auto``) is the
config's ``reask``, ``false`` there is never, and no key is ``light`` as before; any prompt the
caller names wins. The ``llm`` here is the caller's own function, which ``ask`` only calls: it
says ``[1]`` to the first request and records what the second one sends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import contextwright
from contextwright import pipeline_from_config, pipeline_to_config
from contextwright.core.errors import ConfigError
from contextwright.render.format import get_format
from contextwright.render.messages import reask_prompt, system_prompt

CHUNKS = [
    {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
    {"id": "b", "text": "Lyon is a large city in France.", "score": 0.5},
]
STAGES = [{"type": "token_budget", "policy": "fill"}]
LEAN = get_format("lean")


def _ctx(**keys: object) -> contextwright.AssembledContext:
    return contextwright.assemble(
        "capital?", CHUNKS, preset={"stages": STAGES, "format": "lean", **keys}, budget=200
    )


class Pointing:
    """The caller's model: ``[1]`` to the first request, ``Paris [1]`` to any later one; the system
    prompt of each request is kept."""

    def __init__(self) -> None:
        self.systems: list[str] = []

    def __call__(self, messages: list[contextwright.Message]) -> str:
        self.systems.append(messages[0]["content"])
        return "[1]" if len(self.systems) == 1 else "Paris [1]"


@pytest.mark.parametrize(
    ("keys", "reask_bare", "second"),
    [
        ({"reask": "strict"}, "auto", "strict"),  # the profile's prompt
        ({"reask": "strict"}, "light", "light"),  # the caller's name wins
        ({"reask": "Answer in one word, then cite [n]."}, "auto", "Answer in one word, then cite [n]."),
        ({}, "auto", "light"),  # no key: as before
        ({"reask": False}, "auto", None),  # false: never asked again
        ({"reask": False}, "soft", "soft"),
    ],
)
def test_ask_asks_again_with_the_profiles_reask_unless_told_otherwise(
    keys: dict[str, object], reask_bare: str, second: str | None
) -> None:
    ctx = _ctx(**keys)
    llm = Pointing()
    got = contextwright.ask(ctx, llm, reask_bare=reask_bare)
    if second is None:
        assert not got.reasked and got.text == "[1]" and got.citations.bare and len(llm.systems) == 1
        return
    assert got.reasked and got.first == "[1]" and got.text == "Paris [1]"
    assert llm.systems == [system_prompt("default", format=LEAN), system_prompt(second, format=LEAN)]


def test_aask_reads_the_profiles_reask_too() -> None:
    llm = Pointing()

    async def model(messages: list[contextwright.Message]) -> str:
        return llm(messages)

    got = asyncio.run(contextwright.aask(_ctx(reask="soft"), model))
    assert got.reasked and llm.systems[1] == system_prompt("soft", format=LEAN)
    assert not asyncio.run(contextwright.aask(_ctx(reask=False), model)).reasked


def test_the_reask_survives_a_round_trip_and_a_profile_file(tmp_path: Path) -> None:
    for value in ("strict", False, "Answer first, then [n]."):
        pipe = pipeline_from_config({"stages": STAGES, "reask": value})
        assert pipe.reask == value and pipeline_to_config(pipe)["reask"] == value
        assert pipeline_from_config(pipeline_to_config(pipe)) == pipe
    assert "reask" not in pipeline_to_config(pipeline_from_config("qa"))  # presets: as before
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\nformat = "lean"\nreask = false\n\n[[stages]]\ntype = "token_budget"\n')
    ctx = contextwright.assemble("capital?", CHUNKS, preset=str(path), budget=200)
    assert ctx.reask is False and ctx.text == _ctx().text  # the context is the same bytes
    assert ctx.messages() == _ctx().messages()  # and so is the first request


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (True, "or be false for never; got True"),
        ("auto", "got 'auto'. Use e.g. reask = \"light\""),
        ("lite", "reask must be a prompt name .* got 'lite'. Did you mean 'light'"),
        (3, "reask must be a prompt name"),
    ],
)
def test_a_bad_reask_is_refused_naming_the_key_the_value_and_the_fix(value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        pipeline_from_config({"stages": STAGES, "reask": value})
    assert err.value.loc == ("reask",)


def test_auto_resolves_against_the_config_and_anything_else_is_the_callers() -> None:
    assert reask_prompt("auto", None) == "light"
    assert reask_prompt("auto", "strict") == "strict"
    assert reask_prompt("auto", False) is None
    assert reask_prompt("soft", "strict") == "soft" and reask_prompt(None, "strict") is None
