"""What every report format shares: stable ordering, per-relation cells, ranking diffs and value formatting.

Everything here reads the plain "ragmorph.report/1" dict, so reports render without the runner or Hypothesis.
"""

from __future__ import annotations

import re
from html import escape
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..errors import ExitCode
from ..secrets import clip
from ..triage import plural

__all__ = [
    "EXIT_MEANING",
    "HEADLINE_MEASURES",
    "STATUSES",
    "Cell",
    "DiffRow",
    "cell_label",
    "Marks",
    "cells",
    "describe_filters",
    "diff_rows",
    "escape_html",
    "format_score",
    "format_value",
    "gone_ids",
    "metric_pairs",
    "metric_sort_key",
    "ordered_results",
    "plural",
    "relation_rows",
    "replay_command",
    "retriever_names",
    "snippet",
    "strategy_names",
    "text_table",
    "violation_marks",
    "slice_label",
    "slice_metrics",
    "worst_slices",
    "xml_text",
]

# Result statuses in the order every table counts them.
STATUSES = ("pass", "fail", "error", "not_applicable")

# The report's exit code in words (2, a usage or input error, never produces a report).
EXIT_MEANING: dict[int, str] = {int(code): code.meaning for code in ExitCode if code is not ExitCode.USAGE}


def retriever_names(report: Mapping[str, Any]) -> tuple[str, ...]:
    """Retriever names in manifest order, then any that only appear in results (sorted)."""
    listed = [r["name"] for r in report.get("manifest", {}).get("retrievers", ())]
    seen = set(listed)
    extra = sorted({r["retriever"] for r in report.get("results", ()) if r["retriever"] not in seen})
    return tuple(listed + extra)


def strategy_names(report: Mapping[str, Any]) -> tuple[str, ...]:
    """Strategy names in manifest order, then any that only appear in results (sorted)."""
    listed = list(report.get("manifest", {}).get("strategies", ()))
    seen = set(listed)
    extra = sorted({r["strategy"] for r in report.get("results", ()) if r["strategy"] not in seen})
    return tuple(listed + extra)


