"""The documentation site: `mkdocs build --strict` passes (links and references cannot rot), the API
reference is generated from the docstrings, and every `docs/` link in the README points at a page.

The examples inside the pages are run by tests/test_readme.py, which reads `docs/**/*.md` too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_site_builds_strict_with_the_api_reference(site: Path) -> None:
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("contextwright.assemble", "contextwright.Assembler", "contextwright.resolve_citations"):
        assert name in api, name
    # Generated from the docstrings, not typed by hand: a sentence from Assembler's docstring is there.
    assert "A reusable assembler" in api


def test_site_loads_no_assets_from_the_network(site: Path) -> None:
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        remote = re.findall(r"""<(?:script|link)[^>]+(?:src|href)=["'](https?://[^"']+)""", html)
        assert not remote, f"{page.relative_to(site)} loads {remote}"


def test_readme_links_into_the_docs_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    for link in links:
        assert (REPO / link).is_file(), f"README links to {link}, which does not exist"
