"""CheckReport: results of any number of units (from any processes) folded into the "ragmorph.report/1" dict."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ..errors import ExitCode, RagmorphError
from ..model import Case, Corpus
from ..strategies import CATALOG
from ..strategies.traits import Suggestion, suggest_traits
from ._engine import Result, Settings
from ._slices import slice_rows
from ._spec import RetrieverSpec

__all__ = ["REPORT_SCHEMA", "CheckReport", "ViolationsFound"]

REPORT_SCHEMA = "ragmorph.report/1"


def _cases_fingerprint(cases: Sequence[Case]) -> str:
    import hashlib
    import json

    digest = hashlib.sha256()
    for case in cases:
        digest.update(json.dumps(case.to_dict(), sort_keys=True, ensure_ascii=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _declared_traits(spec: RetrieverSpec) -> frozenset[str]:
    try:
        return spec.all_traits(spec.resolve())
    except RagmorphError:
        return frozenset(spec.traits)


def _per(calls: int, cases: int) -> float:
    """Calls per retriever x case, to one decimal (0.0 for a run without cases)."""
    return round(calls / cases, 1) if cases else 0.0


class ViolationsFound(AssertionError):
    """`CheckReport.assert_ok()` failed: the message is the triaged summary (groups, worst first, replays)."""


@attrs.frozen
class CheckReport:
    """The outcome of a run: results, base-world metrics per retriever, manifest; `to_dict()` is the JSON report."""

    results: tuple[Result, ...]
    manifest: dict[str, Any] = attrs.field(eq=False)
    metrics: dict[str, dict[str, Any]] = attrs.field(eq=False)
    # retriever -> case id -> {"metrics", "ranking"} of the base world: what `ragmorph compare` pairs.
    queries: dict[str, dict[str, Any]] = attrs.field(eq=False, factory=dict)
    # retriever -> slice rows (per tag, per tenant), see runner._slices.
    slices: dict[str, list[dict[str, Any]]] = attrs.field(eq=False, factory=dict)
    # Traits the run's evidence supports but the retriever does not declare (never applied, only suggested).
    suggestions: tuple[Suggestion, ...] = attrs.field(default=(), eq=False)

    @classmethod
    def from_results(
        cls,
        results: Iterable[Result],
        *,
        corpus: Corpus,
        cases: Sequence[Case],
        retrievers: Sequence[RetrieverSpec],
        strategies: Sequence[str],
        seed: int,
        settings: Settings,
        descriptions: dict[str, dict[str, str]] | None = None,
        created: str | None = None,
    ) -> CheckReport:
        """Build a report from results computed anywhere (order-independent: rows are sorted canonically)."""
        from .. import __version__
        from ..metrics import aggregate

        order = {name: i for i, name in enumerate(strategies)}
        case_order = {case.id: i for i, case in enumerate(cases)}
        rows = tuple(
            sorted(results, key=lambda r: (r.retriever, case_order.get(r.case, 0), order.get(r.strategy, 0), r.relation))
        )
        metrics: dict[str, dict[str, Any]] = {}
        scores: dict[str, dict[str, Any]] = {}
        queries: dict[str, dict[str, Any]] = {}
        for spec in retrievers:
            per_query: dict[str, Any] = {}
            observed: dict[str, Any] = {}
            errored: list[str] = []
            for row in rows:
                if row.retriever == spec.name and row.base_metrics is not None and row.case not in per_query:
                    per_query[row.case] = row.base_metrics
                    observed[row.case] = {
                        "metrics": dict(row.base_metrics),
                        "ranking": [list(hit) for hit in row.base_ranking or ()],
                    }
                elif row.retriever == spec.name and row.status == "error":
                    errored.append(row.case)  # cases scored by another unit drop out in aggregate()
            metrics[spec.name] = aggregate(per_query, errored=errored).to_dict()["metrics"] if per_query else {}
            scores[spec.name], queries[spec.name] = per_query, observed
        descriptions = descriptions or {}
        manifest = {
            "ragmorph_version": __version__,
            "created": created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "corpus": {"fingerprint": corpus.fingerprint, "chunks": len(corpus)},
            "cases": {"fingerprint": _cases_fingerprint(cases), "count": len(cases)},
            "retrievers": [
                {
                    "name": spec.name,
                    "description": descriptions.get(spec.name, {}).get("description", spec.import_string or spec.name),
                    "kind": descriptions.get(spec.name, {}).get("kind", "factory"),
                }
                for spec in retrievers
            ],
            "strategies": list(strategies),
            "seed": seed,
            "settings": settings.to_dict(),
        }
        declared = {spec.name: _declared_traits(spec) for spec in retrievers}
        suggestions = suggest_traits(rows, declared, CATALOG)
        slices = slice_rows(rows, cases, scores)
        return cls(
            results=rows, manifest=manifest, metrics=metrics, queries=queries, slices=slices, suggestions=suggestions
        )

    @property
    def summary(self) -> dict[str, Any]:
        """Counts per status, hard failures, soft relations that broke at least once, the exit code, and the
        retriever calls the run spent (cache hits excluded), in all and per retriever x case."""
        counts = {status: 0 for status in ("pass", "fail", "error", "not_applicable")}
        for row in self.results:
            counts[row.status] += 1
        hard = sum(1 for r in self.results if r.status == "fail" and r.severity == "hard")
        soft = sum(1 for r in self.results if r.severity == "soft" and r.rate is not None and r.rate[0] < r.rate[1])
        # Every row of a unit carries the unit's calls: count each unit once.
        units: dict[tuple[str, str, str], int] = {}
        for row in self.results:
            units[(row.retriever, row.case, row.strategy)] = row.retriever_calls
        calls_of: dict[str, int] = {}
        cases_of: dict[str, set[str]] = {}
        for (retriever, case, _), calls in units.items():
            calls_of[retriever] = calls_of.get(retriever, 0) + calls
            cases_of.setdefault(retriever, set()).add(case)
        total, pairs = sum(calls_of.values()), sum(map(len, cases_of.values()))
        return {
            **counts,
            "hard_failures": hard,
            "soft_breaks": soft,
            "exit_code": self.exit_code,
            "retriever_calls": total,
            "calls_per_case": _per(total, pairs),
            "calls_by_retriever": {
                name: {"retriever_calls": calls, "cases": len(cases_of[name]), "calls_per_case": _per(calls, len(cases_of[name]))}
                for name, calls in sorted(calls_of.items())
            },
        }

    @property
    def exit_code(self) -> int:
        """0 when every hard relation holds, 1 on any hard violation, 3 when retriever errors prevented a verdict."""
        if any(r.status == "fail" and r.severity == "hard" for r in self.results):
            return int(ExitCode.VIOLATIONS)
        if any(r.status == "error" for r in self.results):
            return int(ExitCode.ERRORS)
        return int(ExitCode.OK)

    def assert_ok(self) -> None:
        """Raise ViolationsFound with the triaged summary unless every hard relation holds and no error occurred."""
        if self.exit_code != int(ExitCode.OK):
            from ..triage import summary_text

            raise ViolationsFound(summary_text(self.to_dict()))

    @property
    def violations(self) -> tuple[Result, ...]:
        """The failed results (each with its violation record)."""
        return tuple(r for r in self.results if r.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        """The JSON report, schema "ragmorph.report/1"."""
        return {
            "schema": REPORT_SCHEMA,
            "manifest": self.manifest,
            "results": [r.to_dict() for r in self.results],
            "metrics": self.metrics,
            "queries": self.queries,
            "slices": self.slices,
            "summary": self.summary,
            "suggestions": [s.to_dict() for s in self.suggestions],
        }
