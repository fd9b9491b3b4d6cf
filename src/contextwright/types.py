"""The small core: chunks in, stage reports along the way, a context out.

Everything here is a frozen, slotted dataclass. Stages never mutate a chunk;
they copy it with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from contextwright.errors import InputError
from contextwright.render.escape import visible
from contextwright.textcheck import check_text

if TYPE_CHECKING:
    from contextwright.render.history import HistoryResult
    from contextwright.render.messages import Message
    from contextwright.render.tools import ToolsResult

__all__ = [
    "AssembledContext",
    "Change",
    "Chunk",
    "Citation",
    "Drop",
    "DropReason",
    "Report",
    "StageReport",
    "StageResult",
    "chunks_from_dicts",
]

Origin = Literal["retrieved", "expanded", "merged"]

#: Why a chunk left the pipeline. Stages may add their own reasons; these are
#: the ones the built-in stages use.
DropReason = Literal[
    "below_min_score",
    "top_k",
    "duplicate_of",
    "near_duplicate_of",
    "semantic_duplicate_of",
    "merged_into",
    "contained_in",
    "over_budget",
    "irrelevant",
    "not_rendered",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

# Field names users already have, mapped to ours. The first key present wins,
# in this order, so an explicit ``text`` beats ``content``.
_ALIASES: dict[str, tuple[str, ...]] = {
    "text": ("text", "content", "page_content", "chunk", "passage"),
    "score": ("score", "rerank_score", "relevance_score", "similarity", "similarity_score"),
    "doc_id": ("doc_id", "document_id", "docid", "parent_id"),
    "index": ("index", "chunk_index", "position", "chunk_id_in_doc"),
    "source": ("source", "source_path", "file_name", "filename", "url", "path"),
    "page": ("page", "page_number", "page_no"),
    "line": ("line", "start_line", "row_number", "row"),
    "id": ("id", "chunk_id", "node_id"),
    "title": ("title", "doc_title", "document_title"),
    "section": ("section", "heading", "header"),
}
_FIELD_OF: dict[str, tuple[str, int]] = {
    alias: (name, priority) for name, aliases in _ALIASES.items() for priority, alias in enumerate(aliases)
}


@functools.lru_cache(maxsize=512)
def _plan(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """For a key set: (our field, the key that supplies it), best alias first.

    Chunks of one list nearly always share their keys, so the alias search is
    done once per key set rather than once per chunk.
    """
    best: dict[str, tuple[int, str]] = {}
    for key in keys:
        hit = _FIELD_OF.get(key)
        if hit is not None and (hit[0] not in best or hit[1] < best[hit[0]][0]):
            best[hit[0]] = (hit[1], key)
    return tuple((name, key) for name, (_, key) in best.items())


def _collect(data: Mapping[str, Any], prefix: str) -> dict[str, tuple[int, str, Any]]:
    """For each of our fields, the highest-priority alias present with a value."""
    found: dict[str, tuple[int, str, Any]] = {}
    plan = _plan(tuple(data))
    for name, key in plan:
        value = data[key]
        if value is None:  # fall back to the next alias that has a value
            for priority, alias in enumerate(_ALIASES[name]):
                if data.get(alias) is not None:
                    found[name] = (priority, prefix + alias, data[alias])
                    break
            continue
        found[name] = (0, prefix + key, value)
    return found


_KNOWN_KEYS = frozenset(k for names in _ALIASES.values() for k in names) | {
    "metadata",
    "embedding",
    "origin",
    "rank",
    "provenance",
}


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved piece of text and everything known about where it came from.

    Only ``text`` is required. ``score`` is the retriever's or reranker's
    relevance (higher is better); ``rank`` is the position in the input list
    and breaks score ties, so equal scores keep retrieval order.

    Stages that alter a chunk record it in ``ops`` (``"truncated"``,
    ``"compressed"``, ``"overlap_stripped"``, ...). A chunk that stands for
    several input chunks (a merged passage) lists them in ``chunk_ids``;
    duplicates folded into it are in ``duplicates`` and their sources in
    ``also_sources`` so its citation can name every place the text came from.
    A chunk fused from several ranked lists lists them in ``provenance``:
    ``(list name, 1-based rank, that list's score)``, best rank first.

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

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", content_id(self.text))

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
        # and runs __init__ (the fill policy copies a chunk per candidate window).
        new = object.__new__(Chunk)
        for name, value in zip(_CHUNK_FIELDS, _chunk_values(self), strict=True):
            _set(new, name, changes.get(name, value))
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
        if type(data) is not dict and not isinstance(data, Mapping):
            raise InputError(
                f"{where} must be an object with at least a 'text' field; got "
                f'{type(data).__name__} {_short(data)}. Pass {{"text": "...", "score": 0.5}}.'
            )
        meta_in = data.get("metadata")
        if meta_in is not None and not isinstance(meta_in, Mapping):
            raise InputError(
                f"{where}.metadata must be an object; got {type(meta_in).__name__} "
                f"{_short(meta_in)}. Pass a JSON object or leave it out."
            )
        nested: Mapping[str, Any] = meta_in or {}
        found = _collect(data, "")
        if nested:
            for name, hit in _collect(nested, "metadata.").items():
                found.setdefault(name, hit)

        text_hit = found.get("text")
        if text_hit is None:
            null = next((k for k in _ALIASES["text"] if k in data), None)
            if null is not None:
                raise InputError(
                    f"{where}.{null} is null; a chunk needs its text as a string. "
                    "Pass the text, or leave the chunk out (assemble() drops it with reason 'empty')."
                )
            raise InputError(
                f"{where} has no text: expected one of the fields "
                f"{', '.join(_ALIASES['text'])}; got keys {sorted(data)}. "
                "Add the chunk's text under 'text'."
            )
        text = text_hit[2]
        if type(text) is not str:
            raise InputError(
                f"{where}.{text_hit[1]} must be a string; got {type(text).__name__} {_short(text)}."
            )
        check_text(text, f"{where}.{text_hit[1]}")
        if not visible(text):
            raise InputError(
                f"{where}.{text_hit[1]} is empty or only whitespace/invisible characters ({_short(text)}). "
                "Drop empty chunks before assembly; they carry nothing to cite."
            )

        score_hit = found.get("score")
        score = 0.0
        if score_hit is not None:
            raw = score_hit[2]
            score = (
                raw if type(raw) is float and math.isfinite(raw) else _number(raw, f"{where}.{score_hit[1]}")
            )

        embedding = data.get("embedding", nested.get("embedding"))
        emb: tuple[float, ...] | None = None
        if embedding is not None:
            try:
                emb = tuple(float(x) for x in embedding)
            except (TypeError, ValueError):
                raise InputError(
                    f"{where}.embedding must be a list of numbers; got {_short(embedding)}."
                ) from None
            if not emb or not all(math.isfinite(x) for x in emb):
                raise InputError(
                    f"{where}.embedding must be a non-empty list of finite numbers; got {_short(embedding)}."
                )

        rank_raw = data.get("rank")
        rank = position if position is not None else 0
        if rank_raw is not None:
            if isinstance(rank_raw, bool) or not isinstance(rank_raw, int):
                raise InputError(f"{where}.rank must be an integer; got {_short(rank_raw)}.")
            rank = rank_raw

        metadata = {k: v for k, v in nested.items() if k != "embedding"} if nested else {}
        for k, v in data.items():
            if k not in _KNOWN_KEYS:
                if isinstance(k, str) and not k.isascii():
                    check_text(k, f"{where} key {_short(k)}")
                metadata[k] = v
        if metadata:
            check_tree(metadata, f"{where}.metadata")

        origin = data.get("origin", "retrieved")
        if type(origin) is not str:
            raise InputError(f"{where}.origin must be a string; got {_short(origin)}.")
        check_text(origin, f"{where}.origin")

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
_chunk_values = operator.attrgetter(*_CHUNK_FIELDS)
_set = object.__setattr__


def _provenance(value: Any, where: str) -> tuple[tuple[str, int, float], ...]:
    """``provenance`` from its JSON form (``[{"list", "rank", "score"}, ...]``)."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(
            f'{where}.provenance must be a list of {{"list", "rank", "score"}} objects; got {_short(value)}.'
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("list"), str):
            raise InputError(
                f'{where}.provenance[{i}] must be an object with a string "list", an integer "rank" '
                f'and a numeric "score"; got {_short(item)}.'
            )
        rank = item.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise InputError(f"{where}.provenance[{i}].rank must be a positive integer; got {_short(rank)}.")
        score = _number(item.get("score", 0.0), f"{where}.provenance[{i}].score")
        out.append((item["list"], rank, score))
    return tuple(out)


