"""AssemblerSpec: the one place that turns flat options into an Assembler."""

from __future__ import annotations

import inspect

import pytest

from contextwright.assembly.assembler import Assembler
from contextwright.assembly.spec import AssemblerSpec
from contextwright.core.errors import ConfigError


def test_the_spec_has_exactly_the_assemblers_options_with_the_same_defaults() -> None:
    params = inspect.signature(Assembler.__init__).parameters
    wanted = {n: p.default for n, p in params.items() if n not in ("self", "resources")}
    spec = AssemblerSpec()
    assert set(AssemblerSpec.options()) == set(wanted)
    for name, default in wanted.items():
        assert getattr(spec, name) == default, name


def test_build_gives_the_same_context_as_the_assembler_built_by_hand() -> None:
    chunks = [{"text": f"passage {i} about tides and the moon", "score": 1 - i / 10} for i in range(6)]
    options = {"preset": "qa", "budget": 120, "order": "relevance", "format": "markdown", "tokenizer": None}
    by_spec = AssemblerSpec.from_options(options).build().assemble("tides?", chunks)
    by_hand = Assembler("qa", budget=120, order="relevance", format="markdown").assemble("tides?", chunks)
    assert by_spec.text == by_hand.text
    assert by_spec.tokens <= 120


def test_none_means_not_given_except_for_system() -> None:
    spec = AssemblerSpec.from_options({"budget": 300, "buffer_tokens": None, "system": None})
    assert spec.buffer_tokens == AssemblerSpec().buffer_tokens
    assert spec.system is None


def test_an_unknown_option_is_named_with_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        AssemblerSpec.from_options({"budget": 300, "budgett": 5}, where="body")
    assert "body.budgett is not an assembler option" in str(err.value)
    assert "budget" in str(err.value) and "stable_order" in str(err.value)


def test_the_cli_batch_service_eval_and_adapters_build_through_the_spec() -> None:
    """Only the assembly layer calls ``Assembler(...)``; every edge fills an AssemblerSpec (issue 25)."""
    import ast
    import re
    from pathlib import Path

    import contextwright

    root = Path(contextwright.__file__).parent
    direct = []
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "assembly":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Assembler"
            ):
                direct.append(f"{path.relative_to(root)}:{node.lineno}")
    assert direct == []
    users = [
        p
        for p in root.rglob("*.py")
        if re.search(r"AssemblerSpec(\.from_options)?\(", p.read_text(encoding="utf-8"))
    ]
    assert {p.parent.name for p in users} >= {"cli", "batch", "service", "eval", "adapters"}
