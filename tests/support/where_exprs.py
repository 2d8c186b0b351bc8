"""Hypothesis strategies for filter expressions (`ragmorph.where`) and metadata that tell JSON types apart."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from ragmorph.where import And, Compare, Not, Op, Or

__all__ = ["FIELDS", "STORED", "exprs", "metadatas", "negated_range_or_exists"]

FIELDS = ("a", "b", "c")
D1, D2 = dt.date(2025, 12, 31), dt.date(2026, 1, 1)
# Values that Python's == merges (1, 1.0, True) and a date beside the string holding it.
SCALARS = (0, 1, 1.0, 1.5, True, False, "x", "1", "2026-01-01", D1, D2)
ORDERED = (0, 1, 1.0, 1.5, -1, D1, D2)
# What chunks store: the scalars above, an invalid date, null, a list and an object.
STORED = (0, 1, 1.0, 1.5, -2, True, False, "x", "1", "2026-01-01", "2025-12-31", "2026-02-30", None, [1], {"k": 1})


def compares(*, exists: bool = True) -> st.SearchStrategy[Compare]:
    """Comparisons over a few keys; shrinks toward `a == 0`."""
    field = st.sampled_from(FIELDS)
    scalars = st.sampled_from(SCALARS)
    options = [
        st.builds(Compare, field, st.sampled_from((Op.EQ, Op.NE)), scalars),
        st.builds(Compare, field, st.sampled_from((Op.IN, Op.NIN)), st.lists(scalars, min_size=1, max_size=3).map(tuple)),
        st.builds(Compare, field, st.sampled_from((Op.GT, Op.GTE, Op.LT, Op.LTE)), st.sampled_from(ORDERED)),
    ]
    if exists:
        options.append(st.builds(lambda f: Compare(f, Op.EXISTS), field))
    return st.one_of(*options)


def exprs(*, exists: bool = True, max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Expressions of comparisons under and, or and not; shrinks toward one comparison."""
    return st.recursive(
        compares(exists=exists),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(And),
            st.lists(inner, min_size=1, max_size=3).map(Or),
            inner.map(Not),
        ),
        max_leaves=max_leaves,
    )


def metadatas() -> st.SearchStrategy[dict[str, Any]]:
    """Chunk metadata over the same keys, any of them missing."""
    return st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(STORED), max_size=3)


def negated_range_or_exists(expr: Any, negated: bool = False) -> bool:
    """Whether `expr` holds `$exists`, or a range under an odd number of `$not` (what Chroma cannot express)."""
    if isinstance(expr, Compare):
        return expr.op is Op.EXISTS or (negated and expr.op.is_range)
    if isinstance(expr, Not):
        return negated_range_or_exists(expr.clause, not negated)
    return any(negated_range_or_exists(clause, negated) for clause in expr.clauses)
