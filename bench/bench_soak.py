"""Soak: the service under a steady mixed load for minutes, with its dependencies failing under it.

A real ``contextwright serve`` (uvicorn, 2 worker processes) on 127.0.0.1 with API keys, a
per-key rate limit, a PostgreSQL chunk store (expansion) and a local OpenAI-compatible chat
endpoint for ``llm_compress``. A client process-local asyncio loop sends a fixed rate of mixed
requests for ``--duration`` seconds:

* valid queries from ``../shared/data/nq_bm25_dev300.jsonl.gz`` (expand from the store, dedup,
  fit, order), some of them with an ``llm_compress`` stage;
* oversize bodies (413), malformed JSON (400), missing or wrong keys (401);
* every 20 s a burst over the rate limit from one key (429 with Retry-After).

Faults on a schedule (fractions of the duration):

* 25 %: PostgreSQL stopped for 20 s (``pg_ctlcluster VERSION CLUSTER stop``), then started;
* 50 %: the chat endpoint killed (SIGKILL) for 15 s, then started again;
* 70 %: three clients that send a request body one byte a second (cut off by ``body_timeout_s``).

It prints: requests by status, the 5xx count, p50/p99 latency per phase, RSS of each worker at
start and end, the requests answered during each fault window, and the time to recover after
each fault (first request whose expansion, or LLM compression, works again).

PostgreSQL: use a cluster of your own, not one that other work depends on. On Debian/Ubuntu::

    pg_createcluster 15 soak -p 5433 && pg_ctlcluster 15 soak start
    su postgres -c "psql -p 5433 -c \"ALTER USER postgres PASSWORD 'postgres'\" -c 'CREATE DATABASE soak'"
    python bench/bench_soak.py --duration 600 --pg-dsn postgresql://postgres:postgres@127.0.0.1:5433/soak \
        --pg-cluster "15 soak"

Bounded: every loop ends at ``--duration`` (plus a 30 s drain); only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import http.server
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "data" / "nq_bm25_dev300.jsonl.gz"
CORPUS = REPO.parent / "shared" / "data" / "nq_corpus_chunks.jsonl.gz"

LOAD_KEYS = [f"soak-load-key-{i}-0123456789abcdef" for i in range(4)]
BURST_KEY = "soak-burst-key-0123456789abcdef"
WEIGHTS = {"valid": 0.82, "llm": 0.05, "oversize": 0.04, "malformed": 0.04, "badkey": 0.05}
BUDGET = 800


# -- the fake chat endpoint (a separate process, so that it can be killed) -------------------


class _Chat(http.server.BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: replies with the passage's first sentence (extractive)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        user = request.get("messages", [{}])[-1].get("content", "")
        passage = user.split("Passage:\n", 1)[-1]
        first = re.split(r"(?<=[.!?])\s+", passage.strip(), maxsplit=1)[0]
        body = json.dumps(
            {
                "id": "soak",
                "object": "chat.completion",
                "model": request.get("model", "fake"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": first}, "finish_reason": "stop"}
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def run_fake_llm(port: int) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Chat)
    server.daemon_threads = True
    server.serve_forever()


def start_fake_llm(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, __file__, "--fake-llm", str(port)])
    wait_port(port, 10)
    return proc


# -- helpers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker_pids(parent: int) -> list[int]:
    """uvicorn's worker processes: the children of the server that run the app."""
    out = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"resource_tracker" not in cmdline:
            out.append(pid)
    return sorted(out)


def load_store(dsn: str) -> None:
    from contextwright.stores import PostgresStore

    with PostgresStore(dsn, timeout_s=30) as store:
        if store.count() < 3759:
            store.load_jsonl(CORPUS)


