"""A LangChain hybrid: EnsembleRetriever over BM25 and an in-memory vector store, as a ragmorph factory.

    pip install 'ragmorph[langchain]'
    ragmorph run --retriever examples/adapters/langchain_ensemble.py:factory --corpus ... --cases ...

`LangChainEnsembleRetriever` asks every leg for its best `depth` candidates under the filter (the vector store
filters natively, the BM25 leg is filtered by ragmorph), fuses them with the ensemble's own weighted reciprocal
rank fusion and reports the fused score. Filtering inside each leg and fusing by rank is a correct design whose
fused order may change when a filter removes other chunks; ragmorph's filter relations allow for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from langchain_classic.retrievers import EnsembleRetriever
from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from ragmorph.adapters import HashingEmbedder
from ragmorph.adapters.langchain import LangChainEnsembleRetriever, LangChainRetriever
from ragmorph.model import Corpus, Filters


def words(text: str) -> list[str]:
    """Lower-cased word tokens for the BM25 leg."""
    return re.findall(r"\w+", text.lower())


class HashingEmbeddings(Embeddings):
    """ragmorph's model-free HashingEmbedder as LangChain Embeddings.

    One constant component is added: InMemoryVectorStore's cosine raises ("NaN values found") on a zero vector,
    which a text without words would otherwise embed to.
    """

    def __init__(self, dim: int = 256) -> None:
        self.embedder = HashingEmbedder(dim=dim)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.embedder.embed(texts)
        return np.hstack([vectors, np.full((len(texts), 1), 0.01, dtype=vectors.dtype)]).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of the documents."""
        return self._embed(texts)

    def embed_query(self, text: str) -> list[float]:
        """Vector of the query."""
        return self._embed([text])[0]


def factory(corpus: Corpus) -> LangChainEnsembleRetriever:
    """BM25 and dense legs over exactly `corpus`, fused by EnsembleRetriever (equal weights, c = 60)."""
    documents = [Document(page_content=c.text, metadata={"id": c.id}, id=c.id) for c in corpus]
    store = InMemoryVectorStore(HashingEmbeddings())
    if documents:
        store.add_documents(documents)
    semantic = store.as_retriever()

    def store_filter(filters: Filters) -> Callable[[Document], bool]:
        return lambda document: filters.allows(corpus[document.metadata["id"]])

    legs = [LangChainRetriever(semantic, k_attr="search_kwargs.k", filter_mapper=store_filter)]
    # rank_bm25 cannot index a corpus without a word: such a corpus gets the dense leg alone.
    if any(words(c.text) for c in corpus):
        keyword = BM25Retriever.from_documents(documents, preprocess_func=words)
        legs.insert(0, LangChainRetriever(keyword, k_attr="k", corpus=corpus, post_filter=True))
    # id_key: without it the ensemble merges chunks whose texts are equal, as if they were one document.
    ensemble = EnsembleRetriever(retrievers=[leg.retriever for leg in legs], id_key="id")
    return LangChainEnsembleRetriever(ensemble, legs=legs, depth=50)


if __name__ == "__main__":
    from _demo import show

    show(factory)
