"""LangChainRetriever over real LangChain retrievers: BM25 (langchain-community) and an in-memory vector store."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.langchain import LangChainRetriever, langchain_bm25_factory
from ragmorph.errors import InvalidResponse, UsageError
from ragmorph.model import Chunk, Corpus, Filters, Hit
from support.integration_checks import assert_filtered_prefix, tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever


class HashingEmbeddings(Embeddings):
    """LangChain's embedding interface over ragmorph's deterministic HashingEmbedder (no model download)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=64)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed([text])[0].tolist()


def _vector_retriever(corpus: Corpus) -> object:
    store = InMemoryVectorStore(embedding=HashingEmbeddings())
    store.add_documents(
        [Document(page_content=c.text, metadata={"id": c.id, "tenant": c.tenant, "superseded_by": c.superseded_by,
                                                 **c.metadata}) for c in corpus],
        ids=list(corpus.ids),
    )
    return store.as_retriever(search_kwargs={"k": 2})


def test_bm25_factory_scores_are_rank_bm25_scores_in_rank_order() -> None:
    corpus = tenant_corpus()
    adapter = langchain_bm25_factory(corpus)
    hits = validate_hits(adapter.retrieve("Parental leave policy:", k=5), k=5, query="q", corpus=corpus)
    library = adapter.retriever
    raw = library.vectorizer.get_scores("Parental leave policy:".split())
    assert [h.score for h in hits] == [pytest.approx(float(raw[corpus.position(h.id)])) for h in hits]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].id in {"hr-1#0", "hr-1#1", "hr-2#0"} and hits[0].score > 0


def test_bm25_factory_keeps_langchain_tokenisation_unless_told_otherwise() -> None:
    # Three chunks: with two, rank_bm25's idf of a term in one of them is log(1.5 / 1.5) = 0.
    corpus = Corpus([Chunk("a", "Password reset."), Chunk("b", "other words here"), Chunk("c", "more words")])
    default = langchain_bm25_factory(corpus)
    # LangChain splits on whitespace: "reset" does not match the token "reset." (documented library behaviour).
    assert default.retrieve("reset", k=1)[0].score == 0
    lowered = langchain_bm25_factory(corpus, preprocess_func=lambda t: t.lower().replace(".", " ").split())
    assert lowered.retrieve("RESET", k=1)[0].id == "a" and lowered.retrieve("RESET", k=1)[0].score > 0


def test_the_callers_retriever_keeps_its_k() -> None:
    corpus = tenant_corpus()
    library = BM25Retriever.from_documents(
        [Document(page_content=c.text, metadata={"id": c.id}) for c in corpus], k=3
    )
    adapter = LangChainRetriever(library)
    assert len(adapter.retrieve("leave", k=7)) == 7
    assert len(adapter.retrieve("leave", k=1)) == 1
    assert library.k == 3


def _in_memory_filter(filters: Filters) -> Callable[[Document], bool]:
    """What an application passes to InMemoryVectorStore: a Document predicate (None tenant = shared)."""

    def allowed(document: Document) -> bool:
        tenant = document.metadata.get("tenant")
        if filters.tenant is not None and tenant not in (None, filters.tenant):
            return False
        return not (filters.current_only and document.metadata.get("superseded_by"))

    return allowed


def test_vector_store_retriever_gets_k_and_the_stores_own_filter() -> None:
    corpus = tenant_corpus()
    library = _vector_retriever(corpus)
    adapter = LangChainRetriever(library, k_attr="search_kwargs.k", filter_mapper=_in_memory_filter)
    hits = adapter.retrieve("parental leave", k=6)
    assert len(hits) == 6 and all(h.score is None for h in hits)
    assert library.search_kwargs == {"k": 2}
    assert describe_capabilities(adapter).filtered_by == "retriever"
    # The retriever returns no scores; the store's own scores tell ties apart from reorderings.
    scored = library.vectorstore.similarity_search_with_score("parental leave", k=len(corpus))
    score = {document.metadata["id"]: value for document, value in scored}
    with_scores = lambda hits: [Hit(h.id, score[h.id]) for h in hits]  # noqa: E731
    everything = with_scores(adapter.retrieve("parental leave", k=len(corpus)))
    filters = Filters(tenant="globex", current_only=True)
    for k in range(1, len(corpus) + 1):
        filtered = with_scores(adapter.retrieve("parental leave", k=k, filters=filters))
        assert_filtered_prefix(filtered, everything, corpus, filters, k)


