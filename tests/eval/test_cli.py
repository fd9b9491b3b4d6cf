"""``contextwright eval`` end to end on a slice of the dev data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("typer")
pytest.importorskip("matplotlib")
from typer.testing import CliRunner

from contextwright.assembly.presets import list_presets
from contextwright.cli import app

from ..conftest import DEV_QUERIES

runner = CliRunner()


def _data() -> str:
    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    return str(DEV_QUERIES)


N = 5  # queries per run: enough for every row and both workers; the suite's time is scarce


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run with one worker (table, JSON, HTML) and one with two workers (JSON)."""
    data = _data()
    tmp = tmp_path_factory.mktemp("eval")
    out: dict[str, Any] = {"tmp": tmp}
    for workers in (1, 2):
        args = [
            "eval",
            data,
            "--limit",
            str(N),
            "--workers",
            str(workers),
            "--json",
            str(tmp / f"w{workers}.json"),
        ]
        if workers == 1:
            args += ["--html", str(tmp / "report.html")]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        out[f"stdout{workers}"] = result.stdout
        out[f"json{workers}"] = json.loads((tmp / f"w{workers}.json").read_text())
    out["html"] = (tmp / "report.html").read_text()
    return out


def test_eval_prints_a_row_per_strategy_and_budget(runs: dict[str, Any]) -> None:
    stdout = runs["stdout1"]
    data = runs["json1"]
    ran = [s["name"] for s in data["strategies"]]
    assert ran[:2] == ["naive", "greedy"]
    assert set(ran) | set(data["skipped"]) == {"naive", "greedy", *list_presets()}
    for name in ran:
        for budget in ("300", "500", "1000", "1500"):
            assert re.search(rf"│ {re.escape(name)}\s+│\s+{budget} │", stdout), (name, budget)
    assert f"{N} queries" in stdout
    assert "…" not in stdout  # the table is never cut, even on a narrow (test) console


def test_eval_json_has_every_result_and_no_budget_violation(runs: dict[str, Any]) -> None:
    data = runs["json1"]
    n_strategies = len(data["strategies"])
    assert len(data["results"]) == N * n_strategies * 4
    assert data["meta"]["queries"] == N
    assert data["meta"]["data"].endswith("nq_bm25_dev300.jsonl.gz")
    assert all(r["tokens"] <= r["budget"] for r in data["results"])
    assert sum(s["violations"] for s in data["summaries"]) == 0
    naive = {s["budget"]: s for s in data["summaries"] if s["strategy"] == "naive" and s["subset"] == "all"}
    assert naive[300]["tokens_mean"] == 300  # the dev lists are ~1,900 tokens: naive fills every budget
    assert naive[1500]["answer_retention"] >= naive[300]["answer_retention"]


def _without_latency(data: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(json.dumps(data))
    for r in data["results"]:
        r.pop("latency_ms")
    for s in data["summaries"]:
        s.pop("latency_p50_ms")
        s.pop("latency_p95_ms")
    return data


def test_two_workers_give_the_same_results_as_one_but_for_latency(runs: dict[str, Any]) -> None:
    assert _without_latency(runs["json2"]) == _without_latency(runs["json1"])
    assert any(r["latency_ms"] > 0 for r in runs["json2"]["results"])


def test_html_report_is_self_contained_and_holds_the_plots(runs: dict[str, Any]) -> None:
    page = runs["html"]
    assert "http://" not in page  # no external asset, not even a namespace URL
    assert "https://" not in page
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", page)
    assert not re.search(r"url\((?!#)", page)  # only references to the page's own elements
    assert not re.search(r"""href=["'](?!#)""", page)
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # inlined figures cannot resolve each other's #references
    assert page.count("<svg") == 6  # with the tokens-vs-retention (Pareto) plot
    for heading in (
        "Answer-text retention vs budget",
        "Position of the first answer-bearing block",
        "Tokens used vs budget",
    ):
        assert heading in page
    assert "<td>naive</td><td>300</td>" in page


@pytest.mark.browser
def test_html_report_renders_its_plots_offline_in_chromium(runs: dict[str, Any]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Chromium not found at /usr/bin/chromium")
    # Playwright gives every launch a fresh temporary profile (it refuses --user-data-dir).
    args = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ]  # fmt: skip
    url = (runs["tmp"] / "report.html").as_uri()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        try:
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            sizes = page.evaluate(
                "Array.from(document.querySelectorAll('figure svg'))"
                ".map(s => { const b = s.getBoundingClientRect(); return [b.width, b.height, s.namespaceURI]; })"
            )
            drawn = page.evaluate("document.querySelectorAll('figure svg path').length")
        finally:
            browser.close()
    assert requests == [url]
    assert len(sizes) == 6  # five plots and the tokens-vs-retention (Pareto) plot
    assert all(w > 200 and h > 150 and ns == "http://www.w3.org/2000/svg" for w, h, ns in sizes)
    assert drawn > 100


def test_eval_with_config_files_reports_skips_and_notes(tmp_path: Path, needy_stage: str) -> None:
    data = _data()
    mine = tmp_path / "mine.toml"
    mine.write_text('format = "minimal"\n[[stages]]\ntype = "token_budget"\npolicy = "stop"\n')
    needy = tmp_path / "needy.json"
    needy.write_text(json.dumps({"stages": [{"type": needy_stage}, {"type": "token_budget"}]}))
    out = tmp_path / "r.json"
    args = ["eval", data, "--limit", "3", "--budget", "500", "--strategy", "naive,documents",
            "--config", str(mine), "--config", str(needy), "--json", str(out)]  # fmt: skip
    import contextwright.stages.expand as expand

    expand._warned_no_store = False  # the warning is logged once per process; an earlier test may have had it
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(r"│ mine\s+│\s+500 │", result.stdout)
    stderr = " ".join(result.stderr.split())
    assert "skipped needy: stage" in stderr
    assert "note documents: ran without the optional resource 'store'" in stderr
    # the expand stage warns once per process; the command shows it once
    assert stderr.count("expand stage has no chunk store") == 1
    assert [s["name"] for s in json.loads(out.read_text())["strategies"]] == ["naive", "documents", "mine"]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--budget", "300,lots"], "--budget must be comma-separated integers"),
        (["--strategy", "nope"], "unknown strategy 'nope'"),
        (["--workers", "0"], "workers must be a positive integer"),
        (["--prior", "/no/such/prior.json"], "cannot read prior file"),
    ],
)
def test_eval_rejects_bad_options_with_exit_code_2(args: list[str], match: str) -> None:
    result = runner.invoke(app, ["eval", _data(), "--limit", "2", *args])
    assert result.exit_code == 2
    assert match in " ".join(result.stderr.split())


