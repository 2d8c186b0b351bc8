"""A dense retriever over an in-process Chroma collection, as a ragmorph factory.

    pip install 'ragmorph[chroma]'
    ragmorph run --retriever examples/adapters/chroma_dense.py:factory --corpus ... --cases ...

Each build creates a temporary collection that is deleted on close() or when the retriever is collected.
The hashing embedder needs no model; use MiniLMEmbedder() (ragmorph[minilm]) for real sentence embeddings.
"""

from __future__ import annotations

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.chroma import ChromaRetriever
from ragmorph.model import Corpus

# One cache for every build: a perturbed corpus re-embeds only its new chunks.
EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


def factory(corpus: Corpus) -> ChromaRetriever:
    """A fresh collection holding exactly `corpus`."""
    return ChromaRetriever(corpus, embedder=EMBEDDER)


if __name__ == "__main__":
    from _demo import show

    show(factory)