def _provenance_dicts(provenance: Sequence[tuple[str, int, float]]) -> list[dict[str, Any]]:
    return [{"list": name, "rank": rank, "score": score} for name, rank, score in provenance]


def content_id(text: str) -> str:
    """A stable id derived from the text (NFC-normalized), for chunks without one."""
    digest = hashlib.blake2b(unicodedata.normalize("NFC", text).encode(), digest_size=8)
    return "c" + digest.hexdigest()


_STR_FIELDS = ("id", "doc_id", "source", "title", "section")
_INT_FIELDS = ("index", "page", "line")
# Keys whose handling the fast path leaves to Chunk.from_dict (nested or rarely given).
_SLOW_KEYS = frozenset({"metadata", "embedding", "origin", "provenance"})
_SCALARS = (bool, int, float, type(None))


@dataclass(frozen=True, slots=True)
class _FastPlan:
    """How :func:`_from_plain` reads one key set: the key of each field and the extra keys."""

    text: str
    score: str | None
    strs: tuple[tuple[str, str], ...]  # (field, key)
    ints: tuple[tuple[str, str], ...]
    rank: bool
    extras: tuple[str, ...]  # unknown keys, kept as metadata (ASCII strings)
    explicit_id: str | None  # the key of an explicit id


@functools.lru_cache(maxsize=512)
def _fast_plan(keys: tuple[Any, ...]) -> _FastPlan | None:
    """The fast reading of a key set, or None when it needs :meth:`Chunk.from_dict`'s general path:
    a non-string or non-ASCII key, two aliases of one field, no text key, or a nested/rare key."""
    if not all(type(k) is str and k.isascii() for k in keys) or _SLOW_KEYS.intersection(keys):
        return None
    fields: dict[str, str] = {}
    for key in keys:
        hit = _FIELD_OF.get(key)
        if hit is not None:
            if hit[0] in fields:
                return None  # which alias wins depends on the values (None falls through)
            fields[hit[0]] = key
    if "text" not in fields:
        return None
    return _FastPlan(
        text=fields["text"],
        score=fields.get("score"),
        strs=tuple((name, fields[name]) for name in _STR_FIELDS if name in fields),
        ints=tuple((name, fields[name]) for name in _INT_FIELDS if name in fields),
        rank="rank" in keys,
        extras=tuple(k for k in keys if k not in _KNOWN_KEYS),
        explicit_id=fields.get("id"),
    )


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
    values: dict[str, Any] = {}
    for name, key in plan.strs:
        value = data[key]
        if value is not None:
            if type(value) is not str or not (value.isascii() or _utf8_ok(value)):
                return None
            values[name] = value
    for name, key in plan.ints:
        value = data[key]
        if value is not None:
            if type(value) is not int:
                return None
            values[name] = value
    rank = position if position is not None else 0
    if plan.rank:
        raw = data["rank"]
        if raw is not None:
            if type(raw) is not int:
                return None
            rank = raw
    metadata: dict[str, Any] | None = None
    if plan.extras:
        metadata = {}
        for k in plan.extras:
            value = data[k]
            if type(value) is str:
                if not (value.isascii() or _utf8_ok(value)):
                    return None
            elif type(value) not in _SCALARS:
                return None  # nested: check_tree's path to a bad string
            metadata[k] = value
    get = values.get
    # Positional (field order; the property test against from_dict's general path checks it):
    # a keyword call of a 23-field dataclass costs ~15 % more.
    chunk = Chunk(
        text,
        get("id") or "",
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


def chunks_from_dicts(
    items: Iterable[Mapping[str, Any] | Chunk], *, empty: list[Drop] | None = None
) -> tuple[Chunk, ...]:
    """Normalize a list of mappings or chunks into chunks with unique ids.

    ``rank`` is set to the input position. Chunks without an id get one from
    their content; two id-less chunks with the same text get ``-2``, ``-3``
    suffixes so that the report can still tell them apart.

    Args:
        items: Chunks or mappings.
        empty: When given, an item whose text is empty, whitespace only or
            null is not an error: it is left out and recorded here as a
            :class:`Drop` with reason ``empty`` (retrievers do return them).

    Raises:
        InputError: for a malformed item, or two items that give the same id.
    """
    out: list[Chunk] = []
    seen: dict[str, int] = {}
    for position, item in enumerate(items):
        fast = _from_plain(item, position) if type(item) is dict else None
        if fast is not None:
            chunk, explicit = fast
        elif empty is not None and (why := _empty_text(item)) is not None:
            empty.append(Drop(_given_id(item, position), "empty", detail=why))
            continue
        elif isinstance(item, Chunk):
            _check_chunk(item, f"chunks[{position}]")
            chunk = replace(item, rank=position)
            explicit = True
        else:
            chunk = Chunk.from_dict(item, position=position)
            explicit = isinstance(item, Mapping) and any(item.get(k) is not None for k in _ALIASES["id"])
        if chunk.id in seen:
            if explicit:
                raise InputError(
                    f"chunks[{position}].id {chunk.id!r} repeats chunks[{seen[chunk.id]}].id; "
                    "ids must be unique within one call. Give each chunk its own id, "
                    "or leave ids out to have them derived from the text."
                )
            n = 2
            while f"{chunk.id}-{n}" in seen:
                n += 1
            chunk = replace(chunk, id=f"{chunk.id}-{n}")
        seen[chunk.id] = position
        out.append(chunk)
    return tuple(out)


_MAX_DEPTH = 32


def check_tree(value: Any, where: str, *, error: type[Exception] = InputError) -> None:
    """:func:`check_text` over every string key and value of nested mappings and lists.

    Raises:
        error: naming the path of the first bad string (``chunks[0].metadata.k[1].x``),
            or of a container nested more than 32 levels deep.
    """
    path = _bad_path(value, 0)
    if path is None:
        return
    label = where + "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if p != "<key>" else " key") for p in path
    )
    if path and path[-1] == "__depth__":
        raise error(
            f"{label[: -len('.__depth__')]} is nested more than {_MAX_DEPTH} levels deep; flatten it."
        )
    bad = _value_at(value, path)
    check_text(bad, label, error=error)


