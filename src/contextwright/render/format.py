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
text *and* inside every other text it renders (document summaries, titles,
sources, sections), the delimiters it uses itself — in ``xml`` every ``<``
that could open markup (a letter, ``/``, ``!`` or ``?`` follows it, so tags,
comments, CDATA and declarations alike) becomes ``&lt;``; a line reading
``[SOURCE n]`` in ``sources``; a line reading ``[n]`` in
``numbered``/``lean``/``grouped``; a heading, setext underline, code fence
or HTML block start in ``markdown`` and ``grouped``; blank lines in
``minimal`` — so retrieved text cannot open a new block or close the context.
"A line reading X" is decided on the folded line
(:mod:`contextwright.render.escape`): leading Unicode whitespace is skipped,
zero-width, bidi and control characters are invisible wherever they are, and
fullwidth forms count as their ASCII twins. Header fields are flattened to one
line; bidi controls are removed. Each format escapes with its grammar
(:mod:`contextwright.render.grammar`), which is also what
:mod:`contextwright.render.parse` splits a context with, so the escape and the
parser cannot disagree; the property tests check one block per citation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contextwright.core.errors import ConfigError, did_you_mean
from contextwright.core.limits import bounded, check_settings
from contextwright.core.text import check_text
from contextwright.model.chunk import Chunk
from contextwright.render.escape import clean, drop_blank_lines, oneline
from contextwright.render.grammar import GROUPED, MARKDOWN, NUMBERED, SOURCES, escape_xml
from contextwright.render.sandbox import TemplateLimits, compile_template, render_template
from contextwright.render.sections import escape_sections

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
    "format_names",
    "format_to_dict",
    "get_format",
]


def _clean(text: str) -> str:
    """One kind of line break, no outer whitespace or invisible characters; no prompt section forged.

    Every format escapes chunk text through here, so no retrieved line can read as the
    ``Question:`` or ``Tool outputs:`` of the chat messages (:mod:`contextwright.render.sections`).
    """
    return escape_sections(clean(text))


def attr_value(value: object) -> str:
    """``value`` as one line, escaped for a double-quoted markup attribute."""
    text = _oneline(value)
    if "&" in text or '"' in text or "<" in text or ">" in text:
        text = text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def _oneline(value: object) -> str:
    return oneline(value)


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

    def citation_style(self) -> str | None:
        """How an answer cites block ``n`` (``"[{n}]"``), or None when blocks carry no label.

        Grounded prompts ask for exactly this (see
        :func:`contextwright.render.messages.system_prompt`).
        """
        return "[{n}]"

    def escape(self, text: str) -> str:
        return _clean(text)

    def frame_start(self) -> str:
        return ""

    def frame_end(self) -> str:
        return ""

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        """Rendered before a block whose document differs from the previous block's."""
        if first and chunk.doc_summary:
            return f"Summary of {_oneline(chunk.title or chunk.doc_id or chunk.source or 'document')}: {self.escape(chunk.doc_summary)}\n"
        return ""

    def block_header(self, chunk: Chunk, n: int) -> str:
        return ""

    def header_key(self, chunk: Chunk) -> tuple[object, ...]:
        """What :meth:`block_header` depends on besides ``n``: a meter caches header costs by it.

        Every field a header may show, and the text (a header may leave out what the text says).
        A format whose header shows less may return less, so that its cost is shared.
        """
        return (
            chunk.id,
            chunk.title,
            chunk.source,
            chunk.section,
            chunk.page,
            chunk.line,
            chunk.doc_id,
            chunk.text,
        )

    def body(self, chunk: Chunk) -> str:
        return self.escape(chunk.text) + "\n\n"

    def block_footer(self, chunk: Chunk, n: int) -> str:
        return ""

    def layout(
        self, blocks: Sequence[Chunk], *, query: str = "", body: Callable[[Chunk], str] | None = None
    ) -> list[tuple[str, Chunk | None, int]]:
        """The pieces of the rendered context, in order, empty pieces left out.

        Each entry is ``(piece, chunk, n)``; ``chunk`` and ``n`` are set on block
        headers (so a meter can count a header from its number-free parts) and
        are ``None``/``0`` elsewhere. No blocks render as the empty string (no
        frame), so an empty context costs nothing and fits any budget, including 0.
        ``body`` renders a block's body in place of :meth:`body` (a meter passes its
        memo of it, so texts escaped during selection are not escaped again).
        """
        if not blocks:
            return []
        body_of = self.body if body is None else body
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
            out.append((body_of(chunk), None, 0))
            footer = self.block_footer(chunk, n)
            if footer:
                out.append((footer, None, 0))
        end = self.frame_end()
        if end:
            out.append((end, None, 0))
        return out

    def unrendered(self, blocks: Sequence[Chunk], *, query: str = "") -> tuple[int, ...]:
        """Positions of blocks the rendered text does not show (only templates can leave one out)."""
        return ()

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

    def citation_style(self) -> str | None:
        return None  # no labels in the text: an answer cannot cite a block by number

    def escape(self, text: str) -> str:
        text = _clean(text)
        return drop_blank_lines(text)


