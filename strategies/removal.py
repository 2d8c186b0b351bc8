"""Removal family: a removed chunk is gone for good; removing evidence can only lower recall (softly)."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, check_never, corpus_diff

__all__ = ["FAMILY", "RELATIONS", "RemoveChunks", "removals"]


@attrs.frozen
class RemoveChunks(PerturbationBase):
    """Remove the chunks `ids` from the corpus (`group` names the evidence group they support, if any; they may
    be some or all of its members)."""

    family: ClassVar[str] = "removal"
    k: int
    ids: tuple[str, ...]
    group: int | None = None

    def apply(self, world: World) -> World:
        """The world without `ids`."""
        return attrs.evolve(world, corpus=world.corpus.without(self.ids), params=attrs.evolve(world.params, k=self.k))

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids."""
        return self.ids


def removals(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[RemoveChunks]:
    """Draw the removal of supporting chunks of one evidence group (some or all of them), or of other chunks.

    A group removal is a non-empty subset of the group's members, so it shrinks toward a single id (the
    smallest removal that exposes a delete that did not happen) and grows to the whole group (which tests
    that the group is no longer covered). Other removals shrink toward fewer, earlier chunks.
    """
    # Past the default cutoffs too: a chunk deleted from one of a hybrid's indexes only keeps one leg's share of
    # its fused score and sinks below rank 10, where no default k looks (capped, so a large corpus stays cheap).
    cutoffs = st.sampled_from(tuple(sorted({*ks, min(len(world.corpus) + 1, _DEEP)})))
    choices = []
    groups = [
        (number, tuple(m for m in group if m in world.corpus)) for number, group in enumerate(world.case.evidence)
    ]
    groups = [(n, ids) for n, ids in groups if ids]
    if groups:

        @st.composite
        def group_removal(draw: st.DrawFn) -> RemoveChunks:
            k = draw(cutoffs)
            number, members = draw(st.sampled_from(groups))
            ids = draw(st.lists(st.sampled_from(members), min_size=1, max_size=len(members), unique=True))
            return RemoveChunks(k=k, ids=tuple(ids), group=number)

        choices.append(group_removal())
    gold = set(world.case.gold_ids)
    others = list(itertools.filterfalse(gold.__contains__, map(_ID, world.corpus.chunks)))  # at C speed
    if others:
        # Sampled by position: Hypothesis labels a sampled sequence by hashing it whole (100k ids, per unit), a
        # range by its bounds; the draws are the same.
        by_position = st.sampled_from(range(len(others))).map(others.__getitem__)
        picked = st.lists(by_position, min_size=1, max_size=min(3, len(others)), unique=True)
        choices.append(st.builds(lambda k, ids: RemoveChunks(k=k, ids=tuple(ids)), cutoffs, picked))
    return st.one_of(choices)


_ID = operator.attrgetter("id")
# The deepest cutoff a removal asks at: past the corpus for corpora up to this size.
_DEEP = 1000


def _removed(base: Observation, follow: Observation) -> frozenset[str]:
    return corpus_diff(base.world.corpus, follow.world.corpus)[1]


def _never_returned(base: Observation, follow: Observation) -> Verdict:
    removed = _removed(base, follow)
    if not removed:
        return Verdict.not_applicable("nothing was removed")
    return check_never(removed, follow, "removed chunk")


def _group_uncovered(base: Observation, follow: Observation) -> Verdict:
    removed = _removed(base, follow)
    emptied = [
        number
        for number, group in enumerate(base.world.case.evidence)
        if any(m in base.world.corpus for m in group) and all(m in removed or m not in base.world.corpus for m in group)
    ]
    if not emptied:
        return Verdict.not_applicable("no evidence group lost all of its supporting chunks")
    returned = {h.id for h in follow.ranking.hits}
    for number in emptied:
        covering = sorted(returned & set(base.world.case.evidence[number]))
        if covering:
            return Verdict.broken(f"evidence group {number} is still covered by removed chunk(s) {covering}", 0, 1)
    return Verdict.ok(f"evidence group(s) {emptied} no longer covered", 0, 0)


def _coverage(observation: Observation) -> tuple[float, float]:
    k = observation.world.params.k
    return observation.metrics[f"R@{k}"], observation.metrics[f"GroupR@{k}"]  # type: ignore[return-value]


def _recall_non_increasing(base: Observation, follow: Observation) -> Verdict:
    removed = _removed(base, follow)
    if not base.world.case.gold_ids or not removed or not removed <= set(base.world.case.gold_ids):
        return Verdict.not_applicable("only judged when gold chunks (and nothing else) are removed")
    (r0, g0), (r1, g1) = _coverage(base), _coverage(follow)
    if r1 > r0 or g1 > g0:
        return Verdict.broken(f"recall rose after removing gold: R {r0:.3g} -> {r1:.3g}, GroupR {g0:.3g} -> {g1:.3g}", r0, r1)
    return Verdict.ok(f"R {r0:.3g} -> {r1:.3g}, GroupR {g0:.3g} -> {g1:.3g}", r0, r1)


RELATIONS = (
    Relation(
        name="removal.removed_never_returned",
        family="removal",
        summary="a removed chunk id is never returned",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_never_returned,
        assumptions=("the index is rebuilt or updated with remove(ids) before the follow-up call",),
    ),
    Relation(
        name="removal.group_uncovered",
        family="removal",
        summary="after removing the sole supporting chunks of an evidence group, that group is not covered",
        target="GroupR@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        check=_group_uncovered,
    ),
    Relation(
        name="removal.recall_non_increasing",
        family="removal",
        summary="removing gold chunks does not raise R@k or GroupR@k",
        target="R@k",
        direction=Direction.NON_INCREASING,
        severity=Severity.SOFT,
        check=_recall_non_increasing,
        assumptions=("soft: removal shifts corpus statistics (BM25 idf, average length) and may reorder the rest",),
    ),
)


def _applicable(world: World) -> str | None:
    if len(world.corpus) == 0:
        return "the corpus is empty"
    return None


FAMILY = Family(
    name="removal",
    summary="remove the supporting chunks of an evidence group, or other chunks",
    relations=RELATIONS,
    perturbation_types=(RemoveChunks,),
    draw=removals,
    applicable=_applicable,
    edits_corpus=True,
    max_examples=8,
)
