"""Formats: how blocks become the context string.

A format renders a list of blocks as a sequence of *pieces*: an optional
frame start, then for each block an optional document header, a block header,
the body (the escaped chunk text) and an optional footer, then an optional
frame end. The context text is the concatenation of the pieces, with the
trailing newlines of the last piece removed.

Every built-in piece ends with a newline and starts with a non-whitespace
character. That is what lets an additive tokenizer (see
:mod:`contextwright.tokens`) count the final string as the sum of its cached
pieces, exactly, without tokenizing it again. It is also why each block's
number sits on a header line of its own.

Invariant 4 (boundaries cannot be forged): every format escapes, inside chunk
text, the delimiters it uses itself — ``<chunk``/``</chunk>`` in ``xml``, a
line starting ``[SOURCE n]`` in ``sources``, a line starting ``[n]`` in
``numbered``/``grouped``, a heading line in ``markdown`` and blank lines in
``minimal`` — so retrieved text cannot open a new block or close the context.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contextwright.errors import ConfigError, MissingDependencyError
from contextwright.types import Chunk

__all__ = [
    "Format",
    "GroupedFormat",
    "LeanFormat",
    "MarkdownFormat",
    "MinimalFormat",
    "NumberedFormat",
    "SourcesFormat",
    "TemplateFormat",
    "XmlFormat",
    "format_from_dict",
    "format_to_dict",
    "get_format",
]

_LINEBREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_BLANK_RUNS = re.compile(r"\n[ \t]*\n\s*")
_XML_TAGS = re.compile(r"<(?=\s*/?\s*(?:chunk|context|summary|document)\b)", re.IGNORECASE)
_NUMBER_LINE = re.compile(r"^([ \t]*)(?=\[\s*\d+\s*\])", re.MULTILINE)
_SOURCE_LINE = re.compile(r"^([ \t]*)(?=\[\s*SOURCE\b)", re.MULTILINE | re.IGNORECASE)
_HEADING_LINE = re.compile(r"^([ \t]*)(?=#|_Source:)", re.MULTILINE)


_ASCII_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _clean(text: str) -> str:
    """One kind of line break, no outer whitespace."""
    # Membership tests are C-speed scans; most texts need no substitution.
    if any(ch in text for ch in _ASCII_BREAKS) or (
        not text.isascii() and ("\x85" in text or "\u2028" in text or "\u2029" in text)
    ):
        text = _LINEBREAKS.sub("\n", text)
    return text.strip()


def _attr(value: object) -> str:
    text = _oneline(value)
    if "&" in text or '"' in text or "<" in text or ">" in text:
        text = text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def _oneline(value: object) -> str:
    text = str(value)
    # isprintable() is False for any line break or control character.
    return text.strip() if text.isprintable() else " ".join(text.split())


def _where(chunk: Chunk) -> str:
    """``source § section, p. 3`` from whatever the chunk knows."""
    head = _oneline(chunk.source) if chunk.source else ""
    detail = ", ".join(
        part
        for part in (
            f"§ {_oneline(chunk.section)}" if chunk.section else "",
            f"p. {chunk.page}" if chunk.page is not None else "",
            f"line {chunk.line}" if chunk.line is not None else "",
        )
        if part
    )
    return " ".join(x for x in (head, detail) if x)


class Format:
    """Base class of the built-in formats (frozen dataclasses).

    Subclasses set ``name`` and override the piece methods. ``label(n)`` is
    how block ``n`` is cited in an answer.
    """

    name: ClassVar[str] = ""
    #: Whether the pieces obey the newline discipline (additive counting).
    additive: ClassVar[bool] = True
    #: Whether every document header repeats when the document changes.
    groups: ClassVar[bool] = False

    def label(self, n: int) -> str:
        return f"[{n}]"

    def escape(self, text: str) -> str:
        return _clean(text)

    def frame_start(self) -> str:
        return ""

    def frame_end(self) -> str:
        return ""

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        """Rendered before a block whose document differs from the previous block's."""
        if first and chunk.doc_summary:
            return f"Summary of {_oneline(chunk.title or chunk.doc_id or chunk.source or 'document')}: {_clean(chunk.doc_summary)}\n"
        return ""

    def block_header(self, chunk: Chunk, n: int) -> str:
        return ""

    def body(self, chunk: Chunk) -> str:
        return self.escape(chunk.text) + "\n\n"

    def block_footer(self, chunk: Chunk, n: int) -> str:
        return ""

    def layout(self, blocks: Sequence[Chunk], *, query: str = "") -> list[tuple[str, Chunk | None, int]]:
        """The pieces of the rendered context, in order, empty pieces left out.

        Each entry is ``(piece, chunk, n)``; ``chunk`` and ``n`` are set on block
        headers (so a meter can count a header from its number-free parts) and
        are ``None``/``0`` elsewhere. No blocks render as the empty string (no
        frame), so an empty context costs nothing and fits any budget, including 0.
        """
        if not blocks:
            return []
        out: list[tuple[str, Chunk | None, int]] = []
        start = self.frame_start()
        if start:
            out.append((start, None, 0))
        seen: set[str] = set()
        previous: str | None = None
        for n, chunk in enumerate(blocks, 1):
            key = chunk.group_key
            if key != previous:
                head = self.doc_header(chunk, first=key not in seen)
                if head:
                    out.append((head, None, 0))
                seen.add(key)
                previous = key
            header = self.block_header(chunk, n)
            if header:
                out.append((header, chunk, n))
            out.append((self.body(chunk), None, 0))
            footer = self.block_footer(chunk, n)
            if footer:
                out.append((footer, None, 0))
        end = self.frame_end()
        if end:
            out.append((end, None, 0))
        return out

    def pieces(self, blocks: Sequence[Chunk], *, query: str = "") -> list[str]:
        """The pieces of the rendered context, in order (see :meth:`layout`)."""
        return [piece for piece, _, _ in self.layout(blocks, query=query)]

    def render(self, blocks: Sequence[Chunk], *, query: str = "") -> str:
        """The context string for ``blocks`` in this order."""
        return join_pieces(self.pieces(blocks, query=query))


