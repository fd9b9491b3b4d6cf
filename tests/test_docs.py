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


def test_lists_and_tables_render_as_lists_and_tables(site: Path) -> None:
    """Python-Markdown needs a blank line before a list or table that follows a paragraph (GitHub does
    not): without it the items would render as one run-on paragraph on the site."""
    for page in site.rglob("*.html"):
        body = re.sub(r"<pre.*?</pre>", "", page.read_text(encoding="utf-8"), flags=re.S)
        for paragraph in re.findall(r"<(?:p|li)>(.*?)</(?:p|li)>", body, flags=re.S):
            assert not re.search(r"\n(?:[-*]|\d+\.) |\n\|", paragraph), (
                f"{page.relative_to(site)}: a list or table rendered as text: {paragraph[:200]!r}"
            )


def test_readme_links_into_the_docs_resolve() -> None:
    """Every `docs/` link of the README names a page, and its `#anchor` a heading of that page."""
    from markdown.extensions.toc import slugify

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", readme)
    assert links
    for link, anchor in links:
        assert (REPO / link).is_file(), f"README links to {link}, which does not exist"
        if anchor:
            page = (REPO / link).read_text(encoding="utf-8")
            slugs = {slugify(h.replace("`", ""), "-") for h in re.findall(r"^#+ (.+)$", page, flags=re.M)}
            assert anchor in slugs, f"README links to {link}#{anchor}; its headings give {sorted(slugs)}"


def _readme_block(heading: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def test_readme_install_and_test_commands_are_what_ci_runs() -> None:
    """`.ci/run` is the README on a fresh machine: the same pip installs, then the same test command."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    ci_commands = [line.strip().replace(" -q", "") for line in ci.splitlines()]
    install = _readme_block("Install").split("#", 1)[0].strip()
    for command in install.split("&&"):
        assert command.strip() in ci_commands, f"README installs with {command.strip()!r}; .ci/run does not"
    test_command = _readme_block("Test").strip()
    tail = ci.split("== tests (README: test)", 1)[1]
    assert test_command in [line.strip() for line in tail.splitlines()], (test_command, tail)


def test_readme_is_a_first_screen() -> None:
    """What it is, install, test, the main command and a quickstart fit one screen; the rest is in docs/."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_screen = readme.split("\n## Documentation\n", 1)[0]
    assert len(first_screen.splitlines()) <= 80
    headings = re.findall(r"^## (.+)$", readme, flags=re.M)
    assert headings == ["Install", "Test", "Assemble", "Documentation"], headings
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f": {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"
        assert f"docs/{page.name}" in readme or page.name == "index.md", f"README does not link {page.name}"


def test_every_cli_command_is_in_the_command_table() -> None:
    pytest.importorskip("typer")
    import typer.main

    from contextwright.cli import app

    table = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").split("\n\n", 2)[1]
    commands = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    listed = set(re.findall(r"`contextwright ([\w-]+)`", table))
    assert listed == commands, f"docs/cli.md lists {sorted(listed)}; the CLI has {sorted(commands)}"
