"""Text helpers shared by the built-in retrievers and embedders: one tokenizer, one stable hash."""

from __future__ import annotations

import hashlib
import re

__all__ = ["default_tokenize", "stable_hash"]

# \w is Unicode-aware in Python 3, so accented and non-Latin words stay whole tokens.
_WORD = re.compile(r"\w+")


def default_tokenize(text: str) -> list[str]:
    """Lower-cased (casefolded) runs of word characters; punctuation and whitespace separate tokens."""
    return _WORD.findall(text.casefold())


def stable_hash(token: str) -> int:
    """A 64-bit hash of `token` that is the same on every machine and run (unlike the salted `hash()`)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
