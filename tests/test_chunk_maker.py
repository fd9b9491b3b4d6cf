"""Chunks made without ``__init__`` (``_native.SlotMaker`` and its Python fallback, issue 33).

Reading a chunk list and :meth:`Chunk.with_ops` make chunks by setting their slots directly. What
must hold: every field of such a chunk, the ones equality skips included, is what the dataclass's
own constructor gives, on the C path and the Python one alike, and the C maker refuses any class
whose slots it would not fill completely.
"""

from __future__ import annotations

import copy
import gc
import pickle
import shutil
import sys
from dataclasses import dataclass, fields
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.model import chunk as chunk_module
from contextwright.model.chunk import Chunk, _python_new_chunk
from contextwright.model.convert import chunks_from_dicts

try:
    from contextwright import _native
except ImportError:  # pragma: no cover - the pure-Python install
    _native = None  # type: ignore[assignment]

HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None
needs_native = pytest.mark.skipif(
    _native is None and not HAS_CC, reason="no C compiler: the module is not built"
)
NAMES = tuple(f.name for f in fields(Chunk))


def _all_fields(c: Chunk) -> tuple[object, ...]:
    return tuple(getattr(c, name) for name in NAMES)


_text = st.text(min_size=1, max_size=20).filter(str.strip)
_opt_str = st.none() | st.text(max_size=8)
_opt_int = st.none() | st.integers(-5, 10**6)
_strs = st.lists(st.text(max_size=5), max_size=3).map(tuple)


@st.composite
def _values(draw: st.DrawFn) -> dict[str, object]:
    return {
        "text": draw(_text),
        "id": draw(st.text(min_size=1, max_size=8)),
        "score": draw(st.floats(allow_nan=False)),
        "doc_id": draw(_opt_str),
        "index": draw(_opt_int),
        "source": draw(_opt_str),
        "title": draw(_opt_str),
        "section": draw(_opt_str),
        "page": draw(_opt_int),
        "line": draw(_opt_int),
        "metadata": MappingProxyType(draw(st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))),
        "embedding": draw(st.none() | st.lists(st.floats(allow_nan=False), max_size=3).map(tuple)),
        "origin": draw(st.sampled_from(["retrieved", "expanded", "merged"])),
        "rank": draw(st.integers(0, 50)),
        "ops": draw(_strs),
        "chunk_ids": draw(_strs),
        "duplicates": draw(_strs),
        "also_sources": draw(_strs),
        "spans": draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=2).map(tuple)),
        "doc_summary": draw(_opt_str),
        "also_at": (),
        "provenance": draw(
            st.lists(st.tuples(st.text(max_size=3), st.integers(1, 9), st.floats(0, 1)), max_size=2).map(
                tuple
            )
        ),
        "copies": draw(st.lists(st.tuples(st.text(max_size=3), st.text(max_size=5)), max_size=2).map(tuple)),
    }


@settings(max_examples=300, deadline=None)
@given(_values(), st.integers(2, len(NAMES)))
def test_a_made_chunk_has_every_field_the_constructor_gives(values: dict[str, object], given_n: int) -> None:
    """A prefix of the fields given (text and id at least: no __post_init__ runs), the rest default:
    on both paths, field for field."""
    prefix = [values[name] for name in NAMES[:given_n]]
    expected = Chunk(**dict(zip(NAMES[:given_n], prefix, strict=True)))
    makers = [_python_new_chunk]
    if _native is not None:
        makers.append(_native.SlotMaker(Chunk, NAMES, chunk_module._CHUNK_DEFAULTS))
    for make in makers:
        got = make(*prefix)
        assert type(got) is Chunk
        assert _all_fields(got) == _all_fields(expected), make
        assert _all_fields(pickle.loads(pickle.dumps(got))) == _all_fields(expected)  # the batch's workers
        assert _all_fields(copy.deepcopy(got)) == _all_fields(expected)


@settings(max_examples=200, deadline=None)
@given(_values(), _values())
def test_with_ops_gives_what_replace_gives(values: dict[str, object], changes: dict[str, object]) -> None:
    from dataclasses import replace

    c = Chunk(**values)
    some = {k: changes[k] for k in ("text", "score", "spans", "doc_summary")}
    got = c.with_ops("truncated", **some)
    expected = replace(c, ops=c.ops + tuple(o for o in ("truncated",) if o not in c.ops), **some)
    assert _all_fields(got) == _all_fields(expected)
    assert _all_fields(c.with_ops()) == _all_fields(c)
    assert c.with_ops(id="").id == Chunk(values["text"]).id  # type: ignore[arg-type]  # derived again


def test_the_reader_makes_chunks_with_the_c_maker_where_it_is_built() -> None:
    if _native is None:
        assert chunk_module._new_chunk is _python_new_chunk
    else:
        assert type(chunk_module._new_chunk) is _native.SlotMaker
    a, b = chunks_from_dicts([{"text": "Paris is in France.", "score": 0.5}, {"text": "x", "id": "x"}])
    assert a.id == Chunk("Paris is in France.").id and a.rank == 0 and b.rank == 1


@needs_native
def test_the_c_maker_refuses_what_it_would_not_fill() -> None:
    assert _native is not None

    @dataclass(frozen=True, slots=True)
    class P:
        a: int
        b: str = "x"

    class Open:  # instances have a __dict__
        __slots__ = ("__dict__", "a")

    @dataclass(frozen=True, slots=True)
    class Sub(P):  # slots of its base too
        c: int = 0

    cases = [
        ((P, ("a",), (None,)), ValueError, "exactly the 1 named slots"),
        ((P, ("a", "z"), (None, "x")), ValueError, "'z' is not a slot of P"),
        ((P, ("a", "a"), (None, None)), ValueError, "'a' is named twice"),
        ((P, ("a", "b"), (None,)), ValueError, "one default per name"),
        ((Open, ("a",), (None,)), ValueError, "exactly the 1 named slots"),
        ((Sub, ("a", "b", "c"), (None, "x", 0)), ValueError, "derive from object alone"),
        ((int, (), ()), ValueError, "derive from object alone"),
        ((P, ("a", 1), (None, None)), TypeError, "names must be str"),
        (("P", ("a",), (None,)), TypeError, "must be type"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            _native.SlotMaker(*args)
    make = _native.SlotMaker(P, ("a", "b"), (None, "x"))
    assert make(1) == P(1) and make(1, "y") == P(1, "y")
    with pytest.raises(TypeError, match="at most 2 values"):
        make(1, "y", 3)
    with pytest.raises(TypeError, match="positional values only"):
        make(a=1)


@needs_native
def test_the_c_maker_holds_one_reference_per_slot_and_frees_it() -> None:
    assert _native is not None
    make = _native.SlotMaker(Chunk, NAMES, chunk_module._CHUNK_DEFAULTS)
    text = "a text of its own " * 3
    before = sys.getrefcount(text)
    made = [make(text, "i") for _ in range(1000)]
    assert sys.getrefcount(text) - before == 1000
    del made
    gc.collect()
    assert sys.getrefcount(text) == before
    # A cycle through a made chunk (its metadata holds a list that holds the chunk) is collected.
    import weakref

    class Box(list):  # type: ignore[type-arg]
        pass

    box = Box()
    c = make(text, "i", 0.0, None, None, None, None, None, None, None, MappingProxyType({"box": box}))
    box.append(c)
    ref = weakref.ref(box)
    del box, c
    gc.collect()
    assert ref() is None
