"""State family: an instance answers like a fresh instance of the same factory over the same corpus.

`repeat` compares calls on one instance. Here a fresh instance answers the same call: after the base instance
has answered other calls (other k and filters), a fresh instance over the same corpus must rank alike, so
state the base instance carries from its history shows; and a fresh instance over the corpus without a chunk
must never return that chunk, so state shared *between* instances (class-level caches, mutable defaults,
module globals) shows.

State shared between instances lives in the process, not in the instance, so a violation it causes is
reproduced (and its corpus minimised) only when the plan itself makes the calls that create that state. Each
plan here does: the other instance is built and asked inside the plan. The third check makes the other
direction explicit: building and asking an instance over another corpus must not change what the base
instance answers (a module-level index or client that the newest instance replaces).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Params, World
from ragmorph.relations import (
    Call,
    Direction,
    Instance,
    Observation,
    Plan,
    Relation,
    Role,
    Severity,
    Verdict,
    compare_up_to_ties,
)

from ._core import Family, PerturbationBase, between_filters, check_never, corpus_diff, ks_strategy, matching_ids

__all__ = ["FAMILY", "RELATIONS", "AnotherInstance", "FreshAfterCalls", "FreshWithout", "first_fresh_checks", "fresh_checks"]

_CANDIDATES = 12


@attrs.frozen
class FreshAfterCalls(PerturbationBase):
    """The base instance answers the calls `between`, then the base call; a fresh instance answers it too."""

    family: ClassVar[str] = "state"
    k: int
    between: tuple[Params, ...] = ()

    def plan(self, world: World) -> Plan:
        """Calls `between` and the base call on the base instance (uncached), then the base call on a fresh one."""
        base = self.base(world)
        between = tuple(Call(attrs.evolve(base, params=params), Instance.SAME) for params in self.between)
        return Plan((*between, Call(base, Instance.SAME, role=Role.BASE), Call(base, Instance.FRESH, role=Role.FOLLOW)))


@attrs.frozen
class FreshWithout(PerturbationBase):
    """The base instance answers the base call; a fresh instance over the corpus without `ids` answers it too."""

    family: ClassVar[str] = "state"
    k: int
    ids: tuple[str, ...]

    def apply(self, world: World) -> World:
        """The world without `ids`, at k."""
        return attrs.evolve(world, corpus=world.corpus.without(self.ids), params=attrs.evolve(world.params, k=self.k))

    def plan(self, world: World) -> Plan:
        """The base call on the base instance, then the call on a fresh instance over the smaller corpus."""
        return Plan.pair(self.base(world), self.apply(world), instance=Instance.FRESH)

    def referenced_ids(self) -> tuple[str, ...]:
        """The ids the fresh instance does not hold."""
        return self.ids


@attrs.frozen
class AnotherInstance(PerturbationBase):
    """The base instance answers the base call; an instance over the corpus without `ids` is built and asked
    (at k + 1, a call no other plan makes, so the call cache never answers it instead); the base instance
    answers the base call again."""

    family: ClassVar[str] = "state"
    k: int
    ids: tuple[str, ...]

    def plan(self, world: World) -> Plan:
        """Base call on the base instance (uncached), the other instance's call, the base call again."""
        base = self.base(world)
        other = attrs.evolve(world, corpus=world.corpus.without(self.ids), params=attrs.evolve(base.params, k=self.k + 1))
        return Plan(
            (Call(base, Instance.SAME, role=Role.BASE), Call(other, Instance.FRESH), Call(base, Instance.SAME, role=Role.FOLLOW))
        )

    def referenced_ids(self) -> tuple[str, ...]:
        """The ids the other instance does not hold."""
        return self.ids


def fresh_checks(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> st.SearchStrategy[PerturbationBase]:
    """Draw a fresh-instance comparison; shrinks toward no calls in between, or the removal of the chunk sharing
    most query words, at the smallest k."""
    wider = sorted(set(ks) | {2 * max(ks)})
    choices = list(dict.fromkeys(between_filters(world, filters)))
    calls = st.builds(Params, k=st.sampled_from(wider), filters=st.sampled_from(choices))
    after = st.builds(FreshAfterCalls, k=ks_strategy(ks), between=st.lists(calls, max_size=3).map(tuple))
    candidates = matching_ids(world, limit=_CANDIDATES)
    if not candidates:
        return after
    one = st.lists(st.sampled_from(candidates), min_size=1, max_size=1).map(tuple)
    without = st.builds(FreshWithout, k=ks_strategy(ks), ids=one)
    another = st.builds(AnotherInstance, k=ks_strategy(ks), ids=one)
    return st.one_of(without, another, after)


def first_fresh_checks(world: World, *, ks: Sequence[int], **_: object) -> tuple[PerturbationBase, ...]:
    """The check tried first: another instance without the chunk sharing most query words is built and asked
    between two base calls, at the largest k (in the space `fresh_checks` draws from).

    It goes before any drawn check because state shared between instances shows cleanly only in the plan that
    creates it: once a drawn plan has built a fresh instance over another corpus, a shared index shows as a
    disagreement with a fresh instance of the same corpus, whose corpus cannot be minimised.
    """
    return tuple(AnotherInstance(k=max(ks), ids=(top,)) for top in matching_ids(world, limit=1))


def _agrees(base: Observation, follow: Observation) -> Verdict:
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(f"the instance that answered earlier calls and a fresh one over the same corpus disagree: {verdict.detail}")
    return verdict


def _fresh_never_removed(base: Observation, follow: Observation) -> Verdict:
    removed = corpus_diff(base.world.corpus, follow.world.corpus)[1]
    if not removed:
        return Verdict.not_applicable("the fresh instance holds every chunk")
    verdict = check_never(set(removed), follow, "chunk the fresh instance was not given")
    if not verdict.holds:
        return Verdict.broken(f"{verdict.detail}: state is shared between instances (a class-level cache or a mutable default)")
    return verdict


def _unaffected(base: Observation, follow: Observation) -> Verdict:
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(
            f"building and asking another instance over a smaller corpus changed what this instance answers: "
            f"{verdict.detail}; state is shared between instances (a module-level index, client or cache that the "
            "newest instance replaces)"
        )
    return verdict


RELATIONS = (
    Relation(
        name="state.fresh_instance_agrees",
        exact_search=True,
        family="state",
        summary="after other calls (other k, filters), the instance ranks like a fresh instance over the same corpus (up to ties)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_agrees,
        applies_to=("FreshAfterCalls",),
        assumptions=("deterministic retriever: building an index twice over one corpus gives the same index; exact search",),
    ),
    Relation(
        name="state.other_instance_no_effect",
        family="state",
        summary="building and asking another instance (over the corpus without a chunk) leaves what this instance answers unchanged (up to ties)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_unaffected,
        applies_to=("AnotherInstance",),
        assumptions=(
            "instances share no index state (each factory call builds its own index)",
            "deterministic retriever: the same call on an instance nothing else changed ranks alike",
        ),
    ),
    Relation(
        name="state.fresh_never_returns_removed",
        family="state",
        summary="a fresh instance over the corpus without a chunk never returns that chunk",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_fresh_never_removed,
        applies_to=("FreshWithout",),
        assumptions=("instances share no index state (each factory call builds its own index)",),
    ),
)


FAMILY = Family(
    name="state",
    summary="compare with a fresh instance: after other calls, and over the corpus without a chunk; another instance leaves this one alone",
    relations=RELATIONS,
    draw=fresh_checks,
    edits_corpus=True,
    perturbation_types=(FreshAfterCalls, FreshWithout, AnotherInstance),
    explicit=first_fresh_checks,
    max_examples=6,
)
