"""Supersede family: outdated versions of the evidence must not be served as current."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Chunk, World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, chunk_of, corpus_diff, fresh_id, ks_strategy, ruled_out

__all__ = ["FAMILY", "MODES", "RELATIONS", "Supersede", "supersessions"]

# add_old: an outdated copy of a gold chunk joins the corpus (its successor stays);
# swap: the gold chunk is replaced by an outdated copy whose successor is gone.
MODES = ("add_old", "swap")


@attrs.frozen
class Supersede(PerturbationBase):
    """Add an outdated version `old_id` of gold chunk `of` (mode add_old), or swap `of` for it (mode swap).

    `current_only` asks both calls with the `current_only` filter; without it, only retrievers with a freshness
    policy (trait 'freshness') are judged.
    """

    family: ClassVar[str] = "supersede"
    k: int
    of: str
    mode: str = "add_old"
    current_only: bool = True
    old_id: str = ""

    def old_version(self, world: World) -> Chunk:
        """The outdated copy of `of`: same text, one version earlier, effective a year before, superseded by `of`."""
        gold = world.corpus[self.of]
        earlier = gold.effective_from - _dt.timedelta(days=365) if gold.effective_from else None
        version = (gold.version - 1) if gold.version is not None else None
        return attrs.evolve(gold, id=self.old_id, superseded_by=gold.id, version=version, effective_from=earlier)

    def base(self, world: World) -> World:
        """The base world at k, with the `current_only` filter when asked."""
        filters = attrs.evolve(world.params.filters, current_only=self.current_only)
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=filters))

    def apply(self, world: World) -> World:
        """The corpus with the outdated copy placed just before its successor (or instead of it)."""
        old = self.old_version(world)
        position = world.corpus.position(self.of)
        corpus = world.corpus.with_chunks([old], at=position)
        if self.mode == "swap":
            corpus = corpus.without([self.of])
        return attrs.evolve(self.base(world), corpus=corpus)

    def referenced_ids(self) -> tuple[str, ...]:
        """The gold chunk that gets an outdated version."""
        return (self.of,)


def supersessions(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[Supersede]:
    """Draw an outdated version of a gold chunk; shrinks toward the first gold chunk, add_old, current_only."""
    gold = [i for i in world.case.gold_ids if i in world.corpus]
    return st.builds(
        lambda k, of, mode, current: Supersede(
            k=k, of=of, mode=mode, current_only=current, old_id=fresh_id(world.corpus, f"{of}~old")
        ),
        ks_strategy(ks),
        st.sampled_from(gold),
        st.sampled_from(MODES),
        st.sampled_from((True, False)),
    )


def _old_ids(base: Observation, follow: Observation) -> frozenset[str]:
    return corpus_diff(base.world.corpus, follow.world.corpus)[0]


def _current_only(base: World, follow: World) -> str | None:
    return None if follow.params.filters.current_only else "only judged under the current_only filter"


def _no_filter_decides(base: World, follow: World) -> str | None:
    return "under current_only the filter, not a freshness policy, decides" if follow.params.filters.current_only else None


def _stale_zero(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_current_only, base, follow)) is not None:
        return unjudged
    corpus = follow.world.corpus
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        chunk = chunk_of(base, follow, hit.id)
        if chunk is not None and corpus.is_stale(chunk):
            return Verdict.broken(
                f"stale chunk {hit.id!r} (superseded by {chunk.superseded_by!r}) returned at rank {rank} "
                "under current_only",
                0,
                1,
                culprits=(hit.id,),
            )
    return Verdict.ok("Stale@k is zero", 0, 0)


def _excludes_superseded(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_current_only, base, follow)) is not None:
        return unjudged
    corpus = follow.world.corpus
    outdated_of = {corpus[i].superseded_by for i in _old_ids(base, follow)}
    orphaned = [
        number
        for number, group in enumerate(base.world.case.evidence)
        if not any(m in corpus and corpus[m].superseded_by is None for m in group) and outdated_of & set(group)
    ]
    note = f"; evidence group(s) {orphaned} now exist only in superseded form" if orphaned else ""
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        chunk = chunk_of(base, follow, hit.id)
        if chunk is not None and chunk.superseded_by is not None:
            return Verdict.broken(
                f"superseded chunk {hit.id!r} returned at rank {rank} under current_only{note}", 0, 1, culprits=(hit.id,)
            )
    return Verdict.ok(f"no superseded chunk returned{note}", 0, 0)


def _successor_first(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_no_filter_decides, base, follow)) is not None:
        return unjudged
    corpus = follow.world.corpus
    ranks = {h.id: rank for rank, h in enumerate(follow.ranking.hits)}
    for old in sorted(_old_ids(base, follow)):
        successor = corpus[old].superseded_by
        if old in ranks and successor in corpus and ranks.get(successor, len(ranks)) > ranks[old]:
            return Verdict.broken(
                f"superseded chunk {old!r} at rank {ranks[old] + 1} outranks its successor {successor!r}", culprits=(old,)
            )
    return Verdict.ok("no superseded chunk outranks its successor")


RELATIONS = (
    Relation(
        name="supersede.stale_zero",
        family="supersede",
        summary="with an outdated version of a gold chunk added, Stale@k is zero under current_only",
        target="Stale@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        check=_stale_zero,
        precondition=_current_only,
        judges_filtering=True,
        filter_kinds=("current_only",),
        judges_admission=True,
        applies_to=("Supersede:add_old",),
        assumptions=("the call carries the current_only filter, which drops any chunk with superseded_by set",),
    ),
    Relation(
        name="supersede.successor_first",
        family="supersede",
        summary="without a filter, a superseded chunk never outranks its successor (freshness policy)",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_successor_first,
        precondition=_no_filter_decides,
        applies_to=("Supersede:add_old",),
        requires=("freshness",),
        assumptions=(
            "only for retrievers that declare a freshness policy (trait 'freshness'); plain relevance ranking ties "
            "an identical outdated copy with its successor and may put either first",
        ),
    ),
    Relation(
        name="supersede.current_only_excludes_superseded",
        family="supersede",
        summary="swap a gold chunk for an outdated version: under current_only no superseded chunk is returned",
        target="Superseded@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        check=_excludes_superseded,
        precondition=_current_only,
        judges_filtering=True,
        filter_kinds=("current_only",),
        judges_admission=True,
        applies_to=("Supersede:swap",),
        assumptions=("the detail flags evidence groups that now exist only in superseded form",),
    ),
)


def _applicable(world: World) -> str | None:
    if not any(i in world.corpus for i in world.case.gold_ids):
        return "the case has no gold chunk in the corpus to supersede"
    return None


FAMILY = Family(
    name="supersede",
    summary="add an outdated version of a gold chunk, or swap a gold chunk for one",
    relations=RELATIONS,
    perturbation_types=(Supersede,),
    draw=supersessions,
    applicable=_applicable,
    edits_corpus=True,
    max_examples=6,
)
