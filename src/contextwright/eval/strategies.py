"""Assembly strategies the evaluation compares: two baselines, the presets, user configs.

* ``naive``: the retrieved texts in retrieval order, joined with a blank line
  and cut at the budget by tokens (what most RAG code does).
* ``greedy``: whole chunks by score (ties: retrieval order), each one taken if
  the joined text still fits, skipped otherwise; joined in retrieval order.
* a preset name (``qa``, ``citations``, ... see :func:`contextwright.list_presets`)
  or a ``.toml``/``.json`` config file: the library's pipeline, through
  :class:`~contextwright.Assembler`.

Every strategy returns a :class:`StrategyOutput`: the context text, the texts
of its blocks in order and the input chunk ids each block stands for, which is
all the metrics need.

Example:
    >>> strategy = build_strategy("naive")
    >>> out = strategy.run("who?", chunks, budget=300, tokenizer=get_tokenizer("cl100k_base"))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contextwright.assembly.presets import get_preset, list_presets, load_config_file, pipeline_from_config
from contextwright.core.errors import ConfigError, TokenizerError, did_you_mean
from contextwright.tokens import CachedTokenizer

__all__ = [
    "BASE_ENV",
    "GreedyStrategy",
    "NaiveStrategy",
    "PipelineStrategy",
    "Strategy",
    "StrategyOutput",
    "build_strategy",
    "cut_to_budget",
    "default_strategies",
]

#: What a pipeline always has in its env; anything else a stage requires is a resource.
BASE_ENV = frozenset({"query", "tokenizer", "budget", "meter", "format"})


@dataclass(frozen=True, slots=True)
class StrategyOutput:
    """What one strategy made of one query at one budget.

    Attributes:
        text: The full context string the model would read.
        blocks: The texts of its blocks, in order (headers not included).
        member_ids: For each block, the input chunk ids it stands for.
        context: The :class:`~contextwright.render.context.AssembledContext` of a pipeline
            strategy (its ``messages()`` and citations), ``None`` for a baseline; not
            compared (its report holds timings).

    Example:
        >>> StrategyOutput(text="A\n\nB", blocks=("A", "B"), member_ids=(("c1",), ("c2", "c3")))
    """

    text: str
    blocks: tuple[str, ...]
    member_ids: tuple[tuple[str, ...], ...]
    context: Any = field(default=None, compare=False, repr=False)


@runtime_checkable
class Strategy(Protocol):
    """Something that turns retrieved chunks into a context at a budget."""

    @property
    def name(self) -> str:
        """The label in reports (unique within one evaluation)."""
        ...

    def missing(self, resources: Mapping[str, Any]) -> str | None:
        """Why this strategy cannot run with ``resources``, or ``None`` when it can."""
        ...

    def degraded(self, resources: Mapping[str, Any]) -> str | None:
        """What this strategy does without, for want of an optional resource, or ``None``."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description for reports."""
        ...

    def run(
        self,
        question: str,
        chunks: Sequence[Mapping[str, Any]],
        *,
        budget: int,
        tokenizer: CachedTokenizer,
        resources: Mapping[str, Any] | None = None,
    ) -> StrategyOutput:
        """Assemble ``chunks`` for ``question`` within ``budget`` tokens."""
        ...


