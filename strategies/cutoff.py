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
        cut = _span_cut(base, follow)
        if cut is not None:
            return cut
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


def _span_cut(base: Observation, follow: Observation) -> Verdict | None:
    """A broken verdict when a gold chunk's supporting span reached the final context at k but is cut at k'.

    Judged only when the top k at k' holds the same hits in the same order as at k: a stage that packs text
    (ContextPacker) then packs them alike, whatever the retriever's tie order. A reordering within ties may
    legitimately change what fits, and cutoff.prefix judges the order itself.
    """
    spans = base.world.case.spans
    earlier = base.ranking.hits[: base.world.params.k]
    later = follow.ranking.hits[: len(earlier)]
    if not spans or [h.id for h in earlier] != [h.id for h in later]:
        return None
    for old, new in zip(earlier, later):
        span = spans.get(old.id)
        if span is not None and old.keeps(span) and not new.keeps(span):
            name = "SpanR(cover=all)@{}"
            before = base.metrics[name.format(base.world.params.k)]
            after = follow.metrics[name.format(follow.world.params.k)]
            kept = f"characters {new.kept[0]}-{new.kept[1]} kept" if new.kept is not None else "none of it kept"
            return Verdict.broken(
                f"gold chunk {old.id!r} is in the final context with its supporting span [{span[0]}, {span[1]}) at "
                f"k={base.world.params.k}, but at k={follow.world.params.k} the span is cut ({kept}): "
                f"SpanR dropped from {before:.3g} to {after:.3g}",
                before,
                after,
                culprits=(old.id,),
            )
    return None


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
        summary="R@k' >= R@k when k' > k: a gold chunk found at k is found at k' (with its supporting span, if the "
        "case gives one and a stage packs text)",
        target="R@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.HARD,
        check=_recall,
        assumptions=(
            "a gold chunk may only drop out when it is tied at the cut and the tie overflows k'",
            "a supporting span kept at k stays kept at k' when the top k is unchanged: packing fills the context "
            "best first (ContextPacker), so more hits below cannot cut one above",
        ),
    ),
)


FAMILY = Family(
    name="cutoff",
    summary="k -> k' > k: the top k is a prefix of the top k'",
    relations=RELATIONS,
    perturbation_types=(RaiseCutoff,),
    draw=raised_cutoffs,
    max_examples=15,
)
