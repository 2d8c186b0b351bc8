"""Filter expressions as users write them: comparisons on metadata fields joined by and, or and not.

An expression is immutable attrs data (`Compare`, `And`, `Or`, `Not`); its JSON form is the Mongo/Chroma one:

- ``{"lang": "en"}`` or ``{"lang": {"$eq": "en"}}``; ``$ne``, ``$in`` and ``$nin`` (a non-empty list) take
  strings, numbers, booleans and dates; ``$gt``, ``$gte``, ``$lt`` and ``$lte`` take a number or a date;
  ``{"lang": {"$exists": true}}`` (``false`` reads as ``$not`` of it);
- a date is ``{"$date": "2026-09-01"}`` and matches a metadata string holding that ISO date (``YYYY-MM-DD``);
- ``{"$and": [...]}``, ``{"$or": [...]}`` (non-empty lists), ``{"$not": {...}}``; an object with several keys,
  or a field with several operators, is the ``$and`` of them.

`admits` is the reference semantics. Values compare by JSON type: ``true``, ``1`` and ``1.0`` are different
values for ``$eq``, ``$ne``, ``$in`` and ``$nin``; ranges compare numbers (integers and floats, never booleans)
with numbers and dates with ISO date strings, and a value of another type never matches a range. JSON ``null``
in metadata is a present value (``$exists`` admits it); an expression never holds ``null``.

**The missing key.** Stores disagree on whether a negation admits a chunk that lacks the key, so `admits` takes
the semantics as a parameter (`MissingKey`), and each integration declares the one it implements:

- `MissingKey.NEGATION_MATCHES` (the default; MongoDB, Qdrant's ``must_not``): two-valued logic. A comparison
  on a missing key is false, so ``$ne`` and ``$nin``, its negations, admit the chunk, and ``$not A`` is exactly
  the complement of ``A``;
- `MissingKey.UNKNOWN` (SQL's three-valued logic; Chroma's ``$ne`` and ``$nin``): a comparison on a missing key
  is unknown, and so is its negation; ``$and`` and ``$or`` follow Kleene's tables and only a true expression
  admits the chunk. ``$exists`` is never unknown.
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
import re
from collections.abc import Mapping
from typing import Any, Union

import attrs

from .errors import InputError, UsageError, describe

__all__ = [
    "And",
    "Compare",
    "Expr",
    "MissingKey",
    "Not",
    "Op",
    "Or",
    "UnsupportedFilter",
    "admits",
    "evaluate",
    "fields_of",
    "from_json",
    "iso_date",
    "operators_of",
    "to_json",
]


class Op(enum.Enum):
    """A comparison operator, spelt as in the JSON form."""

    EQ = "$eq"
    NE = "$ne"
    IN = "$in"
    NIN = "$nin"
    GT = "$gt"
    GTE = "$gte"
    LT = "$lt"
    LTE = "$lte"
    EXISTS = "$exists"

    @property
    def is_range(self) -> bool:
        """True for ``$gt``, ``$gte``, ``$lt`` and ``$lte``."""
        return self in _RANGES

    @property
    def is_list(self) -> bool:
        """True for ``$in`` and ``$nin``, whose value is a list."""
        return self in (Op.IN, Op.NIN)


_RANGES = frozenset({Op.GT, Op.GTE, Op.LT, Op.LTE})


class MissingKey(enum.Enum):
    """What a comparison on a key the chunk lacks yields (see the module docstring)."""

    NEGATION_MATCHES = "negation_matches"
    UNKNOWN = "unknown"


class UnsupportedFilter(UsageError):
    """An integration cannot express (part of) a filter expression natively; the message says what and why."""


# A strict ISO calendar date: Python 3.11's fromisoformat also reads "20260901" and week dates, which stores
# do not take for dates.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def iso_date(value: Any) -> _dt.date | None:
    """The date a metadata value holds: a ``YYYY-MM-DD`` string naming a real calendar day, else None."""
    if type(value) is not str or not _ISO_DATE.match(value):
        return None
    try:
        return _dt.date.fromisoformat(value)
    except ValueError:
        return None


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _value_key(value: Any) -> Any:
    # Equality by JSON type: 1, 1.0 and True are equal (and hash alike) in Python, three values in JSON and stores.
    if isinstance(value, tuple):
        return tuple(_value_key(item) for item in value)
    return (type(value).__name__, value)


def _scalar_error(value: Any, what: str) -> str | None:
    if isinstance(value, _dt.datetime):
        return f"expected {what}, got a datetime {describe(value)}; give a date"
    if type(value) in (str, bool, int, _dt.date):
        return None
    if type(value) is float:
        return None if math.isfinite(value) else f"expected {what}, got a non-finite number {describe(value)}"
    return f"expected {what}, got {describe(value)}"


_SCALAR = "a string, a number, a boolean or a date"
_ORDERED = "a number or a date (ranges compare numbers with numbers and ISO dates with dates)"


def _check_compare(instance: Compare, attribute: attrs.Attribute, value: Any) -> None:
    op = instance.op
    if op is Op.EXISTS:
        if value is not None:
            raise UsageError(f"expected no value for $exists, got value={describe(value)}")
        return
    if op.is_list:
        if not isinstance(value, tuple) or not value:
            raise UsageError(f"expected a non-empty tuple of values for {op.value}, got value={describe(value)}")
        for item in value:
            problem = _scalar_error(item, _SCALAR)
            if problem:
                raise UsageError(f"{problem} in {op.value}")
        return
    problem = _scalar_error(value, _SCALAR)
    if problem is None and op.is_range and not (_is_number(value) or type(value) is _dt.date):
        problem = f"expected {_ORDERED}, got {describe(value)}"
    if problem:
        raise UsageError(f"{problem} for {op.value}")


def _check_field(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value or value.startswith("$"):
        raise UsageError(f"expected a metadata key (a non-empty string not starting with '$'), got field={describe(value)}")


def _to_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen
class Compare:
    """One comparison of the metadata value under `field`; `value` is a tuple for ``$in``/``$nin``, None for
    ``$exists``. Equal (and hashing alike) only when the values are equal by JSON type."""

    field: str = attrs.field(validator=_check_field)
    op: Op = attrs.field(validator=attrs.validators.instance_of(Op))
    value: Any = attrs.field(default=None, converter=_to_tuple, validator=_check_compare, eq=_value_key)


def _to_clauses(value: Any) -> tuple[Any, ...]:
    clauses = tuple(value)
    if not clauses:
        raise UsageError("expected at least one clause, got none")
    for clause in clauses:
        if not isinstance(clause, (Compare, And, Or, Not)):
            raise UsageError(f"expected a filter expression (Compare, And, Or, Not), got {describe(clause)}")
    return clauses


def _check_expr(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, (Compare, And, Or, Not)):
        raise UsageError(f"expected a filter expression (Compare, And, Or, Not), got {describe(value)}")


@attrs.frozen
class And:
    """Admits what every clause admits."""

    clauses: tuple[Expr, ...] = attrs.field(converter=_to_clauses)


@attrs.frozen
class Or:
    """Admits what any clause admits."""

    clauses: tuple[Expr, ...] = attrs.field(converter=_to_clauses)


@attrs.frozen
class Not:
    """Admits what `clause` does not (under `MissingKey.UNKNOWN`, an unknown stays unknown)."""

    clause: Expr = attrs.field(validator=_check_expr)


Expr = Union[Compare, And, Or, Not]


def _compare(expr: Compare, metadata: Mapping[str, Any], missing: MissingKey) -> bool | None:
    if expr.field not in metadata:
        if expr.op is Op.EXISTS:
            return False
        if missing is MissingKey.UNKNOWN:
            return None
        return expr.op in (Op.NE, Op.NIN)
    actual = metadata[expr.field]
    op = expr.op
    if op is Op.EXISTS:
        return True
    if op in (Op.EQ, Op.NE):
        return _equal(actual, expr.value) is (op is Op.EQ)
    if op.is_list:
        return any(_equal(actual, item) for item in expr.value) is (op is Op.IN)
    bound = expr.value
    if type(bound) is _dt.date:
        value = iso_date(actual)
        if value is None:
            return False
    elif _is_number(actual):
        value = actual
    else:
        return False
    if op is Op.GT:
        return bool(value > bound)
    if op is Op.GTE:
        return bool(value >= bound)
    if op is Op.LT:
        return bool(value < bound)
    return bool(value <= bound)


def _equal(actual: Any, expected: Any) -> bool:
    if type(expected) is _dt.date:
        return iso_date(actual) == expected
    return type(actual) is type(expected) and bool(actual == expected)


def evaluate(expr: Expr, metadata: Mapping[str, Any], missing: MissingKey = MissingKey.NEGATION_MATCHES) -> bool | None:
    """True, False or (under `MissingKey.UNKNOWN`) None for unknown: `expr` over one chunk's `metadata`."""
    if isinstance(expr, Compare):
        return _compare(expr, metadata, missing)
    if isinstance(expr, Not):
        inner = evaluate(expr.clause, metadata, missing)
        return None if inner is None else not inner
    # Kleene: a false clause decides an and, a true one an or; otherwise any unknown makes the whole unknown.
    decisive = isinstance(expr, Or)
    unknown = False
    for clause in expr.clauses:
        result = evaluate(clause, metadata, missing)
        if result is decisive:
            return decisive
        unknown = unknown or result is None
    return None if unknown else not decisive


