"""Typed vocabulary of metamorphic relations: directions, severities, observations and verdicts.

A relation compares a *base* observation with a *follow-up* observation (a retriever run on a world and on
its perturbed twin) and returns a `Verdict`. Strategy modules in `ragmorph.strategies` build the catalog
from these types; the runner only evaluates them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from .model import Params, Ranking, World

__all__ = [
    "Call",
    "Direction",
    "Observation",
    "Perturbation",
    "Relation",
    "Severity",
    "Verdict",
]


class Direction(enum.Enum):
    """The expected change of a metric or ranking property from base to follow-up."""

    NON_INCREASING = "non_increasing"
    NON_DECREASING = "non_decreasing"
    EQUAL = "equal"
    ZERO = "zero"
    PREFIX = "prefix"
    INVARIANT_UP_TO_TIES = "invariant_up_to_ties"
    # Ranking properties that are not a metric comparison (e.g. "the removed id is never returned").
    NEVER = "never"


class Severity(enum.Enum):
    """`hard`: every correct retriever satisfies it, a break is a failure; `soft`: reported as a rate."""

    HARD = "hard"
    SOFT = "soft"


@attrs.frozen
class Call:
    """One retriever call: a query with its parameters."""

    query: str
    params: Params


@attrs.frozen
class Observation:
    """What one retriever call on a world returned; `metrics` holds the metric values computed on it."""

    world: World
    ranking: Ranking
    metrics: Mapping[str, float | None] = attrs.field(factory=dict)


@attrs.frozen
class Verdict:
    """The outcome of checking one relation on one base/follow-up pair.

    `applicable=False` means the pair cannot test the relation (e.g. no gold chunk retrieved at all), which is
    neither a pass nor a failure; `detail` says why in one sentence either way.
    """

    holds: bool
    detail: str = ""
    before: float | None = None
    after: float | None = None
    applicable: bool = True

    @classmethod
    def ok(cls, detail: str = "", before: float | None = None, after: float | None = None) -> Verdict:
        """A verdict that the relation holds."""
        return cls(True, detail, before, after)

    @classmethod
    def broken(cls, detail: str, before: float | None = None, after: float | None = None) -> Verdict:
        """A verdict that the relation is violated; `detail` says how."""
        return cls(False, detail, before, after)

    @classmethod
    def not_applicable(cls, detail: str) -> Verdict:
        """A verdict that this pair cannot test the relation."""
        return cls(True, detail, applicable=False)


@runtime_checkable
class Perturbation(Protocol):
    """A small printable value describing one change to a world; `apply` is pure (`World -> World`)."""

    family: ClassVar[str]

    def apply(self, world: World) -> World:
        """Return the perturbed world; never edits `world`."""
        ...


@attrs.frozen
class Relation:
    """One metamorphic relation: what is compared, the expected direction, severity and assumptions.

    `check(base, follow_up)` returns a Verdict; it must be a pure function of the two observations.
    """

    name: str
    family: str
    summary: str
    target: str
    direction: Direction
    severity: Severity
    check: Callable[[Observation, Observation], Verdict] = attrs.field(repr=False, eq=False)
    tolerance: float = 0.0
    assumptions: tuple[str, ...] = ()

    registry_fields: ClassVar[tuple[str, ...]] = (
        "name",
        "family",
        "summary",
        "target",
        "direction",
        "severity",
        "tolerance",
        "assumptions",
    )

    def describe(self) -> dict[str, Any]:
        """The catalog row of this relation as plain data (for `ragmorph strategies` and reports)."""
        row: dict[str, Any] = {}
        for name in self.registry_fields:
            value = getattr(self, name)
            row[name] = value.value if isinstance(value, enum.Enum) else (list(value) if isinstance(value, tuple) else value)
        return row
