"""The Haystack 2 retrievers against the real haystack-ai in-memory store: filters, scores, deltas."""

from __future__ import annotations

import pytest
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.haystack import (
    HaystackBM25Retriever,
    HaystackEmbeddingRetriever,
    haystack_bm25_factory,
    haystack_embedding_factory,
    haystack_filters,
)
from ragmorph.model import Chunk, Corpus, Filters
from support.integration_checks import tenant_corpus

pytestmark = pytest.mark.integration


def test_haystack_filters_are_haystack_2_filter_dicts() -> None:
    assert haystack_filters(None) is None and haystack_filters(Filters()) is None
    assert haystack_filters(Filters(tenant="acme", current_only=True, metadata={"a.b": 1})) == {
        "operator": "AND",
        "conditions": [
            {"field": "meta.tenant", "operator": "in", "value": ["acme", ""]},
            {"field": "meta.superseded_by", "operator": "==", "value": ""},
            {"field": "meta.metadata.a%2Eb", "operator": "==", "value": 1},
        ],
    }


def test_bm25_scores_are_the_components_own() -> None:
    corpus = tenant_corpus()
    with haystack_bm25_factory(corpus) as retriever:
        hits = validate_hits(retriever.retrieve("parental leave", k=5), k=5, query="q", corpus=corpus)
        direct = InMemoryBM25Retriever(retriever.store, scale_score=False).run(query="parental leave", top_k=5)
        assert [(h.id, h.score) for h in hits] == [(d.id, pytest.approx(d.score)) for d in direct["documents"]]
        # BM25L: a chunk sharing no word with the query still scores above zero, hence no `lexical` trait.
        assert all(h.score > 0 for h in retriever.retrieve("parental leave", k=len(corpus)))
        assert "lexical" not in getattr(retriever, "ragmorph_traits", ())


def test_embedding_scores_are_dot_products() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    with HaystackEmbeddingRetriever(corpus, embedder=embedder) as retriever:
        hits = retriever.retrieve("password reset", k=len(corpus))
    query = embedder.embed(["password reset"])[0]
    for hit in hits:
        assert hit.score == pytest.approx(float(embedder.embed([corpus[hit.id].text])[0] @ query), abs=1e-5)


def test_filters_run_in_the_document_store() -> None:
    corpus = tenant_corpus()
    for factory in (haystack_bm25_factory, haystack_embedding_factory):
        with factory(corpus) as retriever:
            assert describe_capabilities(retriever).filtered_by == "retriever"
            hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="acme", current_only=True))
            assert {h.id for h in hits} == {c.id for c in corpus
                                          if Filters(tenant="acme", current_only=True).allows(c)}


def test_an_empty_query_is_haystacks_error_and_close_empties_the_store() -> None:
    retriever = HaystackBM25Retriever(Corpus([Chunk("a", "alpha"), Chunk("b", "beta")]))
    with pytest.raises(ValueError, match="non-empty"):
        retriever.retrieve("", k=1)
    store = retriever.store
    retriever.close()
    assert store.count_documents() == 0 and retriever.closed


def test_post_filter_lets_ragmorph_filter() -> None:
    corpus = tenant_corpus()
    with HaystackEmbeddingRetriever(corpus, post_filter=True) as retriever:
        assert describe_capabilities(retriever).filtered_by == "ragmorph"
        hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="globex"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("globex")}
