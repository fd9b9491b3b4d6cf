"""Every function that applies a regex to untrusted text runs in linear time (issue 26, finding 2).

A regex holds the GIL while it scans, so a quadratic one freezes a worker
(``/healthz`` included) and no ``timeout_s`` can stop it. Each function below
gets adversarial 100,000-character texts: runs of one punctuation character,
brackets, spaces, digits, newlines, quotes, ``…``, alternations such as
``".?!" * n`` and Unicode, bare and between two letters. Each must finish well
under a second (the best of two runs, so a loaded machine does not fail it).

The cases once fixed on other branches of issue 26 (xml, tool outputs, tool fitting, the
service's 422 handler) run here too since those branches merged.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from contextwright.core.errors import ConfigError
from contextwright.core.sentences import split_sentences
from contextwright.core.text import check_text
from contextwright.eval.metrics import answer_in_text, normalize_answer, normalize_answer_unicode
from contextwright.render import escape
from contextwright.render.cite import parse_citation_numbers, resolve_citations
from contextwright.render.format import get_format
from contextwright.render.parse import parse_blocks, parse_tool_outputs
from contextwright.render.tools import fit_tools
from contextwright.service.problems import _union_tag, config_loc, input_loc
from contextwright.stages import dedup, llm_compress, order, shingles, words
from contextwright.stages.budget import sentence_ends
from contextwright.tokens import get_tokenizer
from contextwright.tokens.zones import get_model

N = 100_000
BOUND_S = 0.5

_RUNS = ".!?…,;:-_*#=~`'\"“”()[]{}<>/\\|@&%$^+ \t\n\r1\u200b\u00a0é²＜［"
_ALTERNATIONS = [
    ".?!",
    ".?!…",
    "[1",
    "[1,",
    "[ ",
    "<a ",
    "</",
    "<!",
    "[source ",
    "a.",
    "a. ",
    "\n ",
    " \n",
    "1.",
    "a[",
    "][",
]


def _texts(n: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for ch in _RUNS:
        out.append((f"run {ch!r}", ch * n))
        out.append((f"a+run {ch!r}+x", "a" + ch * n + "x"))
    for alt in _ALTERNATIONS:
        out.append((f"alternation {alt!r}", alt * (n // len(alt))))
    out.append(("hello < spaces x", "hello <" + " " * n + "x"))
    out.append(("[ then digits", "see [" + "1" * 3000 + " " * n))
    out.append(("[source then spaces", "[SOURCE" + " " * n + "x"))
    out.append(("dots then quotes", "a" + "." * (n // 2) + '"' * (n // 2) + "x"))
    out.append(("words", "abc " * (n // 4)))
    return out


# A quadratic function shows at a tenth of the size already (over the bound there means
# about a minute at full size), so each text is tried at 10,000 characters first.
SMALL, TEXTS = _texts(N // 10), _texts(N)


def _seconds(fn: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def _best(fn: Callable[[str], object], text: str) -> float:
    """The faster of two runs (the second only when the first is over the bound, not far over)."""
    first = _seconds(fn, text)
    return first if first < BOUND_S or first > 4 * BOUND_S else min(first, _seconds(fn, text))


def _refused(fn: Callable[[str], object]) -> Callable[[str], object]:
    def call(text: str) -> object:
        try:
            return fn(text)
        except ConfigError:
            return None

    return call


_CHARS = get_tokenizer("chars")


def _resolve(text: str) -> object:
    return resolve_citations(text, ())


def _fit_tools(fmt: str) -> Callable[[str], object]:
    return lambda text: fit_tools(
        [{"name": "t", "content": text}], budget=1_000_000, tokenizer=_CHARS, format=get_format(fmt)
    )


def _render_escape(fmt: str) -> Callable[[str], object]:
    f = get_format(fmt)
    return f.escape


_FORMATS = ["minimal", "numbered", "xml", "grouped", "sources", "markdown", "lean"]

H26_RENDER = "fixed on branch h26-render"
H26_SERVICE = "fixed on branch h26-service"
H26_TOOLS = "fixed on branch h26-tools"

CASES: list[tuple[str, Callable[[str], object], str | None]] = [
    ("sentences.split_sentences", split_sentences, None),
    ("stages.budget.sentence_ends", sentence_ends, None),
    ("cite.parse_citation_numbers", parse_citation_numbers, None),
    ("cite.parse_citation_numbers(blocks=3)", lambda t: parse_citation_numbers(t, blocks=3), None),
    ("cite.resolve_citations", _resolve, None),
    ("escape.clean", escape.clean, None),
    ("escape.oneline", escape.oneline, None),
    ("escape.fold", escape.fold, None),
    ("escape.visible", escape.visible, None),
    ("escape.is_blank", escape.is_blank, None),
    ("escape.split_indent", escape.split_indent, None),
    ("escape.drop_blank_lines", escape.drop_blank_lines, None),
    *((f"format.{f}.escape", _render_escape(f), H26_RENDER if f == "xml" else None) for f in _FORMATS),
    *(
        (f"parse.parse_blocks({f})", lambda t, f=f: parse_blocks(t, f), H26_RENDER if f == "xml" else None)
        for f in _FORMATS
    ),
    ("parse.parse_tool_outputs", parse_tool_outputs, H26_RENDER),
    *((f"tools.fit_tools({f})", _fit_tools(f), H26_TOOLS) for f in ["xml", "markdown"]),
    ("dedup.normalize_text", dedup.normalize_text, None),
    ("shingles.shingle_words", shingles.shingle_words, None),
    ("dedup._original_cut", lambda t: dedup._original_cut(t, len(t) // 2), None),
    ("words.terms", words.terms, None),
    ("words.has_term", lambda t: words.has_term(t.lower(), "prize"), None),
    ("llm_compress.verify_extract", lambda t: llm_compress.verify_extract(t, t), None),
    ("order._natural", order._natural, None),
    ("metrics.normalize_answer", normalize_answer, None),
    ("metrics.normalize_answer_unicode", normalize_answer_unicode, None),
    ("metrics.answer_in_text", lambda t: answer_in_text(t, ["paris", "a"]), None),
    ("budget.get_model", _refused(get_model), None),
    ("textcheck.check_text", lambda t: check_text(t, "chunks[0].text"), None),
    ("problems.input_loc", input_loc, None),
    ("problems.config_loc", lambda t: config_loc(t, ["body", "config"]), None),
    ("problems._union_tag", _union_tag, H26_SERVICE),
]


def _params() -> list[object]:
    out: list[object] = []
    for name, fn, xfail in CASES:
        # Not run here: the unfixed code takes up to a minute on one of these texts.
        del xfail  # every branch of issue 26 is merged: no case is expected to fail
        out.append(pytest.param(fn, id=name))
    return out


@pytest.mark.parametrize("fn", _params())
def test_linear_on_adversarial_100k_texts(fn: Callable[[str], object]) -> None:
    for (label, small), (_, text) in zip(SMALL, TEXTS, strict=True):
        best = _best(fn, small)
        assert best < BOUND_S, f"{label}: {best:.2f} s at {len(small):,} characters (quadratic?)"
        best = _best(fn, text)
        assert best < BOUND_S, f"{label}: {best:.2f} s at {len(text):,} characters"
