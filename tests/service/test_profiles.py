"""A reader profile (``contextwright fit``) served as a preset: the ``profiles`` setting."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from contextwright.assembly.presets import _PRESETS
from contextwright.core.errors import ConfigError
from contextwright.eval.fit_report import dump_toml
from contextwright.eval.fit_space import START, candidate_config
from contextwright.service import ServiceConfig, create_app

CHUNKS = [
    {"id": f"c{i}", "text": f"Passage {i}: the value is {i}. " * 20, "score": 1 - i / 10} for i in range(6)
]


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "smol.toml"
    path.write_text(dump_toml({**candidate_config({**START, "amount": "cap:120"}), "fit": {"model": "m"}}))
    return path


@pytest.fixture(autouse=True)
def _forget_profiles() -> object:
    before = set(_PRESETS)
    yield None
    for name in set(_PRESETS) - before:
        del _PRESETS[name]


def test_a_request_names_a_served_profile_like_a_preset(profile: Path) -> None:
    with TestClient(create_app(ServiceConfig(profiles={"smol": str(profile)}))) as client:
        r = client.post(
            "/v1/assemble", json={"query": "value?", "chunks": CHUNKS, "preset": "smol", "budget": 1000}
        )
        assert r.status_code == 200, r.text
        assert r.json()["tokens"] <= 120  # the profile's ceiling, not the budget
        full = client.post(
            "/v1/assemble", json={"query": "value?", "chunks": CHUNKS, "preset": "qa", "budget": 1000}
        )
        assert full.json()["tokens"] > 120


def test_a_profile_can_be_the_server_default_and_is_read_relative_to_the_toml(
    profile: Path, tmp_path: Path
) -> None:
    toml = tmp_path / "service.toml"
    toml.write_text('[service]\npreset = "smol"\n\n[service.profiles]\nsmol = "smol.toml"\n')
    cfg = ServiceConfig.load(toml, env={})
    assert cfg.profiles == (("smol", str(tmp_path / "smol.toml")),)
    assert ServiceConfig.load(None, env=cfg.to_env()).profiles == cfg.profiles
    with TestClient(create_app(cfg)) as client:
        r = client.post("/v1/assemble", json={"query": "value?", "chunks": CHUNKS, "budget": 1000})
        assert r.status_code == 200 and r.json()["tokens"] <= 120


@pytest.mark.parametrize(
    ("profiles", "match"),
    [
        ({"qa": "x.toml"}, "'qa' is built in"),
        ({"bad name": "x.toml"}, "a name must be"),
        ({"ok": ""}, "needs the path of a profile file"),
    ],
)
def test_bad_profile_settings_are_refused(profiles: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ServiceConfig(profiles=profiles)  # type: ignore[arg-type]


def test_an_unreadable_profile_stops_the_start_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"service setting 'profiles', 'gone': cannot read config file"):
        create_app(ServiceConfig(profiles={"gone": str(tmp_path / "gone.toml")}))
