"""Compatibility path: the code lives in ``contextwright.clients.chat``."""

from contextwright.clients.chat import (
    _HINTS,
    _RETRY_STATUS,
    ChatClient,
    ChatReply,
    _Deadline,
    _int_or_none,
    _reply,
    _retry_after,
    check_client_settings,
    logger,
)

__all__ = [
    "ChatClient",
    "ChatReply",
    "_Deadline",
    "_HINTS",
    "_RETRY_STATUS",
    "_int_or_none",
    "_reply",
    "_retry_after",
    "check_client_settings",
    "logger",
]
