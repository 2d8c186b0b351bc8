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
        assert describe_capabilities(retriever).filtered_by == "selector"  # ragmorph admits, FAISS searches
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


def test_the_relations_judging_the_admitted_set_do_not_judge_faiss_the_restricted_search_ones_do() -> None:
    """FAISS stores no metadata: which chunks a filter admits is ragmorph's `Filters.allows`, so those relations
    say so; the search FAISS runs among the admitted ids (its ranking, its under-return) is still judged."""
    from ragmorph.model import Case
    from ragmorph.runner import check

    corpus = tenant_corpus()
    cases = [Case("leave", "parental leave", tenant="acme", evidence=[["hr-1#1"]]),
             Case("password", "password reset", tenant="globex", evidence=[["it-1#1"]])]
    report = check({"flat": faiss_flat_factory}, corpus, cases, strategies=["tenancy", "filters", "odd_query"],
                   max_examples=6)
    rows = {(r.case, r.relation): r for r in report.results}
    for case in ("leave", "password"):
        for name in ("tenancy.unauthorized_zero", "tenancy.no_cross_tenant", "filters.admitted_only",
                     "odd_query.admitted_only"):
            row = rows[(case, name)]
            assert row.status == "not_applicable" and "FAISS" not in (row.reason or "")
            assert (row.reason or "").startswith("the admitted set is computed by ragmorph"), row.reason
        judged = rows[(case, "tenancy.filtered_equals_visible")]
        assert judged.status == "pass" and judged.rate and judged.rate[1] > 0
    post = check({"post": lambda c: FaissFlatRetriever(c, post_filter=True)}, corpus, cases[:1], strategies=["tenancy"],
                 max_examples=4)
    assert {r.reason for r in post.results if r.relation.startswith("tenancy.")} == {
        "filtering is done by ragmorph, not by the retriever"}