def admits(expr: Expr, metadata: Mapping[str, Any], *, missing: MissingKey = MissingKey.NEGATION_MATCHES) -> bool:
    """Whether `expr` admits a chunk with this `metadata`: only a true expression does (reference semantics)."""
    return evaluate(expr, metadata, missing) is True


def fields_of(expr: Expr) -> tuple[str, ...]:
    """The metadata keys `expr` reads, first occurrence order, each once."""
    seen: dict[str, None] = {}

    def walk(node: Expr) -> None:
        if isinstance(node, Compare):
            seen.setdefault(node.field, None)
        elif isinstance(node, Not):
            walk(node.clause)
        else:
            for clause in node.clauses:
                walk(clause)

    walk(expr)
    return tuple(seen)


def operators_of(expr: Expr) -> frozenset[str]:
    """Every operator `expr` uses, spelt as in JSON (``$and``, ``$eq``, ...), and ``$date`` when it holds a date."""
    found: set[str] = set()

    def walk(node: Expr) -> None:
        if isinstance(node, Compare):
            found.add(node.op.value)
            values = node.value if isinstance(node.value, tuple) else (node.value,)
            if any(type(v) is _dt.date for v in values):
                found.add("$date")
        elif isinstance(node, Not):
            found.add("$not")
            walk(node.clause)
        else:
            found.add("$and" if isinstance(node, And) else "$or")
            for clause in node.clauses:
                walk(clause)

    walk(expr)
    return frozenset(found)


