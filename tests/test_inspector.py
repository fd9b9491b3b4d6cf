"""The inspector page: its data and escaping in Python, and the page itself in headless Chromium."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextwright import Assembler
from contextwright.assembly.inspector import block_rows, inspection, render_page

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & </chunk>'
CHUNKS: list[dict[str, Any]] = [
    {
        "id": "a",
        "doc_id": "roentgen",
        "title": "Röntgen",
        "score": 0.9,
        "text": "Wilhelm Röntgen discovered X-rays in 1895.",
    },
    {
        "id": "b",
        "doc_id": "xray",
        "title": "X-ray",
        "score": 0.6,
        "text": "X-rays are electromagnetic radiation. " * 3,
    },
    {"id": "evil", "doc_id": "web", "title": "<b>bold</b> title", "score": 0.8, "text": HOSTILE},
    {"id": "b-copy", "doc_id": "mirror", "score": 0.3, "text": "X-rays are electromagnetic radiation. " * 3},
    {
        "id": "tail",
        "doc_id": "nobel",
        "score": 0.2,
        "text": "The first Nobel Prize in Physics went to Röntgen. " * 6,
    },
]


def cli() -> list[str]:
    """The ``contextwright`` command of this interpreter (the script, or the module without it)."""
    exe = Path(sys.executable).with_name("contextwright")
    return (
        [str(exe)] if exe.exists() else [sys.executable, "-c", "from contextwright.cli import main; main()"]
    )


def page_for(chunks: list[dict[str, Any]], budget: int, **options: Any) -> tuple[str, Any]:
    assembler = Assembler("qa", budget=budget, **options)
    ctx = assembler.assemble("who discovered x-rays?", chunks)
    return render_page(inspection(ctx, assembler, chunks, options={"budget": budget})), ctx


# -- the page as a string ---------------------------------------------------------


def test_untrusted_text_cannot_close_the_data_script() -> None:
    page, ctx = page_for(CHUNKS, 120)
    assert "evil" in {i for c in ctx.citations for i in c.chunk_ids}
    assert page.count("<script") == 2  # the JSON data and the page's own script
    assert "</script><script>" not in page and "<img src=x" not in page
    data = re.search(r'<script type="application/json" id="cw-data">(.*?)</script>', page, re.S)
    assert data is not None
    assert json.loads(data.group(1))["data"]["inputs"][2]["text"] == HOSTILE


def test_the_page_data_holds_the_chat_sent_and_its_reask() -> None:
    """The chat the page shows is :func:`contextwright.chat_messages`' (what ``ask`` sends), under the
    prompts given; the hostile chunk inside it stays inside the JSON."""
    from contextwright import chat_messages

    assembler = Assembler("qa", budget=120)
    ctx = assembler.assemble("who discovered x-rays?", CHUNKS)
    data = inspection(ctx, assembler, CHUNKS)
    chat = chat_messages(ctx)
    assert data["messages"] == chat["messages"] and data["reask_messages"] == chat["reask_messages"]
    assert data["messages"][-1]["role"] == "user" and ctx.text in data["messages"][-1]["content"]
    assert data["reask_messages"][0] != data["messages"][0]  # the re-ask's system prompt (light)
    bare = inspection(ctx, assembler, CHUNKS, system=None, reask_bare=None)
    assert [m["role"] for m in bare["messages"]] == ["user"] and "reask_messages" not in bare
    minimal = Assembler("qa", budget=120, format="minimal")
    plain = minimal.assemble("who discovered x-rays?", CHUNKS)
    assert "reask_messages" not in inspection(plain, minimal, CHUNKS)  # no labels: never a bare [1]
    page = render_page(data)
    assert page.count("<script") == 2 and "<img src=x" not in page


def test_the_page_has_no_external_assets() -> None:
    page, _ = page_for(CHUNKS, 120)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


@pytest.mark.parametrize("fmt", ["xml", "numbered", "sources", "markdown", "grouped", "minimal"])
def test_block_rows_locate_each_block_and_count_its_tokens(fmt: str) -> None:
    assembler = Assembler("qa", budget=400, format=fmt)
    ctx = assembler.assemble("q", CHUNKS)
    rows = block_rows(ctx, assembler.pipeline.format, assembler.tokenizer)
    assert [r["index"] for r in rows] == [c.index for c in ctx.citations]
    previous_end = 0
    for row, chunk in zip(rows, ctx.chunks, strict=True):
        assert row["start"] >= previous_end
        span = ctx.text[row["start"] : row["end"]]
        assert assembler.pipeline.format.escape(chunk.text) in span
        previous_end = row["end"]
    # The blocks plus the frame and document headers make the whole count (the last
    # piece loses its trailing newlines, which may merge one token).
    assert sum(r["tokens"] for r in rows) <= ctx.tokens + 1


def test_xml_blocks_plus_frame_are_the_exact_count(cl100k: Any) -> None:
    assembler = Assembler("qa", budget=400, format="xml")
    ctx = assembler.assemble("q", CHUNKS)
    rows = block_rows(ctx, assembler.pipeline.format, assembler.tokenizer)
    frame = len(cl100k.encode("<context>\n")) + len(cl100k.encode("</context>"))
    assert sum(r["tokens"] for r in rows) + frame == ctx.tokens


def test_cli_inspect_writes_a_page_for_one_query_of_a_query_file(tmp_path: Path) -> None:
    src = tmp_path / "queries.jsonl"
    src.write_text(
        "\n".join(
            json.dumps({"id": f"q{i}", "question": f"question {i}", "chunks": CHUNKS}) for i in range(3)
        )
    )
    out = tmp_path / "page.html"
    run = subprocess.run(
        [*cli(), "inspect", str(src), "--item", "1", "--budget", "150", "--html", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "→" in run.stderr and str(out) in run.stderr
    page = out.read_text()
    data = json.loads(re.search(r'id="cw-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert data["data"]["query"] == "question 1" and data["data"]["budget"] == 150


def test_cli_inspect_shows_the_chat_under_the_prompts_given_and_refuses_a_typo(tmp_path: Path) -> None:
    src = tmp_path / "chunks.json"
    src.write_text(json.dumps(CHUNKS))
    out = tmp_path / "page.html"
    base = [*cli(), "inspect", str(src), "--query", "who discovered x-rays?", "--budget", "150"]
    run = subprocess.run(
        [*base, "--system", "strict", "--reask-bare", "none", "--html", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    page = out.read_text()
    data = json.loads(re.search(r'id="cw-data">(.*?)</script>', page, re.S).group(1))["data"]  # type: ignore[union-attr]
    from contextwright import chat_messages

    ctx = Assembler("qa", budget=150).assemble("who discovered x-rays?", CHUNKS)
    assert data["messages"] == chat_messages(ctx, "strict", None)["messages"]
    assert "reask_messages" not in data
    typo = subprocess.run(
        [*base, "--system", "strikt", "--html", str(tmp_path / "x.html")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = " ".join(typo.stderr.split())
    assert typo.returncode == 2 and "--system" in said and "'strikt'" in said
    assert not (tmp_path / "x.html").exists()


def test_cli_inspect_rejects_an_item_out_of_range(tmp_path: Path) -> None:
    src = tmp_path / "chunks.json"
    src.write_text(json.dumps(CHUNKS))
    run = subprocess.run(
        [*cli(), "inspect", str(src), "--item", "4", "--budget", "100", "--html", str(tmp_path / "x.html")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "--item 4 is out of range: the input holds 1 query" in run.stderr


# -- in Chromium -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Chromium not installed at /usr/bin/chromium (Debian package 'chromium')")
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_FLAGS,
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    """A real uvicorn serving the app on 127.0.0.1 (in a thread of this process)."""
    uvicorn = pytest.importorskip("uvicorn")
    from contextwright.service import ServiceConfig, create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(ServiceConfig(budget=300)), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise AssertionError("uvicorn did not start within 20 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def watch_errors(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")  # the 422 we ask for
            else None
        ),
    )
    return errors


@pytest.mark.browser
def test_static_page_shows_blocks_drops_and_hostile_text_as_text(
    browser_context: Any, tmp_path: Path
) -> None:
    html, ctx = page_for(CHUNKS, 120)
    path = tmp_path / "inspect.html"
    path.write_text(html)
    page = browser_context.new_page()
    errors = watch_errors(page)
    page.goto(path.as_uri())
    page.wait_for_selector("#cw-bar .block[data-index]")
    assert page.locator("#cw-bar .block[data-index]").count() == len(ctx.citations)
    labels = page.locator("#cw-bar .block[data-index] .n").all_text_contents()
    assert labels == [c.label for c in ctx.citations]
    dropped = page.locator("#cw-dropped tr.dropped").all_text_contents()
    assert len(dropped) == len(ctx.report.dropped)
    assert any("duplicate_of" in row and "b-copy" in row for row in dropped)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#cw-text img, #cw-dropped img, #cw-text script, #cw-citations b b").count() == 0
    assert "<script>window.__pwned = 1</script>" in page.locator("#cw-text").text_content()
    assert page.locator("#cw-zones").text_content().count("documents") == 1
    # the chat sent: each message's role and text, the hostile chunk as text; of the re-ask, what changes
    from contextwright import chat_messages

    chat = chat_messages(ctx)
    shown = page.locator("#cw-messages .msg")
    assert shown.count() == len(chat["messages"])
    assert page.locator("#cw-messages .role").all_text_contents() == [m["role"] for m in chat["messages"]]
    assert page.locator("#cw-messages pre").all_text_contents() == [m["content"] for m in chat["messages"]]
    assert page.locator("#cw-messages img, #cw-messages script").count() == 0
    assert page.locator("#cw-reask").is_visible()
    changed = [
        m["content"] for m, first in zip(chat["reask_messages"], chat["messages"], strict=True) if m != first
    ]
    assert page.locator("#cw-reask-messages pre").all_text_contents() == changed and len(changed) == 1
    page.screenshot(path=str(ARTIFACTS / "inspector_static.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
def test_service_page_assembles_pasted_chunks_and_redraws(browser_context: Any, service_url: str) -> None:
    page = browser_context.new_page()
    errors = watch_errors(page)
    page.goto(service_url)
    page.fill("#cw-chunks", json.dumps(CHUNKS))
    page.fill("#cw-query", "who discovered x-rays?")
    page.fill("#cw-budget", "120")
    page.click("#cw-submit")
    page.wait_for_selector("#cw-bar .block[data-index]")
    expected = Assembler("qa", budget=120).assemble("who discovered x-rays?", CHUNKS)
    assert page.locator("#cw-bar .block[data-index]").count() == len(expected.citations)
    assert page.locator("#cw-text").text_content() == expected.text
    assert page.locator("#cw-dropped tr.dropped").count() == len(expected.report.dropped)
    assert page.evaluate("window.__pwned") is None
    from contextwright import chat_messages

    sent = [m["content"] for m in chat_messages(expected)["messages"]]
    assert page.locator("#cw-messages pre").all_text_contents() == sent  # the service's messages: true
    page.screenshot(path=str(ARTIFACTS / "inspector_service.png"), full_page=True)

    page.select_option("#cw-format", "numbered")
    page.fill("#cw-budget", "400")
    page.click("#cw-submit")
    expect = pytest.importorskip("playwright.sync_api").expect
    expect(page.locator("#cw-text")).to_have_text(
        re.compile(r"^\[1\]")
    )  # a locator wait: the CSP forbids eval
    # a locator wait on the count: the first answer's lean text starts with "[1]" too, so the wait above
    # can pass before the second answer is drawn (one suite run counted the first bar's 3 blocks)
    expect(page.locator("#cw-bar .block[data-index]")).to_have_count(5 - 1)  # everything but the duplicate

    page.fill("#cw-chunks", json.dumps([{"text": "a", "score": "high"}]))
    page.click("#cw-submit")
    page.wait_for_selector("#cw-error:not([hidden])")
    assert "body.chunks.0.score" in page.locator("#cw-error").text_content()
    assert errors == []


@pytest.mark.browser
def test_docs_page_renders_the_operations_in_chromium_offline(browser_context: Any, service_url: str) -> None:
    page = browser_context.new_page()
    errors = watch_errors(page)
    outside: list[str] = []

    def only_local(route: Any) -> None:  # offline: anything but the server itself is refused
        if route.request.url.startswith(service_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(service_url + "docs")
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)
    paths = page.locator(".opblock-summary-path").all_text_contents()
    assert any("/v1/assemble" in p for p in paths) and any("/healthz" in p for p in paths)
    assert outside == [] and errors == []


@pytest.mark.browser
def test_inspector_form_clears_the_previous_result_when_a_request_fails(
    browser_context: Any, service_url: str
) -> None:
    page = browser_context.new_page()
    page.goto(service_url)
    page.fill("#cw-chunks", json.dumps(CHUNKS))
    page.fill("#cw-query", "who discovered x-rays?")
    page.fill("#cw-budget", "120")
    page.click("#cw-submit")
    page.wait_for_selector("#cw-bar .block[data-index]")
    assert page.locator("#cw-result").is_visible()
    page.fill("#cw-chunks", json.dumps([{"text": "a", "score": "high"}]))
    page.click("#cw-submit")
    page.wait_for_selector("#cw-error:not([hidden])")
    assert page.locator("#cw-result").is_hidden()
    assert page.locator("#cw-text").text_content() == ""
    assert page.locator("#cw-bar .block").count() == 0
    # a request that works again shows the new result
    page.fill("#cw-chunks", json.dumps(CHUNKS))
    page.click("#cw-submit")
    page.wait_for_selector("#cw-result:not([hidden])")
    assert page.locator("#cw-error").is_hidden()