def load_queries() -> list[dict[str, Any]]:
    out = []
    with gzip.open(DEV, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            chunks = [
                {k: c[k] for k in ("id", "doc_id", "title", "index", "text", "score")} for c in row["chunks"]
            ]
            out.append({"query": row["question"], "chunks": chunks})
    return out


# -- the schedule ---------------------------------------------------------------------------


@dataclass
class Window:
    name: str
    start: float
    end: float = float("inf")
    recovered: float | None = None  # first working request after the end
    note: str = ""


@dataclass
class Result:
    sent: float
    kind: str
    status: int
    ms: float
    expand_ok: bool | None = None
    llm_ok: bool | None = None


@dataclass
class Soak:
    url: str
    port: int
    llm_port: int
    duration: float
    rate: float
    pg_cluster: list[str] | None
    bodies: dict[str, list[bytes]]
    results: list[Result] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    t0: float = 0.0
    t0_wall: float = 0.0
    llm: subprocess.Popen[bytes] | None = None
    slow: list[tuple[float, int, float]] = field(default_factory=list)  # (start, status, seconds)
    dropped: int = 0

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def run(self) -> None:
        import httpx

        limits = httpx.Limits(max_connections=128, max_keepalive_connections=128)
        async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=30) as client:
            self.t0, self.t0_wall = time.monotonic(), time.time()
            tasks = [
                asyncio.create_task(self._load(client)),
                asyncio.create_task(self._bursts(client)),
                asyncio.create_task(self._faults()),
            ]
            await asyncio.gather(*tasks)

    async def _load(self, client: Any) -> None:
        rng = random.Random(0)
        kinds = list(WEIGHTS)
        weights = [WEIGHTS[k] for k in kinds]
        interval = 1.0 / self.rate
        in_flight: set[asyncio.Task[None]] = set()
        n = 0
        while True:
            due = n * interval
            if due >= self.duration:
                break
            delay = due - self.now()
            if delay > 0:
                await asyncio.sleep(delay)
            n += 1
            if len(in_flight) >= 1000:  # bounded: a stalled server must not grow the client without end
                self.dropped += 1
                continue
            kind = rng.choices(kinds, weights)[0]
            task = asyncio.create_task(self._one(client, kind, rng))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        if in_flight:
            await asyncio.wait(in_flight, timeout=30)

    async def _one(self, client: Any, kind: str, rng: random.Random) -> None:
        key = rng.choice(LOAD_KEYS)
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        pool = self.bodies["valid" if kind == "badkey" else kind]
        body = pool[rng.randrange(len(pool))]
        if kind == "badkey":
            headers["authorization"] = rng.choice(["Bearer not-a-key-0123456789abcdef", ""])
        sent = self.now()
        try:
            r = await client.post("/v1/assemble", content=body, headers=headers)
            status, content = r.status_code, r.content
        except Exception:
            status, content = 0, b""
        result = Result(sent, kind, status, (self.now() - sent) * 1000)
        if status == 200 and kind in ("valid", "llm"):
            stages = {s["stage"]: s for s in json.loads(content)["report"]["stages"]}
            if "expand" in stages:
                result.expand_ok = not any("fail" in n or "circuit" in n for n in stages["expand"]["notes"])
            if "llm_compress" in stages:
                result.llm_ok = bool(stages["llm_compress"]["changed"])
        self.results.append(result)

    async def _bursts(self, client: Any) -> None:
        """Every 20 s, 150 requests at once from one key: over its bucket."""
        body = self.bodies["valid"][0]
        headers = {"authorization": f"Bearer {BURST_KEY}", "content-type": "application/json"}

        async def one() -> None:
            sent = self.now()
            try:
                status = (await client.post("/v1/assemble", content=body, headers=headers)).status_code
            except Exception:
                status = 0
            self.results.append(Result(sent, "burst", status, (self.now() - sent) * 1000))

        t = 10.0
        while t < self.duration - 5:
            await asyncio.sleep(max(0.0, t - self.now()))
            await asyncio.gather(*(one() for _ in range(150)))
            t += 20.0

    async def _faults(self) -> None:
        d = self.duration
        schedule = [(0.25 * d, self._pg_fault), (0.50 * d, self._llm_fault), (0.70 * d, self._slow_bodies)]
        for at, fault in schedule:
            await asyncio.sleep(max(0.0, at - self.now()))
            await fault()

    async def _pg_fault(self) -> None:
        if not self.pg_cluster:
            return
        w = Window("pg_down", self.now(), note=f"pg_ctlcluster {' '.join(self.pg_cluster)} stop, 20 s, start")
        self.windows.append(w)
        await asyncio.to_thread(
            subprocess.run, ["pg_ctlcluster", *self.pg_cluster, "stop", "-m", "fast"], check=True
        )
        await asyncio.sleep(max(0.0, w.start + 20 - self.now()))
        await asyncio.to_thread(subprocess.run, ["pg_ctlcluster", *self.pg_cluster, "start"], check=True)
        w.end = self.now()

    async def _llm_fault(self) -> None:
        w = Window("llm_down", self.now(), note="chat endpoint SIGKILLed, 15 s, started again")
        self.windows.append(w)
        if self.llm is not None:
            self.llm.kill()
            await asyncio.to_thread(self.llm.wait)
        await asyncio.sleep(15)
        self.llm = await asyncio.to_thread(start_fake_llm, self.llm_port)
        w.end = self.now()

    async def _slow_bodies(self) -> None:
        w = Window("slow_body", self.now(), note="3 clients sending a 200-byte body at 1 byte/s")
        self.windows.append(w)
        await asyncio.gather(*(self._slow_client() for _ in range(3)))
        w.end = self.now()

    async def _slow_client(self) -> None:
        start = self.now()
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (
            "POST /v1/assemble HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {LOAD_KEYS[0]}\r\nContent-Length: 200\r\n\r\n"
        )
        writer.write(head.encode())
        status = 0
        for _ in range(200):
            try:
                writer.write(b" ")
                await writer.drain()
                line = await asyncio.wait_for(reader.readline(), 1.0)
            except TimeoutError:
                continue
            except OSError:
                break
            if line.startswith(b"HTTP/1.1"):
                status = int(line.split()[1])
                break
            if not line:
                break
        self.slow.append((start, status, self.now() - start))
        writer.close()


