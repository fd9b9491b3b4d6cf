"""The code's shape (docs/architecture.md, "Size"): short functions, files of a readable length.

A function body (its signature and docstring excluded, so Typer option
declarations do not count) is at most 60 lines, unless its docstring says why
("Long because ..."); a source file is at most 700 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import contextwright

ROOT = Path(contextwright.__file__).parent
MAX_BODY = 60
MAX_FILE = 700


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    if not body:
        return 0
    return (node.end_lineno or body[-1].lineno) - body[0].lineno + 1


def test_no_function_body_is_over_60_lines() -> None:
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = _body_lines(node)
                if lines > MAX_BODY and "Long because" not in (ast.get_docstring(node) or ""):
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], "functions over 60 lines:\n" + "\n".join(long)


def test_no_file_is_over_700_lines() -> None:
    big = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for p in sorted(ROOT.rglob("*.py"))
        if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_FILE
    ]
    assert big == [], "files over 700 lines:\n" + "\n".join(big)


def test_the_measure_counts_a_long_body() -> None:
    source = "def f():\n    '''doc'''\n" + "    x = 1\n" * 61
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef) and _body_lines(node) == 61
