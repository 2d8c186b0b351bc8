"""Cutoff family: raising k must extend the ranking, never reshuffle it (up to score ties)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties, scores_tied

from ._core import Family, PerturbationBase, ks_strategy

__all__ = ["FAMILY", "RELATIONS", "RaiseCutoff", "raised_cutoffs"]


@attrs.frozen
class RaiseCutoff(PerturbationBase):
    """Ask the same query again with a larger cutoff `k_to` (> k)."""

    family: ClassVar[str] = "cutoff"
    k: int
    k_to: int

    def apply(self, world: World) -> World:
        """The same world asked with `k_to` hits."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k_to))


def raised_cutoffs(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[RaiseCutoff]:
    """Draw `k -> k_to`; shrinks toward the smallest k and a gap of 1."""
    top = max(10, max(ks))
    return st.builds(
        lambda k, gap: RaiseCutoff(k=k, k_to=k + gap), ks_strategy(ks), st.integers(min_value=1, max_value=top)
    )


def _prefix(base: Observation, follow: Observation) -> Verdict:
    k = base.world.params.k
    verdict = compare_up_to_ties(base.ranking.hits[:k], follow.ranking.hits[:k])
    if not verdict.holds:
        return Verdict.broken(f"top {k} at k={follow.world.params.k} differs from the ranking at k={k}: {verdict.detail}")
    return verdict


def _recall(base: Observation, follow: Observation) -> Verdict:
    gold = set(base.world.case.gold_ids)
    if not gold:
        return Verdict.not_applicable("the case has no gold chunks, so recall is undefined")
    before_ids = [h for h in base.ranking.hits if h.id in gold]
    after_ids = {h.id for h in follow.ranking.hits}
    before, after = base.metrics[f"R@{base.world.params.k}"], follow.metrics[f"R@{follow.world.params.k}"]
    missing = [h for h in before_ids if h.id not in after_ids]
    if not missing:
        return Verdict.ok("every gold chunk found at k is still found at the larger k", before, after)
    hits = base.ranking.hits
    last = follow.ranking.hits[-1] if follow.ranking.hits else None
    for hit in missing:
        # Allowed only when the gold chunk sits in a tie at the cut that overflows even the larger cutoff.
        tied_at_cut = hit.has_finite_score and hits[-1].has_finite_score and scores_tied(hit.score, hits[-1].score)
        overflow = last is not None and last.has_finite_score and hit.has_finite_score and scores_tied(last.score, hit.score)
        if not (tied_at_cut and overflow):
            return Verdict.broken(
                f"gold chunk {hit.id!r} is in the top {base.world.params.k} but not in the top "
                f"{follow.world.params.k}: R dropped from {before:.3g} to {after:.3g}",
                before,
                after,
            )
    return Verdict.ok("recall only moved within a score tie at the cut", before, after)


RELATIONS = (
    Relation(
        name="cutoff.prefix",
        exact_search=True,
        family="cutoff",
        summary="the ranking at k equals the ranking at a larger k' cut to k, up to score ties",
        target="ranking@k",
        direction=Direction.PREFIX,
        severity=Severity.HARD,
        check=_prefix,
        assumptions=(
            "exact search: approximate indexes whose candidate pool grows with k may legitimately differ",
            "ties are judged on the scores of the ranking at k; retrievers without scores are not judged",
        ),
    ),
    Relation(
        name="cutoff.recall",
        exact_search=True,
        family="cutoff",
        summary="R@k' >= R@k when k' > k: a gold chunk found at k is found at k'",
        target="R@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.HARD,
        check=_recall,
        assumptions=("a gold chunk may only drop out when it is tied at the cut and the tie overflows k'",),
    ),
)


FAMILY = Family(
    name="cutoff",
    summary="k -> k' > k: the top k is a prefix of the top k'",
    relations=RELATIONS,
    perturbation_types=(RaiseCutoff,),
    draw=raised_cutoffs,
    max_examples=10,
)
