"""Lifecycle family: the corpus changes the way production corpora do, and the index must keep up.

Update in place (the most common production change; retrievers with `update(chunks)`): a chunk that matches the
query gets the content of a gold chunk, keeping its own id, or text unrelated to the query. The updated text is
what must be found: a copy scores exactly like its original, and an unrelated text no longer matches (lexical).

Add of an id already held (retrievers with `add`/`remove`): a matching chunk is added again under its own id with
a gold chunk's content. Libraries differ, and each is correct: an upsert (the new version replaces the old), an
error, or an add ignored with a warning. Whatever they do, the instance must hold one version: the ranking is
unchanged (refused or ignored) or the copy scores exactly like its original (replaced); never an id twice (the
contract) and never a mix of both versions.

Re-index (retrievers with `index(corpus)`): the same instance is re-indexed over the corpus without some
matching chunks; none of them may be returned afterwards.

Against a fresh index: an edit (delta, update or re-index) applied to the instance gives the ranking a fresh
index of the edited corpus gives, up to ties. Hard for retrievers declaring `exact_deltas`; for every other
retriever a rate, since Lucene-style indexes keep deleted documents in their statistics until segments merge
and approximate indexes drift.

Growth: the corpus grows to two or four times its size (at least by 32 chunks, past capacities that indexes
fix when they are built, such as hnswlib's `max_elements`) with text unrelated to the query, and one chunk
that matches the query is added last. For a lexical retriever the unrelated chunks score zero and every chunk
that matched keeps matching, so an exhausted ranking (fewer hits than asked) keeps every hit it had and gains
the late chunk.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus, World
from ragmorph.relations import (
    NO_SCORES,
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

from ._core import (
    Family,
    PerturbationBase,
    check_never,
    corpus_diff,
    default_filters,
    fresh_id,
    is_json_scalar,
    ks_strategy,
    matching_ids,
    query_tokens,
    text_lengths,
    vocabulary,
)

__all__ = [
    "EDITS",
    "FAMILY",
    "RELATIONS",
    "AddExisting",
    "AgainstFresh",
    "DropMetadataKey",
    "Grow",
    "Reindex",
    "UpdateChunk",
    "added_existing_one_version",
    "dropped_key_not_admitted",
    "growth_keeps_matches",
    "lifecycle_changes",
    "updated_copy_ties",
    "updated_unrelated_unmatched",
]

EDITS = ("delta", "update", "index")
# Chunks picked as update targets and removals: those sharing most query tokens (likely returned), at most this many.
_CANDIDATES = 12

# Growth adds `factor` times the corpus size in unrelated chunks, at least this many (capacities such as
# `len(corpus) + 16` are passed even by tiny corpora) and at most _MAX_GROWTH (the probe stays cheap).
_MIN_GROWTH = 32
_MAX_GROWTH = 4000
_FACTORS = (1, 3)  # x2 and x4
_UNRELATED_WORDS = 8


@attrs.frozen
class Grow(PerturbationBase):
    """Add `count` chunks of text unrelated to the query, then one chunk matching it (the query and the first
    gold chunk's text) last; ask past the corpus before, and at k (past the grown corpus) after. The added chunks
    are a pure function of the world."""

    family: ClassVar[str] = "lifecycle"
    k: int
    count: int

    def base(self, world: World) -> World:
        """The world before the growth, asked past its corpus: every chunk it holds fits (and depth's base call,
        asked at the same k, is served from the call cache)."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=len(world.corpus) + 1))

    def apply(self, world: World) -> World:
        """The grown world, at k."""
        unrelated = _unrelated_chunks(world, self.count)
        late = _late_chunk(world, {c.id for c in unrelated})
        corpus = world.corpus.with_chunks((*unrelated, late))
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))


