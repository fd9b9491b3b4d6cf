"""A stage that requires a resource no evaluation has, registered only while a test needs it; the
scripted chat server of ``test_reader``, started for a test and stopped after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from contextwright.model.chunk import Chunk
from contextwright.model.report import StageResult
from contextwright.stages import base

NEEDY = "eval_test_needs_oracle"


@pytest.fixture
def needy_stage() -> Iterator[str]:
    """Register a stage requiring the resource 'oracle'; yield its type name; unregister it."""

    @dataclass(frozen=True, slots=True, kw_only=True)
    class NeedsOracle:
        name: ClassVar[str] = NEEDY
        requires: ClassVar[tuple[str, ...]] = ("oracle",)

        def __call__(self, chunks: Sequence[Chunk], /, **needs: Any) -> StageResult:
            return StageResult.of(self.name, chunks, chunks)

    base.register_stage(NeedsOracle)
    try:
        yield NEEDY
    finally:
        base._STAGES.pop(NEEDY, None)


if TYPE_CHECKING:
    from .test_reader import ChatServer, Script


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ChatServer]]:
    """Start scripted chat servers (``test_reader.ChatServer``) for a test; all stopped after it."""
    from .test_reader import ChatServer

    servers: list[ChatServer] = []

    def start(script: Script) -> ChatServer:
        servers.append(ChatServer(script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