def _bad_path(value: Any, depth: int) -> list[Any] | None:
    """The path to the first string that is not valid Unicode, or None (cheap when all is ASCII)."""
    if isinstance(value, str):
        return None if value.isascii() or _utf8_ok(value) else []
    if isinstance(value, Mapping):
        if depth >= _MAX_DEPTH:
            return ["__depth__"]
        for k, v in value.items():
            if isinstance(k, str) and not k.isascii() and not _utf8_ok(k):
                return [k, "<key>"]
            sub = _bad_path(v, depth + 1)
            if sub is not None:
                return [k, *sub]
    elif isinstance(value, (list, tuple)):
        if depth >= _MAX_DEPTH:
            return ["__depth__"]
        for i, v in enumerate(value):
            sub = _bad_path(v, depth + 1)
            if sub is not None:
                return [i, *sub]
    return None


def _value_at(value: Any, path: list[Any]) -> str:
    previous: Any = None
    for p in path:
        if p == "<key>":
            return str(previous)  # the bad string is the key itself
        previous = p
        value = value[p]
    return str(value)


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_chunk(chunk: Chunk, where: str) -> None:
    """Lone surrogates and invisible-only text in a chunk built by hand."""
    check_text(chunk.text, f"{where}.text")
    if not visible(chunk.text):
        raise InputError(
            f"{where}.text is empty or only whitespace/invisible characters ({_short(chunk.text)}). "
            "Drop empty chunks before assembly; they carry nothing to cite."
        )
    for name in ("id", "doc_id", "source", "title", "section", "origin", "doc_summary"):
        value = getattr(chunk, name)
        if isinstance(value, str):
            check_text(value, f"{where}.{name}")
    if chunk.metadata:
        check_tree(chunk.metadata, f"{where}.metadata")


