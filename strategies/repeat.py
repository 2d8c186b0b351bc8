"""Repeat family: asking again, after other calls or an undone edit, gives the same ranking.

These perturbations bypass the runner's call cache on purpose: catching stale caches and state leaks is
their point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Chunk, Filters, Params, World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties

from ._core import REPEAT, Family, PerturbationBase, fresh_id, ks_strategy, vocabulary

__all__ = ["FAMILY", "RELATIONS", "RepeatCall", "RoundTrip", "repeats"]


@attrs.frozen
class RepeatCall(PerturbationBase):
    """Repeat the base call on the same instance after the calls `between` (other k and filters)."""

    family: ClassVar[str] = "repeat"
    mode: ClassVar[str] = REPEAT
    k: int
    between: tuple[Params, ...] = ()

    def interleave(self, world: World) -> tuple[Params, ...]:
        """The calls made between the first and the repeated call."""
        return self.between


@attrs.frozen
class RoundTrip(PerturbationBase):
    """Add `add` and remove `remove` with deltas, ask once, revert, then repeat the base call."""

    family: ClassVar[str] = "repeat"
    mode: ClassVar[str] = REPEAT
    k: int
    add: tuple[Chunk, ...] = ()
    remove: tuple[str, ...] = ()

    def round_trip(self, world: World) -> tuple[tuple[Chunk, ...], tuple[str, ...]]:
        """The delta applied (and reverted) before the repeated call."""
        return self.add, self.remove

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids."""
        return self.remove


def repeats(world: World, *, ks: Sequence[int], delta: bool = False, **_: object) -> st.SearchStrategy[PerturbationBase]:
    """Draw repeated calls (shrink toward none between) and, for delta retrievers, undone edits."""
    tenant = world.case.tenant
    filter_choices = [world.params.filters, Filters(), Filters(current_only=True)]
    if tenant is not None:
        filter_choices.append(Filters(tenant=tenant, current_only=True))
    wider = sorted(set(ks) | {max(ks) * 2})
    calls = st.builds(Params, k=st.sampled_from(wider), filters=st.sampled_from(filter_choices))
    repeat = st.builds(RepeatCall, k=ks_strategy(ks), between=st.lists(calls, max_size=4).map(tuple))
    if not delta:
        return repeat
    filler = vocabulary().filler_for("")
    added = st.lists(st.lists(st.sampled_from(filler), min_size=1, max_size=8).map(" ".join), max_size=2).map(
        lambda texts: tuple(
            Chunk(fresh_id(world.corpus, f"roundtrip-{n}"), text, tenant=tenant) for n, text in enumerate(texts)
        )
    )
    removable = list(world.case.gold_ids if any(i in world.corpus for i in world.case.gold_ids) else ())
    removable = [i for i in removable if i in world.corpus] + [c.id for c in world.corpus.chunks[:20] if c.id not in removable]
    removed = st.lists(st.sampled_from(removable), max_size=2, unique=True).map(tuple)
    trip = st.builds(RoundTrip, k=ks_strategy(ks), add=added, remove=removed).filter(lambda t: bool(t.add or t.remove))
    return st.one_of(repeat, trip)


def _identical(base: Observation, follow: Observation) -> Verdict:
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(f"the same call returned another ranking the second time: {verdict.detail}")
    return verdict


RELATIONS = (
    Relation(
        name="repeat.identical",
        family="repeat",
        summary="repeating a call, after other calls or an undone add/remove, returns the identical ranking",
        target="ranking@k",
        direction=Direction.EQUAL,
        severity=Severity.HARD,
        check=_identical,
        assumptions=(
            "deterministic retriever (no sampling); a re-added chunk may move within its score tie, so ties are "
            "compared as sets",
        ),
    ),
)


def _applicable(world: World) -> str | None:
    return None


FAMILY = Family(
    name="repeat",
    summary="repeat a call after other calls (other k, filters) or after an undone add/remove",
    relations=RELATIONS,
    draw=repeats,
    applicable=_applicable,
)
