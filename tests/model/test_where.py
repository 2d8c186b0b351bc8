"""Filter expressions (`ragmorph.where`): the JSON form, its refusals, and the algebra of the reference `admits`."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import InputError, UsageError
from ragmorph.model import Chunk, Filters
from ragmorph.where import (
    And,
    Compare,
    MissingKey,
    Not,
    Op,
    Or,
    admits,
    evaluate,
    fields_of,
    from_json,
    operators_of,
    to_json,
)

FIELDS = ("a", "b", "c")
D1, D2 = dt.date(2025, 12, 31), dt.date(2026, 1, 1)
# Values that Python's == merges (1, 1.0, True) and a date beside the string holding it.
SCALARS = (0, 1, 1.0, 1.5, True, False, "x", "1", "2026-01-01", D1, D2)
STORED = (0, 1, 1.0, 1.5, -2, True, False, "x", "1", "2026-01-01", "2025-12-31", "2026-02-30", None, [1], {"k": 1})
BOTH = tuple(MissingKey)

scalars = st.sampled_from(SCALARS)
ordered = st.sampled_from((0, 1, 1.0, 1.5, -1, D1, D2))


def compares() -> st.SearchStrategy[Compare]:
    """Comparisons over a few keys; shrinks toward `a == 0`."""
    field = st.sampled_from(FIELDS)
    return st.one_of(
        st.builds(Compare, field, st.sampled_from((Op.EQ, Op.NE)), scalars),
        st.builds(Compare, field, st.sampled_from((Op.IN, Op.NIN)), st.lists(scalars, min_size=1, max_size=3).map(tuple)),
        st.builds(Compare, field, st.sampled_from((Op.GT, Op.GTE, Op.LT, Op.LTE)), ordered),
        st.builds(lambda f: Compare(f, Op.EXISTS), field),
    )


exprs = st.recursive(
    compares(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(And),
        st.lists(inner, min_size=1, max_size=3).map(Or),
        inner.map(Not),
    ),
    max_leaves=6,
)
metadatas = st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(STORED), max_size=3)
semantics = st.sampled_from(BOTH)


@given(exprs)
def test_json_round_trip(expr: Any) -> None:
    form = to_json(expr)
    assert from_json(json.loads(json.dumps(form))) == expr


@given(exprs, metadatas)
def test_filters_round_trip_through_their_json_form(expr: Any, metadata: dict[str, Any]) -> None:
    filters = Filters(tenant="acme", where=expr)
    again = Filters(**json.loads(json.dumps(filters.to_dict())))
    assert again == filters and hash(again) == hash(filters)
    chunk = Chunk("c", "t", metadata=metadata)
    assert filters.allows(chunk) == admits(expr, metadata)


@given(exprs, exprs, metadatas, semantics)
def test_and_admits_what_both_admit_and_or_what_either_admits(a: Any, b: Any, m: dict[str, Any], s: MissingKey) -> None:
    assert admits(And([a, b]), m, missing=s) == (admits(a, m, missing=s) and admits(b, m, missing=s))
    assert admits(Or([a, b]), m, missing=s) == (admits(a, m, missing=s) or admits(b, m, missing=s))
    assert evaluate(And([a, b]), m, s) == evaluate(And([b, a]), m, s)
    assert evaluate(Or([a, b]), m, s) == evaluate(Or([b, a]), m, s)


@given(exprs, exprs, metadatas, semantics)
def test_de_morgan_and_double_negation(a: Any, b: Any, m: dict[str, Any], s: MissingKey) -> None:
    assert evaluate(Not(And([a, b])), m, s) == evaluate(Or([Not(a), Not(b)]), m, s)
    assert evaluate(Not(Or([a, b])), m, s) == evaluate(And([Not(a), Not(b)]), m, s)
    assert evaluate(Not(Not(a)), m, s) == evaluate(a, m, s)


@given(exprs, metadatas, semantics)
def test_a_contradiction_admits_nothing(a: Any, m: dict[str, Any], s: MissingKey) -> None:
    assert not admits(And([a, Not(a)]), m, missing=s)


@given(exprs, metadatas)
def test_not_is_the_complement_when_negation_matches(a: Any, m: dict[str, Any]) -> None:
    assert admits(Not(a), m) == (not admits(a, m))
    assert admits(Or([a, Not(a)]), m)


@given(exprs, metadatas)
def test_under_unknown_not_is_disjoint_and_covers_the_chunks_holding_every_key(a: Any, m: dict[str, Any]) -> None:
    s = MissingKey.UNKNOWN
    assert not (admits(a, m, missing=s) and admits(Not(a), m, missing=s))
    if all(field in m for field in fields_of(a)):
        # Nothing is unknown: the two semantics agree.
        assert evaluate(a, m, s) == evaluate(a, m)
        assert admits(Or([a, Not(a)]), m, missing=s)


@given(st.sampled_from(FIELDS), st.lists(scalars, min_size=1, max_size=4), metadatas, semantics)
def test_in_is_the_or_of_eq_and_nin_the_and_of_ne(field: str, values: list[Any], m: dict[str, Any], s: MissingKey) -> None:
    assert evaluate(Compare(field, Op.IN, values), m, s) == evaluate(Or([Compare(field, Op.EQ, v) for v in values]), m, s)
    assert evaluate(Compare(field, Op.NIN, values), m, s) == evaluate(And([Compare(field, Op.NE, v) for v in values]), m, s)
    assert evaluate(Compare(field, Op.NE, values[0]), m, s) == evaluate(Not(Compare(field, Op.EQ, values[0])), m, s)


@given(st.sampled_from(FIELDS), ordered, metadatas, semantics)
def test_a_range_split_at_a_boundary_partitions_the_values_of_its_type(field: str, bound: Any, m: dict[str, Any], s: MissingKey) -> None:
    below = admits(Compare(field, Op.LT, bound), m, missing=s)
    above = admits(Compare(field, Op.GTE, bound), m, missing=s)
    value = m.get(field)
    comparable = (
        type(value) in (int, float) if type(bound) is not dt.date else isinstance(value, str) and value in ("2026-01-01", "2025-12-31")
    )
    assert (below + above) == (1 if comparable else 0)
    assert admits(Compare(field, Op.LTE, bound), m, missing=s) == (comparable and not admits(Compare(field, Op.GT, bound), m, missing=s))


def test_values_compare_by_json_type() -> None:
    eq_one = Compare("n", Op.EQ, 1)
    assert admits(eq_one, {"n": 1})
    assert not admits(eq_one, {"n": True}) and not admits(eq_one, {"n": 1.0}) and not admits(eq_one, {"n": "1"})
    assert not admits(Compare("n", Op.EQ, True), {"n": 1})
    assert admits(Compare("n", Op.IN, (True, "1")), {"n": True}) and not admits(Compare("n", Op.IN, (True, "1")), {"n": 1})
    # Ranges compare integers and floats by value, never booleans.
    assert admits(Compare("n", Op.GT, 1), {"n": 1.5}) and not admits(Compare("n", Op.GT, 0), {"n": True})
    assert not admits(Compare("n", Op.GT, 0), {"n": "5"})
    # Equal by JSON type is also how expressions and filters are equal and hash.
    assert Compare("n", Op.EQ, 1) != Compare("n", Op.EQ, True) and Compare("n", Op.EQ, 1) != Compare("n", Op.EQ, 1.0)
    assert len({Filters(where={"n": 1}), Filters(where={"n": True}), Filters(where={"n": 1.0})}) == 3


def test_dates_compare_iso_date_strings_by_date() -> None:
    after = from_json({"published": {"$gte": {"$date": "2026-01-01"}}})
    assert after == Compare("published", Op.GTE, D2)
    assert admits(after, {"published": "2026-01-01"}) and admits(after, {"published": "2026-12-31"})
    assert not admits(after, {"published": "2025-12-31"})
    # Not an ISO calendar date: never matched as one (no comparison as text).
    for text in ("2026-1-5", "2026-02-30", "20260105", "2026-01-01T10:00"):
        assert not admits(after, {"published": text})
        assert admits(Not(after), {"published": text}, missing=MissingKey.UNKNOWN)
    assert admits(from_json({"published": {"$date": "2026-01-01"}}), {"published": "2026-01-01"})


def test_the_missing_key_under_both_semantics() -> None:
    ne = Compare("lang", Op.NE, "en")
    nin = Compare("lang", Op.NIN, ("en",))
    for expr in (ne, nin, Not(Compare("lang", Op.EQ, "en")), Not(Compare("lang", Op.GT, 1))):
        assert admits(expr, {})
        assert not admits(expr, {}, missing=MissingKey.UNKNOWN)
        assert evaluate(expr, {}, MissingKey.UNKNOWN) is None
    exists = Compare("lang", Op.EXISTS)
    assert not admits(exists, {}) and admits(Not(exists), {}, missing=MissingKey.UNKNOWN)
    # A stored null is a present value.
    assert admits(exists, {"lang": None}) and admits(ne, {"lang": None}, missing=MissingKey.UNKNOWN)
    chunk = Chunk("c", "t")
    assert Filters(where=ne).allows(chunk) and not Filters(where=ne).allows(chunk, missing=MissingKey.UNKNOWN)


def test_the_json_shorthands_read_as_their_canonical_form() -> None:
    assert from_json({"lang": "en"}) == Compare("lang", Op.EQ, "en")
    assert from_json({"lang": "en", "n": {"$gt": 1, "$lt": 5}}) == And(
        [Compare("lang", Op.EQ, "en"), And([Compare("n", Op.GT, 1), Compare("n", Op.LT, 5)])]
    )
    assert from_json({"lang": {"$exists": False}}) == Not(Compare("lang", Op.EXISTS))
    assert to_json(from_json({"lang": {"$in": ["en", "fr"]}})) == {"lang": {"$in": ["en", "fr"]}}
    expr = from_json({"$or": [{"a": 1}, {"$not": {"b": {"$date": "2026-01-01"}}}]})
    assert fields_of(expr) == ("a", "b")
    assert operators_of(expr) == {"$or", "$eq", "$not", "$date"}


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        ([], "where", "non-empty JSON object"),
        ({}, "where", "non-empty JSON object"),
        ({"$and": []}, "where.$and", "non-empty list of expressions"),
        ({"$and": [{"a": 1}, 3]}, "where.$and[1]", "non-empty JSON object"),
        ({"$gt": 3}, "where.$gt", "comparison operators go inside a field"),
        ({"a": {"$gt": "x"}}, "where.a.$gt", "a number or a date"),
        ({"a": {"$gt": True}}, "where.a.$gt", "a number or a date"),
        ({"a": {"$like": "x"}}, "where.a.$like", "expected an operator"),
        ({"a": {"$in": []}}, "where.a.$in", "non-empty list of values"),
        ({"a": {"$in": "en"}}, "where.a.$in", "non-empty list of values"),
        ({"a": {"$in": ["en", None]}}, "where.a.$in[1]", "$exists"),
        ({"a": None}, "where.a", "$exists"),
        ({"a": [1, 2]}, "where.a", "a string, a number, a boolean or a date"),
        ({"a": {"$eq": {"$date": "2026-02-30"}}}, "where.a.$eq", "YYYY-MM-DD"),
        ({"a": {"$exists": 1}}, "where.a.$exists", "true or false"),
        ({"$or": [{"a": {"$lt": float("inf")}}]}, "where.$or[0].a.$lt", "a number or a date"),
        ({"$not": {"a": {"$nin": [1, {"b": 2}]}}}, "where.$not.a.$nin[1]", "YYYY-MM-DD"),
    ],
)
def test_a_bad_expression_is_refused_with_its_place_and_what_was_expected(raw: Any, field: str, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        Filters(where=raw)
    assert caught.value.field == field
    assert expected in caught.value.message


def test_expressions_built_in_python_are_validated() -> None:
    with pytest.raises(UsageError, match="non-empty tuple"):
        Compare("a", Op.IN, ())
    with pytest.raises(UsageError, match="a number or a date"):
        Compare("a", Op.GTE, "2026-01-01")
    with pytest.raises(UsageError, match="metadata key"):
        Compare("$a", Op.EQ, 1)
    with pytest.raises(UsageError, match="at least one clause"):
        And([])
    with pytest.raises(UsageError, match="filter expression"):
        Not({"a": 1})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="filter expression"):
        Filters(where="a = 1")


def test_filters_without_where_keep_their_json_form() -> None:
    assert Filters(tenant="acme").to_dict() == {"tenant": "acme", "current_only": False, "metadata": {}}
    assert not Filters(where={"a": 1}).is_empty and Filters().is_empty


@settings(max_examples=50)
@given(exprs)
def test_canonical_json_is_stable(expr: Any) -> None:
    assert to_json(from_json(to_json(expr))) == to_json(expr)
