"""Responses that break the retriever contract are hard failures of `contract.valid_response`; exceptions and
timeouts stay errors. Every report is checked against the "ragmorph.report/1" schema."""

from __future__ import annotations

import json
import re

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.errors import ContractRule, InvalidResponse
from ragmorph.reporting import validate_report
from ragmorph.runner import check, replay
from ragmorph.strategies import CATALOG, DEFAULT_SUITE
from support import engine_retrievers as er

CORPUS, CASES = er.small_world()


def _contract_rows(report):
    return [r for r in report.results if r.relation == "contract.valid_response"]


def test_the_contract_relation_is_a_hard_catalog_row_in_the_default_suite() -> None:
    row = next(r.describe() for r in CATALOG if r.name == "contract.valid_response")
    assert row["family"] == "contract" and row["severity"] == "hard" and "DESIGN section 3" in row["assumptions"][0]
    assert "contract" in DEFAULT_SUITE


def test_one_hit_too_many_fails_the_contract_with_a_minimal_replayable_world(tmp_path) -> None:
    spec = "support.engine_retrievers:OneTooMany"
    report = check({"long": spec}, CORPUS, CASES[:1], max_examples=10, replay_dir=tmp_path)
    validate_report(report.to_dict())
    assert report.exit_code == 1 and report.summary["error"] == 0
    failed = [r for r in _contract_rows(report) if r.status == "fail"]
    # Breaches on the unedited corpus are the contract family's to report: one failure, not one per family.
    assert [r.strategy for r in failed] == ["contract"] and failed[0].severity == "hard"
    violation = failed[0].violation
    assert "expected at most k=1 hits, got 2" in violation["detail"]
    assert CASES[0].query in violation["detail"] and "response:" in violation["detail"]
    assert violation["base"]["invalid"].startswith("expected at most k=1 hits")
    assert violation["base"]["params"]["k"] == 1
    # The gold chunk is kept; one more matching chunk is all a second hit needs.
    assert len(violation["minimal_corpus"]) == 2 and violation["one_minimal"] is True
    assert violation["calls_to_first_failure"] >= 1
    # Other relations are judged on the valid responses only; a rejected one is never an error or a pass.
    assert not [r for r in report.results if r.status == "fail" and r.relation != "contract.valid_response"]
    stored = json.loads(open(violation["replay"], encoding="utf-8").read())
    assert stored["relation"] == "contract.valid_response"
    assert replay(violation["replay"]).reproduced
    fixed = replay(violation["replay"], retriever=BM25Retriever)
    assert not fixed.reproduced and fixed.exit_code == 0


def test_a_breach_in_an_edited_world_is_reported_by_the_family_that_edited_it(tmp_path) -> None:
    report = check({"nan": er.NaNAfterRemove}, CORPUS, CASES[:1], strategies=["removal", "contract"], max_examples=15, replay_dir=tmp_path)
    validate_report(report.to_dict())
    assert report.exit_code == 1
    rows = {(r.strategy, r.relation): r for r in report.results}
    assert rows[("contract", "contract.valid_response")].status == "pass"
    found = rows[("removal", "contract.valid_response")]
    assert found.status == "fail" and "expected a finite score" in found.reason
    violation = found.violation
    assert violation["perturbation"]["type"] == "RemoveChunks" and violation["follow_up"]["invalid"]
    assert violation["base"].get("invalid") is None
    # Minimised like any violation: the removed chunk and the gold chunk at most.
    assert len(violation["minimal_corpus"]) <= 2 and violation["one_minimal"] is True
    assert re.search(r"contract\.valid_response-removal-[0-9a-f]{12}\.json$", violation["replay"])
    assert replay(violation["replay"], retriever=er.NaNAfterRemove).reproduced


def test_without_the_contract_family_every_family_reports_breaches() -> None:
    report = check({"long": er.OneTooMany}, CORPUS, CASES[:1], strategies=["cutoff"], max_examples=5)
    assert [(r.strategy, r.status) for r in _contract_rows(report)] == [("cutoff", "fail")]
    assert report.exit_code == 1


def test_exceptions_and_timeouts_stay_errors_never_a_pass_or_a_failure() -> None:
    exploding = check({"exploding": er.ExplodingBM25}, CORPUS, CASES[:1], strategies=["distractors"], max_examples=5)
    slow = check({"slow": er.SlowBM25}, CORPUS, CASES[:1], strategies=["contract"], max_examples=2, timeout=0.05)
    for report in (exploding, slow):
        validate_report(report.to_dict())
        assert {r.status for r in report.results} == {"error"} and report.exit_code == 3
    assert "timeout" in slow.results[0].reason.lower() or "within" in slow.results[0].reason


def test_each_breach_carries_its_rule_as_a_value_not_a_message() -> None:
    from ragmorph.adapters import validate_hits

    def rule(hits, k=1):
        with pytest.raises(InvalidResponse) as caught:
            validate_hits(hits, k=k, query="q", corpus=CORPUS)
        return caught.value.rule

    known = CORPUS.ids[0]
    assert rule([known, CORPUS.ids[1]]) is ContractRule.TOO_MANY_HITS
    assert rule([known, known], k=5) is ContractRule.DUPLICATE_ID
    assert rule(["no-such-id"]) is ContractRule.UNKNOWN_ID
    assert rule([(known, float("nan"))]) is ContractRule.NON_FINITE_SCORE
    assert rule([(known, 1.0), (CORPUS.ids[1], 2.0)], k=5) is ContractRule.RISING_SCORE
    assert rule([42]) is ContractRule.MALFORMED


def test_a_retriever_without_filters_gets_no_filtered_calls_it_cannot_take() -> None:
    from ragmorph.adapters import FunctionRetriever

    plain = FunctionRetriever(lambda query, k: [c.id for c in CORPUS if "password" in c.text][:k])
    no_tenant = check({"plain": plain}, CORPUS, CASES[1:], strategies=["repeat", "contract", "cutoff"], max_examples=10)
    assert "error" not in {r.status for r in no_tenant.results} and no_tenant.exit_code == 0
    # A case asked as a tenant needs a filter: an error that says how to fix it, never a crash or a pass.
    tenant = check({"plain": plain}, CORPUS, CASES[:1], strategies=["cutoff"], max_examples=5)
    assert {r.status for r in tenant.results} == {"error"} and "TenantFilter" in tenant.results[0].reason