def ordered_results(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Results sorted by retriever, strategy (manifest order), relation and case: the order every format uses."""
    retrievers = {name: i for i, name in enumerate(retriever_names(report))}
    strategies = {name: i for i, name in enumerate(strategy_names(report))}
    return sorted(
        report.get("results", ()),
        key=lambda r: (retrievers[r["retriever"]], strategies[r["strategy"]], r["relation"], r["case"]),
    )


def relation_rows(report: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(strategy, relation, severity) rows in strategy order then relation name."""
    strategies = {name: i for i, name in enumerate(strategy_names(report))}
    rows = {(r["strategy"], r["relation"]): r.get("severity", "hard") for r in report.get("results", ())}
    return [(s, rel, sev) for (s, rel), sev in sorted(rows.items(), key=lambda item: (strategies[item[0][0]], item[0][1]))]


@attrs.frozen
class Cell:
    """One relation x retriever, aggregated over cases: status counts, soft rate, failing cases and reasons."""

    counts: Mapping[str, int]
    held: int
    tested: int
    soft: bool
    failing_cases: tuple[str, ...]
    reasons: tuple[str, ...]

    @property
    def total(self) -> int:
        """Results aggregated in this cell."""
        return sum(self.counts.values())

    @property
    def status(self) -> str:
        """The cell's overall status: fail beats error beats pass beats not_applicable."""
        for status in ("fail", "error", "pass"):
            if self.counts.get(status):
                return status
        return "not_applicable" if self.total else "absent"

    @property
    def rate(self) -> float | None:
        """Share of tested perturbations where a soft relation held, or None."""
        return self.held / self.tested if self.tested else None

    @property
    def soft_broken(self) -> bool:
        """True when a soft relation broke in at least one tested perturbation."""
        return self.soft and self.held < self.tested


def cell_label(cell: Cell | None) -> str:
    """A cell in words, every status counted: `FAIL 1, pass 10, n/a 1`; a soft cell's held rate first."""
    if cell is None:
        return "-"
    parts = []
    if cell.soft and cell.tested and cell.status == "pass":
        parts.append(f"{cell.rate:.0%} held ({cell.held}/{cell.tested})")
    else:
        parts += [f"{word} {cell.counts[status]}" for status, word in (("fail", "FAIL"), ("error", "ERROR"), ("pass", "pass"))
                  if cell.counts.get(status)]
    if cell.counts.get("not_applicable"):
        parts.append(f"n/a {cell.counts['not_applicable']}")
    return ", ".join(parts) or "-"


def cells(report: Mapping[str, Any]) -> dict[tuple[str, str, str], Cell]:
    """(retriever, strategy, relation) -> Cell over every case."""
    grouped: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for result in ordered_results(report):
        grouped.setdefault((result["retriever"], result["strategy"], result["relation"]), []).append(result)
    table: dict[tuple[str, str, str], Cell] = {}
    for key, results in grouped.items():
        counts = {status: sum(1 for r in results if r["status"] == status) for status in STATUSES}
        rates = [r["rate"] for r in results if r.get("rate")]
        table[key] = Cell(
            counts=counts,
            held=sum(rate["held"] for rate in rates),
            tested=sum(rate["tested"] for rate in rates),
            soft=any(r.get("severity") == "soft" for r in results),
            failing_cases=tuple(r["case"] for r in results if r["status"] == "fail"),
            reasons=tuple(dict.fromkeys(r["reason"] for r in results if r.get("reason"))),
        )
    return table


def metric_sort_key(name: str) -> tuple[str, int, str]:
    """Sort metric names by measure, then numerically by cutoff (P@5 before P@10)."""
    measure, _, cutoff = name.partition("@")
    return (measure, int(cutoff) if cutoff.isdigit() else -1, name)


def metric_pairs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(label, base value, follow-up value) rows; a measure measured at different k on each side is one row.

    A cutoff perturbation compares `R@3` with `R@10`: shown as the row `R@3->@10` rather than two half-empty rows.
    """
    names = sorted(set(before) | set(after), key=metric_sort_key)
    by_measure: dict[str, tuple[list[str], list[str]]] = {}
    for name in names:
        measure = name.partition("@")[0]
        sides = by_measure.setdefault(measure, ([], []))
        if name in before and name not in after:
            sides[0].append(name)
        elif name in after and name not in before:
            sides[1].append(name)
    rows = []
    paired: set[str] = set()
    for name in names:
        if name in paired:
            continue
        measure = name.partition("@")[0]
        only_before, only_after = by_measure[measure]
        if len(only_before) == 1 and len(only_after) == 1 and name in (only_before[0], only_after[0]):
            old, new = only_before[0], only_after[0]
            paired.update((old, new))
            rows.append((f"{old}->@{new.partition('@')[2]}", before[old], after[new]))
        else:
            rows.append((name, before.get(name), after.get(name)))
    return rows


def format_value(value: Any) -> str:
    """A metric value for display: three decimals, 'n/a' for undefined."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.3f}"


def format_score(value: Any) -> str:
    """A retriever score for display: four significant digits, '-' when the retriever gave none."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.4g}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Lines of a left-aligned text table: the header, then one line per row, columns as wide as their widest cell."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    return [indent + "  ".join(f"{c:<{w}}" for c, w in zip(line, widths)).rstrip() for line in (header, *rows)]


_UNENCODABLE = re.compile("[\ud800-\udfff\x00]")


def escape_html(value: Any) -> str:
    """`value` as HTML text or attribute value ('' for None)."""
    # Lone surrogates cannot be written as UTF-8 and NUL is not allowed in HTML text: both become U+FFFD.
    return _UNENCODABLE.sub("\ufffd", escape("" if value is None else str(value), quote=True))


# Characters XML 1.0 cannot carry at all (not even escaped); chunk text generated by Hypothesis may hold them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: Any) -> str:
    """`text` as a string XML 1.0 can carry: characters it cannot hold become U+FFFD."""
    return _NOT_XML.sub("\ufffd", str(text))


_SPACE = re.compile(r"\s+")


def snippet(text: str | None, width: int) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    if not text:
        return ""
    return clip(_SPACE.sub(" ", text).strip(), width, "…")


@attrs.frozen
class Marks:
    """Chunk ids to mark in a ranking diff: gold evidence, chunks injected and chunks removed by the perturbation."""

    gold: frozenset[str]
    injected: frozenset[str]
    removed: frozenset[str]

    culprits: frozenset[str] = frozenset()

    def of(self, chunk_id: str | None) -> str:
        """The mark letters of `chunk_id`: G gold, + injected, - removed (empty for none)."""
        if chunk_id is None:
            return ""
        return "".join(
            symbol for symbol, ids in (("G", self.gold), ("+", self.injected), ("-", self.removed)) if chunk_id in ids
        )

    def breaks(self, hit: Mapping[str, Any] | None) -> bool:
        """Whether this follow-up hit is one the relation names as breaking it."""
        return hit is not None and hit.get("id") in self.culprits


def _chunk_ids(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        if "__chunk__" in value and isinstance(value["__chunk__"], Mapping):
            yield str(value["__chunk__"].get("id"))
        else:
            for item in value.values():
                yield from _chunk_ids(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _chunk_ids(item)


def violation_marks(violation: Mapping[str, Any]) -> Marks:
    """Marks from the violation's `evidence`/`injected`/`removed` keys, else from the perturbation's fields.

    Fallbacks: chunks encoded in the fields (`{"__chunk__": {...}}`) count as injected; string ids in a field
    named `ids`, `remove` or `removed` of a perturbation whose type starts with "Remove" count as removed.
    """
    gold = {member for group in violation.get("evidence") or () for member in group}
    perturbation = violation.get("perturbation") or {}
    fields = perturbation.get("fields") or {}
    injected = set(violation.get("injected") or ()) or set(_chunk_ids(fields))
    removed = set(violation.get("removed") or ())
    if not removed and str(perturbation.get("type", "")).startswith("Remove"):
        for name in ("ids", "remove", "removed"):
            value = fields.get(name)
            if isinstance(value, (list, tuple)):
                removed.update(v for v in value if isinstance(v, str))
    culprits = frozenset(str(c) for c in violation.get("culprits") or ())
    return Marks(frozenset(gold), frozenset(injected), frozenset(removed), culprits)


@attrs.frozen
class DiffRow:
    """One rank of a side-by-side ranking diff; `moved` says how the follow-up id moved relative to base."""

    rank: int
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    moved: str


def diff_rows(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[DiffRow]:
    """Pair base and follow-up hits by rank; `moved` is 'new', 'same', 'up N' or 'down N' for the follow-up hit."""
    base_rank = {}
    for position, hit in enumerate(before):
        base_rank.setdefault(hit.get("id"), position)
    rows = []
    for position in range(max(len(before), len(after))):
        old = before[position] if position < len(before) else None
        new = after[position] if position < len(after) else None
        moved = ""
        if new is not None:
            was = base_rank.get(new.get("id"))
            if was is None:
                moved = "new"
            elif was == position:
                moved = "same"
            else:
                moved = f"up {was - position}" if was > position else f"down {position - was}"
        rows.append(DiffRow(position + 1, old, new, moved))
    return rows


def gone_ids(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[str]:
    """Base ids that the follow-up ranking no longer returns, in base order."""
    kept = {hit.get("id") for hit in after}
    return [hit.get("id") for hit in before if hit.get("id") not in kept]


def describe_filters(params: Mapping[str, Any] | None) -> str:
    """`k=5, tenant=acme, current_only` style summary of call parameters."""
    if not params:
        return "-"
    parts = [f"k={params.get('k')}"]
    filters = params.get("filters") or {}
    if filters.get("tenant") is not None:
        parts.append(f"tenant={filters['tenant']}")
    if filters.get("current_only"):
        parts.append("current_only")
    for key, value in sorted((filters.get("metadata") or {}).items()):
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def replay_command(violation: Mapping[str, Any]) -> str | None:
    """The shell command that replays this violation, or None when no replay file was saved."""
    path = violation.get("replay")
    if not path:
        return None
    quoted = path if re.fullmatch(r"[\w./@:+=-]+", path) else "'" + path.replace("'", "'\\''") + "'"
    return f"ragmorph replay {quoted}"


# The headline measures (slice tables, the comparison's delta plot): evidence coverage first, then ranking quality
# and claims.
HEADLINE_MEASURES = ("GroupR", "R", "nDCG", "ClaimR(judge=tokens)")


def slice_metrics(report: Mapping[str, Any]) -> list[str]:
    """The metric names slice tables show: GroupR, R, nDCG and ClaimR at the run's largest k, where measured."""
    ks = report.get("manifest", {}).get("settings", {}).get("ks") or []
    if not ks:
        return []
    present = {name for rows in (report.get("slices") or {}).values() for row in rows for name in row.get("metrics", {})}
    return [name for name in (f"{measure}@{max(ks)}" for measure in HEADLINE_MEASURES) if name in present]


def slice_label(row: Mapping[str, Any]) -> str:
    """`tag hr` or `tenant acme`."""
    return f"{row.get('kind')} {row.get('name')}"


def worst_slices(report: Mapping[str, Any], retriever: str) -> list[Mapping[str, Any]]:
    """The retriever's slice rows, worst first: more cases with hard failures, then lower evidence coverage (the
    first of `slice_metrics`), then a lower soft rate, then larger slices; undefined values sort last."""
    headline = (slice_metrics(report) or [None])[0]

    def key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        cases = max(int(row.get("cases") or 0), 1)
        failing = len(row.get("failing_cases") or ()) / cases
        value = (row.get("metrics", {}).get(headline) or {}).get("macro") if headline else None
        rate = (row.get("soft") or {}).get("rate")
        return (
            -failing,
            value is None,
            value if value is not None else 0.0,
            rate is None,
            rate if rate is not None else 0.0,
            -cases,
            str(row.get("kind")),
            str(row.get("name")),
        )

    return sorted((report.get("slices") or {}).get(retriever, ()), key=key)