# -- the report ------------------------------------------------------------------------------


def phase_of(t: float, windows: list[Window]) -> str:
    for w in windows:
        if w.start <= t < w.end:
            return w.name
        if w.end <= t < w.end + 10:
            return w.name.replace("_down", "") + "_after"
    return "baseline"


def server_side(log: Path, soak: Soak) -> dict[str, list[float]]:
    """Server-side latencies (the access log's ``ms``) of 200s on /v1/assemble, by phase."""
    out: dict[str, list[float]] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        with contextlib.suppress(ValueError, KeyError):
            row = json.loads(line)
            t = row["ts"] - soak.t0_wall
            if row["path"] == "/v1/assemble" and row["status"] == 200 and 0 <= t <= soak.duration:
                out.setdefault(phase_of(t, soak.windows), []).append(row["ms"])
    return out


def report(
    soak: Soak, rss: dict[int, tuple[float, float]], args: argparse.Namespace, log: Path
) -> dict[str, Any]:
    results = soak.results
    served = server_side(log, soak)
    by_status: dict[int, int] = {}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    by_kind: dict[str, dict[int, int]] = {}
    for r in results:
        counts = by_kind.setdefault(r.kind, {})
        counts[r.status] = counts.get(r.status, 0) + 1
    phases: dict[str, list[Result]] = {}
    for r in results:
        phases.setdefault(phase_of(r.sent, soak.windows), []).append(r)
    # Recovery: the first request sent after the fault ended whose dependency worked again.
    for w in soak.windows:
        probe = {"pg_down": "expand_ok", "llm_down": "llm_ok"}.get(w.name)
        if probe is None:
            continue
        ok = sorted(r.sent for r in results if r.sent >= w.end and getattr(r, probe))
        w.recovered = ok[0] - w.end if ok else None
    out: dict[str, Any] = {
        "duration_s": args.duration,
        "rate": args.rate,
        "requests": len(results),
        "client_dropped": soak.dropped,
        "by_status": dict(sorted(by_status.items())),
        "by_kind": by_kind,
        "5xx": sum(n for s, n in by_status.items() if s >= 500),
        "transport_errors": by_status.get(0, 0),
        "phases": {},
        "windows": [],
        "slow_bodies": [{"status": s, "seconds": round(sec, 1)} for _, s, sec in soak.slow],
        "rss_mb": {
            str(pid): {"start": round(a, 1), "end": round(b, 1), "growth_pct": round(100 * (b - a) / a, 1)}
            for pid, (a, b) in rss.items()
        },
    }
    for name, rs in phases.items():
        valid = [r.ms for r in rs if r.kind == "valid" and r.status == 200]
        span = max(r.sent for r in rs) - min(r.sent for r in rs) or 1.0
        out["phases"][name] = {
            "requests": len(rs),
            "req_per_s": round(len(rs) / span, 1),
            "valid_200": len(valid),
            "p50_ms": round(pct(valid, 50), 1),
            "p99_ms": round(pct(valid, 99), 1),
            "server_p50_ms": round(pct(served.get(name, []), 50), 1),
            "server_p99_ms": round(pct(served.get(name, []), 99), 1),
            "5xx": sum(1 for r in rs if r.status >= 500),
        }
    for w in soak.windows:
        inside = [r for r in results if w.start <= r.sent < w.end]
        answered = sum(1 for r in inside if r.status)
        valid = [r.ms for r in inside if r.kind == "valid" and r.status == 200]
        out["windows"].append(
            {
                "fault": w.name,
                "what": w.note,
                "from_s": round(w.start, 1),
                "to_s": round(w.end, 1),
                "sent": len(inside),
                "answered": answered,
                "answered_200": sum(1 for r in inside if r.status == 200),
                "5xx": sum(1 for r in inside if r.status >= 500),
                "valid_p50_ms": round(pct(valid, 50), 1),
                "valid_p99_ms": round(pct(valid, 99), 1),
                "recovery_s": None if w.recovered is None else round(w.recovered, 2),
            }
        )
    return out


