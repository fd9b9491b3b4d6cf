"""The chat a ``/v1/assemble`` response carries when asked (``messages``): what to send the model,
and what to send again after a bare citation, as :func:`contextwright.ask` does in Python."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextwright.core.errors import ContextwrightError
from contextwright.service.problems import Failure

if TYPE_CHECKING:
    from contextwright.render.context import AssembledContext

__all__ = ["chat_messages", "check_prompts"]


def check_prompts(req: Any) -> None:
    """``system`` and ``reask_bare`` are prompt names or prompt texts: a single word that names no
    prompt (``"lite"``) is a typo, refused with 422 ``invalid-prompt`` before it is sent or counted."""
    from contextwright.render.messages import check_prompt, check_reask

    for field in ("system", "reask_bare"):
        value = getattr(req, field)
        if value is None:  # null: no system message / no re-ask
            continue
        try:
            check_reask(value, field) if field == "reask_bare" else check_prompt(value, field)
        except ContextwrightError as exc:
            raise Failure(422, "invalid-prompt", str(exc), ["body", field]) from None


def chat_messages(ctx: AssembledContext, system: str | None, reask_bare: str | None) -> dict[str, Any]:
    """``messages``: the chat under ``system`` (``ctx.messages``: the prompt, the kept history, the
    tools, the context and the query); ``reask_messages``: the same under ``reask_bare`` (``auto``:
    the profile's ``reask``, else ``light``), where a bare citation would be asked again
    (:func:`~contextwright.render.cite.labels_shown`: the context shows citation labels), and only
    when it differs from ``messages``."""
    from contextwright.render.cite import labels_shown
    from contextwright.render.messages import reask_prompt

    reask_bare = reask_prompt(reask_bare, ctx.reask)
    first = ctx.messages(system=system)
    out: dict[str, Any] = {"messages": first}
    if reask_bare is not None and ctx.citations and labels_shown(ctx.format):
        again = ctx.messages(system=reask_bare)
        if again != first:
            out["reask_messages"] = again
    return out
