"""LangChain's BM25Retriever (langchain-community + rank-bm25) as a ragmorph factory.

    pip install 'ragmorph[langchain]'
    ragmorph run --retriever examples/adapters/langchain_bm25.py:factory --corpus ... --cases ...

Chunk ids travel in each Document's metadata["id"]; filters are applied by over-fetching and post-filtering.
"""

from __future__ import annotations

import re

from ragmorph.adapters.langchain import LangChainRetriever, langchain_bm25_factory
from ragmorph.model import Corpus


def words(text: str) -> list[str]:
    """Lower-cased word tokens (LangChain's default only splits on whitespace, so 'policy?' != 'policy')."""
    return re.findall(r"\w+", text.lower())


def factory(corpus: Corpus) -> LangChainRetriever:
    """BM25 over exactly `corpus`, with a word tokenizer."""
    return langchain_bm25_factory(corpus, preprocess_func=words)


if __name__ == "__main__":
    from _demo import show

    show(factory)
