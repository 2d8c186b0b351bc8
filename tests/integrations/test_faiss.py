"""The FAISS retrievers against the real faiss-cpu: flat and HNSW, IDSelector filters, flat deltas."""

from __future__ import annotations

import numpy as np
import pytest

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.faiss import FaissFlatRetriever, FaissHNSWRetriever, faiss_flat_factory, faiss_hnsw_factory
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.integration_checks import assert_same_up_to_ties, tenant_corpus

pytestmark = pytest.mark.integration


def test_flat_scores_are_inner_products_best_first() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    hits = validate_hits(FaissFlatRetriever(corpus, embedder=embedder).retrieve("parental leave", k=len(corpus)),
                         k=len(corpus), query="q", corpus=corpus)
    query = embedder.embed(["parental leave"])[0]
    for hit in hits:
        assert hit.score == pytest.approx(float(embedder.embed([corpus[hit.id].text])[0] @ query), abs=1e-5)


def test_filters_are_id_selectors_applied_by_faiss() -> None:
    corpus = tenant_corpus()
    for retriever in (faiss_flat_factory(corpus), faiss_hnsw_factory(corpus)):
        assert describe_capabilities(retriever).filtered_by == "retriever"
        hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="globex", current_only=True))
        assert {h.id for h in hits} == {c.id for c in corpus if Filters(tenant="globex", current_only=True).allows(c)}
        assert retriever.retrieve("leave", k=3, filters=Filters(metadata={"lang": "xx"})) == ()


def test_hnsw_is_approximate_and_has_no_deltas_flat_has_both() -> None:
    assert faiss_hnsw_factory.ragmorph_traits == ("approximate",)
    hnsw = describe_capabilities(faiss_hnsw_factory, built=faiss_hnsw_factory(tenant_corpus()))
    flat = describe_capabilities(faiss_flat_factory, built=faiss_flat_factory(tenant_corpus()))
    assert not hnsw.supports_delta and flat.supports_delta


def test_flat_deltas_match_a_rebuild() -> None:
    corpus = tenant_corpus()
    patched = FaissFlatRetriever(corpus)
    patched.remove(["hr-1#1", "it-1#0"])
    patched.add([Chunk("new#1", "parental leave for new staff", tenant="acme")])
    rebuilt = FaissFlatRetriever(corpus.without(["hr-1#1", "it-1#0"]).with_chunks([
        Chunk("new#1", "parental leave for new staff", tenant="acme")]))
    assert_same_up_to_ties(patched.retrieve("parental leave", k=20), rebuilt.retrieve("parental leave", k=20))
    with pytest.raises(UsageError, match="unknown"):
        patched.remove(["hr-1#1"])


def test_hnsw_under_a_selective_selector_returns_fewer_than_k() -> None:
    """FAISS's HNSW search keeps efSearch (16) candidates and admits only selected ids: a 2% tenant runs dry."""
    rng = np.random.default_rng(0)
    words = [f"w{n}" for n in range(200)]
    corpus = Corpus([Chunk(f"c{n}", " ".join(rng.choice(words, 10)), tenant="a" if n < 20 else "b")
                     for n in range(1000)])
    embedder = HashingEmbedder(dim=64)
    hnsw, flat = FaissHNSWRetriever(corpus, embedder=embedder), FaissFlatRetriever(corpus, embedder=embedder)
    queries = [" ".join(rng.choice(words, 5)) for _ in range(20)]
    filters = Filters(tenant="a")
    assert all(len(flat.retrieve(q, k=10, filters=filters)) == 10 for q in queries)
    short = [len(hnsw.retrieve(q, k=10, filters=filters)) for q in queries]
    assert sum(n < 10 for n in short) >= 15, short
