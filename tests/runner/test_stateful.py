"""Violations that need the calls made before them: minimised by making those calls again, replayable with them,
and, where no fresh instance can reproduce them, reported with the reason the corpus stayed whole."""

from __future__ import annotations

import json

from ragmorph.adapters import BM25Retriever
from ragmorph.reporting import validate_report
from ragmorph.runner import check, replay
from support import engine_retrievers as er

CORPUS, CASES = er.small_world()


def test_a_history_dependent_violation_is_minimised_by_making_the_earlier_calls_again(tmp_path) -> None:
    report = check({"worn": er.WearsOut}, CORPUS, CASES[:1], strategies=["repeat"], max_examples=10, replay_dir=tmp_path)
    validate_report(report.to_dict())
    stateful = [r.violation for r in report.violations if r.violation["minimal_reason"]]
    assert stateful, [r.violation["detail"] for r in report.violations]
    violation = stateful[0]
    assert "call(s) made before it" in violation["minimal_reason"] and violation["minimal_reason"] in violation["detail"]
    assert violation["one_minimal"] is True and len(violation["minimal_corpus"]) <= 4
    stored = json.loads(open(violation["replay"], encoding="utf-8").read())
    assert stored["history"]["steps"] and len(stored["history"]["sources"]) == 2
    assert replay(violation["replay"], retriever=er.WearsOut).reproduced
    assert not replay(violation["replay"], retriever=BM25Retriever).reproduced


def test_state_no_fresh_instance_rebuilds_leaves_the_corpus_whole_and_says_why() -> None:
    er.OnceFlipped.seen.clear()
    report = check({"flip": er.OnceFlipped}, CORPUS, CASES[:1], strategies=["repeat"], max_examples=10)
    row = next(r for r in report.violations if r.relation == "repeat.identical")
    violation = row.violation
    assert violation["one_minimal"] is False and len(violation["minimal_corpus"]) == len(CORPUS)
    assert "does not reproduce on a fresh index" in violation["minimal_reason"]
    assert "cannot rebuild" in violation["detail"]


def test_stateless_violations_carry_no_minimal_reason() -> None:
    report = check({"stale": er.StaleDeleteBM25}, CORPUS, CASES[:1], strategies=["removal"], max_examples=10)
    violation = next(r.violation for r in report.violations)
    assert violation["minimal_reason"] is None and violation["one_minimal"] is True
