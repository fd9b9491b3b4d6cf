"""Model registry and zone budgets.

A model's context window is shared by zones: the system prompt, the
conversation history, the query, the reserved output, a safety buffer, and
whatever is left for documents::

    documents = window - system - history - query - output - buffer

Values in the registry come from the providers' model documentation (OpenAI
model pages, Anthropic's models overview, the Hugging Face model cards /
``config.json`` ``max_position_embeddings`` of the open models). Open-weight
models have no separate output limit; their ``max_output`` is a default
output reservation (override it with ``output_tokens=``). Where a
provider does not publish its tokenizer (Anthropic), the registry uses
``cl100k_base`` and says so in ``tokenizer_note``; counts are then an
approximation of the provider's, and the buffer should absorb the gap.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from contextwright.core.errors import BudgetError, ConfigError, did_you_mean

__all__ = [
    "ModelSpec",
    "ZoneBudget",
    "get_model",
    "list_models",
    "register_model",
]


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model's context window, default output reservation and tokenizer.

    Args:
        name: The model name as users pass it (``gpt-4o-mini``).
        context_window: Total tokens the model accepts (input + output).
        max_output: The most tokens the model will generate; the default
            output zone.
        tokenizer: A spec for :func:`contextwright.tokens.get_tokenizer`.
        tokenizer_note: Set when ``tokenizer`` only approximates the model's.
        max_input: A separate input limit where the provider has one.
    """

    name: str
    context_window: int
    max_output: int
    tokenizer: str
    tokenizer_note: str = ""
    max_input: int | None = None

    def __post_init__(self) -> None:
        for name in ("context_window", "max_output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(
                    f"ModelSpec.{name} must be a positive integer; got {value!r} for model {self.name!r}."
                )


_APPROX = "Anthropic does not publish its tokenizer; cl100k_base approximates it."
_LLAMA3 = "hf:meta-llama/Llama-3.1-8B-Instruct"


def _m(
    name: str, window: int, output: int, tok: str, note: str = "", max_input: int | None = None
) -> ModelSpec:
    return ModelSpec(name, window, output, tok, note, max_input)


