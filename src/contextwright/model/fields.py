"""Reading a chunk's fields from a mapping: the aliases users already have, and the checks on each value.

Nothing here builds a :class:`~contextwright.model.chunk.Chunk`; these are the
parts of :meth:`Chunk.from_dict` that only look at values, so they sit below it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import InputError
from contextwright.core.text import check_text, visible

if TYPE_CHECKING:
    pass


_EMPTY: Mapping[str, Any] = MappingProxyType({})

#: Field names users already have, mapped to ours. The first key present wins,
# in this order, so an explicit ``text`` beats ``content``.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
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
    alias: (name, priority)
    for name, aliases in FIELD_ALIASES.items()
    for priority, alias in enumerate(aliases)
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
            for priority, alias in enumerate(FIELD_ALIASES[name]):
                if data.get(alias) is not None:
                    found[name] = (priority, prefix + alias, data[alias])
                    break
            continue
        found[name] = (0, prefix + key, value)
    return found


_KNOWN_KEYS = frozenset(k for names in FIELD_ALIASES.values() for k in names) | {
    "metadata",
    "embedding",
    "origin",
    "rank",
    "provenance",
}


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
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and value.isascii():
        return int(value)  # ASCII digits only: "²" and "٣" are digits to str.isdigit(), not to int()
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
    except OverflowError:  # an int past float's range (10**400): no float holds it
        raise InputError(
            f"{where} must be a finite number within a float's range (about ±1.8e308); got an "
            f"integer of about {int(int(value).bit_length() * 0.30103) + 1} digits. "
            "Scale the scores, or leave the field out."
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


def read_nested(data: Any, where: str) -> Mapping[str, Any]:
    """The mapping's ``metadata`` (empty when absent), after checking both are mappings."""
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
    return meta_in or {}


def read_text(found: dict[str, tuple[int, str, Any]], data: Mapping[str, Any], where: str) -> str:
    """The chunk's text: a string with a visible character, valid Unicode."""
    text_hit = found.get("text")
    if text_hit is None:
        null = next((k for k in FIELD_ALIASES["text"] if k in data), None)
        if null is not None:
            raise InputError(
                f"{where}.{null} is null; a chunk needs its text as a string. "
                "Pass the text, or leave the chunk out (assemble() drops it with reason 'empty')."
            )
        raise InputError(
            f"{where} has no text: expected one of the fields "
            f"{', '.join(FIELD_ALIASES['text'])}; got keys {sorted(data)}. "
            "Add the chunk's text under 'text'."
        )
    text = text_hit[2]
    if type(text) is not str:
        raise InputError(f"{where}.{text_hit[1]} must be a string; got {type(text).__name__} {_short(text)}.")
    check_text(text, f"{where}.{text_hit[1]}")
    if not visible(text):
        raise InputError(
            f"{where}.{text_hit[1]} is empty or only whitespace/invisible characters ({_short(text)}). "
            "Drop empty chunks before assembly; they carry nothing to cite."
        )
    return text


def read_score(found: dict[str, tuple[int, str, Any]], where: str) -> float:
    """The score under any of its aliases, 0.0 when there is none."""
    score_hit = found.get("score")
    if score_hit is None:
        return 0.0
    raw = score_hit[2]
    return raw if type(raw) is float and math.isfinite(raw) else _number(raw, f"{where}.{score_hit[1]}")


def read_embedding(
    data: Mapping[str, Any], nested: Mapping[str, Any], where: str
) -> tuple[float, ...] | None:
    """The embedding (top level or in metadata) as a tuple of finite floats, or None."""
    embedding = data.get("embedding", nested.get("embedding"))
    if embedding is None:
        return None
    try:
        emb = tuple(float(x) for x in embedding)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}.embedding must be a list of numbers; got {_short(embedding)}.") from None
    if not emb or not all(math.isfinite(x) for x in emb):
        raise InputError(
            f"{where}.embedding must be a non-empty list of finite numbers; got {_short(embedding)}."
        )
    return emb


def read_rank(data: Mapping[str, Any], position: int | None, where: str) -> int:
    """The given ``rank``, else the position in the list (0 without one)."""
    rank_raw = data.get("rank")
    rank = position if position is not None else 0
    if rank_raw is not None:
        if isinstance(rank_raw, bool) or not isinstance(rank_raw, int):
            raise InputError(f"{where}.rank must be an integer; got {_short(rank_raw)}.")
        rank = rank_raw
    return rank


def read_metadata(data: Mapping[str, Any], nested: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``metadata`` (without the embedding) plus every key that is no field, checked as text."""
    metadata = {k: v for k, v in nested.items() if k != "embedding"} if nested else {}
    for k, v in data.items():
        if k not in _KNOWN_KEYS:
            if isinstance(k, str) and not k.isascii():
                check_text(k, f"{where} key {_short(k)}")
            metadata[k] = v
    if metadata:
        check_tree(metadata, f"{where}.metadata")
    return metadata


def read_origin(data: Mapping[str, Any], where: str) -> str:
    """``origin`` (``"retrieved"`` when absent), a string."""
    origin = data.get("origin", "retrieved")
    if type(origin) is not str:
        raise InputError(f"{where}.origin must be a string; got {_short(origin)}.")
    check_text(origin, f"{where}.origin")
    return origin


def plain_values(plan: _FastPlan, data: dict[str, Any]) -> dict[str, Any] | None:
    """The string and integer fields of a plain mapping by ``plan``; None when one is not plain."""
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
    return values


def plain_extras(plan: _FastPlan, data: dict[str, Any]) -> dict[str, Any] | None:
    """The keys that are no field, as metadata, when every value is a plain scalar; else None."""
    metadata: dict[str, Any] = {}
    for k in plan.extras:
        value = data[k]
        if type(value) is str:
            if not (value.isascii() or _utf8_ok(value)):
                return None
        elif type(value) not in _SCALARS:
            return None  # nested: check_tree's path to a bad string
        metadata[k] = value
    return metadata
