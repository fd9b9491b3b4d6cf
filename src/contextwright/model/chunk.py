"""The chunk: the unit every stage takes and gives, a frozen, slotted dataclass.

Stages never mutate a chunk; they copy it with :func:`dataclasses.replace` or
:meth:`Chunk.with_ops`.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import operator
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from contextwright.core.errors import InputError
from contextwright.core.text import check_text, visible

if TYPE_CHECKING:
    pass

from contextwright.model.fields import (
    _EMPTY,
    FIELD_ALIASES,
    _collect,
    _fast_plan,
    _opt_int,
    _opt_str,
    _provenance,
    _provenance_dicts,
    _short,
    _utf8_ok,
    check_tree,
    plain_extras,
    plain_values,
    read_embedding,
    read_metadata,
    read_nested,
    read_origin,
    read_rank,
    read_score,
    read_text,
)

Origin = Literal["retrieved", "expanded", "merged"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved piece of text and everything known about where it came from.

    Only ``text`` is required. ``score`` is the retriever's or reranker's
    relevance (higher is better); ``rank`` is the position in the input list
    and breaks score ties, so equal scores keep retrieval order.

    Stages that alter a chunk record it in ``ops`` (``"truncated"``,
    ``"compressed"``, ``"overlap_stripped"``, ...). A chunk that stands for
    several input chunks (a merged passage) lists them in ``chunk_ids``;
    duplicates folded into it are in ``duplicates``, their sources in
    ``also_sources``, where each was in ``also_at`` and its text in ``copies``,
    so that its citation can name every other place that holds the block's text,
    and only for the text that place holds (:mod:`contextwright.model.provenance`).
    A chunk fused from several ranked lists lists them in ``provenance``:
    ``(list name, 1-based rank, that list's score)``, best rank first.

    A chunk, and so an :class:`~contextwright.AssembledContext`, pickles and deep-copies (for a
    worker pool or a pickle-backed cache); ``metadata`` is a read-only view and comes back as one.

    Example:
        >>> Chunk("Paris is the capital of France.", id="a", score=0.9, source="fr.md")
        Chunk(text='Paris is the capital of France.', id='a', score=0.9, ...)
    """

    text: str
    id: str = ""
    score: float = 0.0
    doc_id: str | None = None
    index: int | None = None
    source: str | None = None
    title: str | None = None
    section: str | None = None
    page: int | None = None
    line: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    embedding: tuple[float, ...] | None = field(default=None, compare=False, repr=False)
    origin: str = "retrieved"
    rank: int = 0
    ops: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    also_sources: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    doc_summary: str | None = None
    #: Where each folded duplicate was: ``(id, source, page, line)``.
    also_at: tuple[tuple[str, str | None, int | None, int | None], ...] = ()
    provenance: tuple[tuple[str, int, float], ...] = ()
    #: The text of each copy in ``also_at``: ``(id, text)``. The citation checks against it
    #: which part of the block's text that copy holds (never serialized).
    copies: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", content_id(self.text))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and ``copy``) by field values. The read-only ``metadata`` view, the shared empty
        default included, is a ``MappingProxyType``, which pickle refuses: it travels as a dict and
        comes back as a view (so an :class:`~contextwright.AssembledContext` pickles, for a worker pool)."""
        values = list(_chunk_values(self))
        proxy = type(self.metadata) is MappingProxyType
        if proxy:
            values[_CHUNK_INDEX["metadata"]] = dict(self.metadata)
        return (_unpickle_chunk, (tuple(values), proxy))

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"Chunk(text={text!r}, id={self.id!r}, score={self.score!r}, doc_id={self.doc_id!r}, ...)"

    @property
    def member_ids(self) -> tuple[str, ...]:
        """The input chunk ids this chunk stands for (itself unless merged)."""
        return self.chunk_ids or (self.id,)

    @property
    def doc_key(self) -> str | None:
        """The document this chunk belongs to: ``doc_id``, else ``source`` (a file is a document), else None."""
        return self.doc_id if self.doc_id is not None else self.source

    @property
    def group_key(self) -> str:
        """The document this chunk belongs to (:attr:`doc_key`), or its own id when it has none."""
        key = self.doc_id if self.doc_id is not None else self.source
        return key if key is not None else self.id

    def with_ops(self, *ops: str, **changes: Any) -> Chunk:
        """Copy with ``ops`` extended and other fields replaced (as :func:`dataclasses.replace`)."""
        if ops:
            changes["ops"] = self.ops + tuple(o for o in ops if o not in self.ops)
        if not _CHUNK_FIELD_SET.issuperset(changes):
            return replace(self, **changes)  # its TypeError names the field
        # A slot-by-slot copy: half the time of replace(), which builds every field's keyword
        # and runs __init__ (the fill policy copies a chunk per candidate window); with the C
        # module, one call that sets the slots (1.5 against 4.1 µs a copy).
        values = list(_chunk_values(self))
        for name, value in changes.items():
            values[_CHUNK_INDEX[name]] = value
        new = _new_chunk(*values)
        if not new.id:
            new.__post_init__()
        return new

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, position: int | None = None) -> Chunk:
        """Build a chunk from a mapping with the field names users already have.

        Accepts ``text``/``content``/``page_content``; ``score``/``rerank_score``/
        ``similarity``/``relevance_score``; ``doc_id``/``document_id``;
        ``index``/``chunk_index``; ``source``/``source_path``/``file_name``/``url``;
        ``page``/``page_number``; ``line``/``start_line``/``row_number``. Those keys
        may also sit inside ``metadata`` (LangChain and LlamaIndex put them there).
        Unknown keys are kept in ``metadata``.

        Args:
            data: The mapping.
            position: The item's position in its list, used in error messages
                and as ``rank`` when the mapping has none.

        Raises:
            InputError: naming the position, the field, the value and the fix.
        """
        if type(data) is dict:
            fast = _from_plain(data, position)
            if fast is not None:
                return fast[0]
        where = f"chunks[{position}]" if position is not None else "chunk"
        nested = read_nested(data, where)
        found = _collect(data, "")
        if nested:
            for name, hit in _collect(nested, "metadata.").items():
                found.setdefault(name, hit)
        text = read_text(found, data, where)
        score = read_score(found, where)
        emb = read_embedding(data, nested, where)
        rank = read_rank(data, position, where)
        metadata = read_metadata(data, nested, where)
        origin = read_origin(data, where)
        provenance = _provenance(data.get("provenance"), where)

        return cls(
            text=text,
            id=_opt_str(found, "id", where) or "",
            score=score,
            doc_id=_opt_str(found, "doc_id", where),
            index=_opt_int(found, "index", where),
            source=_opt_str(found, "source", where),
            title=_opt_str(found, "title", where),
            section=_opt_str(found, "section", where),
            page=_opt_int(found, "page", where),
            line=_opt_int(found, "line", where),
            metadata=MappingProxyType(metadata) if metadata else _EMPTY,
            embedding=emb,
            origin=origin,
            rank=rank,
            provenance=provenance,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; ``Chunk.from_dict(c.to_dict())`` equals ``c``."""
        out: dict[str, Any] = {"id": self.id, "text": self.text, "score": self.score}
        for name in ("doc_id", "index", "source", "title", "section", "page", "line"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        out["rank"] = self.rank
        if self.origin != "retrieved":
            out["origin"] = self.origin
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.embedding is not None:
            out["embedding"] = list(self.embedding)
        for name in ("ops", "chunk_ids", "duplicates", "also_sources"):
            value = getattr(self, name)
            if value:
                out[name] = list(value)
        if self.also_at:
            out["also_at"] = [list(a) for a in self.also_at]
        if self.provenance:
            out["provenance"] = _provenance_dicts(self.provenance)
        return out


_CHUNK_FIELDS = tuple(f.name for f in fields(Chunk))
_CHUNK_FIELD_SET = frozenset(_CHUNK_FIELDS)
_CHUNK_INDEX = {name: i for i, name in enumerate(_CHUNK_FIELDS)}
_chunk_values = operator.attrgetter(*_CHUNK_FIELDS)
_set = object.__setattr__


def _python_new_chunk(*values: Any) -> Chunk:
    """A chunk with its fields set, in field order, to ``values`` (the rest to their defaults),
    without running ``__init__`` or ``__post_init__``: the caller gives a non-empty ``id``."""
    new = object.__new__(Chunk)
    for name, value in zip(_CHUNK_FIELDS, values + _CHUNK_DEFAULTS[len(values) :], strict=True):
        _set(new, name, value)
    return new


def _unpickle_chunk(values: tuple[Any, ...], proxy: bool) -> Chunk:
    """The chunk :meth:`Chunk.__reduce__` gave the values of."""
    if proxy:
        at = _CHUNK_INDEX["metadata"]
        values = (*values[:at], MappingProxyType(values[at]) if values[at] else _EMPTY, *values[at + 1 :])
    return _new_chunk(*values)


def _chunk_defaults() -> tuple[Any, ...]:
    out = []
    for f in fields(Chunk):
        if f.default is not MISSING:
            out.append(f.default)
        elif f.default_factory is not MISSING:
            out.append(f.default_factory())
        else:
            out.append(None)  # text: always given
    return tuple(out)


def _native_new_chunk() -> Callable[..., Chunk] | None:
    """The C module's maker of :class:`Chunk` (``_native.SlotMaker``): one allocation and a store
    per slot, where the frozen dataclass's ``__init__`` calls ``object.__setattr__`` per field
    (2.5 µs a chunk, half the time of reading one; issue 33). None without the C module."""
    try:
        from contextwright import _native
    except ImportError:  # installed without a C compiler, or with CONTEXTWRIGHT_PURE=1
        return None
    try:
        maker: Callable[..., Chunk] = _native.SlotMaker(Chunk, _CHUNK_FIELDS, _CHUNK_DEFAULTS)
    except (AttributeError, TypeError, ValueError):  # an older build, or a layout it refuses
        return None
    return maker


_CHUNK_DEFAULTS = _chunk_defaults()
#: ``_new_chunk(text, id, score, ...)``: a chunk from its field values in order (a prefix; the
#: rest default), no ``__init__`` run, so ``id`` must be given (non-empty). C where built.
_new_chunk: Callable[..., Chunk] = _native_new_chunk() or _python_new_chunk


def content_id(text: str) -> str:
    """A stable id derived from the text (NFC-normalized), for chunks without one."""
    digest = hashlib.blake2b(unicodedata.normalize("NFC", text).encode(), digest_size=8)
    return "c" + digest.hexdigest()


def _from_plain(data: dict[str, Any], position: int | None) -> tuple[Chunk, bool] | None:
    """``(chunk, has an explicit id)`` for the common input, a flat dict of plain values with
    visible, valid text; None when anything needs :meth:`Chunk.from_dict`'s general path (which
    then gives the same chunk, or the error naming the field).

    Every check of the general path holds here by construction (exact types, valid Unicode,
    scalar metadata values); what it skips is the per-chunk alias search, ``check_tree`` and the
    error bookkeeping, about two thirds of the time of reading a chunk.
    """
    plan = _fast_plan(tuple(data))
    if plan is None:
        return None
    text = data[plan.text]
    if type(text) is not str or not (text.isascii() or _utf8_ok(text)) or not visible(text):
        return None
    score = 0.0
    if plan.score is not None:
        raw = data[plan.score]
        if type(raw) is float and math.isfinite(raw):
            score = raw
        elif raw is not None:
            return None
    values = plain_values(plan, data)
    if values is None:
        return None
    rank = position if position is not None else 0
    if plan.rank:
        raw = data["rank"]
        if raw is not None:
            if type(raw) is not int:
                return None
            rank = raw
    metadata: dict[str, Any] | None = None
    if plan.extras:
        metadata = plain_extras(plan, data)
        if metadata is None:
            return None
    get = values.get
    # Positional (field order; the property test against from_dict's general path checks it),
    # made without __init__ (_new_chunk), so the content id is derived here when none is given.
    chunk = _new_chunk(
        text,
        get("id") or content_id(text),
        score,
        get("doc_id"),
        get("index"),
        get("source"),
        get("title"),
        get("section"),
        get("page"),
        get("line"),
        MappingProxyType(metadata) if metadata else _EMPTY,
        None,
        "retrieved",
        rank,
    )
    return chunk, plan.explicit_id is not None and data[plan.explicit_id] is not None


def _check_chunk(chunk: Chunk, where: str) -> None:
    """Lone surrogates and invisible-only text in a chunk built by hand."""
    check_text(chunk.text, f"{where}.text")
    if not visible(chunk.text):
        raise InputError(
            f"{where}.text is empty or only whitespace/invisible characters ({_short(chunk.text)}). "
            "Drop empty chunks before assembly; they carry nothing to cite."
        )
    score = chunk.score
    if type(score) is not float and (
        isinstance(score, bool)
        or not isinstance(score, numbers.Real)  # numpy's float32 too
        or (isinstance(score, int) and not -_FLOAT_MAX <= score <= _FLOAT_MAX)
    ):
        raise InputError(
            f"{where}.score must be a number within a float's range (about ±1.8e308); got "
            f"{type(score).__name__} {_short(score) if not isinstance(score, int) else _digits(score)}. "
            "Pass the retriever's score as a float (scale huge scores), or leave it at 0.0."
        )
    for name in ("id", "doc_id", "source", "title", "section", "origin", "doc_summary"):
        value = getattr(chunk, name)
        if isinstance(value, str):
            check_text(value, f"{where}.{name}")
    if chunk.metadata:
        check_tree(chunk.metadata, f"{where}.metadata")


_FLOAT_MAX = int(1.7976931348623157e308)


def _digits(value: int) -> str:
    """``"of about 401 digits"``: an int too large to print (or convert) whole."""
    return f"of about {int(value.bit_length() * 0.30103) + 1} digits"


def _empty_text(item: Any) -> str | None:
    """Why ``item``'s text is empty (``"text is null"``, ...), or None when it has text (or is malformed otherwise)."""
    if isinstance(item, Chunk):
        return None if visible(item.text) else f"text is empty or only whitespace ({_short(item.text)})"
    if not isinstance(item, Mapping):
        return None
    nested = item.get("metadata")
    for where, data in (("", item), ("metadata.", nested if isinstance(nested, Mapping) else {})):
        for alias in FIELD_ALIASES["text"]:
            if alias in data:
                value = data[alias]
                if value is None:
                    continue
                if isinstance(value, str) and not visible(value):
                    return f"{where}{alias} is empty or only whitespace ({_short(value)})"
                return None
    for where, data in (("", item), ("metadata.", nested if isinstance(nested, Mapping) else {})):
        for alias in FIELD_ALIASES["text"]:
            if alias in data:
                return f"{where}{alias} is null"
    return None


def _given_id(item: Any, position: int) -> str:
    """The id a dropped input item is reported under: its own, else its position."""
    if isinstance(item, Chunk):
        return item.id
    for alias in FIELD_ALIASES["id"]:
        value = item.get(alias) if isinstance(item, Mapping) else None
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return f"chunks[{position}]"