@attrs.frozen
class UpdateChunk(PerturbationBase):
    """Update chunk `target` in place with `update(chunks)`: `kind` "copy" gives it the content of `source` (a
    gold chunk) under its own id, "unrelated" gives it text sharing no word with the query."""

    family: ClassVar[str] = "lifecycle"
    k: int
    kind: str
    target: str
    source: str

    def apply(self, world: World) -> World:
        """The world whose corpus holds the updated chunk (same id, same position)."""
        old = world.corpus[self.target]
        if self.kind == "copy":
            new = attrs.evolve(world.corpus[self.source], id=old.id)
        else:
            words = vocabulary().filler_for(world.case.query) or ("lorem",)
            new = attrs.evolve(old, text=" ".join(words[: _UNRELATED_WORDS]))
        return attrs.evolve(world, corpus=world.corpus.replaced(new), params=attrs.evolve(world.params, k=self.k))

    def plan(self, world: World) -> Plan:
        """The base call, then the same call with the update applied to the base instance (and undone)."""
        return Plan.pair(self.base(world), self.apply(world), edit=Edit.UPDATE)

    def referenced_ids(self) -> tuple[str, ...]:
        """The updated chunk and the chunk it copies."""
        return (self.target, self.source)


@attrs.frozen
class AddExisting(PerturbationBase):
    """`add([chunk])` on the base instance of a chunk under the id `target` it already holds, with the content of
    `source` (a gold chunk): the same change as an update, through `add`."""

    family: ClassVar[str] = "lifecycle"
    k: int
    target: str
    source: str

    def apply(self, world: World) -> World:
        """The world whose corpus holds the new version of `target` (same id, same position)."""
        new = attrs.evolve(world.corpus[self.source], id=self.target)
        return attrs.evolve(world, corpus=world.corpus.replaced(new), params=attrs.evolve(world.params, k=self.k))

    def plan(self, world: World) -> Plan:
        """The base call, then the same call after the add on the base instance (undone)."""
        return Plan.pair(self.base(world), self.apply(world), edit=Edit.ADD)

    def referenced_ids(self) -> tuple[str, ...]:
        """The re-added chunk and the chunk whose content it takes."""
        return (self.target, self.source)


@attrs.frozen
class DropMetadataKey(PerturbationBase):
    """Update chunk `target` in place with `update(chunks)` to the same chunk without its metadata key `key`,
    and ask under the filter `key` = its old value before and after: the new version no longer passes it."""

    family: ClassVar[str] = "lifecycle"
    k: int
    target: str
    key: str

    def _filtered(self, world: World) -> World:
        chunk = world.corpus[self.target]
        filters = attrs.evolve(default_filters(world.case), metadata={self.key: chunk.metadata[self.key]})
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=filters))

    def base(self, world: World) -> World:
        """The world under the filter on the key's old value (the target passes it)."""
        return self._filtered(world)

    def apply(self, world: World) -> World:
        """The filtered world whose corpus holds the target without the key (same id, same position)."""
        asked = self._filtered(world)
        old = world.corpus[self.target]
        new = attrs.evolve(old, metadata={k: v for k, v in old.metadata.items() if k != self.key})
        return attrs.evolve(asked, corpus=world.corpus.replaced(new))

    def plan(self, world: World) -> Plan:
        """The filtered call, then the same call with the update applied to the base instance (and undone)."""
        return Plan.pair(self.base(world), self.apply(world), edit=Edit.UPDATE)

    def referenced_ids(self) -> tuple[str, ...]:
        """The updated chunk."""
        return (self.target,)


@attrs.frozen
class Reindex(PerturbationBase):
    """Re-index the base instance with `index(corpus)` over the corpus without `removed`, then ask again."""

    family: ClassVar[str] = "lifecycle"
    k: int
    removed: tuple[str, ...]

    def apply(self, world: World) -> World:
        """The world without `removed`."""
        return attrs.evolve(world, corpus=world.corpus.without(self.removed), params=attrs.evolve(world.params, k=self.k))

    def plan(self, world: World) -> Plan:
        """The base call, then the same call after `index(smaller corpus)` on the base instance (undone by
        re-indexing the base corpus)."""
        return Plan.pair(self.base(world), self.apply(world), edit=Edit.INDEX)

    def referenced_ids(self) -> tuple[str, ...]:
        """The ids left out of the re-index."""
        return self.removed


