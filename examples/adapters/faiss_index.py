"""FAISS, exact (IndexFlatIP) and HNSW, with filters as IDSelectors, as ragmorph factories.

    pip install 'ragmorph[faiss]'
    ragmorph run --retriever examples/adapters/faiss_index.py:factory --corpus ... --cases ...
    ragmorph run --retriever examples/adapters/faiss_index.py:hnsw_factory --corpus ... --cases ...

FAISS keeps no metadata: the allowed ids of a filter go to the search as an IDSelectorBatch.
"""

from __future__ import annotations

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.faiss import FaissFlatRetriever, FaissHNSWRetriever
from ragmorph.model import Corpus

EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


def factory(corpus: Corpus) -> FaissFlatRetriever:
    """Exhaustive inner-product search; corpus edits are applied as add_with_ids / remove_ids."""
    return FaissFlatRetriever(corpus, embedder=EMBEDDER)


def hnsw_factory(corpus: Corpus) -> FaissHNSWRetriever:
    """An HNSW graph with FAISS's defaults (M=32, efSearch=16); rebuilt for every corpus edit."""
    return FaissHNSWRetriever(corpus, embedder=EMBEDDER)


hnsw_factory.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
hnsw_factory.ragmorph_twin = factory  # type: ignore[attr-defined]

if __name__ == "__main__":
    from _demo import show

    show(factory)
