"""Typed vocabulary of metamorphic relations: directions, severities, observations and verdicts.

A relation compares a *base* observation with a *follow-up* observation (a retriever run on a world and on
its perturbed twin) and returns a `Verdict`. Strategy modules in `ragmorph.strategies` build the catalog
from these types; the runner only evaluates them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from .model import Hit, Params, Ranking, World

__all__ = [
    "Call",
    "Direction",
    "Observation",
    "Perturbation",
    "Relation",
    "Severity",
    "Verdict",
    "compare_up_to_ties",
    "scores_tied",
]

# Two scores closer than this (relative to their size) count as a tie: re-indexing a permuted corpus may sum
# the same floats in another order, which moves scores in their last bits without changing the retriever.
TIE_TOLERANCE = 1e-6


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
    """What one retriever call on a world returned; `metrics` holds the metric values computed on it.

    `invalid` is the validator's message when the response broke the retriever contract (more than k hits,
    a repeated or unknown id, a non-finite score...): then `ranking` is empty and only the contract relation
    judges the observation.
    """

    world: World
    ranking: Ranking
    metrics: Mapping[str, float | None] = attrs.field(factory=dict)
    invalid: str | None = None


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
    # Perturbation type names this relation judges (empty: every perturbation of its family).
    applies_to: tuple[str, ...] = ()
    # Retriever traits the relation presumes (e.g. "lexical"); without them it is reported not_applicable.
    requires: tuple[str, ...] = ()

    registry_fields: ClassVar[tuple[str, ...]] = (
        "name",
        "family",
        "summary",
        "target",
        "direction",
        "severity",
        "tolerance",
        "assumptions",
        "applies_to",
        "requires",
    )

    def describe(self) -> dict[str, Any]:
        """The catalog row of this relation as plain data (for `ragmorph strategies` and reports)."""
        row: dict[str, Any] = {}
        for name in self.registry_fields:
            value = getattr(self, name)
            row[name] = value.value if isinstance(value, enum.Enum) else (list(value) if isinstance(value, tuple) else value)
        return row


def scores_tied(a: float, b: float) -> bool:
    """True when two scores are equal up to floating-point noise (see TIE_TOLERANCE)."""
    return abs(a - b) <= TIE_TOLERANCE * max(1.0, abs(a), abs(b))


def _tie_classes(hits: Sequence[Hit]) -> list[tuple[int, int]]:
    """Half-open position ranges of consecutive hits whose scores tie with the first hit of the range."""
    classes: list[tuple[int, int]] = []
    start = 0
    for position in range(1, len(hits) + 1):
        if position == len(hits) or not scores_tied(hits[start].score, hits[position].score):  # type: ignore[arg-type]
            classes.append((start, position))
            start = position
    return classes


def compare_up_to_ties(
    expected: Sequence[Hit],
    actual: Sequence[Hit],
    *,
    open_end: bool = True,
    scores_comparable: bool = True,
    below: Sequence[Hit] = (),
) -> Verdict:
    """Judge whether `actual` is `expected` up to reordering within score ties.

    Tie classes come from the scores of `expected`. Every class must hold the same ids in `actual`, except the
    last one when `open_end` (the cut at k may fall inside a tie, so `actual` may show other members of that
    tie that `expected` cut off): there, an id `expected` does not list is accepted, and when
    `scores_comparable` its score in `actual` must tie with the boundary score, and it must not be one of
    `below` (hits known to rank after `expected`) scored lower than the boundary. Not applicable when
    `expected` carries no finite scores (ties cannot be told apart).
    """
    if any(not hit.has_finite_score for hit in expected):
        return Verdict.not_applicable("the retriever returned hits without finite scores, so ties are unknown")
    if len(actual) != len(expected):
        return Verdict.broken(
            f"expected {len(expected)} hits, got {len(actual)}: {[h.id for h in expected]} vs {[h.id for h in actual]}"
        )
    classes = _tie_classes(expected)
    lower = {h.id: h.score for h in below if h.has_finite_score}
    listed = {h.id for h in expected}
    for number, (start, end) in enumerate(classes):
        want = {hit.id for hit in expected[start:end]}
        got = actual[start:end]
        boundary = open_end and number == len(classes) - 1
        score = expected[start].score
        for offset, hit in enumerate(got):
            if hit.id in want:
                continue
            if boundary and hit.id not in listed:
                if hit.id in lower and not scores_tied(lower[hit.id], score):  # type: ignore[arg-type]
                    return Verdict.broken(
                        f"rank {start + offset + 1}: expected one of {sorted(want)} (score {score:.6g}), got {hit.id!r}, "
                        f"which ranks lower with score {lower[hit.id]:.6g}"
                    )
                if not scores_comparable or (hit.has_finite_score and scores_tied(hit.score, score)):  # type: ignore[arg-type]
                    continue
                return Verdict.broken(
                    f"rank {start + offset + 1}: expected one of {sorted(want)} or another chunk tied at score "
                    f"{score:.6g}, got {hit.id!r} with score {hit.score!r}"
                )
            return Verdict.broken(
                f"rank {start + offset + 1}: expected one of {sorted(want)} (tied at score {score:.6g}), got {hit.id!r}"
            )
    return Verdict.ok("rankings agree up to score ties")