def test_eval_rejects_a_missing_data_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "does not exist" in " ".join(result.stderr.split())


def _reader_data(tmp_path: Path) -> Path:
    """The reader tests' queries as an eval JSONL file."""
    from .test_reader import _queries

    rows = [
        {
            "id": q.id,
            "question": q.question,
            "answers": list(q.answers),
            "chunks": [dict(c) for c in q.chunks],
        }
        for q in _queries()
    ]
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def test_eval_with_a_reader_adds_accuracy_the_sweep_and_a_prior(tmp_path: Path) -> None:
    from .test_reader import ChatServer, reading_model

    data = _reader_data(tmp_path)
    server = ChatServer(reading_model)
    try:
        args = ["eval", str(data), "-s", "naive,qa", "-b", "200", "--reader", server.base_url]
        args += ["--reader-model", "m", "--reader-key-env", "", "--reader-cache", str(tmp_path / "c.sqlite")]
        args += ["--positions", "3", "--prior-out", str(tmp_path / "prior.json")]
        args += ["--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        sent = len(server.requests)
        again = runner.invoke(app, args)
        assert again.exit_code == 0 and len(server.requests) == sent  # all from the cache
    finally:
        server.close()
    assert "Reader accuracy" in result.stdout and "closed-book" in result.stdout and "oracle" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    naive = next(s for s in report["reader"]["summaries"] if s["strategy"] == "naive")
    assert naive["accuracy"] == 2 / 3 and naive["answered"] == 3
    assert report["reader"]["sweep"]["k"] == 3
    prior = json.loads((tmp_path / "prior.json").read_text())
    assert prior["positions"] == [1, 2, 3] and prior["num_documents"] == 3
    html = (tmp_path / "r.html").read_text()
    assert "Reader accuracy" in html and "U-curve" in html and html.count("<svg") >= 7
    # the prior file is accepted by --prior
    rerun = runner.invoke(
        app, ["eval", str(data), "-s", "naive", "-b", "200", "--prior", str(tmp_path / "prior.json")]
    )
    assert rerun.exit_code == 0, rerun.output


def test_eval_reports_from_the_reply_cache_offline_under_an_engines_label(tmp_path: Path) -> None:
    """``--reader-cache-label`` names the engine in the cache key; ``--reader-offline`` reports from
    the cache alone (how a GPU engine's replies are reported on a CPU): the same figures, nothing sent,
    and a label the cache does not hold answers nothing."""
    from .test_reader import ChatServer, reading_model

    data = _reader_data(tmp_path)
    base = ["eval", str(data), "-s", "naive,qa", "-b", "200", "--reader-model", "m", "--reader-key-env", ""]
    base += ["--reader-cache", str(tmp_path / "c.sqlite")]
    server = ChatServer(reading_model)
    try:
        first = runner.invoke(
            app,
            [
                *base,
                "--reader",
                server.base_url,
                "--reader-cache-label",
                "engine-x",
                "--json",
                str(tmp_path / "a.json"),
            ],
        )
        assert first.exit_code == 0, first.output
        sent = len(server.requests)
        assert sent > 0
    finally:
        server.close()
    dead = ["--reader", "http://127.0.0.1:9/v1", "--reader-offline"]
    again = runner.invoke(
        app, [*base, *dead, "--reader-cache-label", "engine-x", "--json", str(tmp_path / "b.json")]
    )
    assert again.exit_code == 0, again.output
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["reader"] for n in "ab")
    assert [s["accuracy"] for s in b["summaries"]] == [s["accuracy"] for s in a["summaries"]]
    assert b["meta"]["failed"] == 0 and b["meta"]["cached"] == b["meta"]["requests"]
    other = runner.invoke(
        app, [*base, *dead, "--reader-cache-label", "engine-y", "--json", str(tmp_path / "c.json")]
    )
    c = json.loads((tmp_path / "c.json").read_text())["reader"]
    assert other.exit_code == 0 and c["meta"]["failed"] == c["meta"]["requests"] > 0
    assert "failed" in other.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--reader", "http://127.0.0.1:9/v1"], "needs --reader-model"),
        (["--positions", "5"], "need a reader model"),
        (
            ["--reader", "http://127.0.0.1:9/v1", "--reader-model", "m", "--reader-key-env", ""],
            "cannot be used",
        ),
    ],
)
def test_eval_reader_options_fail_clearly(extra: list[str], message: str, tmp_path: Path) -> None:
    data = _data()
    args = ["eval", data, "--limit", "2", "-s", "naive", "-b", "300"]
    args += ["--reader-cache", str(tmp_path / "c.sqlite"), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["-s", "naive", "--fail-if", "lower"],
            "--fail-if must be one of under-naive, worse, not-better; got 'lower'",
        ),
        (["-s", "naive,qa", "--fail-if", "worse"], "--fail-if compares what a reader answers: pass --reader"),
        (
            ["-s", "qa", "--fail-if", "worse", "--reader", "http://127.0.0.1:9/v1", "--reader-model", "m"],
            "add naive to --strategy (e.g. --strategy naive,qa)",
        ),
    ],
)
def test_eval_fail_if_is_refused_before_any_work(extra: list[str], message: str, tmp_path: Path) -> None:
    args = [
        "eval",
        _data(),
        "--limit",
        "2",
        "-b",
        "300",
        "--reader-cache",
        str(tmp_path / "c.sqlite"),
        *extra,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "c.sqlite").exists()  # no reader was opened


