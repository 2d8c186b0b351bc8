"""ragmorph: metamorphic tests for RAG retrievers."""

from __future__ import annotations

from .errors import AdapterError, InputError, RagmorphError, UsageError
from .model import Case, Chunk, Corpus, Filters, Hit, Params, Ranking, World

__version__ = "0.1.0"

__all__ = [
    "AdapterError",
    "Case",
    "Chunk",
    "Corpus",
    "Filters",
    "Hit",
    "InputError",
    "Params",
    "Ranking",
    "RagmorphError",
    "UsageError",
    "World",
    "__version__",
]
