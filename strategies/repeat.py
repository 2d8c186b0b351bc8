"""Repeat family: asking again, after other calls or an undone edit, gives the same ranking.

Their plans ask the same instance (`Instance.SAME`), which bypasses the runner's call cache on purpose:
catching stale caches and state leaks is their point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Chunk, Filters, Params, World
from ragmorph.relations import (
    Call,
    Direction,
    Edit,
    Instance,
    Observation,
    Plan,
    Relation,
    Role,
    Severity,
    Verdict,
    compare_up_to_ties,
    scores_tied,
)

from ._core import Family, PerturbationBase, between_filters, fresh_id, ks_strategy, vocabulary

__all__ = ["FAMILY", "RELATIONS", "RepeatCall", "RoundTrip", "repeats"]


@attrs.frozen
class RepeatCall(PerturbationBase):
    """Repeat the base call on the same instance after the calls `between` (other k and filters)."""

    family: ClassVar[str] = "repeat"
    k: int
    between: tuple[Params, ...] = ()

    def plan(self, world: World) -> Plan:
        """The base call, the calls `between`, and the base call again, all on the same instance."""
        base = self.base(world)
        between = tuple(Call(attrs.evolve(base, params=params), Instance.SAME) for params in self.between)
        return Plan((Call(base, Instance.SAME, role=Role.BASE), *between, Call(base, Instance.SAME, role=Role.FOLLOW)))


@attrs.frozen
class RoundTrip(PerturbationBase):
    """Add `add` and remove `remove` with deltas, ask once, revert, then repeat the base call."""

    family: ClassVar[str] = "repeat"
    k: int
    add: tuple[Chunk, ...] = ()
    remove: tuple[str, ...] = ()

    def plan(self, world: World) -> Plan:
        """The base call, one call with the delta applied (and undone), and the base call again, on one instance."""
        base = self.base(world)
        corpus = base.corpus.with_chunks(self.add) if self.add else base.corpus
        edited = attrs.evolve(base, corpus=corpus.without(self.remove) if self.remove else corpus)
        return Plan(
            (
                Call(base, Instance.SAME, role=Role.BASE),
                Call(edited, Instance.SAME, Edit.DELTA),
                Call(base, Instance.SAME, role=Role.FOLLOW),
            )
        )

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids."""
        return self.remove


def repeats(
    world: World, *, ks: Sequence[int], delta: bool = False, filters: bool = True, **_: object
) -> st.SearchStrategy[PerturbationBase]:
    """Draw repeated calls (shrink toward none between) and, for delta retrievers, undone edits.

    Calls in between vary k and, for retrievers that take filters, the filters too.
    """
    tenant = world.case.tenant
    wider = sorted(set(ks) | {max(ks) * 2})
    calls = st.builds(Params, k=st.sampled_from(wider), filters=st.sampled_from(between_filters(world, filters)))
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


def first_repeats(
    world: World, *, ks: Sequence[int], delta: bool = False, filters: bool = True, **_: object
) -> tuple[PerturbationBase, ...]:
    """The repeats tried first, at the largest k (all in the space `repeats` draws from): the call asked twice
    in a row, then again after one call of each other k and filters; for delta retrievers, two chunks (gold
    first) removed in one delta and restored, and a chunk added and removed again."""
    top = max(ks)
    choices = [world.params.filters] + ([Filters(), Filters(current_only=True)] if filters else [])
    others = [Params(k, f) for k, f in zip((min(ks), top * 2, top), dict.fromkeys(choices))]
    if len(others) < 2:
        others.append(Params(top * 2, world.params.filters))
    found: list[PerturbationBase] = [RepeatCall(k=top), RepeatCall(k=top, between=tuple(others))]
    if delta:
        gold = [i for i in world.case.gold_ids if i in world.corpus]
        removable = gold + [c.id for c in world.corpus.chunks[:20] if c.id not in gold]
        if removable:
            # Two ids in one delta: index bookkeeping that shifts positions on a removal shows only then.
            found.append(RoundTrip(k=top, remove=tuple(removable[:2])))
        filler = vocabulary().filler_for("")
        found.append(RoundTrip(k=top, add=(Chunk(fresh_id(world.corpus, "roundtrip-0"), filler[0], tenant=world.case.tenant),)))
    return tuple(found)


def _identical(base: Observation, follow: Observation) -> Verdict:
    if any(not h.has_finite_score for h in (*base.ranking.hits, *follow.ranking.hits)):
        same = base.ranking.ids == follow.ranking.ids
    else:
        # Float noise in the last digits (SIMD paths, parallel reductions: 0.36265925 then 0.36265929) may swap
        # two hits whose scores tie within TIE_TOLERANCE, or one at the cut: that is not a finding. Every other
        # change of ids, and any score moving past the tolerance, is.
        # Where the same chunks came back with bit-identical scores, exact ties must keep their order: a
        # deterministic retriever breaks them alike on every call. A moved score is noise, and so is another chunk
        # at the cut: the chunk it displaced may have moved by noise although the visible scores are equal (two
        # identical texts in a noisy store), so compare_up_to_ties then accepts it only when tied at the boundary.
        before = {h.id: h.score for h in base.ranking.hits}
        common = [(before[h.id], h.score) for h in follow.ranking.hits if h.id in before]
        noisy = any(a != b for a, b in common) or len(common) < len(base.ranking.hits)
        same = all(scores_tied(a, b) for a, b in common) and (  # type: ignore[arg-type]
            base.ranking.ids == follow.ranking.ids or (noisy and compare_up_to_ties(base.ranking.hits, follow.ranking.hits).holds)
        )
    if not same:
        if base.ranking.ids == follow.ranking.ids:
            return Verdict.broken(
                f"the same call on the same index returned the same ids {list(base.ranking.ids)} with other scores: "
                f"{[h.score for h in follow.ranking.hits]} the second time, {[h.score for h in base.ranking.hits]} the first"
            )
        return Verdict.broken(
            f"the same call on the same index returned {list(follow.ranking.ids)} the second time, "
            f"{list(base.ranking.ids)} the first"
        )
    return Verdict.ok("identical ranking")


def _after_revert(base: Observation, follow: Observation) -> Verdict:
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(f"after an add/remove was undone, the same call returned another ranking: {verdict.detail}")
    return verdict


RELATIONS = (
    Relation(
        name="repeat.identical",
        family="repeat",
        summary="repeating a call after other read-only calls (other k, filters) returns the identical ranking",
        target="ranking@k",
        direction=Direction.EQUAL,
        severity=Severity.HARD,
        check=_identical,
        applies_to=("RepeatCall",),
        assumptions=(
            "deterministic retriever (no sampling): reads do not change its state",
            "scores equal within 1e-6 (relative) are ties: float noise may swap tied hits, and nothing else",
        ),
    ),
    Relation(
        name="repeat.after_revert",
        exact_search=True,
        family="repeat",
        summary="after an add/remove is applied and undone, the same call returns the same ranking up to ties",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_after_revert,
        applies_to=("RoundTrip",),
        assumptions=("a re-added chunk may move within its score tie, so ties are compared as sets",),
    ),
)


FAMILY = Family(
    name="repeat",
    summary="repeat a call after other calls (other k, filters) or after an undone add/remove",
    relations=RELATIONS,
    perturbation_types=(RepeatCall, RoundTrip),
    draw=repeats,
    explicit=first_repeats,
    max_examples=6,
)
