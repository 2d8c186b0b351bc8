"""Typed vocabulary of metamorphic relations: directions, severities, observations and verdicts.

A relation compares a *base* observation with a *follow-up* observation (a retriever run on a world and on
its perturbed twin) and returns a `Verdict`. Strategy modules in `ragmorph.strategies` build the catalog
from these types; the runner only evaluates them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import attrs

from .errors import ContractRule, UsageError
from .adapters import FILTER_KINDS
from .model import Hit, Ranking, World

__all__ = [
    "NO_SCORES",
    "Call",
    "Concern",
    "Direction",
    "Edit",
    "Instance",
    "Observation",
    "Plan",
    "Relation",
    "Role",
    "Severity",
    "Verdict",
    "compare_up_to_ties",
    "scores_tied",
]

# Two scores closer than this (relative to their size) count as a tie: re-indexing a permuted corpus may sum
# the same floats in another order, which moves scores in their last bits without changing the retriever.
TIE_TOLERANCE = 1e-6

# Why a relation that compares scores cannot judge a retriever without them, and how to give them.
NO_SCORES = (
    "the retriever returned hits without finite scores, so ties cannot be told apart; return each hit's score "
    "(LangChainRetriever: score_key= or scorer=; HTTPRetriever: score_field=; your own code: Hit(id, score))"
)


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


class Concern(enum.Enum):
    """What a hard violation of a relation puts at risk; triage shows tenant leaks, then contract breaches first."""

    TENANT_LEAK = "tenant_leak"
    CONTRACT = "contract"
    HARD = "hard"  # any other hard violation

    @property
    def rank(self) -> int:
        """Triage order, most serious first."""
        return tuple(Concern).index(self)

    @property
    def label(self) -> str:
        """The words reports use for this concern."""
        return {"tenant_leak": "tenant leak", "contract": "contract breach", "hard": "hard violation"}[self.value]


class Instance(enum.Enum):
    """Which retriever instance answers a call of a plan (the executor owns building, editing and closing them)."""

    # The unit's instance over the base corpus. A call over an edited corpus has the edit applied to it and undone
    # after (by `Call.edit`; unset: a delta when the instance takes one, else a fresh index over that corpus).
    # Answers are served from the run's call cache.
    BASE = "base"
    # The base instance as the earlier calls of the plan left it, never cached: state between calls is under test.
    SAME = "same"
    # A fresh instance the factory builds over the call's corpus (closed after the call).
    FRESH = "fresh"
    # The retriever's declared exact twin (a `ragmorph_twin` factory), built over the call's corpus.
    TWIN = "twin"
    # No retriever call: `Call.derive` turns the base observation's ranking into this observation's ranking.
    DERIVED = "derived"


class Edit(enum.Enum):
    """How the corpus of a call reaches an existing instance (BASE or SAME); always undone after the call."""

    DELTA = "delta"  # add(chunks) / remove(ids)
    UPDATE = "update"  # update(chunks): the same ids with new content
    INDEX = "index"  # index(corpus) on the existing instance
    ADD = "add"  # add(chunks) of ids the instance already holds: an upsert, a rejection or an ignored add


class Role(enum.Enum):
    """Which observation of the pair a call's answer is."""

    BASE = "base"
    FOLLOW = "follow"


