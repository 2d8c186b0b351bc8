"""ragmorph: metamorphic tests for RAG retrievers.

The world model and errors import eagerly; everything heavier (the engine, Hypothesis, adapters, readers)
loads on first use, so `import ragmorph` and the pytest plugin stay cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import AdapterError, InputError, RagmorphError, UsageError
from .model import Case, Chunk, Corpus, Filters, Hit, Params, Ranking, World

__version__ = "0.1.0"

# Public name -> module that defines it; resolved lazily by __getattr__ below.
_LAZY: dict[str, str] = {
    "check": "ragmorph.runner",
    "plan": "ragmorph.runner",
    "execute": "ragmorph.runner",
    "replay": "ragmorph.runner",
    "CheckReport": "ragmorph.runner",
    "ReplayOutcome": "ragmorph.runner",
    "ViolationsFound": "ragmorph.runner",
    "suite": "ragmorph.pytest_plugin",
    "check_evaluator": "ragmorph.evaluator",
    "BM25Retriever": "ragmorph.adapters",
    "DenseRetriever": "ragmorph.adapters",
    "FunctionRetriever": "ragmorph.adapters",
    "GuardedRetriever": "ragmorph.adapters",
    "HashingEmbedder": "ragmorph.adapters",
    "MiniLMEmbedder": "ragmorph.adapters",
    "load_retriever": "ragmorph.adapters",
    "evaluate": "ragmorph.metrics",
    "parse_metric": "ragmorph.metrics",
    "read_corpus": "ragmorph.io",
    "read_cases": "ragmorph.io",
    "write_corpus": "ragmorph.io",
    "write_cases": "ragmorph.io",
    "generate": "ragmorph.worlds",
    "demo_world": "ragmorph.worlds",
}

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
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    """Load heavier public names on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmorph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
