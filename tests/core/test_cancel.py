"""Cancellation and deadlines stop an assembly inside its long stages, not only between them (issue 31)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import contextwright
from contextwright import Assembler, get_tokenizer
from contextwright.core.cancel import cancel_on, check_cancelled
from contextwright.core.errors import AssemblyCancelled, ConfigError, DeadlineExceeded
from contextwright.model.chunk import Chunk
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.budget import TokenBudget
from contextwright.stages.compress import ExtractiveCompress


def _set_event() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


def test_a_check_outside_cancel_on_does_nothing() -> None:
    check_cancelled("compress")


def test_a_set_event_cancels_and_names_where() -> None:
    with cancel_on(_set_event()), pytest.raises(AssemblyCancelled, match="'compress'") as info:
        check_cancelled("compress")
    assert not isinstance(info.value, TimeoutError)  # cancelled from outside, not timed out


def test_a_passed_deadline_is_a_timeout_error_naming_the_setting() -> None:
    with cancel_on(timeout_s=0.01):
        time.sleep(0.02)
        with pytest.raises(TimeoutError, match=r"timeout_s=0\.01") as info:
            check_cancelled("token_budget")
    assert isinstance(info.value, DeadlineExceeded) and isinstance(info.value, AssemblyCancelled)


def test_the_block_ends_its_deadline_and_its_event() -> None:
    with cancel_on(_set_event(), timeout_s=0.01):
        pass
    time.sleep(0.02)
    check_cancelled("compress")  # neither applies any more


def test_an_inner_block_can_bring_a_deadline_closer_but_never_push_it_back() -> None:
    with cancel_on(timeout_s=0.01), cancel_on(timeout_s=60):
        time.sleep(0.02)
        with pytest.raises(DeadlineExceeded, match=r"timeout_s=0\.01"):
            check_cancelled("compress")
    with cancel_on(timeout_s=60), cancel_on(timeout_s=0.01):
        time.sleep(0.02)
        with pytest.raises(DeadlineExceeded):
            check_cancelled("compress")


def test_an_inner_block_keeps_the_outer_event() -> None:
    with cancel_on(_set_event()), cancel_on(timeout_s=60), pytest.raises(AssemblyCancelled):
        check_cancelled("compress")


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, "5"])
def test_a_bad_timeout_is_a_config_error_naming_it(value: Any) -> None:
    with (
        pytest.raises(ConfigError, match="timeout_s must be a positive number") as info,
        cancel_on(timeout_s=value),
    ):
        pass
    assert info.value.loc == ("timeout_s",)


# -- inside the stages -------------------------------------------------------------------------------


def _meter(fmt: str = "lean") -> Meter:
    return Meter(get_format(fmt), get_tokenizer("cl100k_base"))


def _overflowing() -> list[Chunk]:
    return [Chunk(id="a", text="Hi there. " * 3000, score=0.9), Chunk(id="b", text="Hello. Fine.", score=0.5)]


def _primed(chunks: list[Chunk]) -> Meter:
    """A meter that has counted the chunks already (counting checks too: see below)."""
    meter = _meter()
    meter.prime(chunks)
    return meter


def test_compress_checks_inside_its_work() -> None:
    """Called directly (no stage loop around it), compress itself notices the cancellation."""
    stage = ExtractiveCompress(whole_share=1.0)
    chunks = _overflowing()
    meter = _primed(chunks)
    with cancel_on(_set_event()), pytest.raises(AssemblyCancelled, match="'compress'"):
        stage(chunks, query="what is this question", meter=meter, budget=500)


@pytest.mark.parametrize("policy", ["fill", "greedy", "truncate"])
def test_token_budget_checks_inside_its_work(policy: str) -> None:
    stage = TokenBudget(policy=policy)
    chunks = _overflowing()
    meter = _primed(chunks)
    with cancel_on(_set_event()), pytest.raises(AssemblyCancelled, match="'token_budget'"):
        stage(chunks, meter=meter, budget=500, query="what is this question")


def _doc_chunks(n: int, words: int = 400) -> list[Chunk]:
    """``n`` chunks of one document, each new text (no cache holds their work)."""
    salt = time.perf_counter_ns()
    return [
        Chunk(
            id=f"d{i}",
            doc_id="doc",
            text=" ".join(f"w{salt}x{i}y{j}" for j in range(words)),
            score=1.0 - i / (n + 1),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("name", ["exact_dedup", "overlap_dedup", "containment_dedup", "near_dedup"])
def test_the_dedup_stages_check_inside_their_work(name: str) -> None:
    """Called directly (no stage loop around it), each dedup stage notices the cancellation."""
    from contextwright.stages.base import stage_from_dict

    stage = stage_from_dict({"type": name})
    kwargs: dict[str, Any] = {"meter": _meter()} if name in ("overlap_dedup", "containment_dedup") else {}
    with cancel_on(_set_event()), pytest.raises(AssemblyCancelled, match=repr(name)):
        stage(_doc_chunks(3), **kwargs)


@pytest.mark.timeout(120)
def test_a_deadline_stops_containment_inside_a_long_walk() -> None:
    """3,000 new chunks of 1,000 words: seconds of hashing and walking, stopped near its 0.2 s deadline."""
    from contextwright.stages.containment import ContainmentDedup

    chunks = _doc_chunks(3000, words=1000)
    start = time.perf_counter()
    with cancel_on(timeout_s=0.2), pytest.raises(DeadlineExceeded, match="containment_dedup"):
        ContainmentDedup()(chunks)
    assert time.perf_counter() - start < 1.0


def test_counting_checks_between_batches() -> None:
    """Counting runs in native code no check interrupts; the meter checks before each batch."""
    with cancel_on(_set_event()), pytest.raises(AssemblyCancelled, match="counting tokens"):
        _meter().prime(_overflowing())


def test_without_cancellation_the_stages_run_as_before() -> None:
    meter = _meter()
    with cancel_on(threading.Event(), timeout_s=60):
        out = ExtractiveCompress(whole_share=1.0)(_overflowing(), query="q", meter=meter, budget=500)
    assert out.report.changed and out.report.changed[0].action == "compressed"


# -- the library's timeout_s -----------------------------------------------------------------------


def _slow_chunks() -> list[dict[str, Any]]:
    """~1 s or more of compress on any machine: 200 long sentences, each squeezed and windowed."""
    top = {"id": "top", "text": "Paris is the question w5.", "score": 1.0}
    return [top] + [
        {
            "id": f"s{i}",
            "text": " ".join(f"w{(i * 7 + j) % 301}" for j in range(10_000)),
            "score": 0.9 - i / 1000,
        }
        for i in range(200)
    ]


@pytest.mark.timeout(120)
def test_assemble_with_timeout_s_stops_within_a_second_of_its_deadline() -> None:
    config = {
        "stages": [{"type": "compress", "max_words": 2_000}, {"type": "token_budget"}],
        "format": "lean",
    }
    asm = Assembler(config, budget=300)
    chunks = _slow_chunks()
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"timeout_s=0\.2"):
        asm.assemble("w5 question", chunks, timeout_s=0.2)
    assert time.monotonic() - start < 1.2
    # the same call without a deadline completes, and the deadline is gone after the call
    ctx = asm.assemble("w5 question", chunks[:3])
    assert ctx.tokens <= 300


@pytest.mark.timeout(120)
def test_the_top_level_functions_take_timeout_s() -> None:
    import asyncio

    chunks = [{"id": "a", "text": "Paris is in France.", "score": 1.0}]
    assert contextwright.assemble("q", chunks, budget=100, timeout_s=5).tokens > 0
    assert asyncio.run(contextwright.aassemble("q", chunks, budget=100, timeout_s=5)).tokens > 0
    config = {
        "stages": [{"type": "compress", "max_words": 2_000}, {"type": "token_budget"}],
        "format": "lean",
    }
    with pytest.raises(TimeoutError):
        asyncio.run(
            contextwright.aassemble("w5 question", _slow_chunks(), preset=config, budget=300, timeout_s=0.2)
        )
