"""What a request's stage settings may refer to: inline data and the server's own names, never a file.

The library lets a stage setting name a file (``prior_order``'s ``prior`` reads a
prior file when the stage is built). Over HTTP that would let any caller make the
server open any path, so request stages are screened *before* they are built:

* a setting that takes a reference (``prior_order.prior``) accepts inline data (the
  mapping a prior file holds) or a name: a built-in one (``liu2024``) or one the
  server's ``priors`` setting registered, read once at start-up;
* every other setting's strings may not look like a path or a URL (``/x``,
  ``../x``, ``~/x``, ``C:\\x``, ``file:``, ``scheme://``, ``name.json``), except the
  settings whose values are only ever text in the output (``doc_summaries``'
  summaries and metadata keys) or a name sent to another host
  (``llm_compress.model``); a URL is allowed in a network setting only with
  ``allow_network_stages``.

A refusal never depends on the file system, so it tells nothing about what exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import ConfigError
from contextwright.service.problems import Failure
from contextwright.service.settings import BUILTIN_PRIORS, ServiceConfig

if TYPE_CHECKING:
    from contextwright.stages.priors import PositionalPrior

__all__ = ["TEXT_SETTINGS", "load_priors", "reference_kind", "register_profiles", "screen_stages"]

#: Settings whose values are only text placed in the output, or a name sent to another host.
TEXT_SETTINGS = frozenset(
    {
        ("doc_summaries", "summaries"),
        ("doc_summaries", "metadata_keys"),
        ("llm_compress", "model"),
    }
)
_NETWORK_WORDS = ("url", "endpoint", "host", "api_key")
_FILE_SUFFIXES = (".json", ".toml", ".yaml", ".yml", ".txt", ".jsonl", ".gz", ".db", ".sqlite", ".model")
_SHOWN = 100  # characters of a refused value echoed back


def register_profiles(cfg: ServiceConfig) -> None:
    """Serve the profiles the server's ``profiles`` setting names as presets (read at start-up).

    A profile is the operator's file, like a prior: read once here, never named by a
    request, which names only the preset it became.

    Raises:
        ConfigError: naming the setting, the profile's name and what is wrong with its file.
    """
    from contextwright.assembly.presets import load_config_file, register_preset

    for name, path in cfg.profiles:
        try:
            register_preset(name, load_config_file(path))
        except ConfigError as exc:
            raise ConfigError(f"service setting 'profiles', {name!r}: {exc}") from None


def load_priors(cfg: ServiceConfig) -> dict[str, PositionalPrior]:
    """Read the priors the server's ``priors`` setting names (at start-up).

    Raises:
        ConfigError: naming the setting, the prior's name and what is wrong with its file.
    """
    from contextwright.stages.priors import load_prior

    out: dict[str, PositionalPrior] = {}
    for name, path in cfg.priors:
        try:
            out[name] = load_prior(path)
        except ConfigError as exc:
            raise ConfigError(f"service setting 'priors', {name!r}: {exc}") from None
    return out


def reference_kind(text: str) -> str | None:
    """``"a URL"`` or ``"a path"`` when ``text`` looks like one, else ``None`` (string operations only)."""
    s = text.strip()
    low = s.lower()
    if low.startswith("file:"):
        return "a path"  # a file URL names a file, even where URLs are allowed
    if "://" in s:
        return "a URL"
    if "/" in s or "\\" in s or s.startswith("~") or s in (".", ".."):
        return "a path"
    if len(s) >= 2 and s[1] == ":" and s[0].isascii() and s[0].isalpha():
        return "a path"  # a Windows drive: C:x, C:\x
    if low.endswith(_FILE_SUFFIXES):
        return "a path"
    return None


def _strings(value: Any) -> list[str]:
    """Every string inside ``value`` (lists and mapping values), without recursion."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + f"… ({len(text)} characters)"


def _prior(value: Any, i: int, priors: Mapping[str, PositionalPrior]) -> Any:
    """The ``prior`` a request stage may use: inline data, or a known name (a server name becomes its data)."""
    from contextwright.stages.priors import prior_from_mapping

    loc: list[str | int] = ["body", "config", "stages", i, "prior"]
    if isinstance(value, Mapping):
        try:
            prior_from_mapping(value)
        except ConfigError as exc:
            raise Failure(422, "invalid-option", f"stages[{i}].prior: {exc}", loc) from None
        return value
    if isinstance(value, str) and value in BUILTIN_PRIORS:
        return value
    if isinstance(value, str) and value in priors:
        return priors[value].to_dict()
    names = ", ".join(sorted({BUILTIN_PRIORS[0], *priors}))
    raise Failure(
        422,
        "unknown-prior",
        f"stages[{i}].prior: {_shown(value)} is not a prior this server knows. Over HTTP a prior is "
        f'inline data ({{"positions": [1, 10, 20], "accuracy": [80, 60, 70], "closed_book": 50}}) '
        f"or one of the names {names}; the server never opens a file a request names (an operator "
        "adds names with the 'priors' setting).",
        loc,
    )


def _refusal(i: int, key: str, text: str, found: str, *, network: bool) -> Failure:
    loc: list[str | int] = ["body", "config", "stages", i, key]
    if network and found == "a URL":
        return Failure(
            422,
            "network-stage-not-allowed",
            f"stages[{i}].{key}: {_shown(text)} is a URL; request-supplied stages may not call other "
            "hosts on this server. Use a server preset, or start the server with "
            "allow_network_stages = true.",
            loc,
        )
    return Failure(
        422,
        "reference-not-allowed",
        f"stages[{i}].{key}: {_shown(text)} looks like {found}; a request's stage settings may not "
        "name a file or URL on this server. Give the value itself (a prior as inline data or a "
        "name the server registered).",
        loc,
    )


def screen_stages(stages: Any, cfg: ServiceConfig, priors: Mapping[str, PositionalPrior]) -> Any:
    """Refuse request stages whose settings name a file or URL; resolve prior names to their data.

    Returns the stage list to build (a server prior's name replaced by its data); anything that is
    not a list of mappings is returned as it is, for the library to refuse with its own message.

    Raises:
        Failure: 422 naming ``body.config.stages.<i>.<setting>``.
    """
    if not isinstance(stages, list):
        return stages
    out: list[Any] = []
    for i, item in enumerate(stages):
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        kind = str(item.get("type"))
        screened = dict(item)
        for key, value in item.items():
            if key == "type" or (kind, key) in TEXT_SETTINGS:
                continue
            if (kind, key) == ("prior_order", "prior"):
                screened[key] = _prior(value, i, priors)
                continue
            network = any(w in str(key).lower() for w in _NETWORK_WORDS) or str(key).endswith("_env")
            for text in _strings(value):
                found = reference_kind(text)
                if found is None or (found == "a URL" and network and cfg.allow_network_stages):
                    continue
                raise _refusal(i, str(key), text, found, network=network)
        out.append(screened)
    return out
