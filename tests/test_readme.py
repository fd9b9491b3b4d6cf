"""The README's and the docs' examples are executable: every fenced block is run, so they stay the truth.

The files read are `README.md` and every `docs/**/*.md` (the MkDocs site); what follows says
"the README" for any of them.

- ```bash: each `contextwright ...` command (`\\` continuations joined, `cat FILE | contextwright ...`
  too) runs in a scratch directory holding `examples/` and `../shared/data`, and must exit 0; the
  `# ...` lines printed under a command are its output and must appear in it (timings aside).
- ```python: each block runs in a fresh namespace in that directory, after the earlier blocks of its
  `##` section that define a name it uses; names no block defines (`question`, `chunks`, a
  `retriever`, ...) come from the explicit FIXTURES below. A comment that shows a concrete value
  (`# '7 → 4 chunks · ...'`, `# True`, `# (6, 20)`) is asserted; `...` in it means "and more".
- ```toml: written to a file and loaded with `contextwright.pipeline_from_config` (a `[service]` table
  with `ServiceConfig.load`).

Each command and block is one test, with the id `<file>:<line>` (`README.md:12`, `docs/service.md:40`).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contextwright.stages import base as stage_registry

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOC_FILES = [README, *sorted((REPO / "docs").rglob("*.md"))]
SHARED_DATA = Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", REPO.parent / "shared" / "data"))
DEV_QUERIES = SHARED_DATA / "nq_bm25_dev300.jsonl.gz"
CORPUS = SHARED_DATA / "nq_corpus_chunks.jsonl.gz"
BIN = Path(sys.executable).parent

# -- reading the README ------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced block: its file (relative to the repo), language, text, first content line (1-based)
    and `##` section."""

    file: str
    lang: str
    text: str
    line: int
    section: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _blocks(path: Path) -> list[Block]:
    name = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    section = ""
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(name, fence.group(1), "\n".join(lines[i + 1 : end]) + "\n", i + 2, section))
            i = end
        i += 1
    return blocks


BLOCKS = [block for path in DOC_FILES for block in _blocks(path)]


@dataclass(frozen=True)
class Command:
    """One shell command of a bash block, with the output lines the README shows under it."""

    text: str
    file: str
    line: int
    shown_output: tuple[str, ...]


_COMMAND_START = re.compile(r"^(contextwright |cat \S+ \| contextwright |pip |pytest\b|curl )")


def _commands(block: Block) -> list[Command]:
    lines = block.text.rstrip("\n").split("\n")
    out: list[Command] = []
    i = 0
    while i < len(lines):
        if not _COMMAND_START.match(lines[i]):
            i += 1
            continue
        start, text = i, lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1].rstrip() + " " + lines[i].strip()
        shown = []
        while i + 1 < len(lines) and lines[i + 1].startswith("#"):
            i += 1
            shown.append(lines[i][1:].strip())
        out.append(Command(text, block.file, block.line + start, tuple(shown)))
        i += 1
    return out


COMMANDS = [cmd for block in BLOCKS if block.lang == "bash" for cmd in _commands(block)]
PYTHON_BLOCKS = [b for b in BLOCKS if b.lang == "python"]
TOML_BLOCKS = [b for b in BLOCKS if b.lang == "toml"]


# -- the scratch directory ---------------------------------------------------------------------


def _need_data() -> None:
    if not DEV_QUERIES.exists() or not CORPUS.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")