@attrs.frozen
class Call:
    """One call of a plan: ask `world`'s query with its k and filters, over its corpus, on `instance`."""

    world: World
    instance: Instance = Instance.BASE
    edit: Edit | None = None
    role: Role | None = None
    derive: Callable[[Ranking], Ranking] | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Plan:
    """What a perturbation asks of the executor: calls made in order, two of them the base and follow-up.

    On the first response that breaks the retriever contract the executor stops: that invalid observation takes
    the first role not yet observed, and a role never reached is an empty observation of its world.
    """

    calls: tuple[Call, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        roles = [c.role for c in self.calls if c.role is not None]
        if roles.count(Role.BASE) != 1 or roles.count(Role.FOLLOW) != 1 or roles.index(Role.BASE) > roles.index(Role.FOLLOW):
            raise UsageError(f"expected a plan with one base call, then one follow-up call, got roles {[r.value for r in roles]}")
        for call in self.calls:
            if (call.instance is Instance.DERIVED) != (call.derive is not None) or (
                call.instance is Instance.DERIVED and call.role is not Role.FOLLOW
            ):
                raise UsageError("expected `derive` exactly on the follow-up call of Instance.DERIVED, got " + repr(call))

    @classmethod
    def pair(cls, base: World, follow: World, *, instance: Instance = Instance.BASE, edit: Edit | None = None) -> Plan:
        """The usual plan: the base world on the base instance, then the follow-up world on `instance`."""
        return cls((Call(base, role=Role.BASE), Call(follow, instance, edit, Role.FOLLOW)))

    def _of(self, role: Role) -> Call:
        return next(c for c in self.calls if c.role is role)

    @property
    def base(self) -> World:
        """The base world (of the base call)."""
        return self._of(Role.BASE).world

    @property
    def follow(self) -> World:
        """The follow-up world: the world change this plan tests."""
        return self._of(Role.FOLLOW).world


@attrs.frozen
class Observation:
    """What one retriever call on a world returned; `metrics` maps metric names (`R@5`) to their values on it.

    The executor attaches the metrics (computed on first use), so relations read values and never compute them.
    `rule` is the contract rule the response broke (more than k hits, a repeated or unknown id, a non-finite
    score...) and `invalid` the validator's message: then `ranking` is empty and only the contract relation
    judges the observation.
    """

    world: World
    ranking: Ranking
    metrics: Mapping[str, float | None] = attrs.field(factory=dict, eq=False, repr=False)
    invalid: str | None = None
    rule: ContractRule | None = None
    # Why a list shorter than k is not exhausted for this retriever (`Capabilities.cuts_short`), else None.
    cut_short: str | None = None

    @property
    def exhausted(self) -> bool:
        """True when the ranking has fewer hits than asked and that means no other chunk matches the call.

        A retriever that may end a list early for another reason (a token budget) declares it, and its short
        lists are never read as exhausted.
        """
        return len(self.ranking.hits) < self.world.params.k and self.cut_short is None


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
    # Follow-up hit ids that break the relation (a leaked chunk, a removed id returned): reports highlight them.
    culprits: tuple[str, ...] = ()

    @classmethod
    def ok(cls, detail: str = "", before: float | None = None, after: float | None = None) -> Verdict:
        """A verdict that the relation holds."""
        return cls(True, detail, before, after)

    @classmethod
    def broken(
        cls, detail: str, before: float | None = None, after: float | None = None, *, culprits: tuple[str, ...] = ()
    ) -> Verdict:
        """A verdict that the relation is violated; `detail` says how, `culprits` which returned ids break it."""
        return cls(False, detail, before, after, culprits=tuple(culprits))

    @classmethod
    def not_applicable(cls, detail: str) -> Verdict:
        """A verdict that this pair cannot test the relation."""
        return cls(True, detail, applicable=False)


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
    assumptions: tuple[str, ...] = ()
    # Perturbation type names this relation judges (empty: every perturbation of its family).
    applies_to: tuple[str, ...] = ()
    # Retriever traits the relation presumes (e.g. "lexical"); without them it is reported not_applicable.
    requires: tuple[str, ...] = ()
    # True for relations that judge the retriever's filtering: where ragmorph does the filtering for it
    # (`Capabilities.filtered_by == "ragmorph"`), they would judge ragmorph's own filter, so they are not_applicable.
    judges_filtering: bool = False
    # True for the filtering relations that judge which chunks a filter admits (a hit outside the admitted set),
    # not the search among them: where ragmorph computes the admitted set for a library without metadata
    # (`Capabilities.filtered_by == "selector"`, FAISS's id selector), they are not_applicable too.
    judges_admission: bool = attrs.field(default=False)
    # The kinds of filter (`FILTER_KINDS`) whose application the relation judges: where ragmorph applies only
    # other kinds (a stage dropping stale chunks), the relation still judges the library's own filter.
    filter_kinds: tuple[str, ...] = attrs.field(default=FILTER_KINDS, converter=tuple)
    # What a break puts at risk (a tenant leak, a contract breach, other): triage orders violation groups by it.
    concern: Concern = Concern.HARD
    # True when the relation presumes exact nearest-neighbour search: for a retriever declaring the trait
    # 'approximate' (an HNSW or IVF index) it is measured as a rate instead of failing the run.
    exact_search: bool = False
    # Traits naming the shape whose promise the relation presumes (e.g. "single_list"): a retriever that declares
    # them is judged hard; any other is measured as a rate (held/tested, never a failure), and the report suggests
    # the trait when the rate held in every probe. A shape only some correct retrievers have is never assumed.
    hard_with: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # What a violation record shows as its (base, follow-up) pair, from the pair judged (None: the pair itself):
    # a base asked thousands deep is shown as the part the relation compared, never as thousands of hits.
    shown: Callable[[Observation, Observation], tuple[Observation, Observation]] | None = attrs.field(
        default=None, repr=False, eq=False
    )
    # Why the relation cannot judge a pair of calls on these (base, follow-up) worlds whatever the retriever
    # answers (None: it can). `check` says not_applicable with this reason for such a pair; the runner asks it
    # before making a plan's calls, so a perturbation no relation can judge costs no call.
    precondition: Callable[[World, World], str | None] | None = attrs.field(default=None, repr=False, eq=False)

    @judges_admission.validator
    def _admission_is_filtering(self, _attribute: Any, value: bool) -> None:
        if value and not self.judges_filtering:
            raise UsageError(f"expected judges_admission=True only with judges_filtering=True, got it alone on {self.name!r}")

    @filter_kinds.validator
    def _known_kinds(self, _attribute: Any, value: tuple[str, ...]) -> None:
        if not value or not set(value) <= set(FILTER_KINDS):
            raise UsageError(f"expected filter_kinds among {list(FILTER_KINDS)}, got {value!r} on {self.name!r}")

    registry_fields: ClassVar[tuple[str, ...]] = (
        "name",
        "family",
        "summary",
        "target",
        "direction",
        "severity",
        "assumptions",
        "applies_to",
        "requires",
        "judges_filtering",
        "judges_admission",
        "filter_kinds",
        "concern",
        "exact_search",
        "hard_with",
    )

    @property
    def holds_for(self) -> str:
        """The retriever shapes the relation is hard for, in words (the "hard for" column of docs/relations.md)."""
        if self.severity is Severity.SOFT:
            return "a rate for every shape"
        if self.hard_with:
            shapes = f"retrievers declaring {', '.join(self.hard_with)}; a rate for the others"
        elif self.requires:
            shapes = f"retrievers declaring {', '.join(self.requires)}"
        else:
            shapes = "every shape"
        return shapes + ("; a rate under `approximate`" if self.exact_search else "")

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
        return Verdict.not_applicable(NO_SCORES)
    if len(actual) != len(expected):
        return Verdict.broken(
            f"expected {len(expected)} hit{'' if len(expected) == 1 else 's'}, got {len(actual)}: "
            f"{[h.id for h in expected]} vs {[h.id for h in actual]}"
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
