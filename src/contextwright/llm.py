"""Compatibility path: the code lives in ``contextwright.clients.chat``."""

# ruff: noqa: F401

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
