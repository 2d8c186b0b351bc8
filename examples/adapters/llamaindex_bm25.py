"""LlamaIndex's BM25 retriever (llama-index-retrievers-bm25, on bm25s) as a ragmorph factory.

    pip install 'ragmorph[llamaindex]'
    ragmorph run --retriever examples/adapters/llamaindex_bm25.py:factory --corpus ... --cases ...

Only the chunk text is indexed (metadata keys are excluded from the embed text); filters are built natively
per filter set, cached, and checked again chunk by chunk.
"""

from __future__ import annotations

from ragmorph.adapters.llamaindex import LlamaIndexBM25Retriever, llamaindex_bm25_factory
from ragmorph.model import Corpus


def factory(corpus: Corpus) -> LlamaIndexBM25Retriever:
    """English stemming and stopwords, as LlamaIndex does by default."""
    return llamaindex_bm25_factory(corpus, language="en")


if __name__ == "__main__":
    from _demo import show

    show(factory)
