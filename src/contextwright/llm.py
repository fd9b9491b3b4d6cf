"""Compatibility path: the code lives in ``contextwright.clients.chat`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.clients.chat import ChatClient as ChatClient
from contextwright.clients.chat import ChatReply as ChatReply
from contextwright.clients.chat import check_client_settings as check_client_settings
