"""Slices: every aggregate of a run (metrics, status counts, soft rates) per case tag and per tenant, with counts.

A strong average hides a weak slice (rare product codes, one tenant, multi-hop questions); the report carries
one row per retriever x slice so every format can show them, worst first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import Case
from ._engine import Result

__all__ = ["NO_TENANT", "slice_rows"]

NO_TENANT = "(no tenant)"
_STATUSES = ("pass", "fail", "error", "not_applicable")


def _slices_of(case: Case) -> list[tuple[str, str]]:
    found = [("tag", tag) for tag in dict.fromkeys(case.tags)]
    found.append(("tenant", case.tenant if case.tenant is not None else NO_TENANT))
    return found


def slice_rows(
    results: Sequence[Result], cases: Sequence[Case], per_query: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """retriever -> slice rows `{"kind": "tag"|"tenant", "name", "cases", "metrics", "counts", "status",
    "hard_failures", "soft": {"held", "tested", "rate"}}`, tags in name order, then tenants.

    `per_query` maps retriever -> case id -> the base-world QueryScores of that case.
    """
    from ..metrics import aggregate

    members: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        for key in _slices_of(case):
            members.setdefault(key, []).append(case.id)
    by_retriever: dict[str, list[Result]] = {}
    for row in results:
        by_retriever.setdefault(row.retriever, []).append(row)
    table: dict[str, list[dict[str, Any]]] = {}
    for retriever, rows in by_retriever.items():
        scores = per_query.get(retriever, {})
        found = []
        for kind, name in sorted(members, key=lambda key: (key[0] != "tag", key[1])):
            ids = set(members[(kind, name)])
            inside = [r for r in rows if r.case in ids]
            soft = [r.rate for r in inside if r.severity == "soft" and r.rate is not None]
            held, tested = sum(rate[0] for rate in soft), sum(rate[1] for rate in soft)
            scored = {case_id: scores[case_id] for case_id in members[(kind, name)] if case_id in scores}
            errored = {r.case for r in inside if r.status == "error"}  # those also scored drop out in aggregate()
            summary = (
                aggregate(scored, errored=sorted(errored)).to_dict()
                if scored
                else {"metrics": {}, "counts": {"queries": 0, "errored_queries": len(errored)}}
            )
            found.append(
                {
                    "kind": kind,
                    "name": name,
                    "cases": len(ids),
                    "metrics": summary["metrics"],
                    "counts": summary["counts"],
                    "status": {status: sum(1 for r in inside if r.status == status) for status in _STATUSES},
                    "hard_failures": sum(1 for r in inside if r.status == "fail" and r.severity == "hard"),
                    "failing_cases": sorted({r.case for r in inside if r.status == "fail" and r.severity == "hard"}),
                    "soft": {"held": held, "tested": tested, "rate": held / tested if tested else None},
                }
            )
        table[retriever] = found
    return table
