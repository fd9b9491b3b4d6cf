"""API keys with '#' and failed-authentication limits (issue 26, finding 6: API keys).

A '#' inside a key used to cut it silently (the rest read as a comment), and 401s were never
limited, so a client could guess keys without end. Now a '#' inside a key stops the server at
start-up naming the setting, and each client address gets ``auth_fail_limit`` failed
authentications per ``auth_fail_window_s``; then 429 with ``Retry-After``, the key unchecked.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from contextwright.core.errors import ConfigError
from contextwright.service import ServiceConfig, create_app
from contextwright.service.security import ApiKeys

KEY = "right-key-0123456789abcdef"
BODY = {"query": "q", "budget": 50, "chunks": [{"text": "Röntgen found X-rays."}]}


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.txt"
    path.write_text(f"# our clients\nmobile {KEY}  # the app\n")
    return path


@pytest.mark.parametrize(
    "line",
    [f"mobile {KEY[:8]}#{KEY[8:]}", f"{KEY}#not-a-comment", f"mo#bile {KEY}", f"mobile {KEY}#"],
)
def test_a_hash_inside_a_key_stops_the_server_naming_the_setting(tmp_path: Path, line: str) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"# comment\n{line}\n")
    with pytest.raises(ConfigError, match=r"api_keys_file .* line 2: '#' inside a word") as info:
        ApiKeys.from_file(path)
    assert KEY[8:] not in str(info.value)  # the key is never echoed
    with pytest.raises(ConfigError, match="'#' inside a word"):
        create_app(ServiceConfig(budget=50, api_keys_file=str(path)))


def test_comments_still_work_after_a_space_or_at_the_start(keys_file: Path) -> None:
    keys = ApiKeys.from_file(keys_file)
    assert keys.identify(KEY) == "mobile" and len(keys) == 1


def test_failed_keys_get_429_after_the_limit_even_with_the_right_key(keys_file: Path) -> None:
    cfg = ServiceConfig(api_keys_file=str(keys_file), auth_fail_limit=3, auth_fail_window_s=60)
    app = create_app(cfg)
    with (
        TestClient(app, client=("10.0.0.1", 5000)) as guesser,
        TestClient(app, client=("10.0.0.2", 5000)) as other,
    ):
        assert guesser.post("/v1/assemble", json=BODY, headers=bearer(KEY)).status_code == 200
        for guess in ("guess-0123456789abcdef", "guess-1123456789abcdef", ""):
            r = guesser.post("/v1/assemble", json=BODY, headers=bearer(guess))
            assert r.status_code == 401
        for key in ("guess-2123456789abcdef", KEY):  # the key is not even looked at
            r = guesser.post("/v1/assemble", json=BODY, headers=bearer(key))
            assert r.status_code == 429, r.json()
            problem = r.json()
            assert problem["code"] == "too-many-failed-keys"
            assert 1 <= int(r.headers["retry-after"]) <= 60
            assert "auth_fail_limit" in problem["detail"]
        assert guesser.get("/healthz").status_code == 200  # open probes are not limited
        assert other.post("/v1/assemble", json=BODY, headers=bearer(KEY)).status_code == 200
        assert other.post("/v1/assemble", json=BODY, headers=bearer("x")).status_code == 401


def test_the_limit_lifts_after_the_window(keys_file: Path) -> None:
    cfg = ServiceConfig(api_keys_file=str(keys_file), auth_fail_limit=2, auth_fail_window_s=1)
    with TestClient(create_app(cfg)) as c:
        assert [c.get("/metrics").status_code for _ in range(3)] == [401, 401, 429]
        time.sleep(1.1)
        assert c.post("/v1/assemble", json=BODY, headers=bearer(KEY)).status_code == 200


def test_zero_turns_the_limit_off(keys_file: Path) -> None:
    cfg = ServiceConfig(api_keys_file=str(keys_file), auth_fail_limit=0)
    with TestClient(create_app(cfg)) as c:
        assert {c.get("/metrics").status_code for _ in range(30)} == {401}


def test_tracked_addresses_are_capped() -> None:
    from contextwright.service.security import AuthFailures

    failures = AuthFailures(limit=2, window_s=60, max_clients=100)
    for i in range(10_000):
        failures.record(f"10.0.{i // 256}.{i % 256}", now=0.0)
    assert len(failures) == 100
    failures.record("a", now=1.0)
    failures.record("a", now=2.0)
    assert failures.wait("a", now=3.0) == pytest.approx(58.0)
    assert failures.wait("b", now=3.0) == 0.0
    assert failures.wait("a", now=61.0) == 0.0  # the window is over


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("auth_fail_limit", -1, "'auth_fail_limit' must be an integer from 0 (off) to 1000000"),
        ("auth_fail_limit", 10**7, "'auth_fail_limit' must be an integer from 0"),
        ("auth_fail_window_s", 0, "'auth_fail_window_s' must be a number of seconds from 1 to 86400"),
        ("auth_fail_window_s", 10**6, "'auth_fail_window_s' must be a number of seconds"),
        ("auth_fail_max_clients", 0, "'auth_fail_max_clients' must be an integer from 1 to 1000000"),
    ],
)
def test_the_limit_settings_are_bounded(setting: str, value: int, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ServiceConfig(**{setting: value})  # type: ignore[arg-type]


def test_the_limit_settings_come_from_the_environment() -> None:
    env = {"CONTEXTWRIGHT_AUTH_FAIL_LIMIT": "5", "CONTEXTWRIGHT_AUTH_FAIL_WINDOW_S": "30"}
    cfg = ServiceConfig.load(env=env)
    assert (cfg.auth_fail_limit, cfg.auth_fail_window_s, cfg.auth_fail_max_clients) == (5, 30.0, 10_000)
    assert ServiceConfig.load(env=cfg.to_env()) == cfg