@attrs.frozen
class AgainstFresh(PerturbationBase):
    """Remove `removed` and add `added` through `edit` ("delta", "update": `added` replaces chunks with the same
    ids, "index"), and compare with a fresh index of the edited corpus."""

    family: ClassVar[str] = "lifecycle"
    k: int
    edit: str
    removed: tuple[str, ...] = ()
    added: tuple[Chunk, ...] = ()

    def base(self, world: World) -> World:
        """The edited world: a fresh index of it answers the base call."""
        return self.apply(world)

    def apply(self, world: World) -> World:
        """The edited world."""
        corpus = world.corpus
        if self.edit == "update":
            for chunk in self.added:
                corpus = corpus.replaced(chunk)
        else:
            corpus = corpus.without(self.removed).with_chunks(self.added) if self.added else corpus.without(self.removed)
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))

    def plan(self, world: World) -> Plan:
        """The unedited call first (a contract breach there is the contract family's to report), then a fresh
        index of the edited corpus (the base) and the base instance with the edit (the follow-up)."""
        edited = self.apply(world)
        edit = {"delta": Edit.DELTA, "update": Edit.UPDATE, "index": Edit.INDEX}[self.edit]
        return Plan(
            (
                Call(PerturbationBase.base(self, world)),
                Call(edited, Instance.FRESH, role=Role.BASE),
                Call(edited, Instance.BASE, edit, Role.FOLLOW),
            )
        )

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids and the updated ones."""
        return self.removed + (tuple(c.id for c in self.added) if self.edit == "update" else ())


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


def _matching(world: World) -> list[str]:
    """Ids of the chunks sharing most query tokens (ties by position), gold chunks excluded."""
    return matching_ids(world, exclude=world.case.gold_ids, limit=_CANDIDATES)


def lifecycle_changes(world: World, *, ks: Sequence[int], delta: bool = True, **_: object) -> st.SearchStrategy[PerturbationBase]:
    """Draw an update in place, an add of an id already held (retrievers taking deltas), a re-index, an edit
    compared with a fresh index, or a growth; shrinks toward copying a gold chunk onto the chunk sharing most
    query words, at the smallest k."""

    def grow(factor: int) -> Grow:
        count = min(max(_MIN_GROWTH, factor * len(world.corpus)), _MAX_GROWTH)
        return Grow(k=len(world.corpus) + count + 2, count=count)

    matching = _matching(world)
    gold = [i for i in world.case.gold_ids if i in world.corpus]
    choices: list[st.SearchStrategy[PerturbationBase]] = []
    targets: list[str] = []
    if matching:
        sources = gold or matching[:1]
        linked = {world.corpus[i].superseded_by for i in sources}
        # A copy of a chunk superseded by the target would name itself as its successor (not a valid chunk).
        targets = [i for i in matching if i not in sources and i not in linked] or [i for i in matching if i not in linked]
    if matching and targets:
        choices.append(
            st.builds(
                UpdateChunk,
                k=ks_strategy(ks),
                kind=st.sampled_from(("copy", "unrelated")),
                target=st.sampled_from(targets),
                source=st.sampled_from(sources),
            )
        )
        if delta:
            choices.append(st.builds(AddExisting, k=ks_strategy(ks), target=st.sampled_from(targets), source=st.sampled_from(sources)))
        removed = st.lists(st.sampled_from(matching), min_size=1, max_size=min(2, len(matching)), unique=True).map(tuple)
        choices.append(st.builds(Reindex, k=ks_strategy(ks), removed=removed))
        copy = st.sampled_from(targets).map(lambda t: (attrs.evolve(world.corpus[sources[0]], id=t),))
        choices.append(st.builds(AgainstFresh, k=ks_strategy(ks), edit=st.just("update"), added=copy))
        choices.append(st.builds(AgainstFresh, k=ks_strategy(ks), edit=st.sampled_from(("delta", "index")), removed=removed))
    keyed = _keyed(world, matching)
    if keyed:
        choices.append(st.builds(lambda k, pair: DropMetadataKey(k=k, target=pair[0], key=pair[1]), ks_strategy(ks), st.sampled_from(keyed)))
    choices.append(st.sampled_from(_FACTORS).map(grow))
    return st.one_of(choices)


def _keyed(world: World, matching: Sequence[str]) -> list[tuple[str, str]]:
    """(chunk id, metadata key holding a JSON scalar) pairs to drop, chunks sharing query words first."""
    gold = [i for i in world.case.gold_ids if i in world.corpus]
    ids = list(dict.fromkeys([*gold, *matching, *(c.id for c in world.corpus.chunks[:_CANDIDATES])]))
    pairs = []
    for chunk_id in ids:
        chunk = world.corpus[chunk_id]
        if not chunk.visible_to(world.case.tenant):
            continue  # under the case's tenant filter it is never admitted, whatever its metadata
        metadata = chunk.metadata
        pairs += [(chunk_id, key) for key in sorted(metadata) if is_json_scalar(metadata[key])]
    return pairs[:_CANDIDATES]


def dropped_key_not_admitted(base: Observation, follow: Observation) -> Verdict:
    """Verdict that no chunk updated to a version without a filtered key passes the filter on it afterwards (pure)."""
    filters = follow.world.params.filters
    changed = [c for c in _changed(base.world.corpus, follow.world.corpus) if not filters.allows(c)]
    if not changed:
        return Verdict.not_applicable("no chunk was updated out of the filter")
    dropped = {c.id for c in changed}
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        if hit.id in dropped:
            lost = sorted(set(base.world.corpus[hit.id].metadata) - set(follow.world.corpus[hit.id].metadata))
            return Verdict.broken(
                f"chunk {hit.id!r} was updated to a version without metadata key(s) {lost}, yet the filter on "
                f"{dict(filters.metadata)} still returns it at rank {rank}: the index kept the old metadata (an "
                "update that merges metadata instead of replacing it)",
                culprits=(hit.id,),
            )
    return Verdict.ok("the updated chunk no longer passes the filter")


def growth_keeps_matches(base: Observation, follow: Observation) -> Verdict:
    """Verdict that growth by unrelated chunks kept every hit of an exhausted ranking and found the late one (pure)."""
    asked = base.world.params.k
    if not base.exhausted:
        return Verdict.not_applicable(base.cut_short or f"the base ranking filled all {asked} places, so it may have cut matching chunks")
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


def _content(chunk: Chunk) -> tuple[object, ...]:
    """Everything of a chunk but its id."""
    return (chunk.text, chunk.source, chunk.tenant, chunk.version, chunk.effective_from, chunk.superseded_by, chunk.metadata)


def _changed(before: Corpus, after: Corpus) -> list[Chunk]:
    """The chunks of `after` that hold other content than the chunk of `before` with their id, in corpus order."""
    # A chunk in the same place as the very same object is unchanged: no lookup (the corpora share chunk objects).
    moved = [*itertools.compress(after.chunks, map(operator.is_not, before.chunks, after.chunks)), *after.chunks[len(before) :]]
    return [chunk for chunk in moved if before.get(chunk.id) not in (None, chunk)]


def _copies(base: Observation, follow: Observation) -> list[tuple[str, str]]:
    """(changed id, id of the chunk whose content it now has) for every chunk the follow-up corpus changed."""
    before, corpus = base.world.corpus, follow.world.corpus
    changed = _changed(before, corpus)
    if not changed:
        return []
    # A chunk of the follow-up holding some text is a chunk of the base holding it (unless it changed since), a
    # changed chunk or an added one. The base's chunks of that text are found among those of its length, read
    # once per corpus (a scan of the 100k texts took 40 ms per changed chunk, and every update is judged).
    sizes = text_lengths(before)
    edited = {chunk.id: chunk for chunk in changed}
    edited.update((i, corpus[i]) for i in corpus_diff(before, corpus)[0])
    pairs = []
    for chunk in changed:
        same_size = (before.chunks[i] for i in np.flatnonzero(sizes == len(chunk.text)).tolist())
        holding = {c.id: corpus.get(c.id) for c in same_size if c.text == chunk.text and c.id not in edited}
        holding.update((c.id, c) for c in edited.values() if c.text == chunk.text)
        content = _content(chunk)
        found = [other for other in holding.values() if other is not None and other.id != chunk.id and _content(other) == content]
        if len(found) > 1:  # in the follow-up's order, as a scan finds them (positions index an edited corpus)
            found.sort(key=lambda other: corpus.position(other.id))
        pairs += [(chunk.id, other.id) for other in found]
    return pairs


def added_existing_one_version(base: Observation, follow: Observation) -> Verdict:
    """Verdict that after `add` of an id the instance held, with another chunk's content, the instance holds one
    version of it: the ranking is unchanged (the add was refused or ignored) or the copy ties with its original
    when both are returned (the add replaced the chunk) (pure)."""
    pairs = _copies(base, follow)
    if not pairs:
        return Verdict.not_applicable("no chunk was added again with another chunk's content")
    unchanged = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if unchanged.holds:
        return Verdict.ok("the ranking is unchanged: the add was refused or ignored, and the old version is held")
    scores = {hit.id: hit.score for hit in follow.ranking.hits}
    judged = [(added, original) for added, original in pairs if added in scores and original in scores]
    if not judged:
        return Verdict.not_applicable(
            "the add changed the ranking, but the re-added chunk and its original are not both returned, so which "
            "version is held cannot be told"
        )
    for added, original in judged:
        a, b = scores[added], scores[original]
        if a is None or b is None:
            return Verdict.not_applicable(NO_SCORES)
        if not scores_tied(a, b):
            return Verdict.broken(
                f"chunk {added!r} was added again (an id the index held) with the content of {original!r}: the ranking "
                f"changed ({unchanged.detail}), yet it scores {a:.6g} against {b:.6g}. Causes that fit: the index "
                "holds both versions, or the old one in one of several indexes (the add was neither an upsert nor "
                "refused), or the score depends on the id or insertion order"
            )
    return Verdict.ok("the re-added chunk scores like its original: the add replaced the old version")


def updated_copy_ties(base: Observation, follow: Observation) -> Verdict:
    """Verdict that a chunk updated to a copy of another chunk's content scores exactly like it (pure)."""
    pairs = _copies(base, follow)
    if not pairs:
        return Verdict.not_applicable("no chunk was updated to a copy of another")
    scores = {hit.id: hit.score for hit in follow.ranking.hits}
    for updated, original in pairs:
        if updated not in scores or original not in scores:
            # One of two identical chunks may be left out (retrievers may de-duplicate identical texts).
            continue
        a, b = scores[updated], scores[original]
        if a is None or b is None:
            return Verdict.not_applicable(NO_SCORES)
        if not scores_tied(a, b):
            return Verdict.broken(
                f"chunk {updated!r} was updated to the content of {original!r}, yet it scores {a:.6g} against {b:.6g}. "
                "Causes that fit: the index still scores the old content (the update did not reach it, or reached "
                "one of several indexes), or the score depends on the id or insertion order"
            )
    return Verdict.ok("the updated copy scores like its original")