def _empty_text(item: Any) -> str | None:
    """Why ``item``'s text is empty (``"text is null"``, ...), or None when it has text (or is malformed otherwise)."""
    if isinstance(item, Chunk):
        return None if visible(item.text) else f"text is empty or only whitespace ({_short(item.text)})"
    if not isinstance(item, Mapping):
        return None
    nested = item.get("metadata")
    for where, data in (("", item), ("metadata.", nested if isinstance(nested, Mapping) else {})):
        for alias in _ALIASES["text"]:
            if alias in data:
                value = data[alias]
                if value is None:
                    continue
                if isinstance(value, str) and not visible(value):
                    return f"{where}{alias} is empty or only whitespace ({_short(value)})"
                return None
    for where, data in (("", item), ("metadata.", nested if isinstance(nested, Mapping) else {})):
        for alias in _ALIASES["text"]:
            if alias in data:
                return f"{where}{alias} is null"
    return None


def _given_id(item: Any, position: int) -> str:
    """The id a dropped input item is reported under: its own, else its position."""
    if isinstance(item, Chunk):
        return item.id
    for alias in _ALIASES["id"]:
        value = item.get(alias) if isinstance(item, Mapping) else None
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return f"chunks[{position}]"


def _opt_str(found: dict[str, tuple[int, str, Any]], name: str, where: str) -> str | None:
    hit = found.get(name)
    if hit is None:
        return None
    value = hit[2]
    if type(value) is str:
        return check_text(value, f"{where}.{hit[1]}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}.{hit[1]} must be a string; got {type(value).__name__} {_short(value)}.")
    return str(value)


