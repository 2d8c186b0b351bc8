"""Hypothesis strategies for "ragmorph.report/1" dicts (G1): random statuses, rates and hostile text."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from support.report_samples import sample_report, sample_violation

__all__ = ["reports", "texts"]

# Text that stresses escaping: markup, quotes, control characters, XML-invalid code points, astral characters.
texts = st.text(
    alphabet=st.one_of(st.sampled_from('<>&"\'\x00\x1b\x07\u2028\ufffe\U0001f600 \t\n'), st.characters()),
    max_size=30,
)
names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def reports(draw: st.DrawFn) -> dict[str, Any]:
    """A valid report whose retrievers, relations, statuses, rates, reasons and violation text vary."""
    report = sample_report()
    retrievers = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    relations = draw(st.lists(st.tuples(st.sampled_from(["reorder", "removal", "tenancy"]), names), min_size=1,
                              max_size=4, unique_by=lambda r: r[1]))
    cases = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    results = []
    for retriever in retrievers:
        for strategy, relation in relations:
            for case in cases:
                status = draw(st.sampled_from(["pass", "fail", "error", "not_applicable"]))
                severity = draw(st.sampled_from(["hard", "soft"])) if status != "fail" else "hard"
                violation = None
                if status == "fail":
                    violation = sample_violation()
                    violation["query"] = draw(texts)
                    violation["detail"] = draw(texts)
                    violation["base"]["ranking"][0]["text"] = draw(texts)
                    violation["follow_up"]["ranking"][2]["id"] = draw(names)
                tested = draw(st.integers(0, 30))
                results.append({
                    "retriever": retriever, "case": case, "strategy": strategy, "relation": relation,
                    "severity": severity, "status": status, "examples": tested, "retriever_calls": 2 * tested,
                    "reason": draw(texts) if status in ("error", "not_applicable") else None,
                    "rate": {"held": draw(st.integers(0, tested)), "tested": tested}
                    if severity == "soft" and status == "pass" else None,
                    "violation": violation,
                })
    report["results"] = results
    report["manifest"]["retrievers"] = [{"name": r, "description": draw(texts), "kind": "factory"} for r in retrievers]
    report["manifest"]["strategies"] = sorted({s for s, _ in relations})
    report["metrics"] = {r: report["metrics"]["bm25"] for r in retrievers}
    statuses = [r["status"] for r in results]
    report["summary"] = {
        "pass": statuses.count("pass"), "fail": statuses.count("fail"), "error": statuses.count("error"),
        "not_applicable": statuses.count("not_applicable"), "hard_failures": statuses.count("fail"),
        "soft_breaks": sum(1 for r in results if r["rate"] and r["rate"]["held"] < r["rate"]["tested"]),
        "exit_code": 1 if "fail" in statuses else (3 if "error" in statuses else 0),
    }
    units = {(r["retriever"], r["case"], r["strategy"]): r["retriever_calls"] for r in results}
    by_retriever: dict[str, dict[str, Any]] = {}
    for (retriever, case, _), calls in units.items():
        entry = by_retriever.setdefault(retriever, {"retriever_calls": 0, "cases": set()})
        entry["retriever_calls"] += calls
        entry["cases"].add(case)
    for entry in by_retriever.values():
        entry["cases"] = len(entry["cases"])
        entry["calls_per_case"] = round(entry["retriever_calls"] / entry["cases"], 1)
    total, pairs = sum(e["retriever_calls"] for e in by_retriever.values()), sum(e["cases"] for e in by_retriever.values())
    report["summary"].update(
        retriever_calls=total, calls_per_case=round(total / pairs, 1) if pairs else 0.0, calls_by_retriever=by_retriever
    )
    return report
