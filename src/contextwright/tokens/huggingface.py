"""Any Hugging Face ``tokenizers`` tokenizer, from a ``tokenizer.json`` path or a hub name (local cache only)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from contextwright.core.errors import TokenizerError


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer.

    Special tokens (``[CLS]``, ``<s>``) are not added: we count what the text
    costs inside a prompt, not a standalone sequence.

    Args:
        source: A path to a ``tokenizer.json`` (or a directory holding one), or
            a hub name such as ``Qwen/Qwen2.5-7B-Instruct``. A hub name loads
            from the local Hugging Face cache only (``HF_HOME``); contextwright
            never downloads at run time, so a name not in the cache is refused
            at once (issue 26: a request naming a model made a server retry the
            hub for 24 s).
    """

    additive = False

    def __init__(self, source: str | os.PathLike[str]) -> None:
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError as exc:
            raise TokenizerError("Hugging Face tokenizers are not installed: pip install tokenizers") from exc
        path = Path(source)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            if path.suffix == ".json" or path.exists():
                if not path.exists():
                    raise TokenizerError(
                        f"tokenizer file {str(path)!r} does not exist. Pass the path to a "
                        "tokenizer.json (or the directory that holds it)."
                    )
                self._tok = _HF.from_file(str(path))
            else:
                self._tok = _HF.from_file(_hub_file(str(source)))
        except TokenizerError:
            raise
        except Exception as exc:
            raise TokenizerError(
                f"could not load Hugging Face tokenizer {str(source)!r}: {str(exc).rstrip('. ')}. Download it "
                "once where there is network (huggingface-cli download NAME tokenizer.json) "
                "and pass the file's path, or set HF_HOME to a cache that holds it and "
                "HF_HUB_OFFLINE=1."
            ) from exc
        # A tokenizer.json saved for a model often pads or truncates (MiniLM's
        # pads to 128); either would make counts wrong, silently.
        self._tok.no_padding()
        self._tok.no_truncation()
        self.name = str(source)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=False))

    def __repr__(self) -> str:
        return f"HFTokenizer({self.name!r})"


def _hub_file(name: str) -> str:
    """The cached ``tokenizer.json`` of hub model ``name``; never a download."""
    hint = (
        f"Hugging Face tokenizer {name!r} is not in the local cache, and contextwright never "
        "downloads at run time. Fix: download it once where there is network "
        f"(huggingface-cli download {name} tokenizer.json) and pass the file's path, or set "
        "HF_HOME to a cache that holds it."
    )
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise TokenizerError(hint) from None
    try:
        found = try_to_load_from_cache(name, "tokenizer.json")
    except Exception:  # an invalid repo id ("a/b/c", "..") is not in any cache either
        found = None
    if not isinstance(found, str):
        raise TokenizerError(hint)
    return found
