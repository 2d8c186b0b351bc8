"""Reorder family: the order chunks were indexed in must not matter, beyond breaking score ties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Ranking, World
from ragmorph.relations import Call, Direction, Instance, Observation, Plan, Relation, Role, Severity, Verdict, compare_up_to_ties

from ._core import Family, PerturbationBase, ks_strategy, ruled_out

__all__ = ["FAMILY", "RELATIONS", "PermuteCorpus", "PromoteRelevant", "reorderings"]


@attrs.frozen
class PermuteCorpus(PerturbationBase):
    """Re-index the corpus reversed (if `reverse`) and then with each `(source, target)` position move applied."""

    family: ClassVar[str] = "reorder"
    k: int
    reverse: bool = False
    moves: tuple[tuple[int, int], ...] = ()

    def order(self, size: int) -> list[int]:
        """The permutation of corpus positions this perturbation produces."""
        order = list(range(size))[::-1] if self.reverse else list(range(size))
        for source, target in self.moves:
            if size:
                order.insert(target % size, order.pop(source % size))
        return order

    def apply(self, world: World) -> World:
        """The world over the permuted corpus."""
        corpus = world.corpus.reordered(self.order(len(world.corpus)))
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))


@attrs.frozen
class PromoteRelevant(PerturbationBase):
    """Evaluator mode: swap the relevant hit at rank `lower` with the irrelevant one at rank `upper` (< lower)."""

    family: ClassVar[str] = "reorder"
    k: int
    upper: int
    lower: int

    def plan(self, world: World) -> Plan:
        """One retriever call; the follow-up ranking is the base ranking with the two hits swapped."""
        base = self.base(world)
        return Plan((Call(base, role=Role.BASE), Call(base, Instance.DERIVED, role=Role.FOLLOW, derive=self.promoted)))

    def promoted(self, base: Ranking) -> Ranking:
        """The base ranking with the two hits swapped (unchanged when the ranks do not exist)."""
        hits = list(base.hits)
        if self.lower < len(hits):
            hits[self.upper], hits[self.lower] = hits[self.lower], hits[self.upper]
        return Ranking(hits)


def reorderings(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[PerturbationBase]:
    """Draw corpus permutations (shrink toward no reversal, fewer moves, earlier positions) or relevance swaps."""
    size = max(1, len(world.corpus))
    gold_positions = [world.corpus.position(i) for i in world.case.gold_ids if i in world.corpus]
    sources = st.one_of(st.sampled_from(gold_positions), st.integers(0, size - 1)) if gold_positions else st.integers(0, size - 1)
    moves = st.lists(st.tuples(sources, st.integers(0, size - 1)), max_size=4).map(tuple)
    permute = st.builds(PermuteCorpus, k=ks_strategy(ks), reverse=st.booleans(), moves=moves)
    swap = st.integers(0, max(ks) - 2).flatmap(
        lambda upper: st.builds(PromoteRelevant, k=ks_strategy(ks), upper=st.just(upper), lower=st.integers(upper + 1, max(ks) - 1))
    )
    return st.one_of(permute, swap) if max(ks) >= 2 else permute


def _reordered(base: World, follow: World) -> str | None:
    return "the permutation left the corpus order unchanged" if base.corpus.chunks == follow.corpus.chunks else None


def _has_gold(base: World, follow: World) -> str | None:
    return None if base.case.gold_ids else "the case has no gold chunks"


def _invariant(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_reordered, base, follow)) is not None:
        return unjudged
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(f"re-indexing the same chunks in another order changed the ranking: {verdict.detail}")
    return verdict


def _promote(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_has_gold, base, follow)) is not None:
        return unjudged
    case, k = base.world.case, base.world.params.k
    gold = set(case.gold_ids)
    before_ids, after_ids = base.ranking.ids, follow.ranking.ids
    moved = [i for i, (a, b) in enumerate(zip(before_ids, after_ids)) if a != b]
    if len(moved) != 2 or not (after_ids[moved[0]] in gold and before_ids[moved[0]] not in gold) or moved[1] >= k:
        return Verdict.not_applicable("the swap did not move a relevant hit above an irrelevant one within k")
    names = (f"CP@{k}", f"AP@{k}")
    for name in names:
        b, a = base.metrics[name], follow.metrics[name]
        if b is not None and a is not None and a < b - 1e-12:
            return Verdict.broken(f"{name} fell from {b:.6g} to {a:.6g} when a relevant hit moved up", b, a)
    return Verdict.ok("CP@k and AP@k did not fall", base.metrics[names[0]], follow.metrics[names[0]])


RELATIONS = (
    Relation(
        name="reorder.invariant",
        exact_search=True,
        family="reorder",
        summary="permuting the corpus leaves the ranking invariant up to score ties",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_invariant,
        applies_to=("PermuteCorpus",),
        hard_with=("single_list",),
        assumptions=(
            "exact search: approximate indexes (HNSW) built in another insertion order may return other neighbours",
            "scores do not depend on corpus order beyond floating-point noise",
            "a single scored list (trait 'single_list'): a leg of a rank fusion may break its score ties by "
            "insertion order, and the tied chunks then take other ranks and other fused scores (LangChain's "
            "EnsembleRetriever over BM25Retriever does); without the trait, measured as a rate",
        ),
    ),
    Relation(
        name="reorder.promote_relevant",
        family="reorder",
        summary="evaluator mode: moving a relevant context above an irrelevant one never lowers CP@k or AP@k",
        target="CP@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.HARD,
        check=_promote,
        applies_to=("PromoteRelevant",),
        assumptions=("judges the metric implementation on the base ranking; makes no retriever call",),
    ),
)


def _applicable(world: World) -> str | None:
    if len(world.corpus) < 2:
        return "the corpus has fewer than two chunks to reorder"
    return None


FAMILY = Family(
    name="reorder",
    summary="permute the corpus order; move a relevant context above an irrelevant one (evaluator mode)",
    relations=RELATIONS,
    perturbation_types=(PermuteCorpus, PromoteRelevant),
    draw=reorderings,
    applicable=_applicable,
    edits_corpus=True,
    max_examples=6,
)
