"""``contextwright assemble --messages``: the chat to send the model from the command line, the
same lists :func:`contextwright.chat_messages` (and the service's ``messages: true``) give, and
``reask_messages`` for a bare citation, as :func:`contextwright.ask` sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import contextwright
from contextwright.cli import app
from contextwright.render.format import get_format
from contextwright.render.messages import system_prompt

CHUNKS = [
    {"id": "a", "text": "Paris is the capital of France.", "score": 0.9, "source": "fr.md"},
    {"id": "b", "text": "Lyon is a city on the Rhône.", "score": 0.5, "source": "lyon.md"},
]
QUERY = "What is the capital of France?"
runner = CliRunner()


@pytest.fixture
def chunks(tmp_path: Path) -> Path:
    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(CHUNKS))
    return path


def _run(chunks: Path, *args: str) -> list[dict[str, object]]:
    result = runner.invoke(app, ["assemble", str(chunks), "-q", QUERY, "--budget", "300", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_messages_are_the_chat_ask_sends_and_its_reask(chunks: Path) -> None:
    ctx = contextwright.assemble(QUERY, CHUNKS, budget=300)
    (got,) = _run(chunks, "--messages")
    assert got == contextwright.chat_messages(ctx)
    assert got["messages"] == ctx.messages()
    assert got["reask_messages"] == ctx.messages(system="light")
    (both,) = _run(chunks, "--messages", "--json")  # the context's JSON and its chat on one line
    assert both["text"] == ctx.text and both["messages"] == got["messages"]
    assert [c["source"] for c in both["citations"]] == ["fr.md", "lyon.md"]  # type: ignore[index]


def test_the_prompts_can_be_named_or_turned_off(chunks: Path) -> None:
    lean = get_format("lean")
    (own,) = _run(chunks, "--messages", "--system", "strict", "--reask-bare", "Answer, then cite [n].")
    assert own["messages"][0] == {"role": "system", "content": system_prompt("strict", format=lean)}  # type: ignore[index]
    assert own["reask_messages"][0]["content"] == "Answer, then cite [n]."  # type: ignore[index]
    (off,) = _run(chunks, "--messages", "--system", "none", "--reask-bare", "none")
    assert off["messages"][0]["role"] == "user" and "reask_messages" not in off  # type: ignore[index]
    (minimal,) = _run(chunks, "--messages", "--format", "minimal")  # no labels: nothing to re-ask
    assert "reask_messages" not in minimal


def test_a_profiles_reask_is_sent(chunks: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('preset = "qa"\nreask = "soft"\n')
    (got,) = _run(chunks, "--messages", "--preset", str(profile))
    assert got["reask_messages"][0]["content"] == system_prompt("soft", format=get_format("lean"))  # type: ignore[index]
    (named,) = _run(chunks, "--messages", "--preset", str(profile), "--reask-bare", "light")
    assert named["reask_messages"][0]["content"] == system_prompt("light", format=get_format("lean"))  # type: ignore[index]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--reask-bare", "light"],
            "--system and --reask-bare shape the chat of --messages: add --messages.",
        ),
        (["--messages", "--reask-bare", "lite"], "got 'lite'. Did you mean 'light'?"),
        (["--messages", "--system", "strcit"], "--system must be a prompt name"),
        (["--messages", "--dry-run"], "--dry-run assembles no context, so there is no chat to print"),
    ],
)
def test_a_prompt_flag_it_cannot_use_is_refused_with_the_fix(
    chunks: Path, args: list[str], said: str
) -> None:
    result = runner.invoke(app, ["assemble", str(chunks), "-q", QUERY, *args])
    assert result.exit_code == 2 and said in result.stderr and result.stdout == ""
