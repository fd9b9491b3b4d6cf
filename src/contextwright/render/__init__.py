"""Rendering: formats, token metering, citations and chat messages."""
