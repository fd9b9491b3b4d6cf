"""The public surface of ``contextwright.eval`` and its lazy imports."""

from __future__ import annotations

import inspect
import subprocess
import sys

import contextwright.eval as cweval


def test_all_lists_exactly_the_public_names() -> None:
    typing_names = {"annotations", "TYPE_CHECKING", "Any"}
    public = {
        n for n, v in vars(cweval).items() if not n.startswith("_") and not inspect.ismodule(v)
    } - typing_names
    lazy = {"render_html", "render_reader_table", "render_table", "to_json", "write_html"}
    assert set(cweval.__all__) == public | lazy
    assert len(cweval.__all__) == len(set(cweval.__all__))
    for name in cweval.__all__:
        assert getattr(cweval, name) is not None


def test_importing_the_metrics_loads_neither_rich_nor_matplotlib() -> None:
    code = (
        "import sys, contextwright.eval as e; "
        "e.answer_in_text('x', ['x']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'matplotlib')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_report_functions_load_on_first_use() -> None:
    from contextwright.eval import report

    assert cweval.write_html is report.write_html
    assert cweval.render_table is report.render_table


def test_importing_the_reader_loads_no_http_client() -> None:
    code = (
        "import sys, contextwright.eval; print(sorted(m for m in sys.modules if m.split('.')[0] == 'httpx'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