def join_pieces(pieces: Sequence[str]) -> str:
    """Concatenate pieces, dropping the trailing newlines of the last one."""
    if not pieces:
        return ""
    return "".join(pieces[:-1]) + pieces[-1].rstrip("\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class MinimalFormat(Format):
    """Chunk texts separated by blank lines; nothing else.

    Blank lines inside a chunk are collapsed so that a blank line always means
    a new block.
    """

    name: ClassVar[str] = "minimal"

    def escape(self, text: str) -> str:
        text = _clean(text)
        return _BLANK_RUNS.sub("\n", text) if "\n" in text else text


@dataclass(frozen=True, slots=True, kw_only=True)
class NumberedFormat(Format):
    """``[n] title — source`` on a line, the text below, blank line between blocks."""

    name: ClassVar[str] = "numbered"

    def escape(self, text: str) -> str:
        text = _clean(text)
        return _NUMBER_LINE.sub(r"\1\\", text) if "[" in text else text

    def block_header(self, chunk: Chunk, n: int) -> str:
        bits = [b for b in (_oneline(chunk.title) if chunk.title else "", _where(chunk)) if b]
        return f"{self.label(n)} {' — '.join(bits)}\n" if bits else f"{self.label(n)}\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class XmlFormat(Format):
    """``<context>`` holding one ``<chunk id="n" ...>`` element per block.

    Args:
        attributes: Chunk fields to show as attributes, when set.
        wrap: Wrap the blocks in ``<context>...</context>``.
    """

    name: ClassVar[str] = "xml"
    attributes: tuple[str, ...] = ("title", "source", "section", "page")
    wrap: bool = True

    def __post_init__(self) -> None:
        allowed = {"title", "source", "section", "page", "line", "doc_id", "score"}
        if not isinstance(self.attributes, tuple):
            raise ConfigError(
                f"XmlFormat.attributes must be a list of field names; got {self.attributes!r}. "
                'Example: ["title", "source"].'
            )
        if not isinstance(self.wrap, bool):
            raise ConfigError(f"XmlFormat.wrap must be true or false; got {self.wrap!r}.")
        bad = [a for a in self.attributes if a not in allowed]
        if bad:
            raise ConfigError(f"XmlFormat.attributes has {bad!r}; allowed: {', '.join(sorted(allowed))}.")

    def escape(self, text: str) -> str:
        text = _clean(text)
        return _XML_TAGS.sub("&lt;", text) if "<" in text else text

    def frame_start(self) -> str:
        return "<context>\n" if self.wrap else ""

    def frame_end(self) -> str:
        return "</context>\n" if self.wrap else ""

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        if first and chunk.doc_summary:
            doc = _attr(chunk.title or chunk.doc_id or chunk.source or "")
            return f'<summary document="{doc}">\n{self.escape(chunk.doc_summary)}\n</summary>\n'
        return ""

    def block_header(self, chunk: Chunk, n: int) -> str:
        attrs = [f'id="{n}"']
        for name in self.attributes:
            value = getattr(chunk, name)
            if value is not None and value != "":
                attrs.append(f'{name}="{_attr(value if name != "score" else f"{value:.4g}")}"')
        return f"<chunk {' '.join(attrs)}>\n"

    def body(self, chunk: Chunk) -> str:
        return self.escape(chunk.text) + "\n"

    def block_footer(self, chunk: Chunk, n: int) -> str:
        return "</chunk>\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupedFormat(Format):
    """Blocks grouped under a ``## Document: title (source)`` heading per document."""

    name: ClassVar[str] = "grouped"
    groups: ClassVar[bool] = True

    def escape(self, text: str) -> str:
        return _HEADING_LINE.sub(r"\1\\", _NUMBER_LINE.sub(r"\1\\", _clean(text)))

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        title = _oneline(chunk.title or chunk.doc_id or chunk.source or chunk.id)
        src = f" ({_oneline(chunk.source)})" if chunk.source and chunk.source != chunk.title else ""
        head = f"## Document: {title}{src}\n"
        if first and chunk.doc_summary:
            head += f"Summary: {_clean(chunk.doc_summary)}\n"
        return head

    def block_header(self, chunk: Chunk, n: int) -> str:
        where = ", ".join(
            b
            for b in (
                f"§ {_oneline(chunk.section)}" if chunk.section else "",
                f"p. {chunk.page}" if chunk.page is not None else "",
            )
            if b
        )
        return f"{self.label(n)} {where}\n" if where else f"{self.label(n)}\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcesFormat(Format):
    """``[SOURCE n] file § section`` on a line, the text below."""

    name: ClassVar[str] = "sources"

    def label(self, n: int) -> str:
        return f"[SOURCE {n}]"

    def escape(self, text: str) -> str:
        text = _clean(text)
        return _SOURCE_LINE.sub(r"\1\\", text) if "[" in text else text

    def block_header(self, chunk: Chunk, n: int) -> str:
        name = _oneline(chunk.source or chunk.title or chunk.doc_id or chunk.id)
        extra = []
        if chunk.section:
            extra.append(f"§ {_oneline(chunk.section)}")
        if chunk.page is not None:
            extra.append(f"p. {chunk.page}")
        return f"{self.label(n)} {' '.join([name, *extra])}\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkdownFormat(Format):
    """``### [n] Title`` headings with an italic source line."""

    name: ClassVar[str] = "markdown"

    def escape(self, text: str) -> str:
        return _HEADING_LINE.sub(r"\1\\", _clean(text))

    def block_header(self, chunk: Chunk, n: int) -> str:
        title = _oneline(chunk.title or chunk.source or chunk.doc_id or "")
        head = f"### {self.label(n)} {title}\n" if title else f"### {self.label(n)}\n"
        where = _where(chunk)
        if where and where != title:
            head += f"_Source: {where}_\n"
        return head


@dataclass(frozen=True, slots=True, kw_only=True)
class LeanFormat(NumberedFormat):
    """``[n] Title`` on a line, the text below: the fewest tokens of framing that still cite.

    The default of the ``qa``, ``tight`` and ``documents`` presets. A header
    carries the block's number, always (it is the citation), and the title
    only when the text does not already name it: a title tells the reader
    what a passage is about, and is sometimes the answer itself, but a
    header that repeats the first words of its text spends tokens on
    nothing. The source, section, page and line follow (`` — a.md § Setup,
    p. 3``), the source only when it differs from the title.

    Measured on the shared NQ dev data (cl100k, top-6 chunks of each
    query): ``xml`` costs 17.4 tokens per block, ``numbered`` (title always)
    9.2, this format 7.3 (the title is left out of the 37 % of blocks whose
    text names it), a bare ``[n]`` 3.3. Letting consecutive blocks of one
    document share a header would save another 0.3 token per block
    (11 % of adjacent ranks share a document), not worth a ``[n]`` whose
    document the reader has to look up.

    Escaping is ``numbered``'s: a line of chunk text that starts with
    ``[n]`` gets a backslash, so retrieved text cannot open a block; the
    title and source are put on one line; a document summary is escaped the
    same way.
    """

    name: ClassVar[str] = "lean"

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        if first and chunk.doc_summary:
            about = _oneline(chunk.title or chunk.doc_id or chunk.source or "document")
            return f"Summary of {about}: {self.escape(chunk.doc_summary)}\n"
        return ""

    def block_header(self, chunk: Chunk, n: int) -> str:
        title = _oneline(chunk.title) if chunk.title else ""
        if title and title.casefold() in chunk.text.casefold():
            title = ""
        where = _where(chunk)
        if where and chunk.source and chunk.title and _oneline(chunk.source) == _oneline(chunk.title):
            where = where[len(_oneline(chunk.source)) :].strip()
        bits = [b for b in (title, where) if b]
        return f"{self.label(n)} {' — '.join(bits)}\n" if bits else f"{self.label(n)}\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateFormat(Format):
    """A user template, rendered in a sandboxed Jinja2 environment.

    The template receives ``blocks`` (each with ``n``, ``label``, ``text``
    (escaped), ``raw_text``, ``id``, ``doc_id``, ``source``, ``title``,
    ``section``, ``page``, ``line``, ``score``, ``summary``) and ``query``.
    A template's token count is not additive, so the pipeline verifies the
    final string with the tokenizer.

    Args:
        template: The Jinja2 template source.
        escape_as: Which built-in escaping to apply to chunk text: ``xml``
            (tags), ``markdown`` (heading lines), ``numbered`` (``[n]`` lines),
            ``sources`` (``[SOURCE n]`` lines) or ``none``.
        label_format: How block ``n`` is cited, e.g. ``"[{n}]"``.

    Example:
        >>> TemplateFormat(template="{% for b in blocks %}<doc n={{b.n}}>{{b.text}}</doc>\\n{% endfor %}")
    """

    name: ClassVar[str] = "template"
    additive: ClassVar[bool] = False
    template: str = ""
    escape_as: Literal["xml", "markdown", "numbered", "sources", "none"] = "xml"
    label_format: str = "[{n}]"

    def __post_init__(self) -> None:
        if not isinstance(self.template, str) or not self.template:
            raise ConfigError(
                f"TemplateFormat.template must be the Jinja2 template source (a non-empty string); "
                f"got {self.template!r}."
            )
        if self.escape_as not in _ESCAPES:
            raise ConfigError(
                f"TemplateFormat.escape_as must be one of {', '.join(_ESCAPES)}; got {self.escape_as!r}."
            )
        if not isinstance(self.label_format, str) or "{n}" not in self.label_format:
            raise ConfigError(f"TemplateFormat.label_format must contain '{{n}}'; got {self.label_format!r}.")
        _compile(self.template)

    def label(self, n: int) -> str:
        return self.label_format.format(n=n)

    def escape(self, text: str) -> str:
        if self.escape_as == "none":
            return _clean(text)
        return get_format(self.escape_as).escape(text)

    def layout(self, blocks: Sequence[Chunk], *, query: str = "") -> list[tuple[str, Chunk | None, int]]:
        if not blocks:
            return []
        items = [
            {
                "n": n,
                "label": self.label(n),
                "text": self.escape(c.text),
                "raw_text": c.text,
                "id": c.id,
                "doc_id": c.doc_id,
                "source": c.source,
                "title": c.title,
                "section": c.section,
                "page": c.page,
                "line": c.line,
                "score": c.score,
                "summary": c.doc_summary,
            }
            for n, c in enumerate(blocks, 1)
        ]
        text = _compile(self.template).render(blocks=items, query=query)
        return [(text, None, 0)] if text else []


_ESCAPES = ("xml", "markdown", "numbered", "sources", "none")


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> Any:
    try:
        from jinja2 import TemplateSyntaxError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise MissingDependencyError("jinja2 is needed for templates: pip install jinja2") from exc
    env = ImmutableSandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
    try:
        return env.from_string(template)
    except TemplateSyntaxError as exc:
        raise ConfigError(f"TemplateFormat.template: line {exc.lineno}: {exc.message}") from None


_FORMATS: dict[str, type[Format]] = {
    cls.name: cls
    for cls in (
        MinimalFormat,
        NumberedFormat,
        XmlFormat,
        GroupedFormat,
        SourcesFormat,
        MarkdownFormat,
        LeanFormat,
        TemplateFormat,
    )
}


def get_format(spec: str | Format | Mapping[str, Any]) -> Format:
    """A format from its name, a config mapping or an instance.

    Raises:
        ConfigError: listing the valid names.
    """
    if isinstance(spec, Format):
        return spec
    if isinstance(spec, Mapping):
        return format_from_dict(spec)
    cls = _FORMATS.get(str(spec))
    if cls is None or cls is TemplateFormat:
        raise ConfigError(
            f"unknown format {spec!r}; valid: {', '.join(n for n in _FORMATS if n != 'template')}, "
            'or {"type": "template", "template": "..."}.'
        )
    return cls()


def format_to_dict(fmt: Format) -> dict[str, Any]:
    """``{"type": name, **settings}`` for a format."""
    import dataclasses

    out: dict[str, Any] = {"type": fmt.name}
    if dataclasses.is_dataclass(fmt):
        for f in dataclasses.fields(fmt):
            value = getattr(fmt, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def format_from_dict(data: Mapping[str, Any]) -> Format:
    """Inverse of :func:`format_to_dict`."""
    import dataclasses

    kind = data.get("type")
    cls = _FORMATS.get(str(kind))
    if cls is None:
        raise ConfigError(f"unknown format type {kind!r}; valid: {', '.join(_FORMATS)}.")
    settings = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "type"}
    valid = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(settings) - valid)
    if unknown:
        raise ConfigError(
            f"format {kind!r} has no setting {', '.join(map(repr, unknown))}; "
            f"valid: {', '.join(sorted(valid)) or '(none)'}."
        )
    return cls(**settings)
