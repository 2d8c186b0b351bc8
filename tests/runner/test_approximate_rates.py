"""The trait 'approximate': relations that presume exact search are measured as rates, never failures."""

from __future__ import annotations

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Corpus, Filters, Hit
from ragmorph.runner import check
from ragmorph.strategies import CATALOG
from support import engine_retrievers as er

CORPUS, CASES = er.small_world(40)


class ScanLimitedBM25:
    """An approximate index in miniature: like an IVF probe or an HNSW `ef`, it scores only a candidate pool whose
    size grows with k (the first 2k chunks in insertion order), so a larger k can find better chunks. One scored
    list, as its user would declare (reorder.invariant presumes it)."""

    ragmorph_traits: tuple[str, ...] = ("single_list",)

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The best k of the first 2k chunks (admitted by `filters`), by exact BM25 over that pool."""
        admitted = [c for c in self.corpus if filters is None or filters.allows(c)]
        pool = Corpus(admitted[: 2 * k])
        return [h for h in BM25Retriever(pool).retrieve(query, k=k) if h.score > 0] if len(pool) else []


class DeclaredApproximate(ScanLimitedBM25):
    """The same index, declaring what it is."""

    ragmorph_traits = ("approximate", "single_list")


STRATEGIES = ["cutoff", "reorder"]


def test_an_undeclared_approximate_index_fails_the_exact_search_relations() -> None:
    report = check(ScanLimitedBM25, CORPUS, CASES, strategies=STRATEGIES, max_examples=30, seed=1)
    failed = {r.relation for r in report.results if r.status == "fail"}
    assert failed & {"cutoff.prefix", "cutoff.recall", "reorder.invariant"}, [(r.relation, r.status) for r in report.results]


def test_a_declared_approximate_index_gets_rates_with_the_reason_instead() -> None:
    report = check(DeclaredApproximate, CORPUS, CASES, strategies=STRATEGIES, max_examples=30, seed=1)
    exact = {r.name for r in CATALOG if r.exact_search}
    rows = [r for r in report.results if r.relation in exact]
    assert rows and not [r for r in rows if r.status == "fail"], [(r.relation, r.status) for r in rows]
    judged = [r for r in rows if r.status == "pass"]
    assert judged and all(r.severity == "soft" and "approximate" in (r.reason or "") for r in judged)
    # A rate is reported, and it shows the index breaking what exact search guarantees at least once.
    assert any(r.rate is not None and r.rate[0] < r.rate[1] for r in judged), [(r.relation, r.rate) for r in judged]
    assert report.exit_code == 0


def test_relations_that_hold_for_any_index_stay_hard_for_approximate_ones() -> None:
    exact = {r.name for r in CATALOG if r.exact_search}
    assert "removal.removed_never_returned" not in exact and "tenancy.no_cross_tenant" not in exact
    assert {"cutoff.prefix", "reorder.invariant", "tenancy.filtered_equals_visible"} <= exact
