"""Trait suggestions: the run's own evidence suggests undeclared traits, never applies them."""

from __future__ import annotations

import attrs

from quality.zoo2.plain import PlainBM25
from ragmorph.adapters import DenseRetriever
from ragmorph.reporting import render_summary, validate_report
from ragmorph.runner import check
from ragmorph.strategies import CATALOG
from ragmorph.strategies.traits import MIN_PROBES, suggest_traits
from ragmorph.worlds import demo_world


@attrs.frozen
class Row:
    """The fields of a result row that suggestions read."""

    retriever: str
    relation: str
    rate: tuple[int, int] | None


def test_a_trait_is_suggested_only_when_its_evidence_always_held_often_enough() -> None:
    rows = [
        Row("bm25", "filters.hits_share_query_words_rate", (6, 6)),
        Row("bm25", "odd_query.unrelated_query_unmatched_rate", (6, 6)),
        Row("shares_only", "filters.hits_share_query_words_rate", (40, 40)),
        Row("bm25", "query.ranking_invariant", (9, 10)),
        Row("dense", "filters.hits_share_query_words_rate", (3, 12)),
        Row("few", "filters.hits_share_query_words_rate", (MIN_PROBES - 1, MIN_PROBES - 1)),
    ]
    found = suggest_traits(rows, {}, CATALOG)
    assert [(s.retriever, s.trait, s.held, s.tested) for s in found] == [("bm25", "lexical", 12, 12)]
    message = found[0].message
    assert message.startswith("every returned chunk shared a word with the query, and no chunk scored above zero for queries")
    assert "in 12/12 probes: declare `lexical`" in message
    assert "depth.no_newcomer" in message and "lifecycle.growth_keeps_matches" in message
    # A declared trait is never suggested again.
    assert not suggest_traits(rows, {"bm25": ["lexical"]}, CATALOG)


def test_the_report_suggests_lexical_for_a_plain_bm25_and_not_for_a_dense_retriever() -> None:
    world = demo_world()
    report = check(
        {"plain": PlainBM25, "dense": DenseRetriever}, world.corpus, world.cases[:2], strategies=["filters", "odd_query"]
    )
    data = report.to_dict()
    validate_report(data)
    traits = {(s["retriever"], s["trait"]) for s in data["suggestions"]}
    assert ("plain", "lexical") in traits and ("dense", "lexical") not in traits
    # Suggested, not applied: the lexical-only relations were not judged in this run.
    assert "trait suggestions" in render_summary(data) and "declare `lexical`" in render_summary(data)


def test_single_list_is_suggested_from_either_copy_relation_and_enables_its_relations() -> None:
    # A retriever without add() (no AddExisting probes) still shows the shape through its updates.
    rows = [Row("store", "lifecycle.updated_copy_ties", (MIN_PROBES, MIN_PROBES))]
    (found,) = suggest_traits(rows, {}, CATALOG)
    assert (found.trait, found.held, found.tested) == ("single_list", MIN_PROBES, MIN_PROBES)
    assert set(found.enables) == {
        "lifecycle.updated_copy_ties", "lifecycle.added_existing_one_version", "reorder.invariant", "duplicate.copy_ties"
    }
    # One tie broken (rank fusion) is no evidence of one scored list.
    assert not suggest_traits([Row("rrf", "lifecycle.updated_copy_ties", (MIN_PROBES, MIN_PROBES + 1))], {}, CATALOG)


def test_without_single_list_the_copy_relations_are_rates_with_the_reason_and_the_report_suggests_it() -> None:
    world = demo_world()
    report = check({"plain": PlainBM25}, world.corpus, world.cases, strategies=["lifecycle"])
    rows = [r for r in report.results if r.relation == "lifecycle.updated_copy_ties" and r.rate is not None]
    assert rows and all(r.severity == "soft" and "single_list" in r.reason for r in rows), rows
    data = report.to_dict()
    assert ("plain", "single_list") in {(s["retriever"], s["trait"]) for s in data["suggestions"]}
    declared = check(
        {"plain": PlainBM25}, world.corpus, world.cases[:1], strategies=["lifecycle"], traits={"plain": ["single_list"]}
    )
    assert {r.severity for r in declared.results if r.relation == "lifecycle.updated_copy_ties"} == {"hard"}
