"""Presets and configuration: dict/TOML -> pipeline, and back again.

A config is a mapping::

    {"stages": [{"type": "exact_dedup"}, {"type": "token_budget", "policy": "greedy"},
                {"type": "auto_order"}],
     "format": "xml"}

Presets are named configs. ``pipeline_from_config`` accepts a preset name, a
mapping, or a path to a ``.toml``/``.json`` file, with ``order=`` and
``format=`` overrides (``order`` replaces the preset's order stage).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from contextwright.assembly.pipeline import Pipeline
from contextwright.core.errors import ConfigError, did_you_mean, located
from contextwright.render.format import Format, format_to_dict, get_format
from contextwright.render.messages import check_prompt, config_reask
from contextwright.stages.base import get_stage_class, is_order_stage, stage_from_dict, stage_to_dict
from contextwright.stages.order import order_stage

__all__ = [
    "get_preset",
    "list_presets",
    "pipeline_from_config",
    "pipeline_to_config",
    "register_preset",
    "with_overrides",
]

_PRESETS: dict[str, dict[str, Any]] = {
    "qa": {
        "description": "Question answering: the whole budget in rank order (the first misfit cut to its best sentences), then exact "
        "and containment dedup of what it holds (copies found in the text; the tokens a copy took are saved, not refilled "
        "with lower-ranked text), lost-in-the-middle order, lean blocks headed by their [n].",
        # Dedup after the cut, so it saves and never refills (issue 32): on a knowledge base with
        # copies, the refilled contexts read worse than naive's repeats for SmolLM2 (docs/quality.md).
        "stages": [
            {"type": "token_budget", "policy": "fill"},
            {"type": "exact_dedup"},
            {"type": "containment_dedup"},
            {"type": "lost_in_the_middle_order"},
        ],
        "format": "lean",
    },
    "citations": {
        "description": "Answers with citations: whole chunks in rank order, near copies of what it kept dropped (one "
        "passage, one number; the tokens a copy took are saved, not refilled), numbered blocks in relevance order.",
        # Containment after the cut (issue 32, stop 44): a mirror's copy with a line of boilerplate
        # passed exact dedup and was sent twice under two numbers; SmolLM2 reads the deduped
        # context level (+1.0 / -0.3 on the copies at 300 / 500, +0.4 on confirm500 at 500).
        "stages": [
            {"type": "exact_dedup"},
            {"type": "token_budget", "policy": "greedy"},
            {"type": "containment_dedup"},
            {"type": "score_order"},
        ],
        "format": "numbered",
    },
    "chat": {
        "description": "Chat grounding: the whole budget in rank order, then exact and containment dedup of what it holds "
        "(the tokens a copy took are saved, not refilled with lower-ranked text), plain texts in relevance order.",
        # Dedup after the cut, as in qa (issue 32, stop 38): SmolLM2 read the refilled contexts 8.7
        # points worse on a knowledge base with copies, and level on confirm500 (docs/quality.md).
        "stages": [
            # No framing: a short cut block costs only its text, so smaller remainders are worth it.
            {"type": "token_budget", "policy": "fill", "min_truncated_tokens": 8},
            {"type": "exact_dedup"},
            {"type": "containment_dedup"},
            {"type": "score_order"},
        ],
        "format": "minimal",
    },
    "tight": {
        "description": "Tight budgets: words shared by consecutive windows paid once, what fits whole stays whole, each chunk "
        "that does not is cut to its best sentences, the whole budget in rank order, then exact and containment "
        "dedup of what it holds (the tokens a copy took are saved, not refilled with lower-ranked text), "
        "lost-in-the-middle order, lean blocks headed by their [n]. About as many answers as qa, in more and "
        "shorter blocks (docs/quality.md).",
        # Exact and containment dedup after the cut, as in qa, chat and documents (issue 32, stop 42); the
        # overlap strip stays first: moved after the cut with them it read 2.8 points worse on confirm500.
        "stages": [
            {"type": "overlap_dedup"},
            {"type": "compress", "whole_share": 1.0},
            {"type": "token_budget", "policy": "fill"},
            {"type": "exact_dedup"},
            {"type": "containment_dedup"},
            {"type": "lost_in_the_middle_order"},
        ],
        "format": "lean",
    },
    "summarize": {
        "description": "Summarization: whole chunks in rank order, near copies of what it kept dropped (a passage "
        "once; the tokens a copy took are saved, not refilled), grouped by document, in reading order.",
        # Containment after the cut, as in citations (issue 32, stop 47): the last preset that dropped
        # exact copies only, so a mirror's copy with a line of boilerplate was sent twice.
        "stages": [
            {"type": "exact_dedup"},
            {"type": "token_budget", "policy": "greedy"},
            {"type": "containment_dedup"},
            {"type": "chronological_order"},
        ],
        "format": "grouped",
    },
    "documents": {
        "description": "Document-aware: expand neighbours from the store, summaries, the whole budget in rank order, then "
        "exact/overlap/containment/near dedup of what it holds (the tokens a copy took are saved, not refilled with "
        "lower-ranked text), merge the selected contiguous chunks into passages, document-first order, lean blocks "
        "headed by their [n].",
        # Dedup after the cut, as in qa and chat (issue 32, stop 39): SmolLM2 read the refilled contexts
        # 5.0 points worse on a knowledge base with copies, and level on confirm500 (docs/quality.md).
        "stages": [
            {"type": "expand", "window": 1},
            {"type": "doc_summaries"},
            {"type": "token_budget", "policy": "fill"},
            {"type": "exact_dedup"},
            {"type": "overlap_dedup"},
            {"type": "containment_dedup"},
            {"type": "near_dedup"},
            {"type": "group_merge"},
            {"type": "document_order"},
        ],
        "format": "lean",
    },
}


def _frugal(qa: Mapping[str, Any]) -> dict[str, Any]:
    """``qa`` with ``relevance_stop`` right before its ``token_budget``: the same framing, order and
    dedup after the cut (since stop 43, as measured with two readers: docs/quality.md)."""
    out = copy.deepcopy(dict(qa))
    stages = out["stages"]
    at = next(i for i, s in enumerate(stages) if s["type"] == "token_budget")
    out["stages"] = [*stages[:at], {"type": "relevance_stop"}, *stages[at:]]
    out["description"] = (
        "qa with the budget as a ceiling: after a 200-token floor, stop at the first chunk whose score, normalised "
        "per list (top 1, lowest 0), is under 0.2 (reason below_relevance), then exact and containment dedup of "
        "what was kept (the tokens a copy took are saved, not refilled); fewer tokens for about the same answers."
    )
    return out


_PRESETS["frugal"] = _frugal(_PRESETS["qa"])
_LOCK = threading.Lock()
#: The keys a config mapping may have; anything else is a typo or a misplaced setting.


def register_preset(name: str, config: Mapping[str, Any]) -> None:
    """Add or replace a named preset (validated by building it once)."""
    pipeline_from_config(config)
    with _LOCK:
        _PRESETS[name] = copy.deepcopy(dict(config))


def get_preset(name: str) -> dict[str, Any]:
    """A copy of a preset's config.

    Raises:
        ConfigError: listing the known presets.
    """
    try:
        return copy.deepcopy(_PRESETS[name])
    except KeyError:
        raise ConfigError(
            f"unknown preset {name!r}.{did_you_mean(str(name), _PRESETS)} Valid: {', '.join(sorted(_PRESETS))}. "
            "Or pass a config mapping or a path to a .toml/.json config."
        ) from None


def list_presets() -> dict[str, str]:
    """Preset names and their one-line descriptions."""
    return {k: str(v.get("description", "")) for k, v in sorted(_PRESETS.items())}


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a ``.toml`` or ``.json`` config file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc.strerror}.") from None
    try:
        if p.suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(raw.decode())
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {str(p)!r} is not valid {p.suffix[1:] or 'JSON'}: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"config file {str(p)!r} is nested too deeply to read (more than about 1,000 levels)."
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold an object/table at the top level.")
    return data


#: The top-level keys of a pipeline config (a mapping, a .toml/.json file, a preset).
#: ``fit`` is a profile's provenance (what ``contextwright fit`` measured); the pipeline ignores it.
#: ``prompt`` is the grounded prompt the config was fitted with (a name or the text): it stands in
#: for ``default`` wherever the context's messages are built (``ctx.messages()``, the service, eval).
#: ``reask`` is the prompt to ask again with after a bare citation (``false``: never): it stands in for
#: ``reask_bare="auto"`` (``contextwright.ask``, the service's ``reask_messages``, ``eval --reask-bare auto``).
CONFIG_KEYS = frozenset(
    {"preset", "stages", "format", "verify", "name", "description", "fit", "prompt", "reask"}
)


def pipeline_from_config(
    config: str | Path | Mapping[str, Any] = "qa",
    *,
    order: str | None = None,
    format: str | Format | Mapping[str, Any] | None = None,
) -> Pipeline:
    """Build a pipeline from a preset name, config mapping or config file.

    Args:
        config: Preset name, mapping, or path to a ``.toml``/``.json`` file.
        order: Replace the order stage (``relevance``, ``bookend``, ...).
        format: Replace the format.
    """
    if isinstance(config, Path) or (isinstance(config, str) and config.endswith((".toml", ".json"))):
        data = load_config_file(config)
        name = Path(config).stem
    elif isinstance(config, str):
        data = get_preset(config)
        name = config
    elif isinstance(config, Mapping):
        data = dict(config)
        name = str(data.get("name", "custom"))
    else:
        raise ConfigError(f"config must be a preset name, a mapping or a path; got {type(config).__name__}.")
    unknown = sorted(str(k) for k in data if k not in CONFIG_KEYS)
    if unknown:
        raise ConfigError(
            f"config has no key {unknown[0]!r}.{did_you_mean(unknown[0], CONFIG_KEYS)} "
            f"Valid keys: {', '.join(sorted(CONFIG_KEYS))}.",
            loc=(unknown[0],),
        )
    if "preset" in data:
        with located("preset"):
            base = get_preset(str(data["preset"]))
        base.update({k: v for k, v in data.items() if k != "preset"})
        data = base
        name = str(data.get("name", name))
    stage_dicts = data.get("stages")
    if not isinstance(stage_dicts, list):
        raise ConfigError(
            f"config 'stages' must be a list of stage objects; got {stage_dicts!r}. "
            'Example: {"stages": [{"type": "exact_dedup"}], "format": "xml"}.',
            loc=("stages",),
        )
    stages = []
    for i, item in enumerate(stage_dicts):
        try:
            stages.append(stage_from_dict(item))
        except ConfigError as exc:
            raise ConfigError(f"stages[{i}]: {exc}", loc=("stages", i, *exc.loc)) from None
    if order is not None:
        stages = _with_order(stages, order)
    if format is not None:  # the argument, not a config key (no loc: the caller knows its field)
        fmt = get_format(format)
    else:
        with located("format"):
            fmt = get_format(data.get("format", "xml"))
    verify = data.get("verify", "auto")
    prompt = check_prompt(data["prompt"]) if data.get("prompt") is not None else None
    reask = config_reask(data.get("reask"))
    return Pipeline(tuple(stages), fmt, verify=verify, name=name, prompt=prompt, reask=reask)


def with_overrides(
    pipeline: Pipeline, *, order: str | None = None, format: str | Format | Mapping[str, Any] | None = None
) -> Pipeline:
    """``pipeline`` with ``order=`` replacing its last order stage (or appended) and ``format=`` its format.

    The other stages are the same objects: nothing goes back through config, so a stage that
    has no config form (your own, unregistered) survives an override, and nothing is rebuilt.

    Raises:
        ConfigError: an unknown order or format, with ``loc`` ``("order",)`` or ``("format",)``.
    """
    changes: dict[str, Any] = {}
    if order is not None:
        with located("order"):
            changes["stages"] = tuple(_with_order(pipeline.stages, order))
    if format is not None:
        with located("format"):
            changes["format"] = get_format(format)
    return replace(pipeline, **changes) if changes else pipeline


def _with_order(stages: Sequence[Any], order: str) -> list[Any]:
    """``stages`` with the last order stage replaced by ``order``'s (appended when there is none)."""
    new = order_stage(order)
    out = list(stages)
    positions = [i for i, s in enumerate(out) if is_order_stage(s)]
    if positions:
        out[positions[-1]] = new
    else:
        out.append(new)
    return out


def pipeline_to_config(pipeline: Pipeline) -> dict[str, Any]:
    """The config mapping that rebuilds ``pipeline``."""
    for s in pipeline.stages:
        get_stage_class(s.name)  # raises for unregistered stages
    out: dict[str, Any] = {
        "name": pipeline.name,
        "stages": [stage_to_dict(s) for s in pipeline.stages],
        "format": format_to_dict(pipeline.format),
        "verify": pipeline.verify,
    }
    if pipeline.prompt is not None:
        out["prompt"] = pipeline.prompt
    if pipeline.reask is not None:
        out["reask"] = pipeline.reask
    return out
