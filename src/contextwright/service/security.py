"""Who may call the service and how often, and what a request may not make the server do.

* :class:`ApiKeys`: the keys of ``api_keys_file``, kept as SHA-256 hashes and
  compared in constant time;
* :class:`RateLimiter`: a token bucket per key (or client address);
* :class:`AuthFailures`: failed authentications per client address (429 past a limit);
* :func:`vet_tokenizer`, :func:`vet_pipeline`: no server files, templates or
  network calls chosen by a request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import math
import os
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from contextwright.core.errors import ConfigError
from contextwright.service.problems import Failure, Loc
from contextwright.service.settings import ServiceConfig

__all__ = ["ApiKeys", "AuthFailures", "RateLimiter", "vet_pipeline", "vet_tokenizer"]

_HASH = re.compile(r"^sha256:([0-9a-fA-F]{64})$")


class ApiKeys:
    """The API keys a server accepts, as SHA-256 digests with a non-secret id each.

    File format, one key per line: ``KEY``, or ``NAME KEY`` (``NAME`` is the id the
    access log shows), or ``NAME sha256:HEX`` (the hex SHA-256 of the key, so the
    file holds no usable secret). Blank lines and ``#`` comments are skipped; a comment starts
    at the beginning of a line or after a space, and a ``#`` inside a word (a key or a name) is
    refused at start-up rather than read as the start of a comment.
    Without a name, the id is ``key-`` and the first 8 hex digits of the hash.

    Example:
        >>> keys = ApiKeys.from_file("keys.txt")
        >>> keys.identify("the-key-the-client-sent")     # the key's id, or None
    """

    def __init__(self, entries: Mapping[str, bytes]) -> None:
        if not entries:
            raise ConfigError("api keys: no keys given; a keyed server with no key would refuse every call.")
        self._entries = [(digest, key_id) for key_id, digest in entries.items()]

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ApiKeys:
        """Read a keys file (see the class docstring for its format)."""
        where = str(path)
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(
                f"cannot read api_keys_file {where!r}: {exc.strerror}; set CONTEXTWRIGHT_API_KEYS_FILE "
                "to a file with one key per line."
            ) from None
        entries: dict[str, bytes] = {}
        for n, line in enumerate(lines, 1):
            parts = _words(line, where, n)
            if not parts:
                continue
            if len(parts) > 2:
                raise ConfigError(
                    f"api_keys_file {where!r} line {n}: expected 'KEY' or 'NAME KEY', got {len(parts)} words."
                )
            secret = parts[-1]
            m = _HASH.match(secret)
            digest = bytes.fromhex(m.group(1)) if m else hashlib.sha256(secret.encode()).digest()
            if not m and len(secret) < 16:
                raise ConfigError(
                    f"api_keys_file {where!r} line {n}: a key must have at least 16 characters "
                    "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')."
                )
            key_id = parts[0] if len(parts) == 2 else "key-" + digest.hex()[:8]
            if key_id in entries:
                raise ConfigError(f"api_keys_file {where!r} line {n}: the name {key_id!r} is used twice.")
            entries[key_id] = digest
        if not entries:
            raise ConfigError(f"api_keys_file {where!r} has no keys; add one key per line.")
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def identify(self, key: str) -> str | None:
        """The id of ``key``, or ``None``; compares against every key in constant time."""
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        found = None
        for stored, key_id in self._entries:
            if hmac.compare_digest(stored, digest):  # no early exit: the time does not depend on which
                found = key_id
        return found


def _words(line: str, where: str, n: int) -> list[str]:
    """The words of a keys-file line before its comment; a '#' inside a word is an error."""
    words: list[str] = []
    for word in line.split():
        if word.startswith("#"):
            break
        if "#" in word:
            # Never echo the word: it may be a key.
            raise ConfigError(
                f"api_keys_file {where!r} line {n}: '#' inside a word (word {len(words) + 1}); a key or "
                "name may not contain '#', which starts a comment only at the start of a line or after "
                "a space. Make a new key with python -c 'import secrets; print(secrets.token_urlsafe(32))'."
            )
        words.append(word)
    return words


class AuthFailures:
    """Failed authentications per client address: ``limit`` in ``window_s`` seconds, then a wait.

    A fixed window opens at an address's first failure; once it holds ``limit`` failures, the
    address waits until the window ends (the server answers 429 without checking a key, so
    guessing stops there). Success does not clear the count: a client holding one key cannot
    use it to keep guessing others. Used from the event loop only (no lock); it remembers at
    most ``max_clients`` addresses, dropping the least recently failed.
    """

    def __init__(self, *, limit: int, window_s: float, max_clients: int = 10_000) -> None:
        self.limit = limit
        self.window_s = float(window_s)
        self.max_clients = max_clients
        self._seen: OrderedDict[str, tuple[float, int]] = OrderedDict()  # address -> (start, failures)

    def __len__(self) -> int:
        return len(self._seen)

    def wait(self, client: str, now: float | None = None) -> float:
        """0 when ``client`` may try a key, else the seconds until it may."""
        now = time.monotonic() if now is None else now
        start, count = self._seen.get(client, (now, 0))
        end = start + self.window_s
        return end - now if count >= self.limit and now < end else 0.0

    def record(self, client: str, now: float | None = None) -> None:
        """Count one failed authentication of ``client``."""
        now = time.monotonic() if now is None else now
        start, count = self._seen.pop(client, (now, 0))
        if now >= start + self.window_s:
            start, count = now, 0
        self._seen[client] = (start, count + 1)
        while len(self._seen) > self.max_clients:
            self._seen.popitem(last=False)


class RateLimiter:
    """A token bucket per caller: ``rate`` requests per second, ``burst`` at once.

    Used from the event loop only (no lock). It remembers at most ``max_callers``
    buckets, dropping the least recently seen (a dropped caller starts full).
    """

    def __init__(self, rate: float, burst: int, *, max_callers: int = 10_000) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_callers = max_callers
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, caller: str, now: float | None = None) -> float:
        """Take one token for ``caller``; 0 when allowed, else the seconds until a token is free."""
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(caller, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[caller] = (tokens, now)
        while len(self._buckets) > self.max_callers:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> str:
        """The ``Retry-After`` value (whole seconds, at least 1) for a wait."""
        return str(max(1, math.ceil(wait)))


# Settings a request may not choose for its own stages: where the server connects to, and which
# of the server's secrets (api_key_env names an environment variable) it sends along.
_NETWORK_SETTING = re.compile(r"url|endpoint|host|api_key|_env$", re.IGNORECASE)


def vet_tokenizer(spec: str | None) -> None:
    """Refuse a request's tokenizer spec unless it is a name resolved without the server's files.

    Accepted: ``chars``/``chars:N``, ``hf:...`` (the schema allows no path separator), a name
    given to :func:`contextwright.tokens.register_tokenizer`, and tiktoken encoding and model
    names. Anything else (a file, a directory, a typo) gets the same 422, decided without
    looking at the disk: the library would load a ``tokenizer.json`` or a directory by that
    name, and an answer that depended on the disk would tell which files exist.
    """
    if not spec or _known_tokenizer(spec):
        return
    raise Failure(
        422,
        "invalid-option",
        f"tokenizer {spec!r} is not a tokenizer name this server knows (a request's tokenizer never "
        "names a file); pass an encoding such as 'cl100k_base' or 'o200k_base', a model name such "
        "as 'gpt-4o', 'chars:4', or a name registered on the server.",
        ["body", "tokenizer"],
    )


def _known_tokenizer(spec: str) -> bool:
    if spec == "chars" or spec.startswith(("chars:", "hf:")):
        return True
    from contextwright.tokens.registry import registered_tokenizers

    if spec in registered_tokenizers():  # register_tokenizer's names
        return True
    try:
        import tiktoken
    except ImportError:
        return False
    if spec in tiktoken.list_encoding_names():
        return True
    try:
        tiktoken.encoding_name_for_model(spec)
    except KeyError:
        return False
    return True


def vet_formats(o: Mapping[str, Any], config: ServiceConfig) -> None:
    """Refuse a request's template format before anything builds (and so compiles) it.

    A template is compiled when its format object is made, so on a server with templates
    disabled the request's format specs are read as data first: ``format`` and ``config.format``
    are the only places a request can name a format.
    """
    if config.allow_templates:
        return
    specs: list[tuple[Any, Loc]] = [(o["format"], ["body", "format"])]
    if isinstance(o["config"], Mapping):
        specs.append((o["config"].get("format"), ["body", "config", "format"]))
    for spec, where in specs:
        if _names_template(spec):
            _template_refused(where)


def _names_template(spec: Any) -> bool:
    if isinstance(spec, Mapping):
        return str(spec.get("type")).strip().lower() == "template"
    return isinstance(spec, str) and spec.strip().lower() == "template"


def _template_refused(where: Loc) -> NoReturn:
    raise Failure(
        422,
        "template-not-allowed",
        "template formats are disabled on this server (a template can run long); use a named "
        "format (xml, numbered, sources, markdown, grouped, minimal) or start the server with "
        "allow_templates = true.",
        where,
    )


def vet_pipeline(pipeline: Any, o: Mapping[str, Any], config: ServiceConfig) -> None:
    """Refuse what a request must not make the server do (templates, network calls)."""
    from contextwright.render.format import TemplateFormat

    if (
        isinstance(pipeline.format, TemplateFormat)
        and not config.allow_templates
        and (o["format"] is not None or (o["config"] or {}).get("format") is not None)
    ):  # vet_formats refused it already; this holds should a new path name a format
        _template_refused(["body", "format"] if o["format"] is not None else ["body", "config", "format"])
    if o["config"] is None or "stages" not in o["config"] or config.allow_network_stages:
        return  # the stages are the server's preset's, which the operator chose
    for i, stage in enumerate(pipeline.stages):
        for f in dataclasses.fields(stage):
            if _NETWORK_SETTING.search(f.name) and getattr(stage, f.name) not in (None, "", ()):
                raise Failure(
                    422,
                    "network-stage-not-allowed",
                    f"stage {stage.name!r} has the network setting {f.name!r}; request-supplied stages "
                    "may not call other hosts on this server. Use a server preset, or start the "
                    "server with allow_network_stages = true.",
                    ["body", "config", "stages", i, f.name],
                )


def forwarded_hops(values: list[str]) -> tuple[list[str], str | None]:
    """The ``for=`` addresses of RFC 7239 ``Forwarded`` header values, in order, and the last
    ``proto=`` (``Forwarded: for=192.0.2.60;proto=https, for="[2001:db8::1]:4711"``).

    Quotes, an IPv6 address's brackets and a port are removed; ``unknown`` and obfuscated
    names (``_hidden``) are kept as written, so they are clients of their own, never trusted.
    """
    hops: list[str] = []
    proto = None
    for value in values:
        for element in value.split(","):
            for pair in element.split(";"):
                key, sep, raw = pair.partition("=")
                if not sep:
                    continue
                key, raw = key.strip().lower(), raw.strip().strip('"')
                if key == "proto":
                    proto = raw.lower()
                elif key == "for" and raw:
                    hops.append(_without_port(raw))
    return hops, proto


def _without_port(node: str) -> str:
    """``192.0.2.60:443`` -> ``192.0.2.60``; ``[2001:db8::1]:4711`` -> ``2001:db8::1``."""
    if node.startswith("["):
        return node[1 : node.find("]")] if "]" in node else node
    return node.partition(":")[0] if node.count(":") == 1 else node


class TrustedProxies:
    """Which peers may name the client in ``X-Forwarded-For`` (or RFC 7239 ``Forwarded``), and the client they name.

    Only a peer whose address is in one of the operator's networks (``trusted_proxies``) is
    believed; every other peer is the client, whatever headers it sends, so a caller cannot pick
    the address that ``auth_fail_limit`` and ``rate_limit_per_s`` count against. Through a chain
    of trusted proxies the client is the rightmost address of ``X-Forwarded-For`` that is not a
    trusted proxy (each proxy appends the address it saw; the entries to its left are whatever
    the client wrote). A request without ``X-Forwarded-For`` is read from ``Forwarded``'s
    ``for=`` values the same way (:func:`forwarded_hops`).

    Args:
        networks: Addresses or CIDR networks (``10.0.0.0/8``, ``127.0.0.1``, ``::1``).
    """

    def __init__(self, networks: tuple[str, ...]) -> None:
        import ipaddress

        self._networks = tuple(ipaddress.ip_network(n, strict=False) for n in networks)

    def __bool__(self) -> bool:
        return bool(self._networks)

    def trusts(self, address: str) -> bool:
        import ipaddress

        try:
            ip = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            return False
        return any(ip.version == n.version and ip in n for n in self._networks)

    def client(self, peer: str, forwarded_for: list[str]) -> str:
        """The client's address: ``peer``, unless ``peer`` is trusted and the header names another."""
        if not self.trusts(peer):
            return peer
        hops = [h.strip() for value in forwarded_for for h in value.split(",") if h.strip()]
        for hop in reversed(hops[-64:]):  # a proxy chain is short; the rest is the client's own text
            if not self.trusts(hop):
                return hop[:64]
        return hops[0][:64] if hops else peer