def _opt_int(found: dict[str, tuple[int, str, Any]], name: str, where: str) -> int | None:
    hit = found.get(name)
    if hit is None:
        return None
    value = hit[2]
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise InputError(f"{where}.{hit[1]} must be an integer; got {value!r}.")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if not isinstance(value, int):
        raise InputError(
            f"{where}.{hit[1]} must be an integer; got {type(value).__name__} {_short(value)}. "
            "Pass a whole number or leave the field out."
        )
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(
            f"{where} must be a number; got {type(value).__name__} {_short(value)}. "
            "Pass the retriever's score as a number, or leave it out (0.0)."
        )
    try:
        number = float(value)
    except ValueError:
        raise InputError(
            f"{where} must be a number; got the string {value!r}. "
            "Pass the retriever's score as a number, or leave it out (0.0)."
        ) from None
    if not math.isfinite(number):
        raise InputError(
            f"{where} must be a finite number; got {value!r}. Replace NaN/inf scores "
            "before assembly (e.g. with 0.0), or leave the field out."
        )
    return number


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class Drop:
    """A chunk that left the pipeline, and why.

    ``related`` is the id of the chunk it is a duplicate of or was merged into,
    when the reason has one.
    """

    chunk_id: str
    reason: str
    related: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chunk_id": self.chunk_id, "reason": self.reason}
        if self.related is not None:
            out["related"] = self.related
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class Change:
    """A chunk that stayed but was altered (truncated, compressed, stripped, expanded)."""

    chunk_id: str
    action: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chunk_id": self.chunk_id, "action": self.action}
        if self.tokens_before is not None:
            out["tokens_before"] = self.tokens_before
        if self.tokens_after is not None:
            out["tokens_after"] = self.tokens_after
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class StageReport:
    """What one stage did: counts, tokens, time, and every drop and change.

    Stages fill in ``stage``, the counts, ``dropped``, ``changed``, ``added``
    and ``notes``; the pipeline fills in ``tokens_in``, ``tokens_out`` and
    ``ms``.
    """

    stage: str
    chunks_in: int
    chunks_out: int
    dropped: tuple[Drop, ...] = ()
    changed: tuple[Change, ...] = ()
    added: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    tokens_in: int | None = None
    tokens_out: int | None = None
    ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "chunks_in": self.chunks_in,
            "chunks_out": self.chunks_out,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "ms": round(self.ms, 3),
            "dropped": [d.to_dict() for d in self.dropped],
            "changed": [c.to_dict() for c in self.changed],
            "added": list(self.added),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class StageResult:
    """What a stage returns: the new chunks and its report."""

    chunks: tuple[Chunk, ...]
    report: StageReport

    @classmethod
    def of(
        cls,
        stage: str,
        chunks_in: Sequence[Chunk],
        chunks_out: Iterable[Chunk],
        *,
        dropped: Iterable[Drop] = (),
        changed: Iterable[Change] = (),
        added: Iterable[str] = (),
        notes: Iterable[str] = (),
    ) -> StageResult:
        """Build a result and its report in one call."""
        out = tuple(chunks_out)
        return cls(
            out,
            StageReport(
                stage=stage,
                chunks_in=len(chunks_in),
                chunks_out=len(out),
                dropped=tuple(dropped),
                changed=tuple(changed),
                added=tuple(added),
                notes=tuple(notes),
            ),
        )


