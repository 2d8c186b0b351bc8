"""Triage of a "ragmorph.report/1" dict: hard violations grouped by retriever x relation, the worst first.

A run may fail one relation on fifty cases; a reader needs one group with a count and the easiest case to read,
and needs a tenant leak before a cache side effect. Groups are ordered: minimised before non-minimised (a
violation whose corpus could not be cut down is hard to read), then by the concern each relation declares
(`Relation.concern`: tenant leaks, contract breaches, other hard violations), then retriever and relation. The
representative of a group is its smallest minimal case. Soft breaks are listed apart, each with one perturbation under which it broke.

Reads the plain report dict (and the relation catalog for concerns; no runner), so renderers and
`CheckReport.assert_ok` share it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .relations import Concern

__all__ = ["Concern", "Group", "SoftBreak", "concern_of", "plural", "soft_breaks", "summary_text", "triage"]


def plural(number: Any, noun: str, many: str | None = None) -> str:
    """`1 chunk`, `2 chunks`, `0 chunks` (`many` for irregular plurals)."""
    return f"{number} {noun if number == 1 else (many or noun + 's')}"


@functools.cache
def _concerns() -> dict[str, Concern]:
    # Imported on first use: the catalog pulls in Hypothesis, which loading this module does not need.
    from .strategies import CATALOG

    return {relation.name: relation.concern for relation in CATALOG}


def concern_of(relation: str) -> Concern:
    """The concern the catalog relation `relation` declares (`Relation.concern`); other names are plain hard."""
    return _concerns().get(relation, Concern.HARD)


def _minimal_size(result: Mapping[str, Any]) -> int:
    return len((result.get("violation") or {}).get("minimal_corpus") or ())


def _minimised(result: Mapping[str, Any]) -> bool:
    # Minimisation says why when it stopped short (a black box, a budget); reports without the fields count as minimised.
    violation = result.get("violation") or {}
    return violation.get("one_minimal") is not False and not violation.get("minimal_reason")


@attrs.frozen
class Group:
    """Every hard violation of one relation by one retriever, with its smallest minimal case as representative."""

    retriever: str
    relation: str
    concern: Concern
    results: tuple[Mapping[str, Any], ...]
    representative: Mapping[str, Any]

    @property
    def minimised(self) -> bool:
        """Whether the representative's corpus was cut down to a 1-minimal set."""
        return _minimised(self.representative)

    @property
    def cases(self) -> tuple[str, ...]:
        """The failing cases, in report order, each once."""
        return tuple(dict.fromkeys(str(r["case"]) for r in self.results))

    @property
    def anchor(self) -> str:
        """A stable HTML id for this group (matrix cells link to it)."""
        return "g-" + re.sub(r"[^A-Za-z0-9_-]+", "_", f"{self.retriever}--{self.relation}")

    def headline(self) -> str:
        """`tenant leak · postfilter · tenancy.unauthorized_zero · 3 cases (q1, q2, q3) · smallest: q2, 1 chunk`."""
        cases = self.cases
        shown = ", ".join(cases[:5]) + (", ..." if len(cases) > 5 else "")
        smallest = f"smallest: {self.representative['case']}, {plural(_minimal_size(self.representative), 'chunk')}"
        if not self.minimised:
            smallest += " (not minimised)"
        return f"{self.concern.label} · {self.retriever} · {self.relation} · {plural(len(cases), 'case')} ({shown}) · {smallest}"


def _order(report: Mapping[str, Any], key: str, listed: Sequence[str]) -> dict[str, int]:
    names = list(dict.fromkeys([*listed, *(str(r[key]) for r in report.get("results", ()))]))
    return {name: i for i, name in enumerate(names)}


def triage(report: Mapping[str, Any]) -> tuple[Group, ...]:
    """The hard violations of `report` grouped by retriever x relation, worst first (see the module docstring)."""
    manifest = report.get("manifest", {})
    retrievers = _order(report, "retriever", [r["name"] for r in manifest.get("retrievers", ())])
    cases = _order(report, "case", ())
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for result in report.get("results", ()):
        if result.get("status") == "fail" and result.get("severity", "hard") == "hard":
            grouped.setdefault((result["retriever"], result["relation"]), []).append(result)
    groups = []
    for (retriever, relation), results in grouped.items():
        results.sort(key=lambda r: cases[str(r["case"])])
        representative = min(results, key=lambda r: (not _minimised(r), _minimal_size(r), cases[str(r["case"])]))
        groups.append(Group(retriever, relation, concern_of(relation), tuple(results), representative))
    return tuple(
        sorted(groups, key=lambda g: (not g.minimised, g.concern.rank, retrievers[g.retriever], g.relation))
    )


@attrs.frozen
class SoftBreak:
    """A soft relation that broke on some perturbations of one retriever: its rate and one example."""

    retriever: str
    relation: str
    held: int
    tested: int
    example: Mapping[str, str] | None
    case: str | None

    def headline(self) -> str:
        """`bm25 · query.ranking_invariant held in 40 of 45 perturbations (89%)`."""
        return (
            f"{self.retriever} · {self.relation} held in {self.held} of {self.tested} perturbations "
            f"({self.held / self.tested:.0%})"
        )


def soft_breaks(report: Mapping[str, Any]) -> tuple[SoftBreak, ...]:
    """Soft relations that broke at least once, per retriever x relation, in report order."""
    found: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for result in report.get("results", ()):
        rate = result.get("rate") or {}
        if result.get("severity") == "soft" and rate.get("tested"):
            found.setdefault((result["retriever"], result["relation"]), []).append(result)
    breaks = []
    for (retriever, relation), results in found.items():
        held = sum(r["rate"]["held"] for r in results)
        tested = sum(r["rate"]["tested"] for r in results)
        if held < tested:
            with_example = next((r for r in results if r["rate"].get("example")), None)
            breaks.append(SoftBreak(
                retriever, relation, held, tested,
                with_example["rate"]["example"] if with_example else None,
                str(with_example["case"]) if with_example else None,
            ))
    return tuple(breaks)


def summary_text(report: Mapping[str, Any]) -> str:
    """Plain text: the verdict, one line per violation group (with its replay command), then the soft breaks."""
    summary = report.get("summary", {})
    groups = triage(report)
    lines = [
        f"ragmorph: {plural(summary.get('hard_failures', 0), 'hard failure')} in {plural(len(groups), 'group')}, "
        f"{plural(summary.get('error', 0), 'error')}, {plural(summary.get('soft_breaks', 0), 'soft break')} "
        f"(exit code {summary.get('exit_code')})"
    ]
    for number, group in enumerate(groups, start=1):
        lines.append(f"  {number}. {group.headline()}")
        violation = group.representative.get("violation") or {}
        lines.append(f"     why: {violation.get('detail', group.representative.get('reason'))}")
        if violation.get("stages"):
            lines.append(f"     stage: {violation['stages'].get('detail')}")
        if violation.get("replay"):
            lines.append(f"     replay: ragmorph replay {violation['replay']}")
    errors = [r for r in report.get("results", ()) if r.get("status") == "error"]
    if errors:
        lines.append(f"  retriever errors: {plural(len(errors), 'result')}, e.g. {errors[0]['retriever']}: {errors[0].get('reason')}")
    for soft in soft_breaks(report):
        example = f"; e.g. {soft.example['perturbation']}: {soft.example['detail']}" if soft.example else ""
        lines.append(f"  soft: {soft.headline()}{example}")
    return "\n".join(lines)
