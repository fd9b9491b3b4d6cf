"""The chat client against a hostile OpenAI-compatible endpoint (issue 26, finding 6).

A real HTTP server on 127.0.0.1 answers with a deeply nested JSON reply (RecursionError ended an
eval run), drips its reply a byte at a time (the per-read timeout let one request take 43 s), or
sends 30 MB (accepted whole). Each must become an ``LLMError`` within the client's deadline, so
``eval --reader`` records a per-query error and goes on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("httpx")

from contextwright.clients.chat import ChatClient
from contextwright.core.errors import LLMError

GOOD = json.dumps({"choices": [{"message": {"content": "Paris"}, "finish_reason": "stop"}]}).encode()


class Hostile(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = self.path.split("/")[1]
        if mode == "nested":
            body = b'{"choices": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
        elif mode == "huge":
            body = b'{"choices": [{"message": {"content": "' + b"x" * 30_000_000 + b'"}}]}'
        else:
            body = GOOD
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if mode == "drip":
                for i in range(len(body)):  # bounded: ~60 bytes, 0.3 s apart
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.3)
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def _client(url: str, **kw: object) -> ChatClient:
    return ChatClient(url, model="m", timeout_s=2.0, retries=0, **kw)  # type: ignore[arg-type]


def test_a_deeply_nested_reply_is_an_llm_error(server: str) -> None:
    with _client(f"{server}/nested/v1") as client, pytest.raises(LLMError, match=r"nested|JSON"):
        client.chat([{"role": "user", "content": "q"}])


def test_a_dripping_reply_ends_at_the_whole_request_deadline(server: str) -> None:
    start = time.perf_counter()
    with _client(f"{server}/drip/v1") as client, pytest.raises(LLMError, match=r"deadline|timed out"):
        client.chat([{"role": "user", "content": "q"}])
    assert time.perf_counter() - start < 4.5  # 2 s deadline + at most one read timeout


def test_a_huge_reply_is_refused_past_the_cap(server: str) -> None:
    with _client(f"{server}/huge/v1") as client, pytest.raises(LLMError, match=r"4,194,304|bytes"):
        client.chat([{"role": "user", "content": "q"}])


def test_the_cap_is_a_setting_and_a_good_reply_passes(server: str) -> None:
    with _client(f"{server}/good/v1", max_reply_bytes=1_000) as client:
        assert client.chat([{"role": "user", "content": "q"}]).content == "Paris"
    from contextwright.core.errors import ConfigError

    with pytest.raises(ConfigError, match="max_reply_bytes"):
        _client(f"{server}/good/v1", max_reply_bytes=0)