def print_report(out: dict[str, Any]) -> None:
    print(
        f"\n== soak: {out['duration_s']:g} s at {out['rate']:g} req/s, {out['requests']} requests "
        f"({out['client_dropped']} not sent: client backlog) =="
    )
    print("by status:", ", ".join(f"{s}: {n}" for s, n in out["by_status"].items()))
    print(f"5xx: {out['5xx']}   transport errors: {out['transport_errors']}")
    for kind, counts in out["by_kind"].items():
        print(f"  {kind:<10}", ", ".join(f"{s}: {n}" for s, n in sorted(counts.items())))
    print(
        f"\n{'phase':<16} {'requests':>9} {'req/s':>7} {'valid 200':>10} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'server p50':>11} {'server p99':>11} {'5xx':>5}"
    )
    for name, p in out["phases"].items():
        print(
            f"{name:<16} {p['requests']:>9} {p['req_per_s']:>7} {p['valid_200']:>10} {p['p50_ms']:>8} "
            f"{p['p99_ms']:>8} {p['server_p50_ms']:>11} {p['server_p99_ms']:>11} {p['5xx']:>5}"
        )
    print("(p50/p99: the client's, queueing included; server: the access log's time in the server)")
    print(
        f"\n{'fault':<10} {'window s':>13} {'sent':>6} {'answered':>9} {'200':>6} {'5xx':>4} {'p50':>7} {'p99':>7} {'recovery s':>11}"
    )
    for w in out["windows"]:
        span = f"{w['from_s']}-{w['to_s']}"
        print(
            f"{w['fault']:<10} {span:>13} {w['sent']:>6} {w['answered']:>9} {w['answered_200']:>6} {w['5xx']:>4} "
            f"{w['valid_p50_ms']:>7} {w['valid_p99_ms']:>7} {w['recovery_s']!s:>11}"
        )
    print("slow-body clients (status, seconds until cut off):", out["slow_bodies"])
    print("\nRSS per worker (MB):")
    for pid, r in out["rss_mb"].items():
        print(f"  pid {pid}: start {r['start']}  end {r['end']}  growth {r['growth_pct']} %")