@dataclass(frozen=True, slots=True, kw_only=True)
class NumberedFormat(Format):
    """``[n] title — source`` on a line, the text below, blank line between blocks."""

    name: ClassVar[str] = "numbered"

    def escape(self, text: str) -> str:
        return NUMBERED.escape(_clean(text))

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
        return escape_xml(_clean(text))

    def frame_start(self) -> str:
        return "<context>\n" if self.wrap else ""

    def frame_end(self) -> str:
        return "</context>\n" if self.wrap else ""

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        if first and chunk.doc_summary:
            doc = attr_value(chunk.title or chunk.doc_id or chunk.source or "")
            return f'<summary document="{doc}">\n{self.escape(chunk.doc_summary)}\n</summary>\n'
        return ""

    def header_key(self, chunk: Chunk) -> tuple[object, ...]:
        key = Format.header_key(self, chunk)
        return (*key, chunk.score) if "score" in self.attributes else key

    def block_header(self, chunk: Chunk, n: int) -> str:
        attrs = [f'id="{n}"']
        for name in self.attributes:
            value = getattr(chunk, name)
            if value is not None and value != "":
                attrs.append(f'{name}="{attr_value(value if name != "score" else f"{value:.4g}")}"')
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
        return GROUPED.escape(_clean(text))

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        title = _oneline(chunk.title or chunk.doc_id or chunk.source or chunk.id)
        src = f" ({_oneline(chunk.source)})" if chunk.source and chunk.source != chunk.title else ""
        head = f"## Document: {title}{src}\n"
        if first and chunk.doc_summary:
            head += f"Summary: {self.escape(chunk.doc_summary)}\n"
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

    def citation_style(self) -> str | None:
        return "[SOURCE {n}]"

    def escape(self, text: str) -> str:
        return SOURCES.escape(_clean(text))

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
        return MARKDOWN.escape(_clean(text))

    def block_header(self, chunk: Chunk, n: int) -> str:
        title = _oneline(chunk.title or chunk.source or chunk.doc_id or "")
        head = f"### {self.label(n)} {title}\n" if title else f"### {self.label(n)}\n"
        where = _where(chunk)
        if where and where != title:
            head += f"_Source: {where}_\n"
        return head


