"""Depth family: k above the candidate pools real indexes use, and above the corpus size.

A ranking with fewer hits than asked is *exhausted*: it claims that no other chunk matches. Caches and
candidate lists capped at a fixed size (10 is common) look exhausted at any k above the cap, and the default
cutoffs (1, 3, 5, 10) never reach past it. This family asks the case's query at a k past such pools (and past
the corpus size), then removes one or two chunks that share words with the query and asks again: for a
lexical retriever, a removal can only take chunks away from an exhausted ranking, never bring in one it had
left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, corpus_diff, matching_ids

__all__ = ["FAMILY", "RELATIONS", "RemoveAtDepth", "depth_removals", "no_newcomer"]

# Removal candidates: the chunks sharing most query tokens (likely in the ranking), at most this many.
_CANDIDATES = 30


@attrs.frozen
class RemoveAtDepth(PerturbationBase):
    """Ask at cutoff `k` (past candidate pools), then remove `ids` and ask again at the same k."""

    family: ClassVar[str] = "depth"
    k: int
    ids: tuple[str, ...]

    def apply(self, world: World) -> World:
        """The world without `ids`, at k."""
        return attrs.evolve(world, corpus=world.corpus.without(self.ids), params=attrs.evolve(world.params, k=self.k))

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids."""
        return self.ids


def depths(world: World, ks: Sequence[int]) -> tuple[int, ...]:
    """The cutoffs drawn, simplest first: past the corpus (every ranking a lexical retriever gives there is
    exhausted, and a retriever's index is asked for all it holds), and just past twice the largest default k
    (past pools of 10 and 20)."""
    return tuple(sorted({2 * max(ks) + 1, len(world.corpus) + 1}, reverse=True))


def depth_removals(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[RemoveAtDepth]:
    """Draw a deep cutoff and one or two chunks to remove; shrinks toward the cutoff past the corpus and the chunk
    sharing most query tokens."""
    candidates = matching_ids(world, limit=_CANDIDATES) or [c.id for c in world.corpus.chunks[:_CANDIDATES]]
    return st.builds(
        lambda k, ids: RemoveAtDepth(k=k, ids=tuple(ids)),
        st.sampled_from(depths(world, ks)),
        st.lists(st.sampled_from(candidates), min_size=1, max_size=min(2, len(candidates)), unique=True),
    )


def no_newcomer(base: Observation, follow: Observation) -> Verdict:
    """Verdict that a removal brought no chunk into an exhausted ranking (pure)."""
    asked = base.world.params.k
    if not base.exhausted:
        return Verdict.not_applicable(base.cut_short or f"the base ranking filled all {asked} places, so it may have cut matching chunks")
    removed = corpus_diff(base.world.corpus, follow.world.corpus)[1]
    before = {hit.id for hit in base.ranking.hits}
    corpus = follow.world.corpus
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        chunk = corpus.get(hit.id)
        if chunk is not None and chunk.superseded_by in removed:
            # A freshness policy hides a chunk while its successor is present: removing the successor shows it.
            continue
        if hit.id not in before:
            return Verdict.broken(
                f"the ranking at k={asked} had only {len(before)} hits (so no other chunk matched), yet after removing "
                f"{sorted(removed)} chunk {hit.id!r} appeared at rank {rank}: the first ranking left out a matching chunk",
                len(before),
                len(follow.ranking.hits),
            )
    return Verdict.ok("the removal brought no chunk into the exhausted ranking", len(before), len(follow.ranking.hits))


RELATIONS = (
    Relation(
        name="depth.no_newcomer",
        family="depth",
        summary="at k past candidate pools, removing chunks never brings a chunk into a ranking that had fewer than k hits",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=no_newcomer,
        requires=("lexical",),
        assumptions=(
            "lexical retriever: a chunk scores above zero exactly when it shares a scoring term with the query, "
            "and keeps that when corpus statistics shift (a removal)",
            "it returns every chunk scoring above zero up to k (DESIGN section 3: fewer hits than min(k, matching "
            "chunks) is a contract breach), so a ranking with fewer than k hits lists every match",
            "a chunk whose successor was removed may appear: a freshness policy (trait 'freshness') hides a "
            "superseded chunk only while its successor is present",
        ),
    ),
)


FAMILY = Family(
    name="depth",
    summary="ask past candidate pools and the corpus size, remove a matching chunk, ask again",
    relations=RELATIONS,
    draw=depth_removals,
    edits_corpus=True,
    perturbation_types=(RemoveAtDepth,),
    max_examples=4,
)
