"""API keys files, the token bucket and the production settings, in process."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from contextwright.core.errors import ConfigError
from contextwright.service import ServiceConfig
from contextwright.service.security import ApiKeys, RateLimiter

KEY = "a-key-of-some-length-0123"


def test_keys_file_names_hashes_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    other = "another-key-0123456789"
    path.write_text(
        f"# clients\n\nmobile {KEY}  # the app\nbatch sha256:{hashlib.sha256(other.encode()).hexdigest()}\n"
        "third-key-without-a-name-01\n"
    )
    keys = ApiKeys.from_file(path)
    assert len(keys) == 3
    assert keys.identify(KEY) == "mobile"
    assert keys.identify(other) == "batch"
    assert (
        keys.identify("third-key-without-a-name-01")
        == "key-" + hashlib.sha256(b"third-key-without-a-name-01").hexdigest()[:8]
    )
    assert keys.identify(KEY + "x") is None and keys.identify("") is None
    assert keys.identify("sha256:" + hashlib.sha256(other.encode()).hexdigest()) is None  # the hash is no key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "has no keys; add one key per line"),
        ("# only a comment\n", "has no keys"),
        ("short\n", "line 1: a key must have at least 16 characters"),
        (f"a b {KEY}\n", "line 1: expected 'KEY' or 'NAME KEY', got 3 words"),
        (f"same {KEY}\nsame {KEY}x\n", "line 2: the name 'same' is used twice"),
    ],
)
def test_bad_keys_files_are_refused_at_start(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        ApiKeys.from_file(path)


def test_a_missing_keys_file_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read api_keys_file .*CONTEXTWRIGHT_API_KEYS_FILE"):
        ApiKeys.from_file(tmp_path / "nope.txt")
    from contextwright.service import create_app

    with pytest.raises(ConfigError, match="cannot read api_keys_file"):
        create_app(ServiceConfig(budget=100, api_keys_file=str(tmp_path / "nope.txt")))


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    bucket = RateLimiter(rate=2.0, burst=3)
    assert [bucket.take("k", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take("k", now=0.0) == pytest.approx(0.5)  # one token in half a second
    assert bucket.take("other", now=0.0) == 0.0  # each caller has its own bucket
    assert bucket.take("k", now=0.6) == 0.0
    assert bucket.take("k", now=0.6) > 0
    assert bucket.take("k", now=100.0) == 0.0  # refilled, but never above the burst
    assert RateLimiter.retry_after(0.2) == "1" and RateLimiter.retry_after(2.1) == "3"
    small = RateLimiter(rate=1.0, burst=1, max_callers=2)
    for caller in ("a", "b", "c"):
        small.take(caller, now=0.0)
    assert small.take("a", now=0.0) == 0.0  # 'a' was forgotten (bounded memory), so it starts full


def test_production_settings_from_toml_and_environment(tmp_path: Path) -> None:
    config = tmp_path / "service.toml"
    config.write_text(
        '[service]\napi_keys_file = "keys.txt"\ncors_origins = ["https://a.example", "https://b.example"]\n'
        "rate_limit_per_s = 5\nopen_metrics = true\n"
    )
    cfg = ServiceConfig.load(config, env={"CONTEXTWRIGHT_DRAIN_GRACE_S": "3.5"})
    assert cfg.api_keys_file == str(tmp_path / "keys.txt")  # relative to the TOML file
    assert cfg.cors_origins == ("https://a.example", "https://b.example")
    assert cfg.rate_limit_per_s == 5 and cfg.open_metrics and cfg.drain_grace_s == 3.5
    env = cfg.to_env()
    assert env["CONTEXTWRIGHT_CORS_ORIGINS"] == "https://a.example,https://b.example"
    assert ServiceConfig.load(env=env) == cfg  # what workers read back
    with pytest.raises(ConfigError, match="'rate_limit_per_s' must be a number >= 0"):
        ServiceConfig(rate_limit_per_s=-1)
    with pytest.raises(ConfigError, match="'body_timeout_s' must be a positive number of seconds"):
        ServiceConfig.load(env={"CONTEXTWRIGHT_BODY_TIMEOUT_S": "0"})


def test_healthz_and_metrics_can_be_protected_or_open(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import create_app

    keys = tmp_path / "keys.txt"
    keys.write_text(f"ops {KEY}\n")
    cfg = ServiceConfig(budget=100, api_keys_file=str(keys), open_healthz=False, open_metrics=True)
    with TestClient(create_app(cfg)) as c:
        assert c.get("/healthz").status_code == 401
        assert c.get("/healthz", headers={"authorization": f"Bearer {KEY}"}).json()["status"] == "ok"
        assert c.get("/metrics").status_code == 200
        schema = c.get("/openapi.json", headers={"authorization": f"Bearer {KEY}"}).json()
    assert "401" in schema["paths"]["/v1/assemble"]["post"]["responses"]