@dataclass(frozen=True, slots=True, kw_only=True)
class LeanFormat(NumberedFormat):
    """``[n]`` on a line, the text below: the fewest tokens of framing that still cite.

    The default of the ``qa``, ``tight`` and ``documents`` presets. A header
    carries the block's number, which is the citation; where the block came
    from (title, source, page) is in :attr:`Context.citations`, resolved
    from the number, so the context spends its tokens on text.

    Measured on the shared NQ dev data (cl100k, ``bench/bench_quality.py``):
    ``xml`` costs 17–19 tokens per block, ``numbered`` (title always) 9,
    ``lean`` with ``titles=True`` 7.2 (the title left out of the 37 % of
    blocks whose text names it) and this default 3.2. The title is sometimes
    the answer itself, but the four tokens it costs on every block lose more
    answers than it carries: at 300 tokens the ``qa`` preset keeps 0.921 of
    the answers with titles and 0.935 without (naive concatenation: 0.935),
    and no budget or half of dev is worse without them.

    Args:
        titles: Also show the title (when the text does not already name
            it) and the source, section, page and line (`` — a.md § Setup,
            p. 3``, the source only when it differs from the title), for a
            reader that needs to know what a passage is about.

    Escaping is ``numbered``'s: a line of chunk text that starts with
    ``[n]`` gets a backslash, so retrieved text cannot open a block; the
    title and source are put on one line; a document summary is escaped the
    same way.
    """

    name: ClassVar[str] = "lean"
    titles: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.titles, bool):
            raise ConfigError(f"LeanFormat.titles must be true or false; got {self.titles!r}.")

    def doc_header(self, chunk: Chunk, *, first: bool) -> str:
        if first and chunk.doc_summary:
            about = _oneline(chunk.title or chunk.doc_id or chunk.source or "document")
            return f"Summary of {about}: {self.escape(chunk.doc_summary)}\n"
        return ""

    def header_key(self, chunk: Chunk) -> tuple[object, ...]:
        # Without titles the header is "[n]" alone: one cost for every chunk (unless a subclass
        # renders its own header).
        if not self.titles and type(self).block_header is LeanFormat.block_header:
            return ()
        return Format.header_key(self, chunk)

    def block_header(self, chunk: Chunk, n: int) -> str:
        if not self.titles:
            return f"{self.label(n)}\n"
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
    """A user template, rendered in a bounded, sandboxed Jinja2 environment.

    The template receives ``blocks`` (each with ``n``, ``label``, ``text``
    (escaped), ``raw_text``, ``id``, ``doc_id``, ``source``, ``title``,
    ``section``, ``summary`` (escaped with ``escape_as``; the unescaped
    values as ``raw_title``, ``raw_source``, ``raw_section``,
    ``raw_summary``), ``page``, ``line``, ``score``) and ``query``.
    A template's token count is not additive, so the pipeline verifies the
    final string with the tokenizer. A block whose ``text``/``raw_text`` the
    template never reads is not rendered: it is dropped (``not_rendered``)
    and gets no citation.

    Rendering is bounded (see :mod:`contextwright.render.sandbox`): values and
    output of at most ``max_output_chars`` characters, at most ``max_steps``
    executed template lines (loop iterations, recursion), template calls nested at most 100 deep
    (macros, recursive loops), and ``timeout_s`` seconds; beyond them, or on a sandbox violation
    or runtime error,
    :class:`~contextwright.core.errors.ConfigError`.

    Args:
        template: The Jinja2 template source (at most 100,000 characters).
        escape_as: Which built-in escaping to apply to chunk text: ``xml``
            (tags), ``markdown`` (heading lines), ``numbered`` (``[n]`` lines),
            ``sources`` (``[SOURCE n]`` lines) or ``none``.
        label_format: How block ``n`` is cited, e.g. ``"[{n}]"``.
        max_output_chars: Largest output (and intermediate value) in characters.
        max_steps: Most template lines executed in one render.
        timeout_s: Longest render in seconds.

    Example:
        >>> TemplateFormat(template="{% for b in blocks %}<doc n={{b.n}}>{{b.text}}</doc>\\n{% endfor %}")
    """

    name: ClassVar[str] = "template"
    additive: ClassVar[bool] = False
    template: str = ""
    escape_as: Literal["xml", "markdown", "numbered", "sources", "none"] = "xml"
    label_format: str = "[{n}]"
    max_output_chars: int = bounded(1_000_000, 10_000_000)
    max_steps: int = bounded(1_000_000, 100_000_000)
    timeout_s: float = bounded(2.0, 60.0)

    def __post_init__(self) -> None:
        if not isinstance(self.template, str) or not self.template:
            raise ConfigError(
                f"TemplateFormat.template must be the Jinja2 template source (a non-empty string); "
                f"got {self.template!r}."
            )
        if len(self.template) > MAX_TEMPLATE_CHARS:
            raise ConfigError(
                f"TemplateFormat.template has {len(self.template):,} characters, over the limit of "
                f"{MAX_TEMPLATE_CHARS:,}."
            )
        if self.escape_as not in _ESCAPES:
            raise ConfigError(
                f"TemplateFormat.escape_as must be one of {', '.join(_ESCAPES)}; got {self.escape_as!r}."
            )
        if not isinstance(self.label_format, str) or "{n}" not in self.label_format:
            raise ConfigError(f"TemplateFormat.label_format must contain '{{n}}'; got {self.label_format!r}.")
        for name in ("max_output_chars", "max_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"TemplateFormat.{name} must be a positive integer; got {value!r}.")
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, (int, float))
            or not self.timeout_s > 0
        ):
            raise ConfigError(f"TemplateFormat.timeout_s must be a positive number; got {self.timeout_s!r}.")
        check_settings(
            type(self),
            {f: getattr(self, f) for f in ("max_output_chars", "max_steps", "timeout_s")},
            where="TemplateFormat",
        )
        check_text(self.template, "TemplateFormat.template", error=ConfigError)
        compile_template(self.template)

    def label(self, n: int) -> str:
        return self.label_format.format(n=n)

    def citation_style(self) -> str | None:
        return self.label_format

    def escape(self, text: str) -> str:
        if self.escape_as == "none":
            return _clean(text)
        return get_format(self.escape_as).escape(text)

    def _field(self, value: str | None) -> str | None:
        """A header field as the template shows it: one line, escaped like the text."""
        return None if value is None else self.escape(_oneline(value))

    def _render(self, blocks: Sequence[Chunk], query: str) -> tuple[str, set[int]]:
        read: set[int] = set()
        items = [
            _Block(
                read,
                n,
                {
                    "n": n,
                    "label": self.label(n),
                    "text": self.escape(c.text),
                    "raw_text": c.text,
                    "id": c.id,
                    "doc_id": c.doc_id,
                    "source": self._field(c.source),
                    "title": self._field(c.title),
                    "section": self._field(c.section),
                    "summary": self.escape(c.doc_summary) if c.doc_summary else c.doc_summary,
                    "raw_source": c.source,
                    "raw_title": c.title,
                    "raw_section": c.section,
                    "raw_summary": c.doc_summary,
                    "page": c.page,
                    "line": c.line,
                    "score": c.score,
                },
            )
            for n, c in enumerate(blocks, 1)
        ]
        limits = TemplateLimits(
            max_output_chars=self.max_output_chars, max_steps=self.max_steps, timeout_s=float(self.timeout_s)
        )
        return render_template(self.template, limits, blocks=items, query=query), read

    def layout(
        self, blocks: Sequence[Chunk], *, query: str = "", body: Callable[[Chunk], str] | None = None
    ) -> list[tuple[str, Chunk | None, int]]:
        if not blocks:
            return []
        text, _ = self._render(blocks, query)  # the template renders the bodies itself
        return [(text, None, 0)] if text else []

    def unrendered(self, blocks: Sequence[Chunk], *, query: str = "") -> tuple[int, ...]:
        if not blocks:
            return ()
        _, read = self._render(blocks, query)
        return tuple(i for i in range(len(blocks)) if i + 1 not in read)


class _Block(dict[str, Any]):
    """A block as a template sees it; records whether the template read its text."""

    __slots__ = ("_n", "_read")

    def __init__(self, read: set[int], n: int, fields: dict[str, Any]) -> None:
        super().__init__(fields)
        self._read = read
        self._n = n

    def __getitem__(self, key: str) -> Any:
        if key in ("text", "raw_text"):
            self._read.add(self._n)
        return super().__getitem__(key)


_ESCAPES = ("xml", "markdown", "numbered", "sources", "none")
#: Longest template source accepted.
MAX_TEMPLATE_CHARS = 100_000


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
            f"unknown format {spec!r}.{did_you_mean(str(spec), format_names())} Valid: "
            f"{', '.join(format_names())}, "
            'or {"type": "template", "template": "..."}.'
        )
    return cls()


def format_names() -> tuple[str, ...]:
    """The format names ``format=`` accepts as a plain name (every registered format but ``template``)."""
    return tuple(n for n in _FORMATS if n != "template")


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
