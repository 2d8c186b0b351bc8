"""Retrieval metrics on rankings exactly as returned: one parser, one registry, one-query and batch paths.

Names follow ir_measures (`P@5`, `R@10`, `nDCG@10`); every measure documents its formula and edge cases in
`MEASURES`, and every edge case is a named policy in `POLICIES`. Undefined values are None, never a fake 0 or 1.
"""

from __future__ import annotations

from ._aggregate import SCHEMA, MetricAggregate, MetricsSummary, aggregate
from ._batch import BATCH_BACKEND, BatchResult, evaluate_batch
from ..support import DEFAULT_SUPPORT, SupportJudge, TokenSupport, claim_facts
from ._names import (
    DEFAULT_SUPPORT_METHOD,
    GOLD_MEASURES,
    GOVERNANCE_MEASURES,
    MEASURES,
    POLICIES,
    MeasureInfo,
    Metric,
    measures_markdown,
    parse_metric,
    parse_metrics,
    standard_metrics,
)
from ._single import Judge, QueryScores, evaluate, is_empty_ok

__all__ = [
    "BATCH_BACKEND",
    "DEFAULT_SUPPORT",
    "DEFAULT_SUPPORT_METHOD",
    "GOLD_MEASURES",
    "GOVERNANCE_MEASURES",
    "MEASURES",
    "POLICIES",
    "SCHEMA",
    "BatchResult",
    "Judge",
    "MeasureInfo",
    "Metric",
    "MetricAggregate",
    "MetricsSummary",
    "QueryScores",
    "SupportJudge",
    "TokenSupport",
    "aggregate",
    "claim_facts",
    "evaluate",
    "evaluate_batch",
    "is_empty_ok",
    "measures_markdown",
    "parse_metric",
    "parse_metrics",
    "standard_metrics",
]