_BUILTIN: tuple[ModelSpec, ...] = (
    # OpenAI (platform.openai.com/docs/models)
    _m("gpt-5", 400_000, 128_000, "o200k_base", max_input=272_000),
    _m("gpt-5-mini", 400_000, 128_000, "o200k_base", max_input=272_000),
    _m("gpt-5-nano", 400_000, 128_000, "o200k_base", max_input=272_000),
    _m("gpt-4.1", 1_047_576, 32_768, "o200k_base"),
    _m("gpt-4.1-mini", 1_047_576, 32_768, "o200k_base"),
    _m("gpt-4.1-nano", 1_047_576, 32_768, "o200k_base"),
    _m("gpt-4o", 128_000, 16_384, "o200k_base"),
    _m("gpt-4o-mini", 128_000, 16_384, "o200k_base"),
    _m("o1", 200_000, 100_000, "o200k_base"),
    _m("o1-mini", 128_000, 65_536, "o200k_base"),
    _m("o3", 200_000, 100_000, "o200k_base"),
    _m("o3-mini", 200_000, 100_000, "o200k_base"),
    _m("o4-mini", 200_000, 100_000, "o200k_base"),
    _m("gpt-4-turbo", 128_000, 4_096, "cl100k_base"),
    _m("gpt-4", 8_192, 8_192, "cl100k_base"),
    _m("gpt-3.5-turbo", 16_385, 4_096, "cl100k_base"),
    # Anthropic (docs.anthropic.com, models overview). The 4.6 models take a 1M
    # window only with an opt-in beta header; the default window is listed.
    _m("claude-opus-4-6", 200_000, 128_000, "cl100k_base", _APPROX),
    _m("claude-sonnet-4-6", 200_000, 128_000, "cl100k_base", _APPROX),
    _m("claude-opus-4-5", 200_000, 64_000, "cl100k_base", _APPROX),
    _m("claude-sonnet-4-5", 200_000, 64_000, "cl100k_base", _APPROX),
    _m("claude-haiku-4-5", 200_000, 64_000, "cl100k_base", _APPROX),
    _m("claude-opus-4-1", 200_000, 32_000, "cl100k_base", _APPROX),
    _m("claude-opus-4", 200_000, 32_000, "cl100k_base", _APPROX),
    _m("claude-sonnet-4", 200_000, 64_000, "cl100k_base", _APPROX),
    _m("claude-3-7-sonnet", 200_000, 64_000, "cl100k_base", _APPROX),
    _m("claude-3-5-sonnet", 200_000, 8_192, "cl100k_base", _APPROX),
    _m("claude-3-5-haiku", 200_000, 8_192, "cl100k_base", _APPROX),
    _m("claude-3-haiku", 200_000, 4_096, "cl100k_base", _APPROX),
    # Meta Llama 3.x (model cards; 3.1+ have a 128K window)
    _m("llama-3-8b-instruct", 8_192, 2_048, "hf:meta-llama/Meta-Llama-3-8B-Instruct"),
    _m("llama-3-70b-instruct", 8_192, 2_048, "hf:meta-llama/Meta-Llama-3-70B-Instruct"),
    _m("llama-3.1-8b-instruct", 131_072, 4_096, _LLAMA3),
    _m("llama-3.1-70b-instruct", 131_072, 4_096, _LLAMA3),
    _m("llama-3.1-405b-instruct", 131_072, 4_096, _LLAMA3),
    _m("llama-3.2-1b-instruct", 131_072, 4_096, "hf:meta-llama/Llama-3.2-1B-Instruct"),
    _m("llama-3.2-3b-instruct", 131_072, 4_096, "hf:meta-llama/Llama-3.2-3B-Instruct"),
    _m("llama-3.3-70b-instruct", 131_072, 4_096, "hf:meta-llama/Llama-3.3-70B-Instruct"),
    # Qwen (model cards: 32,768 native; 131,072 with YaRN, which is opt-in)
    _m("qwen2.5-7b-instruct", 32_768, 8_192, "hf:Qwen/Qwen2.5-7B-Instruct"),
    _m("qwen2.5-14b-instruct", 32_768, 8_192, "hf:Qwen/Qwen2.5-14B-Instruct"),
    _m("qwen2.5-32b-instruct", 32_768, 8_192, "hf:Qwen/Qwen2.5-32B-Instruct"),
    _m("qwen2.5-72b-instruct", 32_768, 8_192, "hf:Qwen/Qwen2.5-72B-Instruct"),
    _m("qwen3-8b", 32_768, 8_192, "hf:Qwen/Qwen3-8B"),
    _m("qwen3-14b", 32_768, 8_192, "hf:Qwen/Qwen3-14B"),
    _m("qwen3-32b", 32_768, 8_192, "hf:Qwen/Qwen3-32B"),
    _m("qwen3-30b-a3b", 32_768, 8_192, "hf:Qwen/Qwen3-30B-A3B"),
    # Mistral (docs.mistral.ai models overview and model cards)
    _m("mistral-7b-instruct-v0.3", 32_768, 4_096, "hf:mistralai/Mistral-7B-Instruct-v0.3"),
    _m("mistral-nemo-instruct", 131_072, 4_096, "hf:mistralai/Mistral-Nemo-Instruct-2407"),
    _m("mistral-small-3.1", 131_072, 4_096, "hf:mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
    _m("mistral-large-2", 131_072, 4_096, "hf:mistralai/Mistral-Large-Instruct-2411"),
    # Google Gemma (model cards: Gemma 2 8K; Gemma 3 128K, 1B 32K)
    _m("gemma-2-9b-it", 8_192, 2_048, "hf:google/gemma-2-9b-it"),
    _m("gemma-2-27b-it", 8_192, 2_048, "hf:google/gemma-2-27b-it"),
    _m("gemma-3-1b-it", 32_768, 8_192, "hf:google/gemma-3-1b-it"),
    _m("gemma-3-4b-it", 131_072, 8_192, "hf:google/gemma-3-4b-it"),
    _m("gemma-3-12b-it", 131_072, 8_192, "hf:google/gemma-3-12b-it"),
    _m("gemma-3-27b-it", 131_072, 8_192, "hf:google/gemma-3-27b-it"),
)

_MODELS: dict[str, ModelSpec] = {m.name: m for m in _BUILTIN}
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}|-\d{8}|-\d{4}|-latest|-preview|[:@].*")
_LOCK = threading.Lock()


def register_model(spec: ModelSpec | None = None, /, **fields: Any) -> ModelSpec:
    """Add or override a model.

    Either pass a :class:`ModelSpec`, or keyword fields; keyword fields for a
    known name override only what is given::

        register_model(name="gpt-4o", max_output=4_096)   # keep window and tokenizer
        register_model(ModelSpec("my-llm", 32_768, 4_096, "/models/my/tokenizer.json"))
    """
    if spec is None:
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError("register_model needs a ModelSpec or a 'name' keyword.")
        base = _MODELS.get(_canonical(name))
        if base is not None:
            spec = replace(base, **fields)
        else:
            try:
                spec = ModelSpec(**fields)
            except TypeError as exc:
                raise ConfigError(
                    f"register_model({name!r}): {exc}. A new model needs name, "
                    "context_window, max_output and tokenizer."
                ) from None
    with _LOCK:
        _MODELS[spec.name] = spec
    return spec


