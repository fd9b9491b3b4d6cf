"""Docs that work as written and offline: examples/service.toml, the 422 for a bad body, /docs without a CDN.

The Chromium checks (the /docs page renders offline, the inspector form clears a stale result) are in
tests/test_inspector.py, next to the browser fixtures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from contextwright.service import ServiceConfig, create_app

REPO = Path(__file__).resolve().parents[1]


def test_the_documented_service_toml_exists_and_serves_the_documented_request() -> None:
    readme = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    assert "contextwright serve --config examples/service.toml" in readme
    cfg = ServiceConfig.load(str(REPO / "examples" / "service.toml"), env={})
    assert (cfg.workers, cfg.preset, cfg.budget, cfg.port) == (2, "citations", 1000, 8000)
    body = {
        "query": "Who discovered X-rays?",
        "budget": 300,
        "preset": "citations",
        "chunks": [
            {
                "id": "a",
                "text": "Wilhelm Röntgen discovered X-rays in 1895.",
                "score": 0.9,
                "source": "xray.md",
            },
            {"id": "b", "text": "X-rays are electromagnetic radiation.", "score": 0.4},
        ],
    }
    with TestClient(create_app(cfg)) as client:
        out = client.post("/v1/assemble", json=body).json()
        default = client.post("/v1/assemble", json={"query": "q", "chunks": body["chunks"]}).json()
    assert out["budget"] == 300 and out["citations"][0]["source"] == "xray.md"
    assert default["budget"] == 1000  # the file's default budget


def test_a_body_that_is_not_json_is_a_422_as_the_docs_say() -> None:
    readme = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    assert "a body that is not valid JSON" in readme and "or an unparseable body" not in readme
    with TestClient(create_app(ServiceConfig(budget=300))) as client:
        response = client.post(
            "/v1/assemble", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 422
    assert response.json()["detail"] == "body.1: JSON decode error"


def test_docs_pages_reference_only_local_assets() -> None:
    with TestClient(create_app(ServiceConfig(budget=300))) as client:
        for path in ("/docs", "/redoc"):
            html = client.get(path).text
            assert "cdn.jsdelivr.net" not in html and "fonts.googleapis" not in html
            for src in re.findall(r'(?:src|href)="([^"]+)"', html):
                assert src.startswith("/docs/static/"), src
                assert client.get(src).status_code == 200
        assert client.get("/docs/static/nothing.js").status_code == 404
        assert "/docs/static/{name}" not in client.get("/openapi.json").json()["paths"]
