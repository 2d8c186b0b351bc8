"""The approximate family against real indexes: each ANN index is judged against its declared exact twin.

On a corpus where one tenant owns 2% of the chunks, FAISS HNSW with a small candidate pool (ID selector) and
LanceDB's post-filter return fewer than k hits where exact search over the same vectors returns k: `approximate.full_k`
fails. Their exact twins, and indexes on corpora smaller than their candidate pool, pass it.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragmorph.adapters.faiss import FaissFlatRetriever, FaissHNSWRetriever, faiss_flat_factory, faiss_hnsw_factory
from ragmorph.adapters.lancedb import LanceDBRetriever, lancedb_factory
from ragmorph.model import Case, Chunk, Corpus
from ragmorph.runner import check
from support.integration_checks import tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _selective(rows: int = 600, owned: int = 12) -> tuple[Corpus, Case]:
    """`rows` chunks over one vocabulary, `owned` of them (2%) the asking tenant's."""
    rng = np.random.default_rng(0)
    words = [f"w{n}" for n in range(200)]
    corpus = Corpus([Chunk(f"c{n}", " ".join(rng.choice(words, 10)), tenant="a" if n < owned else "b")
                     for n in range(rows)])
    return corpus, Case("q", "w1 w2 w3 w4 w5", tenant="a")


def faiss_hnsw_low_ef(corpus: Corpus) -> FaissHNSWRetriever:
    """FAISS HNSW with a small graph and candidate pool (M=4, efSearch=4), so 300 chunks already run it dry."""
    return FaissHNSWRetriever(corpus, m=4, ef_search=4)


faiss_hnsw_low_ef.ragmorph_twin = faiss_flat_factory  # type: ignore[attr-defined]


def lancedb_postfilter(corpus: Corpus) -> LanceDBRetriever:
    """LanceDB with its post-filter: filters the k nearest rows."""
    return LanceDBRetriever(corpus, prefilter=False)


lancedb_postfilter.ragmorph_twin = lancedb_factory  # type: ignore[attr-defined]


def _statuses(retriever: object, corpus: Corpus, case: Case) -> dict[str, str]:
    report = check({"index": retriever}, corpus, [case], strategies=["approximate"], ks=(10,), max_examples=4)
    return {r.relation: r.status for r in report.results}


@pytest.mark.parametrize(
    ("retriever", "rows"), [(faiss_hnsw_low_ef, 300), (lancedb_postfilter, 200)], ids=["faiss_hnsw", "lancedb_postfilter"]
)
def test_an_index_that_runs_dry_under_a_selective_filter_fails_full_k(retriever: object, rows: int) -> None:
    corpus, case = _selective(rows, rows // 50)
    report = check({"index": retriever}, corpus, [case], strategies=["approximate"], ks=(10,), max_examples=4)
    failed = next(r for r in report.results if r.relation == "approximate.full_k")
    assert failed.status == "fail" and "where exact search over the same vectors and filters" in (failed.reason or "")
    assert "fewer than min(k, visible matching chunks)" in (failed.reason or "")
    assert next(r for r in report.results if r.relation == "approximate.recall_vs_exact").status == "pass"  # soft


def test_exact_twins_and_small_corpora_hold_full_k() -> None:
    corpus, case = _selective()
    flat = lambda c: FaissFlatRetriever(c)  # noqa: E731 - an exact retriever is its own twin
    flat.ragmorph_twin = faiss_flat_factory  # type: ignore[attr-defined]
    assert _statuses(flat, corpus, case)["approximate.full_k"] == "pass"
    small = tenant_corpus()
    assert _statuses(faiss_hnsw_factory, small, Case("s", "parental leave", tenant="acme"))["approximate.full_k"] == "pass"


def test_retrievers_without_a_twin_are_not_judged() -> None:
    corpus, case = _selective(60, 6)
    statuses = _statuses(lambda c: FaissHNSWRetriever(c), corpus, case)
    assert set(statuses.values()) == {"not_applicable"}


def test_the_integrations_declare_their_exact_twins() -> None:
    from ragmorph.adapters.lancedb import lancedb_ann_factory
    from ragmorph.adapters.pgvector import pgvector_factory
    from support.servers import postgres_uri

    assert faiss_hnsw_factory.ragmorph_twin is faiss_flat_factory  # type: ignore[attr-defined]
    assert lancedb_ann_factory.ragmorph_twin is lancedb_factory  # type: ignore[attr-defined]
    hnsw = pgvector_factory(postgres_uri())
    assert not hasattr(pgvector_factory(postgres_uri(), index="exact"), "ragmorph_twin")
    with hnsw.ragmorph_twin(tenant_corpus()) as twin:  # type: ignore[attr-defined]
        assert twin.index == "exact" and "Seq Scan" in twin.explain("leave", k=3)
