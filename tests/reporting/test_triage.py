"""Triage: groups by retriever x relation, the worst first, and CheckReport.assert_ok raising with that summary."""

from __future__ import annotations

import pytest

from ragmorph import ViolationsFound, check
from ragmorph.adapters import BM25Retriever
from ragmorph.demo import PostFilteredPipeline
from ragmorph.triage import Concern, concern_of, soft_breaks, summary_text, triage
from ragmorph.worlds import generate
from support.report_samples import sample_report, triage_report


def test_concerns_of_the_catalog_relations() -> None:
    assert concern_of("tenancy.unauthorized_zero") is Concern.TENANT_LEAK
    assert concern_of("distractors.lookalike_unauthorized_zero") is Concern.TENANT_LEAK
    assert concern_of("contract.valid_response") is Concern.CONTRACT
    assert concern_of("repeat.identical") is Concern.HARD


def test_the_concern_is_the_field_each_relation_declares() -> None:
    from ragmorph.strategies import CATALOG

    for relation in CATALOG:
        assert concern_of(relation.name) is relation.concern
        assert relation.describe()["concern"] == relation.concern.value
    assert {r.name for r in CATALOG if r.concern is Concern.TENANT_LEAK} == {
        "tenancy.unauthorized_zero", "tenancy.no_cross_tenant", "distractors.lookalike_unauthorized_zero",
    }
    # A filtered ranking that drops or moves visible chunks returns nothing of another tenant: never a "leak".
    assert concern_of("tenancy.filtered_equals_visible") is Concern.HARD
    # Under-return is a breach of the retriever contract (DESIGN section 3), whichever family's plan shows it.
    under_return = {f"{family}.full_k" for family in ("filters", "tenancy", "approximate", "scale")}
    assert {r.name for r in CATALOG if r.concern is Concern.CONTRACT} == {"contract.valid_response"} | under_return
    assert sorted(Concern, key=lambda c: c.rank) == [Concern.TENANT_LEAK, Concern.CONTRACT, Concern.HARD]
    assert concern_of("mine.not_in_the_catalog") is Concern.HARD


def test_groups_count_cases_and_pick_the_smallest_minimal_case() -> None:
    groups = triage(triage_report())
    leak = groups[0]
    assert (leak.retriever, leak.relation, leak.cases) == ("cached-bm25", "tenancy.no_cross_tenant", ("q03", "q07"))
    assert leak.representative["case"] == "q07", "1 chunk beats 3 chunks"
    assert [g.minimised for g in groups] == [True, True, True, False]
    assert triage(sample_report())[0].concern is Concern.HARD
    assert [s.relation for s in soft_breaks(triage_report())] == ["removal.recall_non_increasing"] * 2


def test_summary_text_names_every_group_and_its_replay() -> None:
    lines = summary_text(triage_report()).splitlines()
    assert lines[0] == "ragmorph: 5 hard failures in 4 groups, 1 error, 2 soft breaks (exit code 1)"
    assert lines[1].startswith("  1. tenant leak · cached-bm25 · tenancy.no_cross_tenant · 2 cases (q03, q07)")
    assert "     replay: ragmorph replay replays/cached-bm25-q03-removal.json" in lines


def test_assert_ok_raises_with_the_triaged_summary_and_passes_a_correct_retriever() -> None:
    world = generate(3, chunks=24, cases=3)
    check(BM25Retriever, world.corpus, world.cases, strategies=["tenancy"], max_examples=5).assert_ok()
    report = check({"postfilter": PostFilteredPipeline}, world.corpus, world.cases, strategies=["tenancy"],
                   max_examples=10)
    with pytest.raises(ViolationsFound) as caught:
        report.assert_ok()
    message = str(caught.value)
    # It drops visible chunks and returns nothing of another tenant: titled an under-return, never a tenant leak.
    assert message.startswith("ragmorph: ") and "contract breach · postfilter · tenancy." in message
    assert "tenant leak" not in message
    assert isinstance(caught.value, AssertionError), "pytest shows it as a plain assertion failure"