@dataclass(frozen=True, slots=True)
class Report:
    """The reports of every stage of one assembly, in order.

    ``input_tokens`` is the token count of the input chunk texts, ``tokens``
    the exact count of the final text and ``budget`` the documents budget.
    ``history`` is the conversation history trimmed to its zone (what was
    kept, dropped and summarized) when ``assemble(..., history=...)`` got one;
    ``tools`` the tool outputs fitted to their zone (``tools=``);
    ``stable_prefix_tokens`` how many tokens at the start of the text equal the
    previous context's (``previous=``/``session=``).
    """

    stages: tuple[StageReport, ...]
    input_chunks: int
    input_tokens: int
    output_chunks: int
    tokens: int
    budget: int
    zones: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    history: HistoryResult | None = None
    tools: ToolsResult | None = None
    stable_prefix_tokens: int | None = None

    @property
    def dropped(self) -> tuple[Drop, ...]:
        """Every drop of every stage, in pipeline order."""
        return tuple(d for s in self.stages for d in s.dropped)

    @property
    def changed(self) -> tuple[Change, ...]:
        """Every change of every stage, in pipeline order."""
        return tuple(c for s in self.stages for c in s.changed)

    def reasons(self) -> dict[str, int]:
        """How many chunks were dropped for each reason."""
        counts: dict[str, int] = {}
        for d in self.dropped:
            counts[d.reason] = counts.get(d.reason, 0) + 1
        return counts

    def summary(self) -> str:
        """One line, e.g. ``20 → 11 chunks · 1,912 → 996 tokens (budget 1,000)``.

        When ``relevance_stop`` (the ``frugal`` preset) ended the list early, the line also
        says how many tokens of the budget that saved: ``… (budget 1,000; 574 saved)``.
        """
        stopped = any(d.reason == "below_relevance" for s in self.stages for d in s.dropped)
        saved = f"; {self.budget - self.tokens:,} saved" if stopped and self.tokens < self.budget else ""
        return (
            f"{self.input_chunks} → {self.output_chunks} chunks · "
            f"{self.input_tokens:,} → {self.tokens:,} tokens (budget {self.budget:,}{saved})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "input_chunks": self.input_chunks,
            "input_tokens": self.input_tokens,
            "output_chunks": self.output_chunks,
            "tokens": self.tokens,
            "budget": self.budget,
            "zones": dict(self.zones),
            "stages": [s.to_dict() for s in self.stages],
            **({"history": self.history.to_dict()} if self.history is not None else {}),
            **({"tools": self.tools.to_dict()} if self.tools is not None else {}),
            **(
                {"stable_prefix_tokens": self.stable_prefix_tokens}
                if self.stable_prefix_tokens is not None
                else {}
            ),
        }