def _canonical(name: str) -> str:
    key = name.strip().lower()
    if "/" in key:  # "openai/gpt-4o", "meta-llama/Llama-3.1-8B-Instruct"
        key = key.rsplit("/", 1)[1]
    return key


def get_model(name: str) -> ModelSpec:
    """Look a model up by name; dated snapshots resolve to their family.

    ``gpt-4o-2024-08-06`` → ``gpt-4o``; ``claude-sonnet-4-5-20250929`` →
    ``claude-sonnet-4-5``; ``openai/gpt-4o`` → ``gpt-4o``.

    Raises:
        ConfigError: naming close matches and how to register the model.
    """
    if name in _MODELS:
        return _MODELS[name]
    key = _canonical(name)
    if key in _MODELS:
        return _MODELS[key]
    # A dated or tagged snapshot of a registered family: gpt-4o-2024-08-06,
    # claude-sonnet-4-5-20250929, o3-mini-latest, llama3.1:8b style tags.
    best: ModelSpec | None = None
    for known, spec in _MODELS.items():
        fits = key.startswith(known) and _SNAPSHOT.fullmatch(key[len(known) :])
        if fits and (best is None or len(known) > len(best.name)):
            best = spec
    if best is not None:
        return best
    hint = did_you_mean(key, _MODELS, n=3, cutoff=0.5)
    raise ConfigError(
        f"unknown model {name!r}.{hint} Pass budget= (and tokenizer=) instead, or register it: "
        "contextwright.register_model(ModelSpec(name, context_window, max_output, tokenizer))."
    )


def list_models() -> list[ModelSpec]:
    """Every registered model, sorted by name."""
    return sorted(_MODELS.values(), key=lambda m: m.name)


@dataclass(frozen=True, slots=True)
class ZoneBudget:
    """How a context window is split; ``documents`` is what is left for chunks.

    Args:
        window: The model's context window in tokens.
        system: Tokens of the system prompt.
        history: Tokens reserved for conversation history.
        tools: Tokens reserved for tool outputs.
        query: Tokens of the user's query (and its framing).
        output: Tokens reserved for the answer.
        buffer: Safety margin (chat-format overhead, tokenizer mismatch).
        budget: An explicit documents budget; overrides the arithmetic when set.

    Raises:
        BudgetError: when the documents budget is below zero, showing the
            arithmetic and which zone to shrink.
    """

    window: int = 0
    system: int = 0
    history: int = 0
    query: int = 0
    output: int = 0
    buffer: int = 0
    budget: int | None = None
    tools: int = 0
    zones: Mapping[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for name in ("window", "system", "history", "tools", "query", "output", "buffer"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"zone {name!r} must be a non-negative integer; got {value!r}.")
        if self.budget is not None:
            if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
                raise ConfigError(
                    f"budget must be a non-negative integer number of tokens; got {self.budget!r}."
                )
            return
        if self.documents <= 0:
            raise BudgetError(
                f"no room for documents: {self.arithmetic()}. Shrink a zone (output, "
                "history, buffer), use a model with a larger window, or pass budget=."
            )

    @property
    def documents(self) -> int:
        """The documents budget."""
        if self.budget is not None:
            return self.budget
        return self.window - self.system - self.history - self.tools - self.query - self.output - self.buffer

    def arithmetic(self) -> str:
        """The zone arithmetic as a readable equation."""
        if self.budget is not None:
            return f"documents = {self.budget:,} (explicit budget)"
        return (
            f"window {self.window:,} − system {self.system:,} − history {self.history:,} − "
            + (f"tools {self.tools:,} − " if self.tools else "")
            + f"query {self.query:,} − output {self.output:,} − buffer {self.buffer:,} = "
            f"documents {self.documents:,}"
        )

    def as_dict(self) -> dict[str, int]:
        """Zones as a mapping, for reports."""
        return {
            "window": self.window,
            "system": self.system,
            "history": self.history,
            **({"tools": self.tools} if self.tools else {}),
            "query": self.query,
            "output": self.output,
            "buffer": self.buffer,
            "documents": self.documents,
        }
