"""Qdrant in local mode (in process, no server) with payload filters, as a ragmorph factory.

    pip install 'ragmorph[qdrant]'
    ragmorph run --retriever examples/adapters/qdrant_local.py:factory --corpus ... --cases ...

Pass `client=QdrantClient(url="http://localhost:6333")` to QdrantRetriever to test a Qdrant server instead.
"""

from __future__ import annotations

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.qdrant import QdrantRetriever
from ragmorph.model import Corpus

EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


def factory(corpus: Corpus) -> QdrantRetriever:
    """A fresh local-mode collection holding exactly `corpus`; tenant filters are Qdrant payload filters."""
    return QdrantRetriever(corpus, embedder=EMBEDDER)


if __name__ == "__main__":
    from _demo import show

    show(factory)