def updated_unrelated_unmatched(base: Observation, follow: Observation) -> Verdict:
    """Verdict that a chunk updated to text sharing no word with the query no longer scores above zero (pure)."""
    query = set(query_tokens(follow.world.case.query))
    updated = [
        chunk.id for chunk in _changed(base.world.corpus, follow.world.corpus) if not query & set(query_tokens(chunk.text))
    ]
    if not updated:
        return Verdict.not_applicable("no chunk was updated to text sharing no word with the query")
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        if hit.id in updated and hit.score is not None and hit.score > 0:
            return Verdict.broken(
                f"chunk {hit.id!r} was updated to text sharing no word with the query, yet it is returned at rank "
                f"{rank} with score {hit.score:.6g}: its old text is still indexed"
            )
    return Verdict.ok("the updated chunk no longer matches the query")


def _reindexed(base: Observation, follow: Observation) -> Verdict:
    removed = corpus_diff(base.world.corpus, follow.world.corpus)[1]
    if not removed:
        return Verdict.not_applicable("the re-indexed corpus lacks no chunk of the old one")
    return check_never(set(removed), follow, "chunk left out of the re-index")


def _against_fresh(base: Observation, follow: Observation) -> Verdict:
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(f"the edited instance and a fresh index of the same corpus rank differently: {verdict.detail}")
    return verdict


