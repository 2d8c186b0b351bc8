"""Reading and writing worlds: native JSON Lines files and importers for BEIR, TREC and Ragas data."""

from __future__ import annotations

from .native import case_from_dict, chunk_from_dict, read_cases, read_corpus, write_cases, write_corpus

__all__ = [
    "case_from_dict",
    "chunk_from_dict",
    "read_cases",
    "read_corpus",
    "write_cases",
    "write_corpus",
]
