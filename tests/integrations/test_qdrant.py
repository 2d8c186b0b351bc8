"""QdrantRetriever against the real qdrant-client in local mode: payload filters, scores, lifecycle."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient, models

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.qdrant import QdrantRetriever, payload_filter, qdrant_factory
from ragmorph.errors import UsageError
from ragmorph.model import Filters
from support.integration_checks import tenant_corpus

pytestmark = pytest.mark.integration


def test_payload_filter_is_a_qdrant_filter_over_the_payload() -> None:
    assert payload_filter(None) is None and payload_filter(Filters()) is None
    built = payload_filter(Filters(tenant="acme", current_only=True, metadata={"lang": "en", "w": 0.5}))
    assert built == models.Filter(
        must=[
            models.FieldCondition(key="tenant", match=models.MatchAny(any=["acme", ""])),
            models.FieldCondition(key="superseded_by", match=models.MatchValue(value="")),
            models.FieldCondition(key='meta."lang"', match=models.MatchValue(value="en")),
            models.FieldCondition(key='meta."w"', match=models.MatchValue(value="json:0.5")),
        ]
    )


def test_scores_are_dot_products_and_filters_run_in_qdrant() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    with QdrantRetriever(corpus, embedder=embedder) as retriever:
        hits = validate_hits(retriever.retrieve("parental leave", k=len(corpus)), k=len(corpus), query="q",
                             corpus=corpus)
        query = embedder.embed(["parental leave"])[0]
        for hit in hits:
            assert hit.score == pytest.approx(float(embedder.embed([corpus[hit.id].text])[0] @ query), abs=1e-5)
        filtered = retriever.retrieve("parental leave", k=len(corpus), filters=Filters(tenant="globex"))
        assert {h.id for h in filtered} == {c.id for c in corpus if c.visible_to("globex")}
        assert describe_capabilities(retriever).filtered_by == "retriever"


def test_the_collection_is_deleted_on_close_in_a_callers_client() -> None:
    client = QdrantClient(":memory:")
    with QdrantRetriever(tenant_corpus(), client=client) as retriever:
        assert client.collection_exists(retriever.name)
    assert not client.collection_exists(retriever.name) and retriever.closed
    with pytest.raises(UsageError, match="closed"):
        retriever.retrieve("leave", k=1)


def test_post_filter_lets_ragmorph_filter_and_says_so() -> None:
    corpus = tenant_corpus()
    with QdrantRetriever(corpus, post_filter=True) as retriever:
        assert describe_capabilities(retriever).filtered_by == "ragmorph"
        hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("acme")}


def test_the_factory_builds_local_mode() -> None:
    with qdrant_factory(tenant_corpus()) as retriever:
        assert len(retriever.retrieve("leave", k=3)) == 3
