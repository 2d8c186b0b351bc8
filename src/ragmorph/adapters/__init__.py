"""Retriever adapters: the protocol, validation, built-in retrievers and integrations."""

from __future__ import annotations

from ._protocol import (
    AsyncRetriever,
    BatchRetriever,
    Closable,
    DeltaRetriever,
    Factory,
    RawHit,
    Reindexable,
    Retriever,
    Revertible,
    Updatable,
    excerpt,
    normalise_hits,
)
from ._text import default_tokenize
from .bm25 import BM25Retriever, BM25sRetriever
from .capabilities import (
    FILTER_KINDS,
    PERTURBATION_KINDS,
    Capabilities,
    describe_capabilities,
    display_name,
    is_factory,
    is_retriever,
)
from .delta import applied_delta
from .dense import DenseRetriever, shared_cache
from .embedders import CachedEmbedder, Embedder, HashingEmbedder, MiniLMEmbedder
from .function import FunctionRetriever
from .guard import GuardedRetriever
from .loading import Configured, is_file_spec, load_retriever, locate_retriever
from .pipeline import ContextPacker, Dedup, FreshnessFilter, Pipeline, Reranker, TenantFilter, whitespace_tokens
from .validation import RagmorphWarning, ScoreOrderWarning, validate_hits

__all__ = [
    "FILTER_KINDS",
    "PERTURBATION_KINDS",
    "AsyncRetriever",
    "BM25Retriever",
    "BM25sRetriever",
    "BatchRetriever",
    "CachedEmbedder",
    "Closable",
    "Capabilities",
    "Configured",
    "ContextPacker",
    "Dedup",
    "DeltaRetriever",
    "DenseRetriever",
    "Embedder",
    "Factory",
    "FreshnessFilter",
    "FunctionRetriever",
    "GuardedRetriever",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "RagmorphWarning",
    "RawHit",
    "Reindexable",
    "Pipeline",
    "Reranker",
    "Retriever",
    "Revertible",
    "ScoreOrderWarning",
    "TenantFilter",
    "Updatable",
    "applied_delta",
    "default_tokenize",
    "describe_capabilities",
    "display_name",
    "excerpt",
    "is_factory",
    "is_file_spec",
    "is_retriever",
    "load_retriever",
    "locate_retriever",
    "normalise_hits",
    "shared_cache",
    "validate_hits",
    "whitespace_tokens",
]
