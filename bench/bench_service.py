"""Throughput and latency of ``POST /v1/assemble`` next to the in-process ``Assembler.assemble`` call.

The 20-chunk queries of nq_bm25_dev300 are posted to a real ``contextwright serve``
(uvicorn) on 127.0.0.1 with 1 and 2 worker processes, driven from a second process:
``wrk`` (C, one thread, keep-alive connections; preferred because a Python driver
would take CPU from the server on this 2-core machine) or, without wrk, an httpx
driver in a subprocess. Each server is warmed up first (every query once), then
measured twice, each run bounded in time and (httpx) in count:

* sequential: one connection, so latency is the service time of one request;
  its p50 over the in-process p50 is the HTTP overhead ratio;
* loaded: each of ``--connections`` (default 2 and 4) concurrent connections, for
  requests/s and p50/p99. The driver is closed-loop: each connection sends its next
  request when the previous one is answered, so more connections mean more queueing.

The targets (>= 300 req/s with 2 workers, p99 < 50 ms, HTTP overhead <= 3x the
in-process call) are checked for every loaded run with 2 workers.

Run: ``python bench/bench_service.py [--limit N] [--duration S] [--connections 2,4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", HERE.parent.parent / "shared" / "data"))
QUERIES = DATA / "nq_bm25_dev300.jsonl.gz"

WRK_SCRIPT = """
local bodies = {}
for line in io.lines("%(bodies)s") do bodies[#bodies + 1] = line end
local i = 0
request = function()
  i = i %% #bodies + 1
  return wrk.format("POST", "/v1/assemble", {["Content-Type"] = "application/json"}, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'CWJSON {"requests":%%d,"duration_s":%%f,"p50_ms":%%f,"p99_ms":%%f,"max_ms":%%f,"non2xx":%%d,"errors":%%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3,
    latency.max / 1e3, e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def load_bodies(limit: int, budget: int) -> list[tuple[str, list[dict[str, Any]], bytes]]:
    import gzip

    out = []
    with gzip.open(QUERIES, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            chunks = [
                {k: c[k] for k in ("id", "doc_id", "title", "index", "text", "score")} for c in row["chunks"]
            ]
            body = json.dumps({"query": row["question"], "chunks": chunks, "budget": budget}).encode()
            out.append((row["question"], chunks, body))
            if len(out) >= limit:
                break
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def in_process(
    items: list[tuple[str, list[dict[str, Any]], bytes]], budget: int, rounds: int
) -> dict[str, float]:
    """Per-call latency of Assembler.assemble (warm token cache, as in the server)."""
    from contextwright import Assembler

    assembler = Assembler("qa", budget=budget)
    for q, chunks, _ in items:
        assembler.assemble(q, chunks)
    times = []
    start = time.perf_counter()
    for _ in range(rounds):
        for q, chunks, _ in items:
            t = time.perf_counter()
            assembler.assemble(q, chunks)
            times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    return {
        "rps": len(times) / total,
        "p50_ms": pct(times, 50) * 1e3,
        "p99_ms": pct(times, 99) * 1e3,
        "mean_ms": statistics.fmean(times) * 1e3,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(workers: int, budget: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    exe = Path(sys.executable).with_name("contextwright")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from contextwright.cli import main; main()"]
    cmd += [
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
    ]
    env = {**os.environ, "CONTEXTWRIGHT_BUDGET": str(budget)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start within 60 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_wrk(url: str, script: Path, connections: int, duration: float) -> dict[str, float]:
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "5s",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("CWJSON ")), None)
    if line is None:
        raise SystemExit(f"wrk failed: {out.stdout}\n{out.stderr}")
    r: dict[str, float] = json.loads(line[7:])
    r["rps"] = r["requests"] / r["duration_s"]
    return r


def drive_httpx(url: str, bodies_path: str, connections: int, duration: float, max_requests: int) -> None:
    """The fallback driver (runs in its own process): prints one CWJSON line."""
    import httpx

    bodies = Path(bodies_path).read_bytes().splitlines()
    latencies: list[float] = []
    bad = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def worker(offset: int) -> None:
        i = offset
        with httpx.Client(base_url=url, timeout=5) as client:
            while time.perf_counter() < stop_at:
                with lock:
                    if len(latencies) >= max_requests:
                        return
                t = time.perf_counter()
                r = client.post(
                    "/v1/assemble",
                    content=bodies[i % len(bodies)],
                    headers={"content-type": "application/json"},
                )
                dt = time.perf_counter() - t
                with lock:
                    latencies.append(dt)
                    bad[0] += r.status_code != 200
                i += connections

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    summary = {
        "requests": len(latencies),
        "duration_s": elapsed,
        "p50_ms": pct(latencies, 50) * 1e3,
        "p99_ms": pct(latencies, 99) * 1e3,
        "max_ms": max(latencies) * 1e3,
        "non2xx": bad[0],
        "errors": 0,
    }
    sys.stdout.write("CWJSON " + json.dumps(summary) + "\n")


def run_httpx(
    url: str, bodies: Path, connections: int, duration: float, max_requests: int
) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--drive",
            url,
            "--bodies",
            str(bodies),
            "--connections",
            str(connections),
            "--duration",
            str(duration),
            "--max-requests",
            str(max_requests),
        ],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("CWJSON ")), None)
    if line is None:
        raise SystemExit(f"httpx driver failed: {out.stderr}")
    r: dict[str, float] = json.loads(line[7:])
    r["rps"] = r["requests"] / r["duration_s"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=300, help="queries of nq_bm25_dev300 to cycle through")
    ap.add_argument("--budget", type=int, default=500, help="documents budget (tokens) per request")
    ap.add_argument("--duration", type=float, default=6.0, help="seconds per run")
    ap.add_argument("--connections", default="2,4", help="concurrent connections of the loaded runs")
    ap.add_argument("--workers", default="1,2", help="worker counts to measure, comma-separated")
    ap.add_argument("--driver", choices=("auto", "wrk", "httpx"), default="auto")
    ap.add_argument("--max-requests", type=int, default=50_000, help="count bound per run (httpx driver)")
    ap.add_argument("--drive", help=argparse.SUPPRESS)
    ap.add_argument("--bodies", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:
        drive_httpx(args.drive, args.bodies, int(args.connections), args.duration, args.max_requests)
        return
    if not QUERIES.exists():
        raise SystemExit(f"shared data not found at {QUERIES}")
    driver = args.driver
    if driver == "auto":
        driver = "wrk" if shutil.which("wrk") else "httpx"
    items = load_bodies(args.limit, args.budget)
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    bodies = tmp / "bodies.jsonl"
    bodies.write_bytes(b"\n".join(b for _, _, b in items) + b"\n")
    script = tmp / "post.lua"
    script.write_text(WRK_SCRIPT % {"bodies": bodies})

    def measure(url: str, connections: int, duration: float) -> dict[str, float]:
        if driver == "wrk":
            return run_wrk(url, script, connections, duration)
        return run_httpx(url, bodies, connections, duration, args.max_requests)

    load_before = os.getloadavg()[0]
    local = in_process(items, args.budget, rounds=3)
    print(
        f"queries: {len(items)} x 20 chunks, budget {args.budget}, driver {driver}, "
        f"loaded runs with {args.connections} connections, {os.cpu_count()} CPUs"
    )
    print(
        f"in-process Assembler.assemble: {local['rps']:.0f} calls/s, p50 {local['p50_ms']:.2f} ms, "
        f"p99 {local['p99_ms']:.2f} ms, mean {local['mean_ms']:.2f} ms (one thread, warm token cache)"
    )
    print(f"load average before: {load_before:.1f} (other processes share these CPUs; tails reflect that)")
    header = f"{'workers':>7} {'run':>12} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'non-2xx':>8} {'p50/in-proc':>12}"
    print(header)
    results: dict[tuple[int, str], dict[str, float]] = {}
    loads = [int(c) for c in args.connections.split(",")]
    for workers in [int(w) for w in args.workers.split(",")]:
        proc, url = start_server(workers, args.budget)
        try:
            measure(url, max(loads), max(2.0, len(items) * workers / 300))  # warm every worker's cache
            runs = [("sequential", 1)] + [(f"{c} conns", c) for c in loads]
            for name, conns in runs:
                r = measure(url, conns, args.duration)
                results[(workers, name)] = r
                print(
                    f"{workers:>7} {name:>12} {r['rps']:>8.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
                    f"{r['max_ms']:>8.1f} {int(r['non2xx'] + r['errors']):>8} {r['p50_ms'] / local['p50_ms']:>11.1f}x"
                )
        finally:
            stop_server(proc)
    print(f"load average after: {os.getloadavg()[0]:.1f}")

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    for (workers, name), r in results.items():
        if workers == 2 and name != "sequential":
            print(
                f"targets with 2 workers, {name}: {r['rps']:.0f} req/s >= 300 {verdict(r['rps'] >= 300)}; "
                f"p99 {r['p99_ms']:.1f} ms < 50 {verdict(r['p99_ms'] < 50)}"
            )
    for (workers, name), r in results.items():
        if name == "sequential":
            ratio = r["p50_ms"] / local["p50_ms"]
            mean_ratio = r["duration_s"] / r["requests"] * 1e3 / local["mean_ms"]
            print(
                f"HTTP overhead, {workers} worker(s): {ratio:.1f}x p50/p50 {verdict(ratio <= 3)} "
                f"({mean_ratio:.1f}x mean/mean)"
            )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
