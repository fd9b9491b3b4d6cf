"""One row of a batch: its settings, parsing a query record, and assembling it into a result or an error row."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from contextwright.core.errors import InputError
from contextwright.inputs.readers import QueryItem, Record, _item

Engine = Literal["local", "ray"]
OutFormat = Literal["jsonl", "jsonl.gz", "parquet"]
#: ``progress(rows_done, errors)``, called after each batch of rows.
Progress = Callable[[int, int], None]

_INPUT_PREVIEW = 200


@dataclass(frozen=True, slots=True)
class BatchReader:
    """The model each row's question is sent to, with its context (``batch --reader``): an
    OpenAI-compatible chat endpoint, asked as :func:`contextwright.ask` asks (once more after a
    bare citation).

    Each worker process (or Ray actor) opens its own client and asks the rows of each batch it
    assembled ``concurrency`` at a time, so ``workers × concurrency`` requests are in flight.

    Attributes:
        url: The API root, e.g. ``http://127.0.0.1:8080/v1``.
        model: The model name the endpoint expects.
        key_env: The environment variable holding the API key, read in each worker; None or ``""``:
            send none.
        max_tokens: Most tokens of an answer.
        timeout_s: Timeout of one request, in seconds.
        retries: Retries of a failed request (429, 5xx, timeouts) before the row is an error row.
        system: The prompt of the first request (as :meth:`AssembledContext.messages`).
        reask_bare: The prompt of the second request after a bare citation; ``auto``: a profile's
            ``reask``, else ``light``; None: never.
        concurrency: Requests in flight per worker: a worker assembles its batch of rows
            (``batch_size``), then asks their questions this many at a time; ``workers ×
            concurrency`` in all.
        cache: A SQLite file of replies (:class:`~contextwright.clients.replies.ReplyCache`, the
            key ``eval --reader-cache`` uses), shared by the workers: a request asked before is
            answered from it, so a job re-run after some rows failed sends only theirs. None: no cache.
    """

    url: str
    model: str
    key_env: str | None = "OPENAI_API_KEY"
    max_tokens: int = 256
    timeout_s: float = 60.0
    retries: int = 1
    system: str | None = "default"
    reask_bare: str | None = "auto"
    cache: str | None = None
    concurrency: int = 4

    def __post_init__(self) -> None:
        from contextwright.core.errors import ConfigError
        from contextwright.render.messages import check_chat

        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ConfigError(
                f"reader.url must be the http(s) URL of an OpenAI-compatible API root; got {self.url!r}, "
                "e.g. http://127.0.0.1:8080/v1.",
                loc=("reader", "url"),
            )
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(
                f"reader.model must be the model name the endpoint expects; got {self.model!r}.",
                loc=("reader", "model"),
            )
        m = self.max_tokens
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ConfigError(
                f"reader.max_tokens must be a positive number of tokens; got {m!r}. 256 fits an answer "
                "and its citations.",
                loc=("reader", "max_tokens"),
            )
        k = self.concurrency
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 256:
            raise ConfigError(
                f"reader.concurrency must be a number of requests in flight per worker in [1, 256]; got "
                f"{k!r}. 4 suits a hosted API; 1 sends one request at a time (a local server with one slot).",
                loc=("reader", "concurrency"),
            )
        check_chat(self.system, self.reask_bare, fields=("reader.system", "reader.reask_bare"))

    def client(self) -> Any:
        """A :class:`~contextwright.clients.chat.ChatClient` for this endpoint (checks the URL and
        the client settings)."""
        import os

        from contextwright.clients.chat import ChatClient

        key = os.environ.get(self.key_env) if self.key_env else None
        return ChatClient(
            self.url,
            model=self.model,
            api_key=key,
            timeout_s=self.timeout_s,
            retries=self.retries,
            max_concurrency=self.concurrency,  # its connection pool: one connection per request in flight
        )

    def ask(self, ctx: Any, query: str, client: Any, replies: Any = None) -> Any:
        """:func:`contextwright.ask` of ``ctx`` through ``client`` (:meth:`client`): the
        :class:`~contextwright.Answer`. ``replies``: a
        :class:`~contextwright.clients.replies.ReplyCache` answering what it holds and keeping each
        new non-empty reply."""
        from contextwright.clients.replies import reply_key
        from contextwright.render.cite import ask

        def reply(messages: Any) -> str:
            key = reply_key(self.url, self.model, messages, self.max_tokens, 0.0)
            hit = replies.get(key) if replies is not None else None
            if hit is not None:
                return str(hit.content)
            got = client.chat(messages, temperature=0.0, max_tokens=self.max_tokens)
            if replies is not None and got.content.strip():
                replies.put(key, self.url, self.model, got)
            return str(got.content)

        return ask(ctx, reply, query, system=self.system, reask_bare=self.reask_bare)


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """How every row is assembled; picklable, so each worker builds the same assembler.

    Attributes:
        preset: A preset name, a config mapping or a path to a config file.
        model: A registered model name (tokenizer and zones).
        budget: The documents budget in tokens.
        tokenizer: A tokenizer spec (a name; workers load it themselves).
        format: Override the preset's format.
        order: Override the preset's order.
        store: A chunk store URL (``sqlite:///nq.db``, ``postgresql://...``);
            each worker opens its own connection.
        expand: Add the neighbours index±N from ``store``.
        timings: Keep per-stage ``ms`` in the report (then output differs run to run).
        options: Further :class:`~contextwright.assembly.assembler.Assembler` keywords
            (``output_tokens``, ``system``, ...).
        messages: ``(system, reask_bare)``: each row also holds ``messages``, the chat to send the
            model, and ``reask_messages`` where a bare citation would be asked again
            (:func:`contextwright.chat_messages`), e.g. for a batch LLM API; None: neither.
        reader: Send each row's chat to this model (:class:`BatchReader`); the row then also
            holds ``answer``, :meth:`contextwright.Answer.to_dict`. A request that fails after
            its retries makes the row an error row. None: assemble only.
    """

    preset: str | Mapping[str, Any] = "qa"
    model: str | None = None
    budget: int | None = None
    tokenizer: str | None = None
    format: str | None = None
    order: str | None = None
    store: str | None = None
    expand: int | None = None
    timings: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    messages: tuple[str | None, str | None] | None = None
    reader: BatchReader | None = None

    def build(self) -> Any:
        """The assembler these settings describe (opens the store, if any)."""
        from contextwright.assembly.assembler import Assembler
        from contextwright.assembly.spec import AssemblerSpec, open_resources

        options, resources = AssemblerSpec.split(self.options, exclude=("config",))  # the rest: resources
        preset = dict(self.preset) if isinstance(self.preset, Mapping) else self.preset
        config, resources = open_resources(preset, store=self.store, expand=self.expand, resources=resources)
        named: dict[str, Any] = {"model": self.model, "budget": self.budget, "tokenizer": self.tokenizer}
        spec = AssemblerSpec(config, **named, format=self.format, order=self.order, **options)
        return Assembler.from_spec(spec, **resources)


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One query's outcome: a record ``{id, text, tokens, citations, report}``, or an error.

    Attributes:
        id: The query's id (``""`` when the input had none).
        record: The output record, or ``None`` for an error row.
        error: ``"ErrorType: message"`` for an error row, else ``None``.
        input: The start of the offending input (error rows only), to find it.
        where: Where the row was read: ``file:line``, ``file[row]`` (Parquet,
            JSON arrays) or ``queries[i]`` (rows passed to :func:`assemble_many`).
    """

    id: str
    record: dict[str, Any] | None = None
    error: str | None = None
    input: str | None = None
    where: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def error_dict(self) -> dict[str, Any]:
        """The error file's line: ``{id, where, error, input}``."""
        return {"id": self.id, "where": self.where, "error": self.error, "input": self.input}


def _parse(row: Any, where: str) -> QueryItem:
    """A row (a :class:`Record`, a JSON line, a mapping, or a QueryItem) as a QueryItem; raises InputError."""
    if isinstance(row, QueryItem):
        return row
    if isinstance(row, Record):
        return _item(row.data, row.where)
    if isinstance(row, (str, bytes)):
        try:
            row = json.loads(row)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
        except RecursionError:
            raise InputError(f"{where}: JSON nested too deeply to read (over about 1,000 levels).") from None
    if not isinstance(row, Mapping):
        raise InputError(
            f"{where} is a {type(row).__name__}, not a query object; pass {{'question', 'chunks'}}."
        )
    return _item(row, where)


def _row_id(row: Any) -> str:
    if isinstance(row, QueryItem):
        return row.id
    if isinstance(row, Record):
        row = row.data
    if isinstance(row, (str, bytes)):
        try:
            row = json.loads(row)
        except (json.JSONDecodeError, RecursionError):
            return ""
    if isinstance(row, Mapping) and row.get("id") is not None:
        return str(row["id"])
    return ""


def _preview(row: Any) -> str:
    text: str
    if isinstance(row, Record):
        if row.raw is not None:
            return row.raw
        row = dict(row.data)
    if isinstance(row, bytes):
        text = row.decode("utf-8", "replace")
    elif isinstance(row, str):
        text = row
    else:
        try:
            text = json.dumps(row if not isinstance(row, QueryItem) else asdict(row), ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(row)
    return text[:_INPUT_PREVIEW]


def check_messages(messages: Any) -> None:
    """``BatchSettings.messages``: None, or ``(system, reask_bare)``, each a prompt (name or text) or
    None; ``reask_bare`` may be ``auto``."""
    from contextwright.core.errors import ConfigError
    from contextwright.render.messages import check_chat

    if messages is None:
        return
    if not isinstance(messages, (tuple, list)) or len(messages) != 2:
        raise ConfigError(
            f"messages must be (system, reask_bare), e.g. ('default', 'auto'), or None; got {messages!r}.",
            loc=("messages",),
        )
    check_chat(messages[0], messages[1], fields=("messages[0] (system)", "messages[1] (reask_bare)"))


class RowAssembler:
    """Assembles rows with one assembler: what each worker process and each Ray actor holds.

    Example:
        >>> worker = RowAssembler(BatchSettings(budget=500))
        >>> worker('{"id": "q1", "question": "who?", "chunks": [{"text": "..."}]}').record["tokens"]
    """

    def __init__(self, settings: BatchSettings) -> None:
        self.settings = settings
        self.assembler = settings.build()
        check_messages(settings.messages)  # bad prompts fail the job here, not every row
        reader = settings.reader
        if reader is not None and not isinstance(reader, BatchReader):
            from contextwright.core.errors import ConfigError

            raise ConfigError(
                f"reader must be a BatchReader(url=..., model=...) or None; got {type(reader).__name__}.",
                loc=("reader",),
            )
        self.client = reader.client() if reader is not None else None  # one per worker, for its life
        self.replies = None
        if reader is not None and reader.cache is not None:
            from contextwright.clients.replies import ReplyCache

            self.replies = ReplyCache(reader.cache, flag="reader.cache (--reader-cache)")

    def __call__(self, row: Any, where: str = "") -> BatchRow:
        done = self._assemble(row, where)
        return done if isinstance(done, BatchRow) else self._asked(done)

    def _assemble(self, row: Any, where: str) -> BatchRow | _Pending:
        """The row assembled: its finished row (an error, or a record when no model is asked), or
        what asking the model needs."""
        if isinstance(row, Record):
            where = row.where
            if row.error is not None:  # unreadable where it was read: already an error row
                return BatchRow(
                    id=_row_id(row), error=f"InputError: {row.error}", input=_preview(row), where=where
                )
        try:
            item = _parse(row, where or "row")
            ctx = self.assembler.assemble(item.query, item.chunks)
        except Exception as exc:  # a row's failure is its error row, never the job's
            return BatchRow(
                id=_row_id(row), error=f"{type(exc).__name__}: {exc}", input=_preview(row), where=where
            )
        report = ctx.report.to_dict()
        if not self.settings.timings:
            for stage in report["stages"]:
                stage.pop("ms", None)
        record = {
            "id": item.id,
            "text": ctx.text,
            "tokens": ctx.tokens,
            "citations": [c.to_dict() for c in ctx.citations],
            "report": report,
        }
        if self.settings.messages is not None:
            from contextwright.render.cite import chat_messages

            record.update(chat_messages(ctx, *self.settings.messages))
        if self.client is None:
            return BatchRow(id=item.id, record=record, where=where)
        return _Pending(item.id, item.query, ctx, record, row, where)

    def _asked(self, pending: _Pending) -> BatchRow:
        """``pending``'s row with the model's answer, or its error row when asking failed."""
        try:
            assert self.settings.reader is not None  # a pending row waits for the reader
            got = self.settings.reader.ask(pending.ctx, pending.query, self.client, self.replies)
            pending.record["answer"] = got.to_dict()
        except Exception as exc:  # the model's failure is this row's, as a store's would be
            model = self.client.model if self.client is not None else "?"
            error = (
                f"{type(exc).__name__}: the context was assembled ({pending.ctx.tokens} tokens) but "
                f"asking {model!r} failed: {exc}"
            )
            return BatchRow(id=pending.id, error=error, input=_preview(pending.row), where=pending.where)
        return BatchRow(id=pending.id, record=pending.record, where=pending.where)

    def close(self) -> None:
        """Close the reader's client, if any (a worker's closes when its process ends)."""
        if self.client is not None:
            self.client.close()
        if self.replies is not None:
            self.replies.close()

    def many(self, rows: Sequence[tuple[str, Any]]) -> list[BatchRow]:
        """``self(row, where)`` for each ``(where, row)``, in order; with a reader, the rows are
        assembled first and then asked ``reader.concurrency`` at a time (threads: the requests
        wait on the network, not on this process)."""
        done = [self._assemble(r, w) for w, r in rows]
        pending = [d for d in done if isinstance(d, _Pending)]
        reader = self.settings.reader
        threads = min(reader.concurrency, len(pending)) if reader is not None else 1
        if threads < 2:
            asked = [self._asked(d) for d in pending]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads) as pool:
                asked = list(pool.map(self._asked, pending))  # in order
        answered = iter(asked)
        return [d if isinstance(d, BatchRow) else next(answered) for d in done]


@dataclass(frozen=True, slots=True)
class _Pending:
    """A row assembled and waiting for the model's answer (:meth:`RowAssembler.many`)."""

    id: str
    query: str
    ctx: Any
    record: dict[str, Any]
    row: Any
    where: str
