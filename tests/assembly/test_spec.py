"""AssemblerSpec: the one place that turns flat options into an Assembler."""

from __future__ import annotations

import inspect
from typing import Any

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
    by_spec = Assembler.from_spec(AssemblerSpec.from_options(options)).assemble("tides?", chunks)
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
        and "Assembler.from_spec(" in p.read_text(encoding="utf-8")
    ]
    assert {p.parent.name for p in users} >= {"cli", "batch", "service", "eval", "adapters"}


def test_assemble_accepts_every_option_of_the_spec_and_no_other() -> None:
    """assemble()'s option names come from the spec: an option added there is accepted here."""
    import contextwright

    chunks = [{"text": "tides follow the moon", "score": 1.0}]
    defaults = AssemblerSpec()
    for name in AssemblerSpec.options():
        if name in ("config", "budget"):
            continue
        ctx = contextwright.assemble("tides?", chunks, budget=50, **{name: getattr(defaults, name)})
        assert ctx.report.output_chunks == 1, name
    with pytest.raises(
        ConfigError, match=r"assemble\(\) got an unknown argument 'config'.*Valid arguments: "
    ):
        contextwright.assemble("tides?", chunks, budget=50, config="qa")  # it is preset= here


@pytest.mark.parametrize(
    ("options", "loc", "message"),
    [
        ({"budget": -1}, ("budget",), "budget must be a non-negative integer"),
        ({"output_tokens": 10**12}, ("output_tokens",), r"Assembler.output_tokens is 1000000000000, beyond"),
        ({"tool_tokens": 1.5}, ("tool_tokens",), "tool_tokens must be a non-negative integer"),
        ({"tool_policy": "largest"}, ("tool_policy",), "tool_policy must be one of drop_largest, truncate"),
        ({"stable_order": "yes"}, ("stable_order",), "stable_order must be true or false"),
    ],
)
def test_the_spec_checks_its_values_naming_the_option_in_loc(
    options: dict[str, object], loc: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        AssemblerSpec(**options)  # type: ignore[arg-type]
    assert err.value.loc == loc


def test_a_loaded_option_that_fails_names_itself_in_loc() -> None:
    with pytest.raises(ConfigError) as err:
        Assembler.from_spec(AssemblerSpec(model="gpt-9-imaginary"))
    assert err.value.loc == ("model",)
    with pytest.raises(ConfigError) as err:
        Assembler.from_spec(AssemblerSpec(budget=100, order="bookendz"))
    assert err.value.loc == ("order",)
    with pytest.raises(ConfigError) as err:
        Assembler.from_spec(AssemblerSpec(budget=100, fusion="borda"))
    assert err.value.loc == ("fusion", "method")  # the Fuse setting under the option


def test_the_resource_check_runs_once_on_the_way_in() -> None:
    """assemble() checks its keywords once, in its own words; it used to check, then the Assembler again."""
    from dataclasses import dataclass

    import contextwright
    from contextwright import Pipeline, StageResult
    from contextwright.model.report import StageReport

    reads: list[str] = []

    @dataclass(frozen=True)
    class Counting:  # a real stage whose resource declaration counts its readers
        name = "counting"

        @property
        def requires(self) -> tuple[str, ...]:
            reads.append("requires")
            return ()

        def __call__(self, chunks: Any) -> StageResult:
            n = len(chunks)
            return StageResult(tuple(chunks), StageReport(stage=self.name, chunks_in=n, chunks_out=n))

    pipeline = Pipeline((Counting(),), "minimal")
    chunks = [{"text": "tides follow the moon", "score": 1.0}]
    asm = Assembler(pipeline, budget=50)
    built = len(reads)
    asm.assemble("tides?", chunks)
    ran = len(reads) - built
    reads.clear()
    contextwright.assemble("tides?", chunks, preset=pipeline, budget=50)
    assert built == 1  # the constructor's one check
    assert len(reads) == built + ran  # was built + ran + 1
