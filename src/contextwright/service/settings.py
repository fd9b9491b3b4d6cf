"""Service settings: :class:`ServiceConfig`, read from a TOML file and ``CONTEXTWRIGHT_*`` variables."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextwright.core.errors import ConfigError, did_you_mean

__all__ = ["ENV_PREFIX", "ServiceConfig"]

ENV_PREFIX = "CONTEXTWRIGHT_"

#: ``CONTEXTWRIGHT_*`` variables that are not service settings, so :meth:`ServiceConfig.load`
#: does not refuse them: the config file's path and the test data's directory ...
NON_SETTING_VARIABLES = frozenset(
    {
        "CONTEXTWRIGHT_CONFIG",
        "CONTEXTWRIGHT_SHARED_DATA",
        # the input readers' caps (contextwright.inputs.readers), read by the CLI, not the service
        "CONTEXTWRIGHT_MAX_RECORD_BYTES",
        "CONTEXTWRIGHT_MAX_DOCUMENT_BYTES",
        # read by the build (hatch_build.py), not at run time: install without the C word profiles
        "CONTEXTWRIGHT_PURE",
    }
)
#: ... and whole families: the test suite's (``CONTEXTWRIGHT_TEST_PG_DSN``), the benchmarks'
#: (``CONTEXTWRIGHT_BENCH_PG_DSN``) and a real LLM endpoint's (``CONTEXTWRIGHT_LLM_BASE_URL``,
#: also a name to give ``llm_compress``'s ``api_key_env``).
NON_SETTING_PREFIXES = ("CONTEXTWRIGHT_TEST_", "CONTEXTWRIGHT_BENCH_", "CONTEXTWRIGHT_LLM_")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """Settings of the HTTP service: where it listens, its limits and its defaults.

    Every field can be set in a TOML file (top level or a ``[service]`` table)
    and overridden by an environment variable ``CONTEXTWRIGHT_<FIELD>``
    (``CONTEXTWRIGHT_MAX_CHUNKS=500``). :meth:`load` reads both.

    Args:
        host: Interface to bind (``contextwright serve``).
        port: Port to bind.
        workers: uvicorn worker processes.
        max_body_bytes: Largest request body accepted (413 above).
        max_chunks: Most chunks in one request (422 above).
        max_text_chars: Longest chunk text, answer or system prompt (422 above).
        max_query_chars: Longest query (422 above).
        timeout_s: Per-request assembly timeout (504 after it).
        threads: Threads that run assemblies (one process's share of the CPU).
        preset: Default preset when a request names none.
        model: Default model (zones and tokenizer) when a request names none.
        budget: Default documents budget when a request gives none.
        tokenizer: Default tokenizer spec (else the model's, else ``cl100k_base``).
        format: Default format override (else the preset's).
        order: Default order override (else the preset's).
        store_url: A chunk store for stages that require ``store``
            (:func:`contextwright.stores.open_store`: ``sqlite:///chunks.db``,
            ``postgresql://...``).
        max_assemblers: How many distinct configurations to keep assemblers for.
        max_request_work: Most work one request may ask for: its number of chunks
            times the sum of its stages' work settings (``num_perm``, ``window``,
            ...; see :mod:`contextwright.core.limits`), plus 4 per tool output
            (``render.tools.TOOL_WORK``). 422 ``too-much-work`` above.
        allow_templates: Accept ``{"type": "template"}`` formats from requests
            (a template can burn CPU, so it is off by default).
        allow_network_stages: Accept request stages with URL/endpoint settings
            (e.g. an LLM compressor); off by default so that a request cannot
            make the server call arbitrary hosts.
        log_level: uvicorn's log level.
        api_keys_file: A file of API keys, one per line (``KEY``, ``NAME KEY``, or
            ``NAME sha256:HEX`` to keep only the key's hash on the server; ``#``
            comments). When set, every request needs ``Authorization: Bearer KEY``
            (401 otherwise). A relative path in a TOML file is relative to that file.
        open_healthz: With keys, ``/healthz`` still answers without one (for probes).
        open_metrics: With keys, ``/metrics`` still answers without one.
        rate_limit_per_s: Requests per second each key (or, without keys, each
            client address) may make; ``0`` turns the limit off. Over it: 429 with
            ``Retry-After``.
        rate_limit_burst: Requests a key may make at once before the rate applies
            (the token bucket's size).
        cors_origins: Origins allowed to call the service from a browser
            (``https://app.example.com``; ``*`` for any); default none.
        access_log: Write one JSON line per request to the ``contextwright.access``
            logger (request id, key id, method, path, status, ms).
        drain_grace_s: After SIGTERM, how long in-flight requests may take to finish
            while new ones get 503.
        body_timeout_s: A request body must arrive within this many seconds (408 after).
        auth_fail_limit: With keys, failed authentications (401s) one client address may have
            within ``auth_fail_window_s``; past it the address gets 429 with ``Retry-After``,
            no key checked, until the window ends. ``0`` turns it off. Behind a proxy, list the
            proxy in ``trusted_proxies``, or every client has the proxy's address. At most
            1,000,000.
        auth_fail_window_s: The window of ``auth_fail_limit``, from an address's first failure
            (1 to 86,400 seconds).
        auth_fail_max_clients: Most client addresses whose failures are remembered (the least
            recently failed are forgotten first); 1 to 1,000,000.
        trusted_proxies: Addresses or CIDR networks of the reverse proxies in front of the
            server (``["10.0.0.5"]``, ``["10.0.0.0/8", "::1"]``; ``CONTEXTWRIGHT_TRUSTED_PROXIES``
            comma-separated). Only a request arriving from one of them may name its client in
            ``X-Forwarded-For`` (and its scheme in ``X-Forwarded-Proto``); from any other peer
            those headers are ignored. Empty (the default): no one is trusted, and the client
            address the rate limit and the failed-login limit count is the connection's peer.
        priors: Positional priors requests may name in a ``prior_order`` stage: name -> prior
            file (a ``[service.priors]`` TOML table, paths relative to that file; or
            ``CONTEXTWRIGHT_PRIORS=name=path,name=path``). Read once at start-up; a request
            never names a file, only these names, ``liu2024`` or an inline prior.
        profiles: Reader profiles (``contextwright fit``) served as presets: name -> profile
            TOML (a ``[service.profiles]`` table, paths relative to that file; or
            ``CONTEXTWRIGHT_PROFILES=name=path,...``). Read and checked once at start-up;
            a request names them like any preset (``"preset": "smollm2"``), and ``preset``
            may make one the server's default. A profile may not reuse a built-in preset's name.

    Example:
        >>> cfg = ServiceConfig.load("service.toml")      # then CONTEXTWRIGHT_* variables
        >>> cfg = ServiceConfig(budget=1_000, max_chunks=200, store_url="sqlite:///chunks.db")
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_body_bytes: int = 2_000_000
    max_chunks: int = 1_000
    max_text_chars: int = 100_000
    max_query_chars: int = 10_000
    timeout_s: float = 10.0
    threads: int = 4
    preset: str = "qa"
    model: str | None = None
    budget: int | None = None
    tokenizer: str | None = None
    format: str | None = None
    order: str | None = None
    store_url: str | None = None
    max_assemblers: int = 64
    max_request_work: int = 500_000
    allow_templates: bool = False
    allow_network_stages: bool = False
    log_level: str = "info"
    api_keys_file: str | None = None
    open_healthz: bool = True
    open_metrics: bool = False
    rate_limit_per_s: float = 0.0
    rate_limit_burst: int = 20
    cors_origins: tuple[str, ...] = ()
    access_log: bool = True
    drain_grace_s: float = 10.0
    body_timeout_s: float = 30.0
    auth_fail_limit: int = 10
    auth_fail_window_s: float = 60.0
    auth_fail_max_clients: int = 10_000
    priors: tuple[tuple[str, str], ...] = ()
    profiles: tuple[tuple[str, str], ...] = ()
    trusted_proxies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        positive = ("port", "workers", "max_body_bytes", "max_chunks", "max_text_chars", "max_query_chars")
        for name in (*positive, "threads", "max_assemblers", "max_request_work", "rate_limit_burst"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"service setting {name!r} must be a positive integer; got {value!r}.")
        if self.port > 65535:
            raise ConfigError(f"service setting 'port' must be at most 65535; got {self.port!r}.")
        for name in ("timeout_s", "drain_grace_s", "body_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(
                    f"service setting {name!r} must be a positive number of seconds; got {value!r}."
                )
        rate = self.rate_limit_per_s
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < float("inf"):
            raise ConfigError(
                f"service setting 'rate_limit_per_s' must be a number >= 0 (0: no limit); got {rate!r}."
            )
        origins = self.cors_origins
        if isinstance(origins, str):
            origins = tuple(o.strip() for o in origins.split(",") if o.strip())
        if not isinstance(origins, (list, tuple)) or not all(isinstance(o, str) for o in origins):
            raise ConfigError(
                f"service setting 'cors_origins' must be a list of origins such as "
                f"['https://app.example.com']; got {origins!r}."
            )
        object.__setattr__(self, "cors_origins", tuple(origins))
        object.__setattr__(self, "priors", _named_files(self.priors, "priors", "prior", BUILTIN_PRIORS))
        object.__setattr__(
            self, "profiles", _named_files(self.profiles, "profiles", "profile", BUILTIN_PRESETS)
        )
        object.__setattr__(self, "trusted_proxies", _networks(self.trusted_proxies))
        _check_auth_limits(self)
        if self.budget is not None and (
            isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0
        ):
            raise ConfigError(
                f"service setting 'budget' must be a non-negative integer; got {self.budget!r}."
            )

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> ServiceConfig:
        """Read a TOML file, then ``CONTEXTWRIGHT_*`` variables, then ``overrides``.

        Args:
            path: A TOML file; defaults to ``$CONTEXTWRIGHT_CONFIG`` when set.
            env: The environment (default ``os.environ``).
            **overrides: Values that win over both (``None`` values are ignored).

        Raises:
            ConfigError: naming the file, key or variable and the expected type; also for a
                ``CONTEXTWRIGHT_*`` variable that is not a setting, with the closest setting
                (:data:`NON_SETTING_VARIABLES` and :data:`NON_SETTING_PREFIXES` are left alone).
        """
        env = os.environ if env is None else env
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        _refuse_unknown_variables(env, fields)
        path = path if path is not None else env.get(ENV_PREFIX + "CONFIG") or None
        if path is not None:
            values.update(_read_toml(Path(path), fields))
        for name in fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = _coerce(name, raw, ENV_PREFIX + name.upper())
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ConfigError(
                f"unknown service setting(s) {unknown}.{did_you_mean(unknown[0], fields)} "
                f"Valid: {', '.join(fields)}."
            )
        return cls(**values)

    def to_env(self) -> dict[str, str]:
        """The ``CONTEXTWRIGHT_*`` variables that reproduce this config (for worker processes)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("priors", "profiles"):
                if value:
                    out[ENV_PREFIX + f.name.upper()] = ",".join(f"{name}={path}" for name, path in value)
            elif isinstance(value, tuple):
                out[ENV_PREFIX + f.name.upper()] = ",".join(value)
            elif value is not None:
                out[ENV_PREFIX + f.name.upper()] = (
                    str(value).lower() if isinstance(value, bool) else str(value)
                )
        return out


def _refuse_unknown_variables(env: Mapping[str, str], fields: Mapping[str, Any]) -> None:
    """A ``CONTEXTWRIGHT_*`` variable that is no setting is a typo until shown otherwise.

    Unknown TOML keys are refused, and so are these: a key file given as ``..._API_KEY_FILE`` (the
    setting is ``API_KEYS_FILE``) would otherwise serve without authentication. Names are matched
    case-insensitively so that ``contextwright_budget`` (never read) is caught too.
    """
    known = {ENV_PREFIX + name.upper() for name in fields}
    unknown = sorted(
        name
        for name in env
        if name.upper().startswith(ENV_PREFIX)
        and name not in known
        and name.upper() not in NON_SETTING_VARIABLES
        and not name.upper().startswith(NON_SETTING_PREFIXES)
    )
    if not unknown:
        return
    first = unknown[0]
    hint = (
        did_you_mean(first.upper(), known)
        if first.upper() not in known
        else f" Did you mean {first.upper()!r}?"
    )
    others = f" (and {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
    raise ConfigError(
        f"environment variable {first!r}{others} is not a service setting.{hint} "
        f"The settings are CONTEXTWRIGHT_<KEY> for the keys {', '.join(fields)}, plus "
        f"CONTEXTWRIGHT_CONFIG. Rename or unset it; variables for other tools may use "
        f"{', '.join(p + '*' for p in NON_SETTING_PREFIXES)}."
    )


_INT_FIELDS = {
    "port",
    "workers",
    "max_body_bytes",
    "max_chunks",
    "max_text_chars",
    "max_query_chars",
    "threads",
    "budget",
    "max_assemblers",
    "max_request_work",
    "rate_limit_burst",
    "auth_fail_limit",
    "auth_fail_max_clients",
}
_FLOAT_FIELDS = {"timeout_s", "drain_grace_s", "body_timeout_s", "rate_limit_per_s", "auth_fail_window_s"}
_BOOL_FIELDS = {"allow_templates", "allow_network_stages", "open_healthz", "open_metrics", "access_log"}


def _coerce(name: str, raw: str, where: str) -> Any:
    """Turn an environment string into the field's type."""
    text = raw.strip()
    if name in _INT_FIELDS:
        if name == "budget" and text == "":
            return None
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where} must be an integer; got {raw!r}.") from None
    if name in _FLOAT_FIELDS:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number; got {raw!r}.") from None
    if name in ("cors_origins", "trusted_proxies"):
        return tuple(o.strip() for o in text.split(",") if o.strip())
    if name in ("priors", "profiles"):
        pairs = [item.partition("=") for item in text.split(",") if item.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise ConfigError(f"{where} must be NAME=PATH pairs separated by commas; got {raw!r}.")
        return tuple((n.strip(), p.strip()) for n, _, p in pairs)
    if name in _BOOL_FIELDS:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{where} must be true or false; got {raw!r}.")
    return text or None


def _read_toml(path: Path, fields: Mapping[str, Any]) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read service config {str(path)!r}: {exc.strerror}.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"service config {str(path)!r} is not valid TOML: {exc}.") from None
    table = data.get("service", data)
    if not isinstance(table, dict):
        raise ConfigError(f"service config {str(path)!r}: [service] must be a table.")
    unknown = sorted(k for k in table if k not in fields and not isinstance(table[k], dict))
    if unknown:
        raise ConfigError(
            f"service config {str(path)!r} has unknown key(s) {unknown}.{did_you_mean(unknown[0], fields)} "
            f"Valid: {', '.join(fields)}."
        )
    values = {k: v for k, v in table.items() if k in fields}
    for table_name in ("priors", "profiles"):
        named = values.get(table_name)
        if isinstance(named, dict):  # paths relative to the TOML file, like api_keys_file
            values[table_name] = {
                k: str(path.parent / v) if isinstance(v, str) and v and not Path(v).is_absolute() else v
                for k, v in named.items()
            }
    keys = values.get("api_keys_file")
    if isinstance(keys, str) and keys and not Path(keys).is_absolute():
        values["api_keys_file"] = str(path.parent / keys)  # relative to the TOML file
    return values


#: Prior names that are built in (``contextwright.stages.priors.LIU_2024``); a server may not reuse them.
BUILTIN_PRIORS = ("liu2024", "liu2024-gpt35-20doc")


#: Preset names that ship with the library; a server's profile may not reuse them.
BUILTIN_PRESETS = ("chat", "citations", "documents", "frugal", "qa", "summarize", "tight")


def _named_files(
    value: Any, setting: str, kind: str, builtin: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """``priors``/``profiles`` as sorted (name, path) pairs, each name a plain word and no built-in name."""
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = sorted((name, path) for name, path in items)
    except (TypeError, ValueError):
        raise ConfigError(
            f'service setting {setting!r} must map names to {kind} files, e.g. {{reader = "reader.{"json" if kind == "prior" else "toml"}"}}; '
            f"got {value!r}."
        ) from None
    for name, path in pairs:
        word = isinstance(name, str) and 0 < len(name) <= 100
        if not word or not all(ch.isascii() and (ch.isalnum() or ch in "_.-") for ch in name):
            raise ConfigError(
                f"service setting {setting!r}: a name must be 1-100 letters, digits, '_', '.' or '-'; got {name!r}."
            )
        if name in builtin:
            raise ConfigError(
                f"service setting {setting!r}: the name {name!r} is built in; choose another name."
            )
        if not isinstance(path, str) or not path:
            raise ConfigError(
                f"service setting {setting!r}: {name!r} needs the path of a {kind} file; got {path!r}."
            )
    return tuple(pairs)


def _check_auth_limits(cfg: ServiceConfig) -> None:
    """``auth_fail_limit`` 0-1,000,000, ``auth_fail_window_s`` 1-86,400 s, ``auth_fail_max_clients`` 1-1,000,000."""
    for name, low, note in (("auth_fail_limit", 0, " (off)"), ("auth_fail_max_clients", 1, "")):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1_000_000:
            raise ConfigError(
                f"service setting {name!r} must be an integer from {low}{note} to 1000000; got {value!r}."
            )
    window = cfg.auth_fail_window_s
    if isinstance(window, bool) or not isinstance(window, (int, float)) or not 1 <= window <= 86_400:
        raise ConfigError(
            f"service setting 'auth_fail_window_s' must be a number of seconds from 1 to 86400; got {window!r}."
        )


def _networks(value: Any) -> tuple[str, ...]:
    """``trusted_proxies`` as normalised network strings (``10.0.0.0/8``, ``127.0.0.1/32``)."""
    import ipaddress

    items = tuple(v.strip() for v in value.split(",") if v.strip()) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(
            f"service setting 'trusted_proxies' must be a list of addresses or networks such as "
            f"['10.0.0.5', '10.1.0.0/16']; got {value!r}."
        )
    out = []
    for item in items:
        try:
            out.append(str(ipaddress.ip_network(str(item).strip(), strict=False)))
        except ValueError:
            raise ConfigError(
                f"service setting 'trusted_proxies': {item!r} is not an IP address or CIDR network; "
                "list your proxies' addresses, e.g. ['10.0.0.5', '10.1.0.0/16'] (host names are not "
                "resolved)."
            ) from None
    return tuple(out)
