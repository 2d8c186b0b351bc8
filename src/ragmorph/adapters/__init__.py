"""Retriever adapters: the protocol, validation, built-in retrievers and integrations."""

from __future__ import annotations

from ._protocol import AsyncRetriever, DeltaRetriever, Factory, RawHit, Retriever, excerpt, normalise_hits
from .embedders import CachedEmbedder, Embedder, HashingEmbedder, MiniLMEmbedder

__all__ = [
    "AsyncRetriever",
    "CachedEmbedder",
    "DeltaRetriever",
    "Embedder",
    "Factory",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "RawHit",
    "Retriever",
    "excerpt",
    "normalise_hits",
]