def test_a_retriever_without_a_filter_mapper_takes_no_filters_unless_ragmorph_is_asked() -> None:
    corpus = tenant_corpus()
    plain = LangChainRetriever(_vector_retriever(corpus), k_attr="search_kwargs.k")
    assert not describe_capabilities(plain).supports_filters
    with pytest.raises(UsageError, match="filter_mapper"):
        plain.retrieve("leave", k=3, filters=Filters(tenant="acme"))
    post = LangChainRetriever(_vector_retriever(corpus), k_attr="search_kwargs.k", post_filter=True)
    assert describe_capabilities(post).filtered_by == "ragmorph"
    hits = post.retrieve("leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("acme")}
    with pytest.raises(UsageError, match="both"):
        LangChainRetriever(_vector_retriever(corpus), filter_mapper=_in_memory_filter, post_filter=True)
    with pytest.raises(UsageError, match="filter setting 'nope'"):
        LangChainRetriever(_vector_retriever(corpus), filter_mapper=_in_memory_filter, filter_attr="nope")


def test_bm25_factory_post_filters_and_declares_it() -> None:
    assert describe_capabilities(langchain_bm25_factory).filtered_by == "ragmorph"
    assert describe_capabilities(langchain_bm25_factory(tenant_corpus())).filtered_by == "ragmorph"


def test_score_key_reads_scores_from_document_metadata() -> None:
    library = BM25Retriever.from_documents(
        [
            Document(page_content="alpha beta", metadata={"id": "a", "relevance": 0.9}),
            Document(page_content="gamma", metadata={"id": "b", "relevance": 0.1}),
            Document(page_content="delta", metadata={"id": "c"}),
        ]
    )
    hits = LangChainRetriever(library, score_key="relevance").retrieve("alpha", k=3)
    assert hits[0].id == "a"
    assert {h.id: h.score for h in hits} == {"a": 0.9, "b": 0.1, "c": None}


def test_documents_without_ids_are_invalid_responses() -> None:
    library = BM25Retriever.from_documents([Document(page_content=t) for t in ("alpha", "beta", "gamma")])
    with pytest.raises(InvalidResponse, match=r"metadata\['id'\]") as caught:
        LangChainRetriever(library).retrieve("alpha", k=1)
    assert caught.value.query == "alpha" and "alpha" in (caught.value.excerpt or "")


def test_document_id_is_the_fallback_id() -> None:
    library = BM25Retriever.from_documents(
        [Document(page_content=text, id=chunk_id) for text, chunk_id in (("alpha", "x#1"), ("b", "y"), ("c", "z"))]
    )
    assert LangChainRetriever(library).retrieve("alpha", k=1)[0].id == "x#1"


def test_a_retriever_without_k_is_cut_to_k() -> None:
    library = _vector_retriever(tenant_corpus())
    adapter = LangChainRetriever(library, k_attr="no_such_attribute")
    assert adapter.k_attr is None
    assert len(adapter.retrieve("leave", k=1)) == 1


def test_only_base_retrievers_are_accepted() -> None:
    with pytest.raises(UsageError, match="BaseRetriever"):
        LangChainRetriever(lambda query: [])
    with pytest.raises(UsageError, match="BaseRetriever"):
        LangChainRetriever(tenant_corpus())  # what the CLI would pass if this class were given as a factory


@pytest.mark.parametrize(
    "corpus", [Corpus([]), Corpus([Chunk("a", ""), Chunk("b", "   ")])], ids=["empty", "no-tokens"]
)
def test_corpora_rank_bm25_cannot_index_give_no_hits(corpus: Corpus) -> None:
    adapter = langchain_bm25_factory(corpus)
    assert adapter.retrieve("anything", k=3) == ()
    assert adapter.retrieve("anything", k=3, filters=Filters(tenant="acme")) == ()


def test_scores_are_plain_floats() -> None:
    hits = langchain_bm25_factory(tenant_corpus()).retrieve("leave", k=3)
    assert all(type(h.score) is float and np.isfinite(h.score) for h in hits)
