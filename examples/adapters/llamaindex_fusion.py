"""A LlamaIndex hybrid: QueryFusionRetriever over BM25 and a vector index, as a ragmorph factory.

    pip install 'ragmorph[llamaindex]'
    ragmorph run --retriever examples/adapters/llamaindex_fusion.py:factory --corpus ... --cases ...

`LlamaIndexFusionRetriever` asks each leg for its best `depth` nodes under the filter (the vector index filters
natively with MetadataFilters, the BM25 leg is filtered by ragmorph), fuses them with QueryFusionRetriever's own
reciprocal rank fusion (one query, no LLM) and reports the fused score.
"""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.retrievers.bm25 import BM25Retriever

from ragmorph.adapters import HashingEmbedder
from ragmorph.adapters.llamaindex import LlamaIndexFusionRetriever, LlamaIndexRetriever, llamaindex_bm25_factory
from ragmorph.model import Corpus

DEPTH = 50


class HashingEmbedding(BaseEmbedding):
    """ragmorph's model-free HashingEmbedder as a LlamaIndex embedding (use a real model in your own stack)."""

    def _vector(self, text: str) -> list[float]:
        return HashingEmbedder(dim=256).embed([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


def factory(corpus: Corpus) -> LlamaIndexFusionRetriever:
    """BM25 and vector legs over exactly `corpus`, fused by reciprocal rank."""
    # The BM25 factory's nodes carry every chunk field in the metadata the default MetadataFilters read.
    nodes = llamaindex_bm25_factory(corpus).nodes
    vector = VectorStoreIndex(nodes, embed_model=HashingEmbedding()).as_retriever(similarity_top_k=DEPTH)
    legs = [LlamaIndexRetriever(vector)]
    if nodes:  # bm25s cannot index a corpus without a token: the vector leg alone then
        keyword = BM25Retriever(nodes=nodes, similarity_top_k=min(DEPTH, len(nodes)))
        legs.insert(0, LlamaIndexRetriever(keyword, corpus=corpus, post_filter=True, max_k=len(nodes)))
    return LlamaIndexFusionRetriever(legs, mode="reciprocal_rerank", depth=DEPTH)


if __name__ == "__main__":
    from _demo import show

    show(factory)
