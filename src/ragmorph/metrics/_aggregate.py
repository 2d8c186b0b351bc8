"""Macro and micro averages over queries, with counts, overall and per tag."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from ..errors import RagmorphError, UsageError, describe
from ..model import FrozenMap
from ._batch import BatchResult
from ._names import MEASURES, parse_metric

__all__ = ["SCHEMA", "MetricAggregate", "MetricsSummary", "aggregate"]

SCHEMA = "ragmorph.metrics/1"


@attrs.frozen
class MetricAggregate:
    """One metric over many queries: macro (mean where defined), micro (pooled ratio), queries counted, and
    `errored`: queries left out because the retriever failed on them (the averages do not cover those)."""

    macro: float | None
    micro: float | None
    queries: int
    errored: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON form: {"macro", "micro", "queries", "errored"}."""
        return {"macro": self.macro, "micro": self.micro, "queries": self.queries, "errored": self.errored}


@attrs.frozen
class MetricsSummary:
    """Aggregated metrics with counts; `by_tag` holds one summary (without its own by_tag) per case tag."""

    metrics: FrozenMap
    counts: FrozenMap
    by_tag: FrozenMap = attrs.field(factory=FrozenMap)

    def to_dict(self) -> dict[str, Any]:
        """JSON form `{"schema": "ragmorph.metrics/1", "metrics", "counts", "by_tag"}`.

        Each by_tag entry is `{"metrics": {...}, "counts": {...}}`, shaped like the top level.
        """
        return {
            "schema": SCHEMA,
            "metrics": {name: value.to_dict() for name, value in self.metrics.items()},
            "counts": dict(self.counts),
            "by_tag": {
                tag: {
                    "metrics": {name: value.to_dict() for name, value in summary.metrics.items()},
                    "counts": dict(summary.counts),
                }
                for tag, summary in self.by_tag.items()
            },
        }


def _is_defined(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _micro_defined(name: str) -> bool:
    try:
        return MEASURES[parse_metric(name).measure].micro is not None
    except RagmorphError:
        return False  # a caller's own metric key: macro only


def _summarise(rows: Sequence[Mapping[str, Any]], errored: int = 0) -> tuple[FrozenMap, FrozenMap]:
    names: dict[str, None] = {}
    for row in rows:
        for name in row:
            names.setdefault(name, None)
    metrics = {}
    for name in names:
        defined = [row for row in rows if _is_defined(row.get(name))]
        values = [float(row[name]) for row in defined]
        macro = math.fsum(values) / len(values) if values else None
        micro = None
        if values and _micro_defined(name):
            pooled = [getattr(row, "parts", {}).get(name) for row in defined]
            if all(part is not None for part in pooled):
                numerator = math.fsum(part[0] for part in pooled)  # type: ignore[index]
                denominator = math.fsum(part[1] for part in pooled)  # type: ignore[index]
                micro = numerator / denominator if denominator else None
        metrics[name] = MetricAggregate(macro=macro, micro=micro, queries=len(values), errored=errored)
    counts = {
        "queries": len(rows),
        "errored_queries": errored,
        "gold_ids": _total(rows, "gold_ids"),
        "returned_ids": _total(rows, "returned_ids"),
    }
    return FrozenMap(metrics), FrozenMap(counts)


def _total(rows: Sequence[Mapping[str, Any]], attribute: str) -> int | None:
    found = [getattr(row, attribute, None) for row in rows]
    if any(value is None for value in found):
        return None  # plain dicts carry no counts
    return int(sum(found))


def aggregate(
    per_query: Mapping[str, Mapping[str, float | None]] | BatchResult,
    *,
    tags: Mapping[str, Sequence[str]] | None = None,
    errored: Collection[str] = (),
) -> MetricsSummary:
    """Macro and micro averages of per-query metric values, with counts, overall and per tag.

    `per_query` maps query id -> the result of `evaluate()` (or any mapping of metric name -> value), or is
    an `evaluate_batch()` result. Micro averages need the (numerator, denominator) parts that `evaluate()`
    and `evaluate_batch()` attach; for plain dicts micro is None, as are gold_ids/returned_ids counts. Tags
    come from each case (carried by `evaluate()`), or from `tags` (query id -> tags) when given.

    `errored` names queries that could not be scored because the retriever failed on them: they are not in the
    averages, and every aggregate says how many there were (`errored`), so an average over the queries that
    happened to work is never mistaken for one over all of them. Per tag, they count where `tags` names theirs.
    """
    if isinstance(per_query, BatchResult):
        per_query = per_query.per_query(tags)
    if not isinstance(per_query, Mapping):
        raise UsageError(f"expected a mapping of query id -> metric values, got {describe(per_query)}")
    rows = list(per_query.values())
    for qid, row in per_query.items():
        if not isinstance(row, Mapping):
            raise UsageError(f"expected metric values for query {qid!r} as a mapping, got {describe(row)}")
    failed = [qid for qid in dict.fromkeys(errored) if qid not in per_query]
    metrics, counts = _summarise(rows, len(failed))
    by_tag_rows: dict[str, list[Mapping[str, Any]]] = {}
    for qid, row in per_query.items():
        row_tags = tags.get(qid, ()) if tags is not None else getattr(row, "tags", ())
        for tag in dict.fromkeys(row_tags):
            by_tag_rows.setdefault(tag, []).append(row)
    failed_by_tag: dict[str, int] = {}
    for qid in failed:
        for tag in dict.fromkeys((tags or {}).get(qid, ())):
            failed_by_tag[tag] = failed_by_tag.get(tag, 0) + 1
    by_tag = {}
    for tag in sorted(by_tag_rows):
        tag_metrics, tag_counts = _summarise(by_tag_rows[tag], failed_by_tag.get(tag, 0))
        by_tag[tag] = MetricsSummary(metrics=tag_metrics, counts=tag_counts)
    return MetricsSummary(metrics=metrics, counts=counts, by_tag=FrozenMap(by_tag))
