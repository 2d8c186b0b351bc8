"""Hand-written "ragmorph.report/1" dicts for reporting tests (G1): every status, soft rates, hostile text."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["sample_report", "sample_violation"]

_HOSTILE = 'Acme <script>alert("x")</script> & "quotes" — ünïcödé \u2028 tab\tend'


def _hit(chunk_id: str, score: float | None, text: str | None) -> dict[str, Any]:
    return {"id": chunk_id, "score": score, "text": text}


def sample_violation() -> dict[str, Any]:
    """A shrunk removal violation of a retriever that keeps returning a removed chunk."""
    return {
        "relation": "removal.removed_never_returned",
        "case": "q03",
        "query": "How many days of parental leave does Acme grant?",
        "perturbation": {
            "type": "RemoveChunks",
            "repr": "RemoveChunks(k=3, ids=('acme-handbook-1#1',), group=0)",
            "fields": {"k": 3, "ids": ["acme-handbook-1#1"], "group": 0},
        },
        "detail": "removed chunk 'acme-handbook-1#1' was returned at rank 1 of the follow-up ranking",
        "culprits": ["acme-handbook-1#1"],
        "evidence": [["acme-handbook-1#1", "acme-faq-1#1"]],
        "base": {
            "params": {"k": 3, "filters": {"tenant": "acme", "current_only": False, "metadata": {}}},
            "ranking": [
                _hit("acme-handbook-1#1", 12.5, "Acme employee handbook, leave and time off. Acme grants 84 days of paid parental leave."),
                _hit("acme-faq-1#1", 9.25, "Acme questions and answers. Q: How many days of parental leave does Acme grant? A: 84 days."),
                _hit("shared-policy-1#2", 1.125, _HOSTILE),
            ],
            "metrics": {"P@3": 0.6666666666666666, "R@3": 1.0, "GroupR@3": 1.0, "Unauthorized@3": 0.0},
        },
        "follow_up": {
            "params": {"k": 3, "filters": {"tenant": "acme", "current_only": False, "metadata": {}}},
            "ranking": [
                _hit("acme-handbook-1#1", 12.5, "Acme employee handbook, leave and time off. Acme grants 84 days of paid parental leave."),
                _hit("acme-faq-1#1", 9.5, None),
                _hit("distractor-1", None, "An injected look-alike about parental leave at Globex."),
            ],
            "metrics": {"P@3": 0.3333333333333333, "R@3": 0.5, "GroupR@3": 1.0, "Unauthorized@3": None},
        },
        "minimal_corpus": [
            {"id": "acme-faq-1#1", "text": "Acme questions and answers. A: 84 days.", "source": "acme-faq-1",
             "tenant": "acme", "version": 1, "effective_from": "2025-01-01", "superseded_by": None, "metadata": {}},
            {"id": "shared-policy-1#2", "text": _HOSTILE, "source": None, "tenant": None, "version": None,
             "effective_from": None, "superseded_by": None, "metadata": {}},
        ],
        "calls_to_first_failure": 4,
        "calls_shrinking": 17,
        "replay": "replays/cached-bm25-q03-removal.json",
    }


def _result(retriever: str, case: str, strategy: str, relation: str, status: str, *, severity: str = "hard",
            examples: int = 25, calls: int = 50, reason: str | None = None, rate: dict[str, int] | None = None,
            violation: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "retriever": retriever, "case": case, "strategy": strategy, "relation": relation, "severity": severity,
        "status": status, "examples": examples, "retriever_calls": calls, "reason": reason, "rate": rate,
        "violation": violation,
    }


def _metrics(scale: float) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for k in (1, 3, 5, 10):
        table[f"P@{k}"] = {"macro": round(scale * 0.9 / k ** 0.5, 4), "micro": round(scale * 0.85 / k ** 0.5, 4), "queries": 4}
        table[f"R@{k}"] = {"macro": round(min(1.0, scale * (0.4 + 0.15 * k)), 4), "micro": None, "queries": 4}
        table[f"GroupR@{k}"] = {"macro": round(min(1.0, scale * (0.5 + 0.12 * k)), 4), "micro": None, "queries": 4}
    return table


def _soft_rate(case: str) -> dict[str, Any]:
    if case != "q03":
        return {"held": 25, "tested": 25}
    example = {"perturbation": "RemoveChunks(k=3, ids=('acme-faq-1#1',), group=0)",
               "detail": "recall rose after removing gold: R 0.5 -> 1, GroupR 1 -> 1"}
    return {"held": 23, "tested": 25, "example": example}


def triage_report() -> dict[str, Any]:
    """sample_report plus violation groups of every concern: a side effect, two tenant leaks, a black-box leak."""
    report = sample_report()

    def violation(relation: str, case: str, chunks: int, *, minimal: bool = True) -> dict[str, Any]:
        found = sample_violation()
        found.update(relation=relation, case=case, culprits=["acme-handbook-1#1"], one_minimal=minimal,
                     minimal_reason=None if minimal else "black-box retriever: no factory")
        found["minimal_corpus"] = [dict(found["minimal_corpus"][0], id=f"c{i}") for i in range(chunks)]
        return found

    extra = [
        ("cached-bm25", "q07", "repeat", "repeat.identical", violation("repeat.identical", "q07", 1)),
        ("cached-bm25", "q03", "tenancy", "tenancy.no_cross_tenant", violation("tenancy.no_cross_tenant", "q03", 3)),
        ("cached-bm25", "q07", "tenancy", "tenancy.no_cross_tenant", violation("tenancy.no_cross_tenant", "q07", 1)),
        ("bm25", "q03", "tenancy", "tenancy.no_cross_tenant",
         violation("tenancy.no_cross_tenant", "q03", 40, minimal=False)),
    ]
    for retriever, case, strategy, relation, found in extra:
        report["results"].append(_result(retriever, case, strategy, relation, "fail", violation=found))
    report["manifest"]["strategies"].append("repeat")
    report["summary"].update(fail=5, hard_failures=5)
    return report


def sample_report() -> dict[str, Any]:
    """Two retrievers (one correct, one buggy with an error and a black-box skip) over two cases."""
    results = []
    for retriever in ("bm25", "cached-bm25"):
        for case in ("q03", "q07"):
            results.append(_result(retriever, case, "reorder", "reorder.invariant", "pass"))
            removal_status = "fail" if (retriever, case) == ("cached-bm25", "q03") else "pass"
            results.append(_result(retriever, case, "removal", "removal.removed_never_returned", removal_status,
                                   examples=4 if removal_status == "fail" else 25,
                                   violation=sample_violation() if removal_status == "fail" else None))
            results.append(_result(retriever, case, "removal", "removal.recall_non_increasing", "pass",
                                   severity="soft", rate=_soft_rate(case)))
            if retriever == "cached-bm25" and case == "q07":
                results.append(_result(retriever, case, "tenancy", "tenancy.unauthorized_zero", "error", examples=0,
                                       calls=1, reason="RetrieverFailed: KeyError('acme') <from the retriever>"))
            else:
                results.append(_result(retriever, case, "tenancy", "tenancy.unauthorized_zero", "pass"))
            results.append(_result(retriever, case, "supersede", "supersede.stale_zero", "not_applicable",
                                   examples=0, calls=0, reason="case has no evidence with a superseded version"))
    return copy.deepcopy({
        "schema": "ragmorph.report/1",
        "manifest": {
            "ragmorph_version": "0.1.0",
            "created": "2026-11-29T12:00:00+00:00",
            "corpus": {"fingerprint": "f" * 64, "chunks": 56},
            "cases": {"fingerprint": "c" * 64, "count": 2},
            "retrievers": [
                {"name": "bm25", "description": "BM25Retriever(k1=1.5, b=0.75)", "kind": "factory"},
                {"name": "cached-bm25", "description": "planted bug: a cache keyed by query only", "kind": "factory"},
            ],
            "strategies": ["reorder", "removal", "tenancy", "supersede"],
            "seed": 0,
            "settings": {"max_examples": 25, "derandomize": False, "ks": [1, 3, 5, 10], "timeout": None},
        },
        "results": results,
        "metrics": {"bm25": _metrics(1.0), "cached-bm25": _metrics(0.8)},
        "summary": {"pass": 14, "fail": 1, "error": 1, "not_applicable": 4, "hard_failures": 1, "soft_breaks": 2,
                    "exit_code": 1, "retriever_calls": 551, "calls_per_case": 137.8,
                    "calls_by_retriever": {
                        "bm25": {"retriever_calls": 300, "cases": 2, "calls_per_case": 150.0},
                        "cached-bm25": {"retriever_calls": 251, "cases": 2, "calls_per_case": 125.5},
                    }},
    })
