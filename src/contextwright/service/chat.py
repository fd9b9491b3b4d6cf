"""The prompts of a ``/v1/assemble`` request that asks for its chat (``messages``), checked before
anything is sent; the chat itself is :func:`contextwright.render.cite.chat_messages`, what
:func:`contextwright.ask` sends in Python."""

from __future__ import annotations

from typing import Any

from contextwright.core.errors import ContextwrightError
from contextwright.service.problems import Failure

__all__ = ["check_prompts"]


def check_prompts(req: Any) -> None:
    """``system`` and ``reask_bare`` are prompt names or prompt texts: a single word that names no
    prompt (``"lite"``) is a typo, refused with 422 ``invalid-prompt`` before it is sent or counted."""
    from contextwright.render.messages import check_chat

    try:
        check_chat(req.system, req.reask_bare)  # null: no system message / no re-ask
    except ContextwrightError as exc:
        field = str(exc.loc[0]) if exc.loc else "system"
        raise Failure(422, "invalid-prompt", str(exc), ["body", field]) from None