def test_eval_fail_if_exits_3_where_a_strategy_fails_the_rule_against_naive(
    llama_server: Any, tmp_path: Path
) -> None:
    """A real model (SmolLM2 on llama.cpp) reads naive and ``frugal`` on 4 dev questions; under each
    rule the exit code follows the reader's deltas in the JSON written (closed-book, always far under
    naive, and the oracle are not judged), whatever this machine's replies give."""
    args = [
        "eval",
        _data(),
        "--limit",
        "4",
        "-s",
        "naive,frugal",
        "-b",
        "250",
        "--reader",
        llama_server.base_url,
    ]
    args += ["--reader-model", llama_server.model, "--reader-max-tokens", "12", "--reader-concurrency", "1"]
    args += ["--reader-cache", str(tmp_path / "c.sqlite")]
    for rule, test in (
        ("under-naive", lambda s: s["delta"] < 0),
        ("worse", lambda s: s["delta_high"] < 0),
        ("not-better", lambda s: s["delta_low"] <= 0),
    ):
        out = tmp_path / f"{rule}.json"
        result = runner.invoke(app, [*args, "--json", str(out), "--fail-if", rule])
        summaries = json.loads(out.read_text())["reader"]["summaries"]  # written before the exit code
        judged = [s for s in summaries if s["strategy"] == "frugal"]
        failing = [s for s in judged if test(s)]
        assert len(judged) == 1 and result.exit_code == (3 if failing else 0), (rule, result.output)
        said = " ".join(result.stderr.split())
        assert (f"(--fail-if {rule}:" in said) == bool(failing)
        if failing:
            assert "frugal at 250" in said and "closed-book" not in said


def test_eval_fail_if_fails_a_strategy_with_no_reply_to_compare(tmp_path: Path) -> None:
    """Every request failed (offline, under a label the cache does not hold): no delta shows the
    strategy passes, so the gate fails it by name instead of passing an empty comparison."""
    args = [
        "eval",
        _data(),
        "--limit",
        "2",
        "-s",
        "naive,qa",
        "-b",
        "300",
        "--reader",
        "http://127.0.0.1:9/v1",
    ]
    args += [
        "--reader-model",
        "m",
        "--reader-key-env",
        "",
        "--reader-offline",
        "--reader-cache-label",
        "none",
    ]
    args += ["--reader-cache", str(tmp_path / "c.sqlite"), "--fail-if", "worse"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    said = " ".join(result.stderr.split())
    assert "qa at 300 (no reply to compare with naive's)" in said and "(--fail-if worse:" in said
