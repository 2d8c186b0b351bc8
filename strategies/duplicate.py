"""Duplicate family: a chunk copied whole under a new id scores exactly like its original in a single scored list.

The copy has the original's text, tenant, source, versions and metadata; only the id differs, and the index is
built over the corpus with both. A retriever whose score is a function of a chunk's content scores the two
alike in the same run (corpus statistics are shared). A rank fusion need not: the two take adjacent ranks in
each leg, and so different fused scores. The relation is therefore hard for a retriever declaring `single_list`
and measured as a rate for any other; when the rate holds in every probe, the report suggests the trait, which
also makes `reorder.invariant` hard. This family gives that evidence for retrievers without add or update
(the lifecycle family's copies give it for those that have them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import NO_SCORES, Direction, Observation, Relation, Severity, Verdict, scores_tied

from ._core import Family, PerturbationBase, corpus_diff, fresh_id, ks_strategy

__all__ = ["FAMILY", "RELATIONS", "AddCopy", "copies"]


@attrs.frozen
class AddCopy(PerturbationBase):
    """Insert a copy of chunk `original`, id `copy_id`, at corpus position `at`."""

    family: ClassVar[str] = "duplicate"
    k: int
    original: str
    copy_id: str
    at: int = 0

    def apply(self, world: World) -> World:
        """The world with the copy inserted (the original is kept)."""
        copy = attrs.evolve(world.corpus[self.original], id=self.copy_id)
        corpus = world.corpus.with_chunks((copy,), at=min(self.at, len(world.corpus)))
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))

    def referenced_ids(self) -> tuple[str, ...]:
        """The original (kept when the corpus is minimised)."""
        return (self.original,)


def _not_empty(world: World) -> str | None:
    return "the corpus is empty" if not len(world.corpus) else None


def copies(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[AddCopy]:
    """Draw a copy of a gold chunk (any chunk when the case has none); shrinks toward position 0."""
    gold = [i for i in world.case.gold_ids if i in world.corpus]
    originals = gold or list(world.corpus.ids)

    def copy_of(k: int, original: str, at: int) -> AddCopy:
        return AddCopy(k=k, original=original, copy_id=fresh_id(world.corpus, f"{original}~copy"), at=at)

    return st.builds(
        copy_of,
        ks_strategy(ks),
        st.sampled_from(originals),
        st.integers(0, len(world.corpus)),
    )


def _copy_ties(base: Observation, follow: Observation) -> Verdict:
    added = corpus_diff(base.world.corpus, follow.world.corpus)[0]
    if len(added) != 1:
        return Verdict.not_applicable("not one chunk was added")
    copy = follow.world.corpus[next(iter(added))]
    # Texts first: evolving every chunk of a large corpus to compare whole chunks would be wasted work.
    original = next(
        (c for c in base.world.corpus if c.text == copy.text and attrs.evolve(c, id=copy.id) == copy), None
    )
    if original is None:
        return Verdict.not_applicable("the added chunk copies no chunk whole")
    scores = {hit.id: hit.score for hit in follow.ranking.hits}
    if copy.id not in scores or original.id not in scores:
        # One of two identical chunks may be left out (retrievers may de-duplicate identical texts).
        return Verdict.not_applicable("the copy and its original were not both returned")
    mine, theirs = scores[copy.id], scores[original.id]
    if mine is None or theirs is None:
        return Verdict.not_applicable(NO_SCORES)
    if not scores_tied(mine, theirs):
        return Verdict.broken(
            f"the copy {copy.id!r} of {original.id!r} scored {mine:.6g}, its original {theirs:.6g}. Causes that "
            "fit: a rank fusion (two identical chunks take adjacent ranks in each leg: correct, not a single scored "
            "list), or a score that depends on the id or the insertion order"
        )
    return Verdict.ok("the copy scored like its original", theirs, mine)


RELATIONS = (
    Relation(
        name="duplicate.copy_ties",
        family="duplicate",
        summary="a chunk copied whole under a new id scores exactly like its original",
        target="ranking@k",
        direction=Direction.EQUAL,
        severity=Severity.HARD,
        check=_copy_ties,
        applies_to=("AddCopy",),
        hard_with=("single_list",),
        assumptions=(
            "scores depend on a chunk's content (text, metadata, tenant, versions), not on its id or position: two "
            "chunks with equal content score equally in the same run",
            "a single scored list (trait 'single_list'): rank fusion scores ranks, and two identical chunks take "
            "adjacent ranks in each leg and so different fused scores; without the trait, measured as a rate",
            "judged only when both are returned: a retriever may drop one of two identical chunks",
        ),
    ),
)


FAMILY = Family(
    name="duplicate",
    summary="add a copy of a gold chunk under a new id (the evidence for the trait single_list)",
    relations=RELATIONS,
    perturbation_types=(AddCopy,),
    draw=copies,
    applicable=_not_empty,
    edits_corpus=True,
    max_examples=4,
)
