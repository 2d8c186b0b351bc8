"""Haystack 2's in-memory BM25 and embedding retrievers, with Haystack filters, as ragmorph factories.

    pip install 'ragmorph[haystack]'
    ragmorph run --retriever examples/adapters/haystack_retrievers.py:factory --corpus ... --cases ...
    ragmorph run --retriever examples/adapters/haystack_retrievers.py:embedding_factory --corpus ... --cases ...
"""

from __future__ import annotations

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.haystack import HaystackBM25Retriever, HaystackEmbeddingRetriever
from ragmorph.model import Corpus

EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


def factory(corpus: Corpus) -> HaystackBM25Retriever:
    """InMemoryBM25Retriever with Haystack's default BM25L over a fresh InMemoryDocumentStore."""
    return HaystackBM25Retriever(corpus)


def embedding_factory(corpus: Corpus) -> HaystackEmbeddingRetriever:
    """InMemoryEmbeddingRetriever (dot product) over a fresh store of the chunks' embeddings."""
    return HaystackEmbeddingRetriever(corpus, embedder=EMBEDDER)


if __name__ == "__main__":
    from _demo import show

    show(factory)