async def warm_up(url: str, bodies: list[bytes]) -> None:
    import httpx

    # No keep-alive: each request is a new connection, so both workers accept their share.
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        for start in range(0, 3 * len(bodies), 8):
            await asyncio.gather(
                *(
                    client.post(
                        "/v1/assemble",
                        content=bodies[i % len(bodies)],
                        headers={
                            "authorization": f"Bearer {LOAD_KEYS[i % 4]}",
                            "content-type": "application/json",
                        },
                    )
                    for i in range(start, start + 8)
                )
            )


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600, help="seconds of load (default 600)")
    ap.add_argument("--rate", type=float, default=200, help="requests per second (default 200)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4, help="assembly threads per worker")
    ap.add_argument("--pg-dsn", default="postgresql://postgres:postgres@127.0.0.1:5433/soak")
    ap.add_argument(
        "--pg-cluster", default="15 soak", help="'VERSION NAME' for pg_ctlcluster; '' skips the fault"
    )
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--fake-llm", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fake_llm:
        run_fake_llm(args.fake_llm)
        return
    import httpx

    load_store(args.pg_dsn)
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    keys = tmp / "keys.txt"
    keys.write_text("".join(f"load{i} {k}\n" for i, k in enumerate(LOAD_KEYS)) + f"burst {BURST_KEY}\n")
    llm_port, port = free_port(), free_port()
    env = {
        **os.environ,
        "CONTEXTWRIGHT_BUDGET": str(BUDGET),
        "CONTEXTWRIGHT_STORE_URL": args.pg_dsn,
        "CONTEXTWRIGHT_API_KEYS_FILE": str(keys),
        "CONTEXTWRIGHT_RATE_LIMIT_PER_S": "60",  # per key and worker process
        "CONTEXTWRIGHT_RATE_LIMIT_BURST": "30",
        # Every load client comes from 127.0.0.1 (as behind a proxy), and some send bad keys on
        # purpose: a per-address failed-key limit would lock the good ones out too.
        "CONTEXTWRIGHT_AUTH_FAIL_LIMIT": "0",
        "CONTEXTWRIGHT_MAX_BODY_BYTES": "200000",
        "CONTEXTWRIGHT_BODY_TIMEOUT_S": "10",
        "CONTEXTWRIGHT_ALLOW_NETWORK_STAGES": "true",
        "CONTEXTWRIGHT_TIMEOUT_S": "5",
        "CONTEXTWRIGHT_THREADS": str(args.threads),
    }
    cmd = [
        sys.executable,
        "-c",
        "from contextwright.cli import main; main()",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(args.workers),
        "--log-level",
        "warning",
    ]
    log = (tmp / "server.log").open("wb")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    llm = start_fake_llm(llm_port)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"server did not start; see {tmp / 'server.log'}")
            time.sleep(0.2)
        queries = load_queries()
        expand = [
            {"type": "expand", "window": 1},
            {"type": "exact_dedup"},
            {"type": "token_budget", "policy": "greedy"},
            {"type": "auto_order"},
        ]
        llm_stage = {
            "type": "llm_compress",
            "base_url": f"http://127.0.0.1:{llm_port}/v1",
            "model": "fake",
            "api_key_env": "",
            "timeout_s": 1.0,
            "retries": 0,
            "max_concurrency": 4,
        }
        bodies = {
            "valid": [json.dumps({**q, "config": {"stages": expand}}).encode() for q in queries],
            "llm": [
                json.dumps(
                    {
                        "query": q["query"],
                        "chunks": q["chunks"][:8],
                        "budget": 300,
                        "config": {
                            "stages": [
                                {"type": "exact_dedup"},
                                llm_stage,
                                {"type": "token_budget"},
                                {"type": "score_order"},
                            ]
                        },
                    }
                ).encode()
                for q in queries
            ],
            "oversize": [json.dumps({"query": "q", "chunks": [{"text": "x" * 90_000}] * 3}).encode()],
            "malformed": [b'{"query": "q", "chunks": [', b"not json at all", b'{"query": "\xff"}'],
        }
        # Warm up both workers (tokenizer, assemblers, token-count caches) on every query before
        # measuring, so that RSS at start is the steady state and not an empty cache.
        asyncio.run(warm_up(url, bodies["valid"] + bodies["llm"]))
        pids = worker_pids(server.pid)
        rss_start = {pid: rss_mb(pid) for pid in pids}
        soak = Soak(
            url, port, llm_port, args.duration, args.rate, args.pg_cluster.split() or None, bodies, llm=llm
        )
        print(
            f"soak: {args.duration:g} s at {args.rate:g} req/s against {url} (workers {pids}); log {tmp / 'server.log'}",
            flush=True,
        )
        with contextlib.suppress(ImportError):
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        asyncio.run(soak.run())
        rss = {pid: (rss_start[pid], rss_mb(pid)) for pid in pids if Path(f"/proc/{pid}").exists()}
        llm = soak.llm or llm
        out = report(soak, rss, args, tmp / "server.log")
        print_report(out)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
    finally:
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(30)
        if server.poll() is None:
            server.kill()
        llm.kill()
        if args.pg_cluster:
            subprocess.run(
                ["pg_ctlcluster", *args.pg_cluster.split(), "start"], check=False, capture_output=True
            )


if __name__ == "__main__":
    main()