def _uses_data(text: str) -> bool:
    return "shared/data" in text or "nq.db" in text


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`<tmp>/work` with `examples/`, `chunks.jsonl`, `my_config.toml`, and (data present) `../shared/data` and
    the corpus already indexed in `nq.db`, so no block depends on another section's command having run."""
    root = tmp_path_factory.mktemp("readme")
    work = root / "work"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    examples = json.loads((REPO / "examples" / "chunks.json").read_text(encoding="utf-8"))
    (work / "chunks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in examples), encoding="utf-8")
    (work / "my_config.toml").write_text('preset = "citations"\nformat = "sources"\n', encoding="utf-8")
    if SHARED_DATA.exists():
        (root / "shared").mkdir()
        (root / "shared" / "data").symlink_to(SHARED_DATA)
    if CORPUS.exists():
        from contextwright.stores import open_store

        with open_store(f"sqlite:///{work / 'nq.db'}", mode="create") as store:
            store.load_jsonl(str(CORPUS))
    return work


# -- bash --------------------------------------------------------------------------------------

# (substring of the command, reason): never run here.
SKIP_COMMANDS = [
    ("pip install", "installs packages"),
    ("pytest", "runs the test suite itself"),
    ("curl ", "needs a running server; tests/test_service.py covers the HTTP API"),
    ("contextwright serve", "starts a long-running server; tests/test_service.py covers it"),
]
# (substring of the command, environment variable): skipped unless the variable is set.
NEEDS_ENV = [
    ("postgresql://", "CONTEXTWRIGHT_TEST_PG_DSN"),
    ("llm_compress", "CONTEXTWRIGHT_LLM_BASE_URL"),
    ("--reader ", "OPENAI_API_KEY"),  # a paid endpoint; tests/eval/test_reader.py runs a local model
]


def _shortened(command: str) -> str:
    """`contextwright eval` over all 300 queries takes minutes: run it on 5 queries in one process."""
    if command.startswith("contextwright eval"):
        command = re.sub(r"--workers \d+", "--workers 1", command)
        if "--limit" not in command:
            command += " --limit 5"
    return command


def _output_pattern(shown: str) -> re.Pattern[str] | None:
    """A README output line as a regex (timings may differ); None for elided lines (`...`)."""
    if not shown or shown.endswith(("...", "…")):
        return None
    pattern = re.escape(shown)
    pattern = re.sub(r"\d+(?:\\\.\d+)?(\\ (?:s|ms))", r"[\\d.]+\1", pattern)
    return re.compile(pattern)


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.file}:{c.line}" for c in COMMANDS])
def test_readme_command_runs(command: Command, workdir: Path) -> None:
    """Each command exits 0 and prints what the README shows under it."""
    for marker, reason in SKIP_COMMANDS:
        if command.text.startswith(marker) or f"| {marker}" in command.text:
            pytest.skip(reason)
    for marker, var in NEEDS_ENV:
        if marker in command.text and not os.environ.get(var):
            pytest.skip(f"needs {var}")
    if _uses_data(command.text):
        _need_data()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    shell = "set -o pipefail; " + _shortened(command.text)
    proc = subprocess.run(
        ["bash", "-c", shell], cwd=workdir, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, f"{command.text}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
    printed = [line.strip() for line in (proc.stdout + proc.stderr).splitlines()]
    for shown in command.shown_output:
        pattern = _output_pattern(shown)
        if pattern is not None:
            assert any(pattern.fullmatch(line) for line in printed), (
                f"README shows {shown!r}; the command printed:\n" + "\n".join(printed[:40])
            )


# -- python: fixtures for names no README block defines ----------------------------------------

Fixture = Callable[[dict[str, Any], contextlib.ExitStack], None]


def _first_query() -> dict[str, Any]:
    _need_data()
    with gzip.open(DEV_QUERIES, "rt", encoding="utf-8") as f:
        return dict(json.loads(f.readline()))


def _fx_contextwright(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    import contextwright

    ns["contextwright"] = contextwright


def _fx_question(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    ns["question"] = _first_query()["question"]


def _fx_query(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    ns["query"] = _first_query()["question"]  # "nq-0000 of the shared data"


def _fx_chunks(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    ns["chunks"] = _first_query()["chunks"]


def _fx_store(ns: dict[str, Any], stack: contextlib.ExitStack) -> None:
    _need_data()
    from contextwright.stores import open_store

    ns["store"] = stack.enter_context(open_store("sqlite:///nq.db"))


def _fx_turns(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    turns = [{"role": "system", "content": "You answer questions about physics history."}]
    for i in range(30):
        turns.append({"role": "user", "content": f"Question {i}: what happened in the year {1880 + i}? " * 3})
        turns.append({"role": "assistant", "content": f"Answer {i}: several discoveries were made. " * 4})
    turns.append({"role": "user", "content": "Who discovered X-rays?"})
    ns["turns"] = turns


def _fx_my_summarize(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    ns["my_summarize"] = lambda dropped: f"Earlier, {len(dropped)} turns about physics history."


def _example_chunks() -> list[dict[str, Any]]:
    return list(json.loads((REPO / "examples" / "chunks.json").read_text(encoding="utf-8")))


def _fx_langchain_retriever(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    docs = [
        Document(c["text"], metadata={"relevance_score": c["score"], "source": c["source"], "id": c["id"]})
        for c in _example_chunks()
    ]
    ns["retriever"] = RunnableLambda(lambda _query: docs)


def _fx_haystack_retriever(ns: dict[str, Any], _: contextlib.ExitStack) -> None:
    pytest.importorskip("haystack")
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    doc_store = InMemoryDocumentStore()
    doc_store.write_documents([Document(content=c["text"], id=c["id"]) for c in _example_chunks()])
    ns["retriever"] = InMemoryBM25Retriever(document_store=doc_store)


def _fx_llamaindex_index(ns: dict[str, Any], stack: contextlib.ExitStack) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM

    # as_query_engine needs an LLM; no real one here, so a MockLLM stands in for this block only.
    previous = Settings._llm
    Settings.llm = MockLLM()
    stack.callback(setattr, Settings, "_llm", previous)
    docs = [Document(text=c["text"], id_=c["id"]) for c in _example_chunks()]
    ns["index"] = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))


# name -> [(substring the block must contain, or "" for any block, fixture)], first match wins.
FIXTURES: dict[str, list[tuple[str, Fixture]]] = {
    "contextwright": [("", _fx_contextwright)],
    "question": [("", _fx_question)],
    "query": [("", _fx_query)],
    "chunks": [("", _fx_chunks)],
    "store": [("", _fx_store)],
    "turns": [("", _fx_turns)],
    "my_summarize": [("", _fx_my_summarize)],
    "retriever": [("langchain", _fx_langchain_retriever), ("haystack", _fx_haystack_retriever)],
    "index": [("llama", _fx_llamaindex_index)],
}

# (substring of the block, reason): blocks that need something unavailable in a test run.
SKIP_BLOCKS = [
    ("localhost:8000", "needs a running contextwright serve"),
    ("OPENAI_API_KEY", "needs a real LLM endpoint"),
]

# (old, new): data-heavy calls shortened to keep the test fast; each must occur in some block.
SHORTEN = [
    (
        'load_queries("../shared/data/nq_bm25_dev300.jsonl.gz", limit=50)',
        'load_queries("../shared/data/nq_bm25_dev300.jsonl.gz", limit=5)',
    ),
    ("[300, 1000], workers=2)", "[300, 1000], workers=1)"),
    # docs/eval.md's guarded example: the block runs in a namespace named readme_N, not __main__
    ('if __name__ == "__main__":  # workers=2', "if True:  # workers=2"),
]


def _is_citation_example(value: Any, _: dict[str, Any]) -> None:
    assert (value.index, value.label, value.chunk_ids) == (1, "[1]", ("xr-1",))
    assert (value.source, value.also_sources) == ("physics/xrays.md", ("mirror/xrays-copy.md",))
    assert value.snippet.startswith("Wilhelm Conrad")


def _is_resolved_example(value: Any, _: dict[str, Any]) -> None:
    assert [c.index for c in value.cited] == [1, 2, 3]
    assert all(c.source for c in value.cited)
    assert value.missing == (9,)


def _is_liu_example(value: Any, _: dict[str, Any]) -> None:
    assert value[0] == pytest.approx(54.0, abs=0.5)
    assert value[1] == 56.1


def _is_chat_prompt(value: Any, ns: dict[str, Any]) -> None:
    assert type(value).__name__ == "ChatPromptValue"
    from contextwright import get_tokenizer

    system = value.to_messages()[0].content
    context = system[system.index("Cite as [n].\n\n") + len("Cite as [n].\n\n") :]
    assert context.startswith("[1]")  # the default preset's lean blocks
    assert get_tokenizer("cl100k_base").count(context) <= 1_000


def _is_compressed_change(value: Any, _: dict[str, Any]) -> None:
    assert value.chunk_id == "wiki:Henry Moseley:0"
    assert (value.action, value.tokens_before, value.tokens_after) == ("compressed", 136, 48)
    assert value.detail == "2 of 5 sentences"


# Statement source -> check of its value, for results the README shows in a form that is not a literal.
VALUE_CHECKS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "ctx.citations[0]": _is_citation_example,
    'contextwright.resolve_citations("Röntgen [1], see [2-3] and [9].", ctx)': _is_resolved_example,
    "cweval.LIU_2024.accuracy(0.5), cweval.LIU_2024.accuracy(None)": _is_liu_example,
    'chain.invoke("Who discovered X-rays?")': _is_chat_prompt,
    '[c for c in ctx.report.changed if c.action == "compressed"][0]': _is_compressed_change,
}


# -- python: analysis --------------------------------------------------------------------------


def _names(text: str) -> tuple[set[str], set[str]]:
    """(names the block binds, names it uses without binding them)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, loaded - bound - set(dir(builtins))


def _plan(block: Block) -> tuple[list[Block], list[Fixture]]:
    """The earlier blocks of the section to run first, and the fixtures for the rest of the free names."""
    earlier = [
        b
        for b in PYTHON_BLOCKS
        if b.file == block.file and b.section == block.section and b.line < block.line
    ]
    chain: list[Block] = []
    needed = set(_names(block.text)[1])
    for prev in reversed(earlier):
        bound, free = _names(prev.text)
        if needed & bound:
            chain.insert(0, prev)
            needed = (needed - bound) | free
    fixtures: list[Fixture] = []
    for name in sorted(needed):
        options = FIXTURES.get(name, [])
        text = "".join(b.text for b in [*chain, block])
        fixture = next((fx for marker, fx in options if marker in text), None)
        assert fixture is not None, (
            f"{block.where} uses {name!r}, which no earlier block of section {block.section!r} "
            "defines and tests/test_readme.py has no fixture for"
        )
        fixtures.append(fixture)
    return chain, fixtures


def _comments(text: str) -> dict[int, str]:
    """Comment text per line number of the block (1-based within the block)."""
    out: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


_NO_VALUE = object()


def _shown_value(comment: str) -> Any:
    """The literal a comment shows as a result (`'...'`, `(6, 20)`, `True`, `False: cut`), else _NO_VALUE."""
    comment = comment.removeprefix("→").strip()
    if not re.match(r"""^(['"(\[{]|True\b|False\b|None\b)""", comment):
        return _NO_VALUE
    for end in range(len(comment), 0, -1):
        rest = comment[end:].strip()
        if rest and not rest.startswith(":"):
            continue
        try:
            return ast.literal_eval(comment[:end].replace(", ...}", ", '...': ...}"))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return _NO_VALUE


def _matches(actual: Any, shown: Any) -> bool:
    """Equality, where a trailing `...` (in a string, tuple or dict) means "and more"."""
    if isinstance(shown, str) and shown.endswith(("...", "…")):
        return isinstance(actual, str) and actual.startswith(shown.rstrip(".… "))
    if isinstance(shown, tuple | list):
        if not isinstance(actual, tuple | list):
            return False
        if shown and shown[-1] is Ellipsis:
            shown = shown[:-1]
            actual = actual[: len(shown)]
        return len(actual) == len(shown) and all(_matches(a, s) for a, s in zip(actual, shown, strict=True))
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return False
        if shown.get("...") is Ellipsis:
            shown = {k: v for k, v in shown.items() if k != "..."}
            return all(k in actual and _matches(actual[k], v) for k, v in shown.items())
        return actual.keys() == shown.keys() and all(_matches(actual[k], v) for k, v in shown.items())
    return bool(actual == shown)


def _source(block: Block, text: str) -> str:
    for old, new in SHORTEN:
        text = text.replace(old, new)
    return text


def _run_checked(block: Block, text: str, ns: dict[str, Any]) -> None:
    """Run the block statement by statement, asserting the values and output its comments show."""
    tree = ast.parse(text)
    comments = _comments(text)
    lines = text.split("\n")
    for stmt in tree.body:
        end = stmt.end_lineno or stmt.lineno
        segment = (ast.get_source_segment(text, stmt) or "").strip()
        module = ast.Module(body=[stmt], type_ignores=[])
        ast.increment_lineno(module, block.line - 1)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if isinstance(stmt, ast.Expr):
                expr = ast.Expression(body=stmt.value)
                value = eval(compile(expr, str(REPO / block.file), "eval", dont_inherit=True), ns)
            else:
                exec(compile(module, str(REPO / block.file), "exec", dont_inherit=True), ns)
                value = _NO_VALUE
        where = f"{block.file}:{block.line + end - 1}"
        if value is not _NO_VALUE:
            if segment in VALUE_CHECKS:
                VALUE_CHECKS[segment](value, ns)
            else:
                comment = comments.get(end)
                if comment is None and lines[end : end + 1] and lines[end].startswith("#"):
                    comment = comments.get(end + 1)  # the value shown on the line below
                shown = _shown_value(comment) if comment is not None else _NO_VALUE
                if shown is not _NO_VALUE:
                    assert _matches(value, shown), (
                        f"{where}: `{segment}` gives {value!r}; README shows {shown!r}"
                    )
        printed = out.getvalue().splitlines()
        if printed:
            shown_lines = []
            for line in lines[end:]:
                if not line.startswith("#"):
                    break
                shown_lines.append(line[1:].split())
            if shown_lines:
                assert len(printed) == len(shown_lines), (
                    f"{where}: printed {printed}; README shows {shown_lines}"
                )
                for got, want in zip(printed, shown_lines, strict=True):
                    assert got.split() == want[: len(got.split())], (
                        f"{where}: printed {got!r}; README shows {want}"
                    )


@pytest.fixture
def in_workdir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scratch directory, as the current directory for this test."""
    monkeypatch.chdir(workdir)
    return workdir


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_readme_python_block_runs(block: Block, in_workdir: Path) -> None:
    """Each Python block runs (after the blocks of its section it builds on) and shows true values."""
    for marker, reason in SKIP_BLOCKS:
        if marker in block.text:
            pytest.skip(reason)
    chain, fixtures = _plan(block)
    if any(_uses_data(b.text) for b in [*chain, block]):
        _need_data()
    ns: dict[str, Any] = {"__name__": f"readme_{block.line}"}
    with contextlib.ExitStack() as stack:
        # A block may register a stage (`no_forums`); the tests after it must not see it.
        stages = stage_registry.registered_stages()
        stack.callback(lambda: (stage_registry._STAGES.clear(), stage_registry._STAGES.update(stages)))
        for fixture in fixtures:
            fixture(ns, stack)
        for prev in chain:
            padded = "\n" * (prev.line - 1) + _source(prev, prev.text)
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(padded, str(REPO / prev.file), "exec", dont_inherit=True), ns)
        _run_checked(block, _source(block, block.text), ns)


def test_readme_shortenings_still_apply() -> None:
    """Every SHORTEN rule still finds its text, so a README edit cannot silently run the slow version."""
    for old, _ in SHORTEN:
        assert any(old in b.text for b in PYTHON_BLOCKS), f"no README block contains {old!r}"


def test_readme_shown_values_are_asserted() -> None:
    """The examples' key results are among the asserted ones (guards the comment parser)."""
    block = next(b for b in PYTHON_BLOCKS if 'preset="citations"' in b.text)
    comments = _comments(block.text)
    shown = [_shown_value(c) for c in comments.values()]
    assert "7 → 4 chunks · 241 → 200 tokens (budget 200)" in shown
    assert _shown_value("False: cut") is False
    assert _shown_value("True when every chunk fits whole") is _NO_VALUE
    assert _matches(("a", "b", "c"), ("a", "b", ...))
    assert not _matches(("a", "x"), ("a", "b", ...))
    assert _matches({"window": 1, "system": 2}, {"window": 1, "...": ...})


# -- toml --------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_readme_config_loads(block: Block, in_workdir: Path) -> None:
    """Each config example is a valid config file; the ones without network stages also assemble."""
    import contextwright

    named = re.match(r"#\s*(\S+\.toml)\s*$", block.text.split("\n")[0])
    path = in_workdir / (named.group(1) if named else f"readme_{block.line}.toml")
    path.write_text(block.text, encoding="utf-8")
    if re.search(r"^\[service(\.\w+)?\]", block.text, re.M):  # a service config, not a pipeline
        pytest.importorskip("fastapi")
        from contextwright.service import ServiceConfig

        assert ServiceConfig.load(path, env={})
        return
    pipeline = contextwright.pipeline_from_config(path)
    assert pipeline.stages
    if "base_url" not in block.text and DEV_QUERIES.exists():  # no network stage: run it on a dev query
        query = _first_query()
        ctx = contextwright.Assembler(str(path), budget=300).assemble(query["question"], query["chunks"])
        assert 0 < ctx.tokens <= 300
        assert len(ctx.chunks) + len(ctx.report.dropped) >= len(query["chunks"])


def test_readme_documents_pipeline_diagram_is_the_preset() -> None:
    """The `expand → doc_summaries → ... → lean` diagram lists the `documents` preset's stages and format."""
    from contextwright import get_preset

    block = next(b for b in BLOCKS if b.lang == "" and b.text.lstrip().startswith("expand → "))
    *stages, fmt = [part.strip() for part in block.text.replace("\n", " ").split("→")]
    preset = get_preset("documents")
    shown = [re.fullmatch(r"(\w+)(?:\((\w+)=\"(\w+)\"\))?", s) for s in stages]
    assert all(shown), stages
    assert [m.group(1) for m in shown if m] == [s["type"] for s in preset["stages"]]
    for m, stage in zip(shown, preset["stages"], strict=True):
        if m and m.group(2):
            assert stage.get(m.group(2)) == m.group(3)
    assert fmt == preset["format"]
