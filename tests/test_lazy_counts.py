"""The report's token figures are tallies: counted when read, equal to what an eager count gives.

Issue 33: at 500 tokens, counting all 20 inputs for the report's ``input_tokens`` was a third
of a ``qa`` assembly, and the ``fill`` budget counted every chunk although a full budget needs
none of the rest. These tests pin the three parts: the lower bound that lets ``fill`` drop a
chunk uncounted never exceeds the real count; the figures a report gives are the exact counts;
and nothing is counted until the report is read.
"""

from __future__ import annotations

import copy
import itertools
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright import Assembler
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Report, StageReport, Tally, held, settle
from contextwright.render.format import LeanFormat, get_format
from contextwright.render.meter import Meter
from contextwright.tokens import get_tokenizer

from .conftest import DEV_QUERIES, _read_jsonl_gz

pytestmark = pytest.mark.skipif(not DEV_QUERIES.exists(), reason="needs ../shared/data")


@pytest.fixture(scope="module")
def dev() -> list[dict]:
    return _read_jsonl_gz(DEV_QUERIES, limit=60)


def _chunks(queries: list[dict]) -> list[Chunk]:
    texts = dict.fromkeys(c["text"] for q in queries for c in q["chunks"])
    return list(chunks_from_dicts([{"id": str(i), "text": t} for i, t in enumerate(texts)]))


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("fmt", ["lean", "xml"])
def test_the_lower_bound_never_exceeds_the_count_on_dev_chunks(
    dev: list[dict], encoding: str, fmt: str
) -> None:
    chunks = _chunks(dev)
    bounds = [Meter(get_format(fmt), get_tokenizer(encoding)).at_least(c, 10**9) for c in chunks]
    meter = Meter(get_format(fmt), get_tokenizer(encoding))
    counts = [meter.tokens(c) for c in chunks]
    assert all(b <= n for b, n in zip(bounds, counts, strict=True))
    # and it is close enough to rule chunks out: words are most of a prose chunk's tokens
    assert sum(bounds) / sum(counts) > 0.7
    # capped: no more than cap + 1 words are looked at, and the bound stays a bound
    capped = [Meter(get_format(fmt), get_tokenizer(encoding)).at_least(c, 12) for c in chunks]
    assert all(b == min(full, 13) for b, full in zip(capped, bounds, strict=True))


# str.split's separators a BPE pre-tokenizer keeps in words (U+001C-U+001F), Unicode spaces, line
# and paragraph separators, bidi controls and a zero-width space (escaping drops or maps them),
# and a line a format escapes (a forged "[2]" label, an XML tag).
_TRICKY = [
    *(chr(c) for c in (0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xA0, 0x2028, 0x2029, 0x3000, 0x0B, 0x0C, 0x07, 0x7F)),
    *(chr(c) for c in (0x200B, 0x200E, 0x202E, 0x2066, 0xFEFF, 0x0301)),
    "\n[2]\n",
    "</chunk>",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab .,!'\n\t 1234", *_TRICKY, "日本", "é", "'s", "\r\n", "<x>", "  "]),
        min_size=1,
        max_size=40,
    ).map("".join)
)
def test_the_lower_bound_holds_on_any_text(text: str) -> None:
    """Separators ``str.split`` takes for whitespace and a BPE pre-tokenizer does not, digits,
    contractions, CRLF: the bound stays at or under the count for both encodings."""
    got = chunks_from_dicts([{"id": "x", "text": text}], empty=[])
    for encoding in ("cl100k_base", "o200k_base"):
        for c in got:
            for fmt in ("lean", "numbered", "xml"):
                bound = Meter(get_format(fmt), get_tokenizer(encoding)).at_least(c, 10**9)
                assert bound <= Meter(get_format(fmt), get_tokenizer(encoding)).tokens(c)


class _EscapedBreaks(LeanFormat):
    """A format of the user's whose escape spells line breaks and tabs out (as JSON does)."""

    def escape(self, text: str) -> str:
        return super().escape(text).replace("\n", "\\n").replace("\t", "\\t")


