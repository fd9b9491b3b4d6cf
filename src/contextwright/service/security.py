"""What a request may not make the server do: open its files, run templates, call other hosts."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

from contextwright.service.problems import Failure, Loc
from contextwright.service.settings import ServiceConfig

__all__ = ["vet_pipeline", "vet_tokenizer"]

# Settings a request may not choose for its own stages: where the server connects to, and which
# of the server's secrets (api_key_env names an environment variable) it sends along.
_NETWORK_SETTING = re.compile(r"url|endpoint|host|api_key|_env$", re.IGNORECASE)


def vet_tokenizer(spec: str | None) -> None:
    """Refuse a tokenizer spec that names a file on the server."""
    if spec and (spec.endswith(".json") or os.path.exists(spec)):
        # get_tokenizer also loads tokenizer.json files and directories; a request must not
        # make the server open its own files.
        raise Failure(
            422,
            "invalid-option",
            f"tokenizer {spec!r} names a file; pass a tokenizer name such as 'cl100k_base', "
            "'o200k_base' or 'chars:4'.",
            ["body", "tokenizer"],
        )


def vet_pipeline(pipeline: Any, o: Mapping[str, Any], config: ServiceConfig) -> None:
    """Refuse what a request must not make the server do (templates, network calls)."""
    from contextwright.render.format import TemplateFormat

    if (
        isinstance(pipeline.format, TemplateFormat)
        and not config.allow_templates
        and (o["format"] is not None or (o["config"] or {}).get("format") is not None)
    ):
        where: Loc = ["body", "format"] if o["format"] is not None else ["body", "config", "format"]
        raise Failure(
            422,
            "template-not-allowed",
            "template formats are disabled on this server (a template can run long); use a named "
            "format (xml, numbered, sources, markdown, grouped, minimal) or start the server with "
            "allow_templates = true.",
            where,
        )
    if o["config"] is None or "stages" not in o["config"] or config.allow_network_stages:
        return  # the stages are the server's preset's, which the operator chose
    for i, stage in enumerate(pipeline.stages):
        for f in dataclasses.fields(stage):
            if _NETWORK_SETTING.search(f.name) and getattr(stage, f.name) not in (None, "", ()):
                raise Failure(
                    422,
                    "network-stage-not-allowed",
                    f"stage {stage.name!r} has the network setting {f.name!r}; request-supplied stages "
                    "may not call other hosts on this server. Use a server preset, or start the "
                    "server with allow_network_stages = true.",
                    ["body", "config", "stages", i, f.name],
                )