RELATIONS = (
    Relation(
        name="lifecycle.updated_copy_ties",
        exact_search=True,
        family="lifecycle",
        summary="a chunk updated in place to a copy of a gold chunk's content scores exactly like the gold chunk",
        target="ranking@k",
        direction=Direction.EQUAL,
        severity=Severity.HARD,
        check=updated_copy_ties,
        applies_to=("UpdateChunk:copy",),
        hard_with=("single_list",),
        assumptions=(
            "scores depend on a chunk's content (text, metadata, tenant, versions), not on its id: two chunks with "
            "equal content score equally in the same run; exact search",
            "a single scored list (trait 'single_list'): rank fusion scores ranks, and two identical chunks take "
            "adjacent ranks in each leg and so different fused scores; without the trait, measured as a rate",
            "judged only when both are returned: a retriever may drop one of two identical chunks",
        ),
    ),
    Relation(
        name="lifecycle.added_existing_one_version",
        exact_search=True,
        family="lifecycle",
        summary="after add() of an id the index holds, with a gold chunk's content, the index holds one version: the ranking is unchanged (refused or ignored) or the copy ties with the gold chunk (replaced)",
        target="ranking@k",
        direction=Direction.EQUAL,
        severity=Severity.HARD,
        check=added_existing_one_version,
        applies_to=("AddExisting",),
        hard_with=("single_list",),
        assumptions=(
            "a single scored list (trait 'single_list'), as for lifecycle.updated_copy_ties; without the trait, "
            "measured as a rate",
            "libraries differ on an add of an id they hold (upsert, error, ignored add): each is accepted; a refused "
            "add leaves the instance as it was, so the same call ranks alike (deterministic retriever)",
            "scores depend on a chunk's content, not on its id: an accepted copy scores like its original in the "
            "same run; exact search; judged only when both are returned",
            "an id returned twice is the retriever contract's to report (contract.valid_response)",
        ),
    ),
    Relation(
        name="lifecycle.updated_unrelated_unmatched",
        family="lifecycle",
        summary="a chunk updated in place to text sharing no word with the query no longer scores above zero",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=updated_unrelated_unmatched,
        applies_to=("UpdateChunk:unrelated",),
        requires=("lexical",),
        assumptions=("lexical retriever: a chunk sharing no word with the query scores zero",),
    ),
    Relation(
        name="lifecycle.reindexed_forgets_removed",
        family="lifecycle",
        summary="after index(corpus) on the same instance, no chunk missing from the new corpus is returned",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_reindexed,
        applies_to=("Reindex",),
        assumptions=("index(corpus) replaces everything the instance held (DESIGN section 3)",),
    ),
    Relation(
        name="lifecycle.edit_equals_fresh",
        family="lifecycle",
        summary="for retrievers with exact deltas, a delta, update or re-index ranks like a fresh index of the edited corpus (up to ties)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_against_fresh,
        applies_to=("AgainstFresh",),
        requires=("exact_deltas",),
        assumptions=(
            "the retriever declares 'exact_deltas': after add/remove/update/index its statistics are those of a "
            "fresh index of the edited corpus (no tombstones counted, no drift)",
        ),
    ),
    Relation(
        name="lifecycle.edit_equals_fresh_rate",
        family="lifecycle",
        summary="how often a delta, update or re-index ranks like a fresh index of the edited corpus (any retriever)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.SOFT,
        check=_against_fresh,
        applies_to=("AgainstFresh",),
        assumptions=(
            "soft: Lucene-style indexes count deleted documents until segments merge, approximate indexes drift",
        ),
    ),
    Relation(
        name="lifecycle.updated_metadata_replaced",
        family="lifecycle",
        summary="a chunk updated in place to a version without a metadata key no longer passes a filter on that key",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=dropped_key_not_admitted,
        applies_to=("DropMetadataKey",),
        judges_filtering=True,
        judges_admission=True,
        filter_kinds=("metadata",),
        assumptions=(
            "update(chunks) replaces a chunk, metadata included (DESIGN section 3: same ids, new content); a key "
            "the new version lacks is gone, so a metadata equality filter on it no longer admits the chunk",
        ),
    ),
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
    summary="update a chunk in place, add an id already held, re-index, compare an edit with a fresh index, grow the corpus x2/x4",
    relations=RELATIONS,
    draw=lifecycle_changes,
    applicable=_applicable,
    edits_corpus=True,
    perturbation_types=(UpdateChunk, AddExisting, DropMetadataKey, Reindex, AgainstFresh, Grow),
    max_examples=9,
)