def test_ascii_with_line_breaks_is_bounded_by_its_words_unless_the_format_is_the_users() -> None:
    """Tabs and line breaks are whitespace to the built-in escapes, so an ASCII text holding them is
    bounded by its own words, unrendered; a format of the user's may spell them out (here as
    JSON does: ``a\\nb`` is one word), so its body is rendered and its words counted."""
    text = "first line\nsecond\tline\r\nthird line"
    (c,) = chunks_from_dicts([{"id": "x", "text": text}])
    builtin = Meter(get_format("lean"), get_tokenizer("cl100k_base"))
    assert builtin.at_least(c, 100) == 6
    assert builtin._bodies == {}  # nothing rendered to find the bound
    assert builtin.tokens(c) >= 6
    own = Meter(_EscapedBreaks(), get_tokenizer("cl100k_base"))
    assert own.body(c).split() == ["first", "line\\nsecond\\tline\\nthird", "line"]
    assert own.at_least(c, 100) == 3 <= own.tokens(c)


@pytest.mark.parametrize(
    "text", ["x\n\x07 \x07", "one\ttwo \x7f \x00", "a\nb\x1f \x1f\x1f", "x\r\n\x08 \x0e"]
)
def test_ascii_controls_other_than_tabs_and_breaks_are_rendered_first(text: str) -> None:
    """The escapes drop other ASCII controls at a text's ends (``x\\n\\x07 \\x07`` renders as ``x``,
    one word, where ``str.split`` sees three): such a text is bounded by its body's words."""
    (c,) = chunks_from_dicts([{"id": "x", "text": text}])
    for fmt in ("lean", "xml"):
        meter = Meter(get_format(fmt), get_tokenizer("cl100k_base"))
        assert meter.at_least(c, 100) <= meter.tokens(c)


def test_a_tokenizer_without_known_splits_gets_the_bound_one() -> None:
    meter = Meter(get_format("lean"), get_tokenizer("chars"))
    (c,) = chunks_from_dicts([{"id": "x", "text": "many words in this text"}])
    assert meter.at_least(c, 100) == 1 <= meter.tokens(c)


def _eager(assembler: Assembler, chunks: list[dict]) -> int:
    meter = Meter(assembler.pipeline.format, assembler.tokenizer)
    return meter.total_tokens(chunks_from_dicts(chunks))


@pytest.mark.parametrize("preset", ["qa", "citations"])  # fill, and greedy (skip and go on)
def test_a_full_budget_s_tail_is_dropped_uncounted_and_says_so(dev: list[dict], preset: str) -> None:
    qa = Assembler(preset, budget=500, tokenizer="cl100k_base")
    uncounted = counted = 0
    for q in dev[:30]:
        ctx = qa.assemble(q["question"], q["chunks"])
        meter = Meter(qa.pipeline.format, qa.tokenizer)
        by_id = {c.id: c for c in chunks_from_dicts(q["chunks"])}
        (budget,) = (r for r in ctx.report.stages if r.stage == "token_budget")
        for d in budget.dropped:
            assert d.reason == "over_budget"
            if d.detail.endswith("(not counted)"):
                uncounted += 1
                least, left = (int(w) for w in d.detail.replace(",", "").split() if w.isdigit())
                # the bound it was ruled out by is a true bound, and the chunk did not fit
                assert least <= meter.tokens(by_id[d.chunk_id])
                assert meter.block_cost(by_id[d.chunk_id], 1) > left
            else:
                counted += 1
                assert d.detail == f"{meter.tokens(by_id[d.chunk_id])} tokens"
    assert uncounted > 2 * counted  # most of the tail of 20-chunk lists is never counted


def test_the_report_is_counted_when_read_and_equals_an_eager_count(dev: list[dict]) -> None:
    for preset in ("qa", "frugal", "tight", "chat"):
        assembler = Assembler(preset, budget=500, tokenizer="cl100k_base")
        q = dev[0]
        ctx = assembler.assemble(q["question"], q["chunks"])
        stored = vars(ctx.report)
        assert isinstance(stored["_counted_input_tokens"], Tally)  # nothing counted yet
        assert ctx.report.input_tokens == _eager(assembler, q["chunks"])
        assert isinstance(vars(ctx.report)["_counted_input_tokens"], int)  # counted once, kept
        stages = ctx.report.stages
        assert stages[0].tokens_in == ctx.report.input_tokens
        for before, after in itertools.pairwise(stages):
            assert after.tokens_in == before.tokens_out  # each stage takes what the last one gave
        assert stages[-1].stage == "render" and stages[-1].tokens_out == ctx.tokens


