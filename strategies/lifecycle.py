"""Lifecycle family: the corpus changes the way production corpora do, and the index must keep up.

Growth: the corpus grows to two or four times its size (at least by 32 chunks, past capacities that indexes
fix when they are built, such as hnswlib's `max_elements`) with text unrelated to the query, and one chunk
that matches the query is added last. For a lexical retriever the unrelated chunks score zero and every chunk
that matched keeps matching, so an exhausted ranking (fewer hits than asked) keeps every hit it had and gains
the late chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Chunk, World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, corpus_diff, fresh_id, vocabulary

__all__ = ["FAMILY", "RELATIONS", "Grow", "growth_keeps_matches", "lifecycle_changes"]

# Growth adds `factor` times the corpus size in unrelated chunks, at least this many (capacities such as
# `len(corpus) + 16` are passed even by tiny corpora) and at most _MAX_GROWTH (the probe stays cheap).
_MIN_GROWTH = 32
_MAX_GROWTH = 4000
_FACTORS = (1, 3)  # x2 and x4
_UNRELATED_WORDS = 8


@attrs.frozen
class Grow(PerturbationBase):
    """Add `count` chunks of text unrelated to the query, then one chunk matching it (the query and the first
    gold chunk's text) last; ask at k before and after. The added chunks are a pure function of the world."""

    family: ClassVar[str] = "lifecycle"
    k: int
    count: int

    def apply(self, world: World) -> World:
        """The grown world, at k."""
        unrelated = _unrelated_chunks(world, self.count)
        late = _late_chunk(world, {c.id for c in unrelated})
        corpus = world.corpus.with_chunks((*unrelated, late))
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))


def _unrelated_chunks(world: World, count: int) -> tuple[Chunk, ...]:
    words = vocabulary().filler_for(world.case.query) or ("lorem",)
    taken: set[str] = set()
    chunks = []
    for number in range(count):
        # A fixed pattern over the filler words: the texts are distinct and need no drawn data (they are many).
        text = " ".join(words[(number * 7 + i * 13) % len(words)] for i in range(_UNRELATED_WORDS))
        chunk_id = fresh_id(world.corpus, f"growth-{number}", taken)
        taken.add(chunk_id)
        chunks.append(Chunk(chunk_id, text, tenant=world.case.tenant))
    return tuple(chunks)


def _late_chunk(world: World, taken: set[str]) -> Chunk:
    gold = [world.corpus[i] for i in world.case.gold_ids if i in world.corpus]
    text = world.case.query + (" " + gold[0].text if gold else "")
    return Chunk(fresh_id(world.corpus, "growth-late", taken), text, tenant=world.case.tenant)


def lifecycle_changes(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[Grow]:
    """Draw a growth (x2 or x4) asked past both corpus sizes; shrinks toward x2."""

    def grow(factor: int) -> Grow:
        count = min(max(_MIN_GROWTH, factor * len(world.corpus)), _MAX_GROWTH)
        return Grow(k=len(world.corpus) + count + 2, count=count)

    return st.sampled_from(_FACTORS).map(grow)


def growth_keeps_matches(base: Observation, follow: Observation) -> Verdict:
    """Verdict that growth by unrelated chunks kept every hit of an exhausted ranking and found the late one (pure)."""
    asked = base.world.params.k
    if len(base.ranking.hits) >= asked:
        return Verdict.not_applicable(f"the base ranking filled all {asked} places, so it may have cut matching chunks")
    if not base.ranking.hits:
        return Verdict.not_applicable("nothing matched the query before the growth")
    added = corpus_diff(base.world.corpus, follow.world.corpus)[0]
    returned = {hit.id for hit in follow.ranking.hits}
    lost = [hit.id for hit in base.ranking.hits if hit.id not in returned]
    if lost:
        return Verdict.broken(f"after adding {len(added)} unrelated chunks, matching chunk(s) {lost} are no longer returned")
    # The chunk added last matches the query by construction (its text starts with the query).
    last = follow.world.corpus.chunks[-1].id if len(follow.world.corpus) else None
    late = [last] if last in added and last not in returned else []
    if late:
        return Verdict.broken(
            f"after adding {len(added) - 1} unrelated chunks, the chunk added last, {late[0]!r} (the query's own words "
            f"and the evidence), is not returned although the ranking has only {len(follow.ranking.hits)} hits"
        )
    return Verdict.ok("every matching chunk, and the one added last, is returned after the growth")


RELATIONS = (
    Relation(
        name="lifecycle.growth_keeps_matches",
        family="lifecycle",
        summary="growing the corpus x2/x4 with unrelated chunks keeps every hit of an exhausted ranking and finds a matching chunk added last",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=growth_keeps_matches,
        applies_to=("Grow",),
        requires=("lexical",),
        assumptions=(
            "lexical retriever: chunks sharing no word with the query score zero, chunks sharing a scoring term keep "
            "a positive score when corpus statistics shift, and every chunk scoring above zero is returned up to k",
            "k is larger than the grown corpus, so nothing is cut",
        ),
    ),
)


def _applicable(world: World) -> str | None:
    if not world.case.query.strip():
        return "the query is empty"
    return None


FAMILY = Family(
    name="lifecycle",
    summary="grow the corpus x2/x4 with unrelated chunks and add a matching one last",
    relations=RELATIONS,
    draw=lifecycle_changes,
    applicable=_applicable,
    edits_corpus=True,
)
