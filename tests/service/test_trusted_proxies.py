"""``X-Forwarded-For`` is believed only from the proxies the operator lists (issue 31, item 4).

uvicorn trusted proxy headers from 127.0.0.1 by default, so the client address that
``auth_fail_limit`` and ``rate_limit_per_s`` count against was whatever a local caller wrote:
after a lockout a valid key with ``X-Forwarded-For: 10.0.0.1`` got 200, and rotating values
never reached the limit. Now ``contextwright serve`` turns uvicorn's handling off and the app
believes the header only from ``trusted_proxies`` (empty by default). Against real servers on
127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from contextwright.core.errors import ConfigError  # noqa: E402
from contextwright.service import ServiceConfig  # noqa: E402
from contextwright.service.security import TrustedProxies, forwarded_hops  # noqa: E402

KEY = "right-key-0123456789abcdef"
BODY = {"query": "q", "budget": 50, "chunks": [{"text": "Röntgen found X-rays."}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(**settings: str) -> str:
        keys = tmp_path / "keys.txt"
        keys.write_text(f"mobile {KEY}\n")
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWRIGHT_")}
        env.update({"CONTEXTWRIGHT_" + k.upper(): v for k, v in settings.items()})
        env["CONTEXTWRIGHT_API_KEYS_FILE"] = env.get("CONTEXTWRIGHT_API_KEYS_FILE", str(keys))
        cmd = [sys.executable, "-c", "from contextwright.cli import main; main()", "serve"]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"server exited with {proc.returncode}"
            try:
                httpx.get(url + "/healthz", timeout=0.5)
                return url
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("server did not start")

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _post(url: str, key: str, forwarded: str | None = None, header: str = "x-forwarded-for") -> int:
    headers = {"authorization": f"Bearer {key}"}
    if forwarded is not None:
        headers[header] = forwarded
    return httpx.post(url + "/v1/assemble", json=BODY, headers=headers, timeout=10).status_code


def test_by_default_a_forwarded_header_neither_escapes_nor_rotates_the_login_limit(serve: object) -> None:
    url = serve(auth_fail_limit="3", budget="50")  # type: ignore[operator]
    codes = [_post(url, f"guess-{i}-0123456789abcdef", forwarded=f"10.0.0.{i}") for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]  # rotating values do not reset the count
    assert _post(url, KEY, forwarded="10.0.0.1") == 429  # nor does naming another address
    assert _post(url, KEY, forwarded="203.0.113.9, 10.0.0.1") == 429


def test_by_default_a_forwarded_header_does_not_escape_the_rate_limit(serve: object, tmp_path: Path) -> None:
    url = serve(rate_limit_per_s="0.01", rate_limit_burst="2", budget="50", api_keys_file="")  # type: ignore[operator]
    codes = [
        httpx.post(
            url + "/v1/assemble", json=BODY, headers={"x-forwarded-for": f"10.9.0.{i}"}, timeout=10
        ).status_code
        for i in range(4)
    ]
    assert codes == [200, 200, 429, 429]


def test_a_listed_proxy_names_the_client_and_only_its_own_hop_counts(serve: object) -> None:
    url = serve(auth_fail_limit="3", budget="50", trusted_proxies="127.0.0.1")  # type: ignore[operator]
    for i in range(3):  # the proxy appended 203.0.113.7; what the client wrote before it varies
        assert _post(url, f"guess-{i}-0123456789abcdef", forwarded=f"198.51.100.{i}, 203.0.113.7") == 401
    assert _post(url, KEY, forwarded="203.0.113.7") == 429  # the guesser is locked out
    assert _post(url, KEY, forwarded="203.0.113.8, 203.0.113.7") == 429  # writing another address fails
    assert _post(url, KEY, forwarded="203.0.113.8") == 200  # another client behind the proxy is not
    assert _post(url, KEY) == 200  # the proxy's own requests (no header) are its own client


def test_trusted_proxies_reads_addresses_and_networks() -> None:
    cfg = ServiceConfig.load(env={"CONTEXTWRIGHT_TRUSTED_PROXIES": "10.0.0.5, 10.1.0.0/16,::1"})
    assert cfg.trusted_proxies == ("10.0.0.5/32", "10.1.0.0/16", "::1/128")
    assert ServiceConfig().trusted_proxies == ()
    assert ServiceConfig.load(env=cfg.to_env()).trusted_proxies == cfg.trusted_proxies
    with pytest.raises(ConfigError, match=r"trusted_proxies.*'proxy\.example\.com' is not an IP address"):
        ServiceConfig(trusted_proxies=("proxy.example.com",))


def test_the_client_is_the_rightmost_address_that_is_no_trusted_proxy() -> None:
    proxies = TrustedProxies(("10.0.0.0/8", "127.0.0.1"))
    assert proxies.client("203.0.113.1", ["198.51.100.1"]) == "203.0.113.1"  # untrusted peer
    assert proxies.client("127.0.0.1", ["198.51.100.1, 203.0.113.2"]) == "203.0.113.2"
    assert proxies.client("127.0.0.1", ["198.51.100.1", "203.0.113.2, 10.0.0.3"]) == "203.0.113.2"
    assert proxies.client("127.0.0.1", ["10.0.0.3"]) == "10.0.0.3"  # all trusted: the leftmost
    assert proxies.client("127.0.0.1", []) == "127.0.0.1"
    assert not TrustedProxies(()) and not TrustedProxies(("10.0.0.0/8",)).trusts("::1")


def test_rfc_7239_forwarded_names_the_client_from_a_listed_proxy_only(serve: object) -> None:
    """A proxy that sends only ``Forwarded: for=...`` (RFC 7239) names the client as one that
    sends ``X-Forwarded-For``; from an unlisted peer the header is ignored."""
    url = serve(auth_fail_limit="2", budget="50", trusted_proxies="127.0.0.1")  # type: ignore[operator]
    for i in range(2):
        bad = f"guess-{i}-0123456789abcdef"
        assert _post(url, bad, f'for="198.51.100.{i}", for=203.0.113.7;proto=https', "forwarded") == 401
    assert _post(url, KEY, "for=203.0.113.7:4711", "forwarded") == 429  # the same client, port dropped
    assert _post(url, KEY, 'for="[2001:db8::7]:4711"', "forwarded") == 200  # another client
    plain = serve(auth_fail_limit="2", budget="50")  # type: ignore[operator]
    for i in range(2):
        assert _post(plain, f"guess-{i}-0123456789abcdef", f"for=203.0.113.{i}", "forwarded") == 401
    assert _post(plain, KEY, "for=203.0.113.9", "forwarded") == 429  # not trusted: the peer is the client


def test_forwarded_hops_reads_for_and_proto_as_rfc_7239_writes_them() -> None:
    hops, proto = forwarded_hops(
        ["for=192.0.2.60;proto=HTTPS;by=203.0.113.43", 'For="[2001:db8:cafe::17]:4711"']
    )
    assert hops == ["192.0.2.60", "2001:db8:cafe::17"] and proto == "https"
    assert forwarded_hops(["for=unknown, for=_hidden, for=198.51.100.1:80"]) == (
        ["unknown", "_hidden", "198.51.100.1"],
        None,
    )
    assert forwarded_hops(["by=10.0.0.1", "garbage", ""]) == ([], None)
    proxies = TrustedProxies(("10.0.0.0/8",))
    assert proxies.client("10.0.0.2", forwarded_hops(["for=198.51.100.1, for=10.0.0.9"])[0]) == "198.51.100.1"