def test_a_pickled_or_copied_report_holds_numbers(dev: list[dict]) -> None:
    qa = Assembler("qa", budget=500, tokenizer="cl100k_base")
    q = dev[1]
    ctx = qa.assemble(q["question"], q["chunks"])
    back = pickle.loads(pickle.dumps(ctx.report))
    assert isinstance(vars(back)["_counted_input_tokens"], int)
    assert back == ctx.report == copy.deepcopy(ctx.report)
    assert back.to_dict() == ctx.report.to_dict()


def test_history_and_previous_keep_the_report_uncounted_until_read(dev: list[dict]) -> None:
    chat = Assembler("chat", budget=500, tokenizer="cl100k_base", history_tokens=200)
    q = dev[2]
    first = chat.assemble(q["question"], q["chunks"])
    ctx = chat.assemble(
        q["question"], q["chunks"], history=[{"role": "user", "content": "hello"}], previous=first
    )
    assert ctx.report.history is not None and ctx.report.stable_prefix_tokens is not None
    assert isinstance(vars(ctx.report)["_counted_input_tokens"], Tally)
    assert ctx.report.input_tokens == _eager(chat, q["chunks"])


def test_held_is_replace_without_counting() -> None:
    calls: list[int] = []

    def count() -> int:
        calls.append(1)
        return 7

    stage = StageReport("s", 2, 1, tokens_in=Tally(count), tokens_out=3)
    report = Report(stages=(stage,), input_chunks=2, input_tokens=3, output_chunks=1, tokens=3, budget=9)
    moved = held(stage, notes=("n",))
    assert calls == [] and moved.notes == ("n",) and moved.tokens_out == 3
    assert moved.tokens_in == 7 and calls == [1]
    assert held(report, budget=10).budget == 10 and held(report, budget=10).input_tokens == 3


def test_a_report_built_with_numbers_is_what_it_was() -> None:
    stage = StageReport("s", 2, 1)
    bare = Report(stages=(stage,), input_chunks=2, input_tokens=5, output_chunks=1, tokens=3, budget=9)
    assert pickle.loads(pickle.dumps(bare)) == bare  # its zones, the shared empty mapping, included
    assert stage.tokens_in is None and stage.tokens_out is None
    report = Report(stages=(stage,), input_chunks=2, input_tokens=5, output_chunks=1, tokens=3, budget=9)
    assert report.input_tokens == 5 and report.summary().startswith("2 → 1 chunk · 5 → 3 tokens")
    with pytest.raises(AttributeError):
        report.input_tokens = 6  # type: ignore[misc]  # frozen
    with pytest.raises(TypeError, match="input_tokens"):
        Report(stages=(), input_chunks=1, output_chunks=1, tokens=1, budget=1)  # type: ignore[call-arg]


def test_a_context_remembered_for_a_session_holds_numbers(dev: list[dict]) -> None:
    """4,096 sessions must not keep 4,096 calls' inputs alive through unread tallies."""
    qa = Assembler("qa", budget=500, tokenizer="cl100k_base")
    q = dev[3]
    ctx = qa.assemble(q["question"], q["chunks"], session="s1")
    stored = [vars(ctx.report)["_counted_input_tokens"]]
    stored += [vars(s)[k] for s in ctx.report.stages for k in ("_counted_tokens_in", "_counted_tokens_out")]
    assert all(isinstance(v, int) for v in stored)
    assert ctx.report.input_tokens == _eager(qa, q["chunks"])
    unsettled = qa.assemble(q["question"], q["chunks"])
    assert isinstance(vars(unsettled.report)["_counted_input_tokens"], Tally)
    assert settle(unsettled.report) is unsettled.report
    assert isinstance(vars(unsettled.report)["_counted_input_tokens"], int)