# ---- JSON form -----------------------------------------------------------------------------------------------


def _value_json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_value_json(item) for item in value]
    if type(value) is _dt.date:
        return {"$date": value.isoformat()}
    return value


def to_json(expr: Expr) -> dict[str, Any]:
    """The canonical JSON form of `expr`: every comparison as ``{field: {op: value}}``, every and as ``$and``."""
    if isinstance(expr, Compare):
        return {expr.field: {expr.op.value: True if expr.op is Op.EXISTS else _value_json(expr.value)}}
    if isinstance(expr, Not):
        return {"$not": to_json(expr.clause)}
    return {"$and" if isinstance(expr, And) else "$or": [to_json(clause) for clause in expr.clauses]}


_OPERATORS = ", ".join(op.value for op in Op) + ", $and, $or, $not"


def _value_from_json(raw: Any, path: str, what: str) -> Any:
    if isinstance(raw, dict):
        if set(raw) == {"$date"} and isinstance(raw["$date"], str):
            date = iso_date(raw["$date"])
            if date is not None:
                return date
        raise InputError(
            f'expected {what}; a date is {{"$date": "YYYY-MM-DD"}}, got {describe(raw)}', field=path, value=raw
        )
    if raw is None:
        raise InputError(
            f'expected {what}, got null; to ask whether a key is present use {{"$exists": true}}', field=path, value=raw
        )
    if type(raw) not in (str, bool, int, float) or (type(raw) is float and not math.isfinite(raw)):
        raise InputError(f"expected {what}, got {describe(raw)}", field=path, value=raw)
    return raw