@dataclass(frozen=True, slots=True)
class Citation:
    """Where block ``[index]`` of the context came from.

    ``chunk_ids`` lists every input chunk the block stands for (one, or several
    for a merged passage); ``also_sources`` lists the sources of duplicates that
    were folded into it, so a citation names every place the text appears.
    ``duplicates`` are the ids of copies folded into the block by dedup and
    ``also_at`` says where each copy was (``id``, ``source``, ``page``,
    ``line``), so a reader can check the citation at any of its places.
    ``spans`` says which text of the chunk the block shows when a stage cut it
    (compressed, truncated, overlap stripped): ``(start, end)`` character
    offsets into the chunk's text as it was passed in (for a merged passage,
    into the passage text); empty when the block shows the text whole.
    ``provenance`` says which ranked lists found the block and at which rank
    (``(list, rank, score)``), when named lists were fused.
    """

    index: int
    label: str
    chunk_ids: tuple[str, ...]
    doc_id: str | None
    source: str | None
    title: str | None
    section: str | None
    page: int | None
    line: int | None
    score: float
    snippet: str
    also_sources: tuple[str, ...] = ()
    index_span: tuple[int, int] | None = None
    spans: tuple[tuple[int, int], ...] = ()
    duplicates: tuple[str, ...] = ()
    also_at: tuple[Mapping[str, Any], ...] = ()
    provenance: tuple[tuple[str, int, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "chunk_ids": list(self.chunk_ids),
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "section": self.section,
            "page": self.page,
            "line": self.line,
            "score": self.score,
            "snippet": self.snippet,
            "also_sources": list(self.also_sources),
            "index_span": list(self.index_span) if self.index_span else None,
            "spans": [list(s) for s in self.spans],
            "duplicates": list(self.duplicates),
            "also_at": [dict(a) for a in self.also_at],
            **({"provenance": _provenance_dicts(self.provenance)} if self.provenance else {}),
        }


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """The result of an assembly: the text the model reads and how it was made.

    Attributes:
        text: The context string; ``tokens <= budget`` always holds.
        tokens: Exact token count of ``text`` with the configured tokenizer.
        budget: The documents budget the text was fitted to.
        citations: ``citations[n-1]`` describes block ``[n]`` of ``text``.
        chunks: The final blocks, in the order they appear in ``text``.
        report: Per-stage counts, tokens, timings, drops and changes.
        query: The query the context was assembled for (may be empty).
        tokenizer: Name of the tokenizer that counted ``tokens``.
    """

    text: str
    tokens: int
    budget: int
    citations: tuple[Citation, ...]
    chunks: tuple[Chunk, ...]
    report: Report
    query: str = ""
    tokenizer: str = ""
    #: The :class:`~contextwright.render.format.Format` the text was rendered in
    #: (prompts ask for its citation label; summaries go through its escape).
    format: Any = field(default=None, compare=False, repr=False)

    def messages(
        self,
        query: str | None = None,
        *,
        system: str | None = "default",
        history: Sequence[Mapping[str, str]] = (),
        context_in: Literal["system", "user"] = "user",
        history_budget: int | None = None,
        summarizer: Callable[[list[Message]], str] | None = None,
        cache: bool = False,
    ) -> list[Message]:
        """Chat messages in OpenAI format, with this context and a grounded prompt.

        One system message at most: the prompt, the history's system turns and
        summary, and (``context_in="system"``) the context, merged. A named
        prompt asks for the citation label of the context's format.

        Args:
            query: The user's question; defaults to the query assembled for.
            system: A prompt name (``default``, ``strict``, ``soft``), a literal
                system prompt, or ``None`` for no system message.
            history: Earlier turns (``{"role", "content"}``), oldest first;
                by default the history passed to ``assemble``, already trimmed
                (``report.history``). Trimmed to ``history_budget``, or else to the assembler's
                history zone (``history_tokens``) when it is set: oldest turns
                first, never a system message or the latest user turn (see
                :func:`contextwright.render.history.trim_history`, which also
                reports what was dropped).
            context_in: Put the context in the ``system`` message or in the
                final ``user`` message (default).
            history_budget: The history budget in tokens; overrides the zone.
            summarizer: Summarizes dropped turns; the summary counts in the budget.
            cache: Mark Anthropic-style prompt-cache breakpoints
                (``cache_control: {"type": "ephemeral"}``) on the message that
                holds the context: its content becomes text blocks split after
                the stable prefix (``report.stable_prefix_tokens``) and at the
                end of the context. Put the context in the ``system`` message
                for the longest cacheable prefix.

        The tool outputs fitted by ``assemble(..., tools=...)`` come before the
        context, in their own section.
        """
        from contextwright.render.messages import build_messages

        if not history and self.report.history is not None:
            # the history passed to assemble(), trimmed there
            history = [{"role": m["role"], "content": m["content"]} for m in self.report.history.messages]
        elif history and (history_budget is not None or int(self.report.zones.get("history", 0)) > 0):
            zone = history_budget if history_budget is not None else int(self.report.zones["history"])
            from contextwright.render.history import trim_history
            from contextwright.tokens import get_tokenizer

            tokenizer = get_tokenizer(self.tokenizer or "cl100k_base")
            kept = trim_history(history, budget=zone, tokenizer=tokenizer, summarizer=summarizer).messages
            history = [{"role": m["role"], "content": m["content"]} for m in kept]
        if self.format is not None:
            from contextwright.render.history import SUMMARY_PREFIX

            # a summary of dropped turns is text from the conversation: escaped like the context
            history = [
                {
                    "role": "system",
                    "content": SUMMARY_PREFIX + self.format.escape(t["content"][len(SUMMARY_PREFIX) :]),
                }
                if t.get("role") == "system" and str(t.get("content", "")).startswith(SUMMARY_PREFIX)
                else t
                for t in history
            ]
        stable = None
        if cache and self.report.stable_prefix_tokens:
            stable = _prefix_chars(self.text, self.report.stable_prefix_tokens, self.tokenizer)
        return build_messages(
            self.text,
            self.query if query is None else query,
            system=system,
            history=history,
            context_in=context_in,
            format=self.format,
            tools=self.report.tools.text if self.report.tools is not None else "",
            cache=cache,
            stable_chars=stable,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping of text, tokens, citations and report."""
        return {
            "query": self.query,
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "tokenizer": self.tokenizer,
            "citations": [c.to_dict() for c in self.citations],
            "report": self.report.to_dict(),
        }


def _prefix_chars(text: str, tokens: int, tokenizer: str) -> int:
    """Characters of the line-aligned prefix of ``text`` that costs ``tokens`` tokens."""
    from contextwright.tokens import get_tokenizer

    tok = get_tokenizer(tokenizer or "cl100k_base")
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    lo, hi, best = 0, len(ends) - 1, 0
    while lo <= hi:  # the longest line-aligned prefix within ``tokens``
        mid = (lo + hi) // 2
        if tok.count(text[: ends[mid]]) <= tokens:
            best, lo = ends[mid], mid + 1
        else:
            hi = mid - 1
    return best
