"""LanceDB, flat or with an ANN index, pre- or post-filtering, as ragmorph factories.

    pip install 'ragmorph[lancedb]'
    ragmorph run --retriever examples/adapters/lancedb_table.py:factory --corpus ... --cases ...

`factory` searches every row and filters first (exact). `ann_postfilter_factory` is a common production
setting: an IVF-HNSW index with LanceDB's post-filter, which filters the k nearest rows and so can return fewer
than k for a selective tenant filter.
"""

from __future__ import annotations

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.lancedb import LanceDBRetriever
from ragmorph.model import Corpus

EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


def factory(corpus: Corpus) -> LanceDBRetriever:
    """A flat table in a temporary directory, SQL filters applied before the search (prefilter)."""
    return LanceDBRetriever(corpus, embedder=EMBEDDER)


def ann_postfilter_factory(corpus: Corpus) -> LanceDBRetriever:
    """An IVF_HNSW_FLAT index (one partition for small corpora), filters applied after the search."""
    return LanceDBRetriever(corpus, embedder=EMBEDDER, index="IVF_HNSW_FLAT", index_options={"num_partitions": 1},
                            prefilter=False)


ann_postfilter_factory.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
# Its exact twin: the flat, pre-filtering table over the same vectors.
ann_postfilter_factory.ragmorph_twin = factory  # type: ignore[attr-defined]

if __name__ == "__main__":
    from _demo import show

    show(factory)
