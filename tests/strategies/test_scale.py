"""The scale family: nested, deterministic growth around the query, under-return judged and bisected readably."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from ragmorph.adapters import BM25Retriever, DenseRetriever
from ragmorph.model import Case, Corpus, Filters, Hit, World, Params
from ragmorph.relations import Instance
from ragmorph.runner import check, replay
from ragmorph.strategies.scale import FAMILY, GROUP_KEY, GROWN_SIZE, GrowCorpus, grown_chunks
from support.integration_checks import tenant_corpus

CASE = Case("q", "parental leave policy", tenant="acme")


class PoolThenFilter:
    """A user-style dense adapter that filters a candidate pool of the `pool` nearest chunks, as an HNSW scan with
    `ef_search = pool` does: under a selective filter the pool holds none of the caller's chunks."""

    def __init__(self, corpus: Corpus, pool: int = 40) -> None:
        self.corpus, self.pool, self.dense = corpus, pool, DenseRetriever(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The nearest max(k, pool) chunks, those the filters admit, cut to k."""
        hits = self.dense.retrieve(query, k=max(k, self.pool))
        return [h for h in hits if filters is None or filters.allows(self.corpus[h.id])][:k]


class DeclaredPoolThenFilter(PoolThenFilter):
    """The same adapter declaring the trait 'approximate': under-return stays a hard failure."""

    ragmorph_traits = ("approximate",)


def test_growth_is_deterministic_nested_and_selective() -> None:
    corpus = tenant_corpus()
    big = grown_chunks(corpus, CASE.query, "acme", 2000, 0.02)
    small = grown_chunks(corpus, CASE.query, "acme", 700, 0.02)
    assert big[:700] == small and grown_chunks(corpus, CASE.query, "acme", 2000, 0.02) == big
    assert not {c.id for c in big} & set(corpus.ids)
    mine = [c for c in big if c.tenant == "acme"]
    assert len(mine) == 40 and all(c.tenant is not None for c in big)
    # The other tenants' chunks hold every query word; the asking tenant's hold one among filler words.
    others = [c for c in big if c.tenant != "acme"]
    assert all(set(CASE.query.split()) <= set(c.text.split()) for c in others)
    assert all(len(set(CASE.query.split()) & set(c.text.split())) == 1 for c in mine)
    assert grown_chunks(corpus, CASE.query, None, 10, 0.02) == ()


def test_the_plan_asks_the_whole_grown_corpus_unfiltered_then_the_tenant_filter_at_k() -> None:
    world = World(tenant_corpus(), CASE, Params(10))
    base, follow = GrowCorpus(k=10, size=300).plan(world).calls
    assert base.instance is follow.instance is Instance.FRESH
    assert len(base.world.corpus) == len(follow.world.corpus) == 300 == base.world.params.k
    assert base.world.params.filters == Filters() and follow.world.params.filters == Filters(tenant="acme")


@pytest.mark.parametrize("retriever", [PoolThenFilter, DeclaredPoolThenFilter], ids=["plain", "declared_approximate"])
def test_a_candidate_pool_that_runs_dry_fails_and_is_bisected_readably(retriever: type, tmp_path: Path) -> None:
    report = check({"pool": retriever}, tenant_corpus(), [CASE], strategies=["scale"], ks=(10,), max_examples=2,
                   replay_dir=tmp_path)
    (row,) = [r for r in report.results if r.relation == "scale.full_k"]
    assert row.status == "fail" and row.severity == "hard", row.reason
    violation = row.violation.to_dict()
    smallest = violation["perturbation"]["fields"]["size"]
    assert len(tenant_corpus()) < smallest < GROWN_SIZE
    assert f"fails from {smallest:,} chunks" in row.reason and "composition: " in row.reason
    # Never thousands of ids: the case's own chunks, the visible top k beside the short ranking.
    assert len(violation["minimal_corpus"]) == len(tenant_corpus())
    assert len(violation["base"]["ranking"]) == 10 and violation["follow_up"]["ranking"] == []
    assert violation["base"]["params"] == violation["follow_up"]["params"]
    assert len(row.reason) < 1200
    outcome = replay(violation["replay"], retriever=retriever)
    assert outcome.reproduced and len(outcome.base_ids) == 10 and outcome.follow_ids == ()


@pytest.mark.parametrize("retriever", [DenseRetriever, BM25Retriever])
def test_correct_retrievers_return_full_pages_in_the_grown_world(retriever: type) -> None:
    report = check(retriever, tenant_corpus(), [CASE], strategies=["scale"], ks=(1, 10), max_examples=2)
    assert {r.relation: r.status for r in report.results}["scale.full_k"] == "pass"


def test_growth_by_metadata_shares_every_chunk_and_selects_by_a_value() -> None:
    corpus = tenant_corpus()
    grown = grown_chunks(corpus, CASE.query, None, 2000, 0.02, by="metadata")
    assert grown[:700] == grown_chunks(corpus, CASE.query, None, 700, 0.02, by="metadata")
    assert all(c.tenant is None for c in grown)
    asked = [c for c in grown if c.metadata[GROUP_KEY] == "asked"]
    assert len(asked) == 40 and all(len(set(CASE.query.split()) & set(c.text.split())) == 1 for c in asked)
    world = World(corpus, CASE, Params(10))
    follow = GrowCorpus(k=10, size=300, by="metadata").plan(world).calls[1]
    # As the application asks: the case's tenant and the selective value.
    assert follow.world.params.filters == Filters(tenant="acme", metadata={GROUP_KEY: "asked"})


def test_a_case_without_a_tenant_is_judged_under_a_selective_metadata_filter() -> None:
    case = Case("q", "parental leave")
    failed = check({"pool": PoolThenFilter}, tenant_corpus(), [case], strategies=["scale"], ks=(10,), max_examples=2)
    (row,) = [r for r in failed.results if r.relation == "scale.full_k"]
    assert row.status == "fail" and f"{GROUP_KEY}='asked'" in row.reason, row.reason
    assert row.violation.to_dict()["perturbation"]["fields"]["by"] == "metadata"
    held = check(DenseRetriever, tenant_corpus(), [case], strategies=["scale"], ks=(10,), max_examples=2)
    assert {r.relation: r.status for r in held.results}["scale.full_k"] == "pass"


class TakesNoFilters:
    """A retriever whose `retrieve` has no `filters` parameter."""

    built: ClassVar[list[int]] = []

    def __init__(self, corpus: Corpus) -> None:
        self.built.append(len(corpus))
        self.dense = DenseRetriever(corpus)

    def retrieve(self, query: str, *, k: int) -> list[Hit]:
        """The dense ranking."""
        return self.dense.retrieve(query, k=k)


def test_without_a_tenant_or_filters_nothing_is_grown_and_nothing_judged() -> None:
    TakesNoFilters.built.clear()
    report = check({"plain": TakesNoFilters}, tenant_corpus(), [Case("q", "parental leave")], strategies=["scale"], max_examples=2)
    (row,) = report.results
    assert row.status == "not_applicable" and "no selective filter" in row.reason
    assert TakesNoFilters.built == [len(tenant_corpus())]  # the case's own index; no fresh build per example


def test_both_selective_filters_are_tried_before_any_draw() -> None:
    world = World(tenant_corpus(), CASE, Params(10))
    tried = FAMILY.explicit(world, ks=(3, 10), delta=True, filters=True)
    assert [(p.by, p.k) for p in tried] == [("tenant", 3), ("metadata", 3)]
    assert [p.by for p in FAMILY.explicit(world, ks=(10,), delta=True, filters=False)] == ["tenant"]


def test_under_return_is_hard_in_the_default_families_for_every_retriever() -> None:
    # A post-filter of the 3 nearest chunks: a small world already shows it, approximate trait or not.
    def postfilter(corpus: Corpus) -> DeclaredPoolThenFilter:
        return DeclaredPoolThenFilter(corpus, pool=3)

    postfilter.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
    report = check({"post": postfilter}, tenant_corpus(), [CASE], strategies=["filters", "tenancy"], max_examples=8)
    statuses = {r.relation: (r.status, r.severity) for r in report.results}
    assert statuses["tenancy.full_k"] == ("fail", "hard") and statuses["filters.full_k"] == ("fail", "hard")
    # What presumes exact search is a rate for a declared approximate index; under-return is not.
    assert statuses["tenancy.filtered_equals_visible"][1] == "soft"
