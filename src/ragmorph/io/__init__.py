"""Reading and writing worlds: native JSON Lines files and importers for BEIR, TREC and Ragas data.

Every reader raises ``ragmorph.errors.InputError`` with ``file``, ``line`` and ``field`` set where known.
"""

from __future__ import annotations

from ._lines import atomic_write_bytes, atomic_write_text, loads_strict, special_file, stream_target
from .beir import read_beir
from .native import case_from_dict, chunk_from_dict, read_cases, read_corpus, write_cases, write_corpus
from .ragas import RagasData, read_ragas
from .trec import read_trec_qrels, read_trec_run, trec_order, write_trec_run

__all__ = [
    "RagasData",
    "atomic_write_bytes",
    "atomic_write_text",
    "case_from_dict",
    "chunk_from_dict",
    "loads_strict",
    "read_beir",
    "read_cases",
    "read_corpus",
    "read_ragas",
    "read_trec_qrels",
    "read_trec_run",
    "special_file",
    "stream_target",
    "trec_order",
    "write_cases",
    "write_corpus",
    "write_trec_run",
]