def cut_to_budget(text: str, budget: int, tokenizer: CachedTokenizer) -> str:
    """The longest prefix of ``text`` cut at a token boundary that counts at most ``budget`` tokens.

    Encodes once and decodes the first ``budget`` tokens; a partial UTF-8
    character at the cut is dropped, and if the decoded prefix re-encodes to
    more tokens, one token more is dropped until it fits. Tokenizers that
    cannot decode (the ``chars`` estimate) are cut by a binary search over
    character prefixes instead.
    """
    if budget <= 0:
        return ""
    if tokenizer.count(text) <= budget:
        return text
    try:
        ids = tokenizer.encode(text)
        k = min(budget, len(ids))
        while k > 0:
            decoded = tokenizer.decode(ids[:k]).rstrip("\ufffd")
            prefix = _common_prefix(decoded, text)
            if tokenizer.count(prefix) <= budget:
                return prefix
            k -= 1
        return ""
    except TokenizerError:
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if tokenizer.count(text[:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]


def _common_prefix(a: str, b: str) -> str:
    if b.startswith(a):
        return a
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return a[:i]


def _texts_ids(chunks: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    texts = [str(c.get("text", "")) for c in chunks]
    ids = [str(c.get("id", i)) for i, c in enumerate(chunks)]
    return texts, ids


class _NeedsNothing:
    """The resource checks of a baseline that uses none (no store, no embedder)."""

    __slots__ = ()

    def missing(self, resources: Mapping[str, Any]) -> str | None:
        return None

    def degraded(self, resources: Mapping[str, Any]) -> str | None:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class NaiveStrategy(_NeedsNothing):
    """Retrieval order, texts joined with ``separator``, cut at the budget by tokens.

    The cut falls wherever the budget ends, also in the middle of a word or an
    answer; a block cut that way keeps its id but only the text before the cut.

    Args:
        name: The label in reports.
        separator: What goes between two chunk texts.

    Example:
        >>> NaiveStrategy().run("q", chunks, budget=300, tokenizer=get_tokenizer("cl100k_base")).blocks
    """

    name: str = "naive"
    separator: str = "\n\n"

    def describe(self) -> dict[str, Any]:
        return {"type": "naive", "separator": self.separator}

    def run(
        self,
        question: str,
        chunks: Sequence[Mapping[str, Any]],
        *,
        budget: int,
        tokenizer: CachedTokenizer,
        resources: Mapping[str, Any] | None = None,
    ) -> StrategyOutput:
        texts, ids = _texts_ids(chunks)
        joined = self.separator.join(texts)
        text = cut_to_budget(joined, budget, tokenizer)
        blocks: list[str] = []
        members: list[tuple[str, ...]] = []
        start = 0
        for chunk_text, chunk_id in zip(texts, ids, strict=True):
            if start >= len(text):
                break
            part = text[start : start + len(chunk_text)]
            if part.strip():
                blocks.append(part)
                members.append((chunk_id,))
            start += len(chunk_text) + len(self.separator)
        return StrategyOutput(text=text, blocks=tuple(blocks), member_ids=tuple(members))


@dataclass(frozen=True, slots=True, kw_only=True)
class GreedyStrategy(_NeedsNothing):
    """Whole chunks by score, skipping those that no longer fit, joined in retrieval order.

    Every candidate is checked by counting the joined text it would give, so
    the result fits exactly; score ties keep retrieval order.

    Args:
        name: The label in reports.
        separator: What goes between two chunk texts.

    Example:
        >>> GreedyStrategy().run("q", chunks, budget=300, tokenizer=get_tokenizer("cl100k_base")).member_ids
    """

    name: str = "greedy"
    separator: str = "\n\n"

    def describe(self) -> dict[str, Any]:
        return {"type": "greedy", "separator": self.separator}

    def run(
        self,
        question: str,
        chunks: Sequence[Mapping[str, Any]],
        *,
        budget: int,
        tokenizer: CachedTokenizer,
        resources: Mapping[str, Any] | None = None,
    ) -> StrategyOutput:
        texts, ids = _texts_ids(chunks)
        scores = [_score(c) for c in chunks]
        by_score = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        chosen: list[int] = []
        for i in by_score:
            trial = sorted([*chosen, i])
            if tokenizer.count(self.separator.join(texts[j] for j in trial)) <= budget:
                chosen = trial
        return StrategyOutput(
            text=self.separator.join(texts[j] for j in chosen),
            blocks=tuple(texts[j] for j in chosen),
            member_ids=tuple((ids[j],) for j in chosen),
        )


def _score(chunk: Mapping[str, Any]) -> float:
    value = chunk.get("score", 0.0)
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


class PipelineStrategy:
    """A preset or config, run through :class:`~contextwright.Assembler`.

    The assembler is built on first use (in each worker process) and reused
    across queries, so its token cache spans the run.

    Args:
        name: The label in reports (the preset name or the config file's stem).
        config: The config mapping (see :func:`contextwright.pipeline_from_config`).

    Example:
        >>> PipelineStrategy("qa", get_preset("qa")).missing({})
    """

    def __init__(self, name: str, config: Mapping[str, Any]) -> None:
        self.name = name
        self.config = dict(config)
        self._pipeline = pipeline_from_config(self.config)
        self._assembler: Any = None
        self._built_for: tuple[Any, Any] = (None, None)

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["config"])  # type: ignore[misc]

    def _lacking(self, resources: Mapping[str, Any], kind: str) -> tuple[str, str] | None:
        for stage in self._pipeline.stages:
            for key in getattr(stage, kind, ()):
                if key not in BASE_ENV and key not in resources:
                    return stage.name, key
        return None

    def missing(self, resources: Mapping[str, Any]) -> str | None:
        lack = self._lacking(resources, "requires")
        if lack is None:
            return None
        stage, key = lack
        return f"stage {stage!r} needs the resource {key!r}, which this evaluation does not have{_hint(key)}"

    def degraded(self, resources: Mapping[str, Any]) -> str | None:
        lack = self._lacking(resources, "optional")
        if lack is None:
            return None
        stage, key = lack
        return f"ran without the optional resource {key!r} of stage {stage!r}{_hint(key)}"

    def describe(self) -> dict[str, Any]:
        return {"type": "pipeline", "config": self.config}

    def run(
        self,
        question: str,
        chunks: Sequence[Mapping[str, Any]],
        *,
        budget: int,
        tokenizer: CachedTokenizer,
        resources: Mapping[str, Any] | None = None,
    ) -> StrategyOutput:
        from contextwright.assembly.assembler import Assembler
        from contextwright.assembly.spec import AssemblerSpec

        built_tok, built_res = self._built_for
        assembler = self._assembler
        if assembler is None or built_tok is not tokenizer or built_res is not resources:
            spec = AssemblerSpec(self._pipeline, budget=budget, tokenizer=tokenizer)
            assembler = Assembler.from_spec(spec, **dict(resources or {}))
            self._assembler, self._built_for = assembler, (tokenizer, resources)
        ctx = assembler.assemble(question, chunks, budget=budget)
        return StrategyOutput(
            text=ctx.text,
            blocks=tuple(c.text for c in ctx.chunks),
            member_ids=tuple(c.member_ids for c in ctx.chunks),
            context=ctx,
        )


def _hint(key: str) -> str:
    return " (pass --corpus with the chunk corpus to open a SQLite store)" if key == "store" else ""


def build_strategy(spec: str | Path | Strategy) -> Strategy:
    """A strategy from ``naive``, ``greedy``, a preset name, or a ``.toml``/``.json`` config file.

    Raises:
        ConfigError: for an unknown name, listing the valid ones.
    """
    if not isinstance(spec, (str, Path)):
        if isinstance(spec, Strategy):
            return spec
        raise ConfigError(
            f"a strategy must be a name, a config file or a Strategy; got {type(spec).__name__}."
        )
    text = str(spec)
    if text == "naive":
        return NaiveStrategy()
    if text == "greedy":
        return GreedyStrategy()
    if isinstance(spec, Path) or text.endswith((".toml", ".json")):
        data = load_config_file(text)
        name = str(data.get("name", Path(text).stem))
        return PipelineStrategy(name, data)
    if text in list_presets():
        return PipelineStrategy(text, get_preset(text))
    raise ConfigError(
        f"unknown strategy {text!r}.{did_you_mean(text, default_strategies())} Valid: naive, greedy, "
        f"{', '.join(list_presets())}, or a path to a .toml/.json config file."
    )


def default_strategies() -> list[str]:
    """``naive``, ``greedy`` and every registered preset, in that order."""
    return ["naive", "greedy", *list_presets()]
