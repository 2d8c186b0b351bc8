"""Quality: the default suite catches every planted bug with a hard relation, passes correct retrievers, and
shrinks each violation to a handful of chunks.

Runs check() with DEFAULT settings on the built-in demo world, restricted to three cases that between them
exercise tenants, shared chunks, superseded versions and alternative evidence (the whole world takes ~20 s per
retriever; tests/quality/zoo_report.py runs all twelve cases and prints the figures).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from ragmorph.reporting import validate_report
from ragmorph.runner import check
from ragmorph.worlds import demo_world
from support.reference_bm25 import ReferenceBM25
from support.zoo import ZOO, ZooMember

pytestmark = pytest.mark.slow

CASES = ("q01", "q02", "q05")

@functools.lru_cache(maxsize=None)
def report_of(name: str, factory: Any) -> dict[str, Any]:
    """The ragmorph.report/1 dict of check() with default settings on the quality cases (cached per retriever)."""
    world = demo_world()
    cases = [case for case in world.cases if case.id in CASES]
    return check({name: factory}, world.corpus, cases).to_dict()


def hard_failures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Relation name -> first failing result, for hard relations."""
    found: dict[str, dict[str, Any]] = {}
    for result in report["results"]:
        if result["status"] == "fail" and result["severity"] == "hard":
            found.setdefault(result["relation"], result)
    return found


def test_the_zoo_holds_at_least_fifteen_distinct_bugs() -> None:
    assert len({m.name for m in ZOO}) == len(ZOO) >= 15
    assert all(m.factory.__doc__ and "Bug:" in m.factory.__doc__ for m in ZOO)


@pytest.mark.parametrize("member", [m for m in ZOO if m.hard_detectable], ids=lambda m: m.name)
def test_each_bug_fails_an_expected_hard_relation(member: ZooMember) -> None:
    report = report_of(member.name, member.factory)
    failed = hard_failures(report)
    assert set(member.caught_by) & set(failed), f"expected one of {member.caught_by} to fail, got {sorted(failed)}"
    assert report["summary"]["exit_code"] == 1


@pytest.mark.parametrize("member", [m for m in ZOO if m.invalid_response], ids=lambda m: m.name)
def test_contract_breaking_responses_fail_the_contract_relation_with_a_small_replayable_case(member: ZooMember) -> None:
    # More than k hits, a repeated id or a NaN score break DESIGN section 3's contract: a hard failure of
    # contract.valid_response (exit 1) whose detail names the broken rule, shrunk like any other violation;
    # never an `error` (those are for exceptions and timeouts, which prevent a verdict).
    report = report_of(member.name, member.factory)
    validate_report(report)
    failed = hard_failures(report)
    assert set(failed) == {"contract.valid_response"} and report["summary"]["exit_code"] == 1
    assert report["summary"]["error"] == 0
    violation = failed["contract.valid_response"]["violation"]
    assert "broke the retriever contract: expected" in violation["detail"] and "query=" in violation["detail"]
    assert len(violation["minimal_corpus"]) <= 2 and violation["one_minimal"] is True


@pytest.mark.parametrize("name", ["case_sensitive_query", "truncated_query"])
def test_query_normalisation_bugs_also_show_as_soft_breaks(name: str) -> None:
    report = report_of(name, next(m.factory for m in ZOO if m.name == name))
    rates = [r["rate"] for r in report["results"] if r["relation"] == "query.ranking_invariant" and r["rate"]]
    assert any(rate["held"] < rate["tested"] for rate in rates), rates


@pytest.mark.parametrize(
    "name",
    ["tenant_filter_ignored", "shared_chunks_dropped", "short_by_one", "ignores_deletes", "stale_under_current_only",
     "superseded_preferred", "drops_last_chunk", "rerank_when_k_large", "length_bias", "case_sensitive_query",
     "truncated_query", "long_by_one", "duplicate_ids", "nan_scores"],
)
def test_violations_shrink_to_a_handful_of_chunks(name: str) -> None:
    member = next(m for m in ZOO if m.name == name)
    failed = hard_failures(report_of(member.name, member.factory))
    violation = next(failed[r]["violation"] for r in member.caught_by if r in failed)
    assert len(violation["minimal_corpus"]) <= 4, [c["id"] for c in violation["minimal_corpus"]]
    # report_of runs without replay_dir, so no replay file is written (replay files: tests/runner/test_contract.py).
    assert violation["replay"] is None


def test_deleting_one_chunk_is_enough_to_expose_ignored_deletes() -> None:
    failed = hard_failures(report_of("ignores_deletes", ZOO[[m.name for m in ZOO].index("ignores_deletes")].factory))
    perturbation = failed["removal.removed_never_returned"]["violation"]["perturbation"]
    assert perturbation["type"] == "RemoveChunks" and len(perturbation["fields"]["ids"]) == 1


def _correct_retrievers() -> list[Any]:
    from ragmorph.adapters import BM25Retriever, DenseRetriever

    class NormalisingBM25(BM25Retriever):
        """The built-in BM25 declaring `normalising` too (its default tokenizer keeps that promise: see
        tests/strategies/test_query_words.py), so the hard query relation judges it."""

        ragmorph_traits = ("lexical", "normalising")

    return [
        pytest.param("reference_bm25", ReferenceBM25, id="reference_bm25"),
        pytest.param("bm25", NormalisingBM25, id="bm25"),
        pytest.param("dense_hashing", DenseRetriever, id="dense_hashing"),
    ]


@pytest.mark.parametrize(("name", "factory"), _correct_retrievers())
def test_correct_retrievers_pass_every_hard_relation(name: str, factory: Any) -> None:
    report = report_of(name, factory)
    assert not hard_failures(report), {r: f["reason"] for r, f in hard_failures(report).items()}
    assert report["summary"]["error"] == 0
    assert report["summary"]["pass"] > 0


def test_a_plain_single_list_gets_the_single_list_suggestion_that_makes_reorder_invariant_hard() -> None:
    # Without add or update, the evidence is the duplicate family's copies scoring like their originals.
    from support.zoo import DropsLastChunk

    class Undeclared(DropsLastChunk):
        ragmorph_traits = ()

    world = demo_world()
    report = check({"undeclared": Undeclared}, world.corpus, world.cases).to_dict()
    assert not hard_failures(report)
    (suggestion,) = [s for s in report["suggestions"] if s["trait"] == "single_list"]
    assert "reorder.invariant" in suggestion["enables"]
    assert "duplicate.copy_ties" in suggestion["evidence"] and suggestion["held"] == suggestion["tested"] >= 10
