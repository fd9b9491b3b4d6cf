"""A reply cache on disk: chat completions in SQLite, one row per request key.

``eval --reader`` and ``fit`` keep every reply here so that a re-run asks only what it has not
asked (:class:`~contextwright.eval.reader_client.Reader`); ``batch --reader-cache`` does the same
for a batch job, so a job re-run after some rows failed sends only those rows' requests. The key
(:func:`reply_key`) is the endpoint, the model, the messages and the generation settings, so the
two share replies wherever they send the same request.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from contextwright.clients.chat import ChatReply
from contextwright.core.errors import ConfigError

__all__ = ["ReplyCache", "reply_key"]


def reply_key(
    endpoint: str, model: str, messages: Sequence[Mapping[str, str]], max_tokens: int, temperature: float
) -> str:
    """The cache key of a request: endpoint, model, messages and generation settings (sha256)."""
    blob = json.dumps(
        {
            "endpoint": endpoint,
            "model": model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class ReplyCache:
    """Replies on disk: one SQLite row per request key, committed as each reply arrives.

    WAL mode and a 30 s busy timeout, so several processes (batch workers) may share one file.
    ``path=None``: in memory, nothing kept.
    """

    def __init__(self, path: str | Path | None, *, flag: str = "--reader-cache") -> None:
        self.path = str(path) if path is not None else ":memory:"
        try:
            if path is not None:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, endpoint TEXT, model TEXT, "
                "reply TEXT NOT NULL, created REAL)"
            )
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(
                f"cannot open the reader cache {self.path!r}: {exc}. Pass {flag} with a writable path."
            ) from None
        self._lock = threading.Lock()

    def get(self, key: str) -> ChatReply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return ChatReply(**json.loads(row[0]))

    def put(self, key: str, endpoint: str, model: str, reply: ChatReply) -> None:
        data = json.dumps(asdict(reply), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                (key, endpoint, model, data, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