def _field_from_json(name: str, raw: Any, path: str) -> Expr:
    if not isinstance(raw, dict) or not any(key.startswith("$") for key in raw):
        # The shorthand `{"lang": "en"}`: equality.
        return Compare(name, Op.EQ, _value_from_json(raw, path, _SCALAR))
    if set(raw) == {"$date"}:
        return Compare(name, Op.EQ, _value_from_json(raw, path, _SCALAR))
    clauses: list[Expr] = []
    for key, operand in raw.items():
        here = f"{path}.{key}"
        try:
            op = Op(key)
        except ValueError:
            raise InputError(f"expected an operator ({_OPERATORS}), got {key!r}", field=here, value=key) from None
        if op is Op.EXISTS:
            if not isinstance(operand, bool):
                raise InputError(f"expected true or false for $exists, got {describe(operand)}", field=here, value=operand)
            exists = Compare(name, Op.EXISTS)
            clauses.append(exists if operand else Not(exists))
        elif op.is_list:
            if not isinstance(operand, list) or not operand:
                raise InputError(f"expected a non-empty list of values for {key}, got {describe(operand)}", field=here, value=operand)
            items = tuple(_value_from_json(item, f"{here}[{i}]", _SCALAR) for i, item in enumerate(operand))
            clauses.append(Compare(name, op, items))
        else:
            value = _value_from_json(operand, here, _ORDERED if op.is_range else _SCALAR)
            if op.is_range and not (_is_number(value) or type(value) is _dt.date):
                raise InputError(f"expected {_ORDERED}, got {describe(operand)}", field=here, value=operand)
            clauses.append(Compare(name, op, value))
    return clauses[0] if len(clauses) == 1 else And(clauses)


def from_json(raw: Any, *, field: str = "where") -> Expr:
    """Read an expression from its JSON form; an InputError names the place in it (``field``, e.g.
    ``where.$and[1].price.$gt``) and what was expected."""
    if not isinstance(raw, dict) or not raw:
        raise InputError(
            f'expected a filter expression: a non-empty JSON object such as {{"lang": "en"}} or '
            f'{{"$and": [...]}}, got {describe(raw)}',
            field=field,
            value=raw,
        )
    clauses: list[Expr] = []
    for key, operand in raw.items():
        here = f"{field}.{key}"
        if not isinstance(key, str) or not key:
            raise InputError(f"expected a metadata key or an operator, got {describe(key)}", field=field, value=key)
        if key in ("$and", "$or"):
            if not isinstance(operand, list) or not operand:
                raise InputError(f"expected a non-empty list of expressions for {key}, got {describe(operand)}", field=here, value=operand)
            parts = [from_json(item, field=f"{here}[{i}]") for i, item in enumerate(operand)]
            clauses.append(And(parts) if key == "$and" else Or(parts))
        elif key == "$not":
            clauses.append(Not(from_json(operand, field=here)))
        elif key.startswith("$"):
            raise InputError(
                f"expected $and, $or, $not or a metadata key at this level, got {key!r} (comparison operators go "
                f'inside a field: {{"price": {{"$gt": 3}}}})',
                field=here,
                value=key,
            )
        else:
            clauses.append(_field_from_json(key, operand, here))
    return clauses[0] if len(clauses) == 1 else And(clauses)
