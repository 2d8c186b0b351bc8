"""Filters family: every filter a retriever accepts selects from the unfiltered ranking and changes nothing else.

`tenancy` judges the tenant filter; this family judges the others and their combinations: `current_only`,
metadata equality, and a tenant together with either. The unfiltered ranking is fetched deep (at least the
whole corpus for small corpora, so the call also asks for k above the corpus size), then the same query is
asked under the filters at k. Three hard relations follow from the contract of DESIGN section 3: a filter never
admits a chunk it excludes, it never drops a chunk it admits (the filtered ranking is the unfiltered
ranking's admitted chunks, in order, cut to k, up to score ties), and, for every retriever, exact or
approximate, a filtered call never returns fewer than min(k, visible matching chunks) hits (`full_k`, the one
definition of under-return that the tenancy, scale and approximate families judge too).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from hypothesis import strategies as st

from ragmorph.adapters import FILTER_KINDS
from ragmorph.model import Corpus, Filters, Hit, Ranking, World
from ragmorph.relations import Concern, Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties, scores_tied

from ._core import CorpusMemo, Family, PerturbationBase, is_json_scalar, ks_strategy, shared_tokens

__all__ = [
    "FAMILY",
    "RELATIONS",
    "ApplyFilters",
    "admitted_only",
    "follow_admitted_only",
    "admitted_prefix",
    "filter_choices",
    "filtered_equals_admitted",
    "filterings",
    "full_k",
    "scored_unlike",
    "full_k_relation",
    "visible_hits",
]

# The unfiltered base asks this many hits at least (and the whole corpus when it is smaller): deep enough to
# see past the candidate pools real indexes use (10, 40) while staying cheap on large corpora.
_MIN_DEPTH = 100
# Metadata values offered as equality filters: those of the gold chunks first, then the most common ones.
_METADATA_CHOICES = 6


@attrs.frozen
class ApplyFilters(PerturbationBase):
    """Compare an unfiltered ranking fetched `depth` deep with the ranking under `filters` at k."""

    family: ClassVar[str] = "filters"
    k: int
    depth: int
    filters: Filters

    def base(self, world: World) -> World:
        """The unfiltered world, asked `depth` deep."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.depth, filters=Filters()))

    def apply(self, world: World) -> World:
        """The same query under `filters`, at k."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=self.filters))


def _scalar_items(metadata: Any) -> list[tuple[str, Any]]:
    # Equality filters on JSON scalars only: lists and objects are not hashable and no store compares them so.
    # Sorted by key: a world read back from JSON Lines (keys sorted) is probed like the same world in memory.
    return sorted(((k, v) for k, v in metadata.items() if is_json_scalar(v)), key=_pair_key)


def _pair_key(pair: tuple[str, Any]) -> tuple[str, str, str]:
    # Values of one key may mix types (1, "1", True): order by key, then type name and repr, never by value alone.
    return pair[0], type(pair[1]).__name__, repr(pair[1])


_METADATA = CorpusMemo(8)
_ID = operator.attrgetter("id")


# The exact types of JSON scalars. When every value has one of them, every pair is counted at once; a value of
# any other type (a subclass, or Decimal(1), which equals the scalar 1) is left out pair by pair instead.
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _metadata_counts(corpus: Corpus) -> Counter[tuple[str, Any]]:
    """How many chunks hold each scalar metadata pair; every case of a corpus asks."""

    def pairs() -> Iterator[tuple[str, Any]]:
        return itertools.chain.from_iterable(chunk.metadata.items() for chunk in corpus.chunks)

    # Counted unsorted (a chunk's keys are distinct, so its pairs never meet in the counter), at C speed.
    if _SCALAR_TYPES.issuperset(map(type, map(operator.itemgetter(1), pairs()))):
        return Counter(pairs())
    return Counter(pair for pair in pairs() if is_json_scalar(pair[1]))


def _most_common(counts: Counter[tuple[str, Any]], n: int) -> list[tuple[str, Any]]:
    """The first `n` pairs of `counts`, most common first (ties by `_pair_key`): sorting only the pairs more common
    than the n-th, and taking the rest from the pairs as common as it by a selection (a large corpus has tens of
    thousands of pairs, most held by one or two chunks: 14k pairs tied at the n-th's count took 140 ms to sort)."""
    if n <= 0:
        return []
    if n >= len(counts):
        return sorted(counts, key=lambda pair: (-counts[pair], _pair_key(pair)))
    least = heapq.nlargest(n, counts.values())[-1]
    above = sorted((pair for pair, count in counts.items() if count > least), key=lambda pair: (-counts[pair], _pair_key(pair)))
    tied = (pair for pair, count in counts.items() if count == least)
    return above + heapq.nsmallest(n - len(above), tied, key=_pair_key)


def filter_choices(world: World) -> list[Filters]:
    """The filters drawn for `world`, simplest first: current_only, metadata equality (gold chunks' values
    first), and the case's tenant combined with each.

    Independent of the order of keys in each chunk's metadata. The two-key filter puts the gold chunk's most
    selective condition first (fewest chunks have it): a filter that keeps only some of its conditions then
    admits chunks the whole filter excludes.
    """
    corpus, case = world.corpus, world.case
    gold = [corpus[i] for i in case.gold_ids if i in corpus]
    counts = _METADATA.get((corpus,), None, lambda: _metadata_counts(corpus))
    preferred = [pair for chunk in gold for pair in _scalar_items(chunk.metadata)]
    # Enough of the most common pairs to fill the choices even when every preferred pair is among them.
    pairs = list(dict.fromkeys(preferred + _most_common(counts, _METADATA_CHOICES + len(preferred))))[:_METADATA_CHOICES]
    choices = [Filters(current_only=True)] + [Filters(metadata={key: value}) for key, value in pairs]
    if gold and len(gold[0].metadata) >= 2:
        selective = sorted(_scalar_items(gold[0].metadata), key=lambda pair: (counts[pair], _pair_key(pair)))
        both = dict(selective[:2])
        if len(both) == 2:
            choices.append(Filters(metadata=both))
    if case.tenant is not None:
        with_tenant = [attrs.evolve(f, tenant=case.tenant) for f in choices]
        choices = choices + with_tenant
    return list(dict.fromkeys(choices))


def filterings(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> st.SearchStrategy[ApplyFilters]:
    """Draw a filter and a cutoff; shrinks toward `current_only` at the smallest k.

    A retriever that takes no filters gets perturbations without filters, which every relation reports as
    not applicable (with the reason) instead of an error.
    """
    depth = max(min(len(world.corpus), _MIN_DEPTH * 10), _MIN_DEPTH, max(ks))
    choices = filter_choices(world) if filters else [Filters()]
    return st.builds(lambda k, f: ApplyFilters(k=k, depth=max(depth, k), filters=f), ks_strategy(ks), st.sampled_from(choices))


def _describe(filters: Filters) -> str:
    parts = [f"tenant={filters.tenant!r}"] if filters.tenant is not None else []
    parts += ["current_only"] if filters.current_only else []
    parts += [f"{key}={value!r}" for key, value in filters.metadata.items()]
    return ", ".join(parts) or "no filters"


def admitted_only(observation: Observation) -> Verdict:
    """Verdict that every hit of `observation` passes the filters it was asked with (pure)."""
    filters = observation.world.params.filters
    if filters.is_empty:
        return Verdict.not_applicable("the call has no filters")
    corpus = observation.world.corpus
    for rank, hit in enumerate(observation.ranking.hits, start=1):
        chunk = corpus.get(hit.id)
        if chunk is not None and not filters.allows(chunk):
            return Verdict.broken(f"chunk {hit.id!r} at rank {rank} does not pass the filters ({_describe(filters)})", 0, 1)
    return Verdict.ok(f"every hit passes the filters ({_describe(filters)})", 0, 0)


def filtered_equals_admitted(base: Observation, follow: Observation) -> Verdict:
    """Verdict that the filtered follow-up is the unfiltered base's admitted hits in order, cut to k (pure).

    When the base was exhausted (fewer hits than asked) and shows at most k admitted chunks, the filtered
    ranking must be exactly those; otherwise its first min(k, admitted shown) hits must be the admitted prefix,
    with chunks tied at the cut interchangeable.
    """
    filters = follow.world.params.filters
    if not base.world.params.filters.is_empty or filters.is_empty:
        return Verdict.not_applicable("only judged for an unfiltered base and a filtered follow-up")
    what = f"the unfiltered ranking's chunks that pass the filters ({_describe(filters)})"
    return admitted_prefix(
        base,
        follow,
        admitted_hits(base.ranking.hits, base.world.corpus, filters),
        already=lambda shown: f"{what} are already {shown} or more",
        mismatch=f"the filtered ranking is not {what}",
    )


def admitted_prefix(
    base: Observation, follow: Observation, admitted: Sequence[Hit], *, already: Callable[[int], str], mismatch: str
) -> Verdict:
    """Verdict that `follow` is `admitted` (the base's hits its filters admit) in order, cut to k, up to ties (pure).

    The one comparison of a filtered ranking with an unfiltered base (the filters and tenancy families): when the
    base was exhausted and shows at most k admitted chunks, the filtered ranking must be exactly those; otherwise
    its first min(k, admitted shown) hits must be the admitted prefix. `already(shown)` and `mismatch` word the
    two kinds of break.
    """
    k = follow.world.params.k
    unlike = scored_unlike(base, follow)
    if unlike is not None:
        return unlike
    if base.exhausted and len(admitted) <= k:
        # The unfiltered ranking listed every chunk it would ever return, so the filtered one is fully known.
        verdict = compare_up_to_ties(admitted, follow.ranking.hits, open_end=False, scores_comparable=False)
    else:
        shown = min(k, len(admitted))
        if len(follow.ranking.hits) < shown:
            return Verdict.broken(
                f"the filtered ranking has {len(follow.ranking.hits)} hits, but {already(shown)}: "
                f"{[h.id for h in admitted[:shown]]}"
            )
        verdict = compare_up_to_ties(admitted[:shown], follow.ranking.hits[:shown], scores_comparable=False, below=admitted[shown:])
    if not verdict.holds:
        return Verdict.broken(f"{mismatch}: {verdict.detail}")
    return verdict


def scored_unlike(base: Observation, follow: Observation) -> Verdict | None:
    """Not applicable when the calls' scores show the filtered order is the retriever's own, else None (pure):
    a chunk both calls returned scored differently, or a filtered hit the unfiltered ranking lacks outscores it.

    The filtered ranking is the unfiltered one's admitted part only for a retriever whose score of a chunk does not
    depend on which other chunks are admitted, and that ranks the same candidates under the filter: one scored
    list, pre- or post-filtered. Rank fusion with the filter
    inside each leg (Qdrant prefetch + fusion, Elasticsearch `rrf`, Weaviate hybrid), score normalisation over the
    admitted candidates and an index per filter value are correct too, and their filtered order is their own. The
    retriever shows which it is on every call: the scores of the chunks both calls returned agree (up to ties), or
    they do not. Where they do not, admitted-only and full k still judge the filter.
    """
    if not follow.ranking.hits:
        return None  # nothing to compare scores with: an empty filtered list is judged as it is
    wanted = {hit.id: hit.score for hit in follow.ranking.hits if hit.has_finite_score}
    found: set[str] = set()
    floor: float | None = None
    for hit in base.ranking.hits:
        if not hit.has_finite_score:
            continue
        floor = hit.score if floor is None else min(floor, hit.score)  # type: ignore[type-var]
        after = wanted.get(hit.id)
        if after is None:
            continue
        found.add(hit.id)
        if not scores_tied(hit.score, after):  # type: ignore[arg-type]
            return Verdict.not_applicable(
                f"chunk {hit.id!r} scored {hit.score:.6g} unfiltered and {after:.6g} under the filter: this "
                "retriever's scores depend on which chunks the filter admits (rank fusion or score normalisation "
                "over the admitted chunks, or an index per filter value), so its filtered order is its own; "
                "admitted-only and full k still judge the filter"
            )
    if not found:
        return Verdict.not_applicable("no chunk was returned by both calls with a score, so the two calls' scores cannot be compared")
    # A chunk the unfiltered ranking lacks, scored above chunks it lists: the two calls ranked different candidates
    # (a first-stage pool cut before a reranker, filtered inside the pool), so the filtered order is its own.
    for chunk_id, score in wanted.items():
        if chunk_id not in found and score > floor and not scores_tied(score, floor):  # type: ignore[operator,arg-type]
            return Verdict.not_applicable(
                f"chunk {chunk_id!r} scored {score:.6g} under the filter, above chunks the unfiltered ranking lists, "
                "yet that ranking lacks it: the calls ranked different candidates (a candidate pool cut before a "
                "reranker, filtered inside the pool), so the filtered order is this retriever's own; admitted-only "
                "and full k still judge the filter"
            )
    return None


def visible_hits(reference: Observation, follow: Observation) -> list[Hit]:
    """The hits of `reference` that the follow-up call's filters admit, in `reference`'s order (pure)."""
    return admitted_hits(reference.ranking.hits, follow.world.corpus, follow.world.params.filters)


def admitted_hits(hits: Sequence[Hit], corpus: Corpus, filters: Filters) -> list[Hit]:
    """The hits of chunks that `corpus` holds and `filters` admit, in order (one lookup per hit: rankings asked
    past the corpus size hold 100k hits)."""
    chunk_of, admits = corpus.get, filters.allows
    return [hit for hit in hits if (chunk := chunk_of(hit.id)) is not None and admits(chunk)]


# How many visible chunks the detail of a failure names; the rest are counted, never listed.
_NAMED = 10


def _composition(follow: Observation) -> str:
    """Size of the corpus, how much of it the filters admit, and k: what a selective filter needs to bite."""
    filters, corpus = follow.world.params.filters, follow.world.corpus
    if filters.is_empty:
        return f"{len(corpus):,} chunks, no filters, k={follow.world.params.k}"
    admitted = sum(1 for chunk in corpus if filters.allows(chunk))
    share = admitted / len(corpus) if len(corpus) else 0.0
    return f"{len(corpus):,} chunks, {admitted:,} ({share:.1%}) admitted by {_describe(filters)}, k={follow.world.params.k}"


def full_k(reference: Observation, follow: Observation, *, source: str) -> Verdict:
    """Verdict that the follow-up returned at least min(k, visible matching chunks) hits (pure).

    The visible matching chunks are the hits of `reference` that the follow-up's filters admit: a ranking over
    the same corpus (the retriever's own unfiltered ranking asked deep, or its exact twin under the same filters)
    that `source` names. A chunk the retriever itself ranks, and the filter admits, matches the query and is
    visible to the caller, so a shorter filtered list dropped it: the under-return of HNSW scans under a
    selective filter (pgvector's ef_search), of post-filtering the k nearest rows (LanceDB prefilter=False), and
    of any candidate pool cut before the filter.
    """
    k = follow.world.params.k
    visible = visible_hits(reference, follow)
    expected, got = min(k, len(visible)), len(follow.ranking.hits)
    chunks = f"{len(visible):,} chunk{'' if len(visible) == 1 else 's'}"
    if got >= expected:
        return Verdict.ok(f"{got} hit{'' if got == 1 else 's'} at k={k}; {source} shows {chunks} the filters admit", expected, got)
    named = ", ".join(h.id for h in visible[:_NAMED]) + (f", ... {len(visible) - _NAMED:,} more" if len(visible) > _NAMED else "")
    return Verdict.broken(
        f"returned {got} of k={k} hits where {source} shows {chunks} the filters admit ({named}): "
        f"fewer than min(k, visible matching chunks) = {expected}; composition: {_composition(follow)}",
        expected,
        got,
    )


def shown_visible(reference: Observation, follow: Observation) -> tuple[Observation, Observation]:
    """What a report shows for an under-return: the visible part of `reference` cut to k, beside the follow-up.

    A reference asked thousands deep is never listed whole: its visible chunks, as the filtered call should
    have returned them (at the follow-up's k and filters), stand beside the short ranking.
    """
    visible = tuple(visible_hits(reference, follow)[: follow.world.params.k])
    return Observation(follow.world, Ranking(visible)), follow


def full_k_relation(
    family: str,
    *,
    source: str,
    applies_to: tuple[str, ...],
    assumptions: tuple[str, ...] = (),
    filter_kinds: tuple[str, ...] = FILTER_KINDS,
) -> Relation:
    """The `<family>.full_k` relation: one definition of under-return (`full_k`), judged in `family`'s plans on
    calls carrying the filter `filter_kinds`."""
    check: Callable[[Observation, Observation], Verdict] = functools.partial(full_k, source=source)
    return Relation(
        name=f"{family}.full_k",
        family=family,
        summary=f"a call at k returns at least min(k, visible matching chunks) hits; the visible ones: {source}'s chunks the filters admit",
        target="hits@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.HARD,
        concern=Concern.CONTRACT,
        check=check,
        shown=shown_visible,
        judges_filtering=True,
        filter_kinds=filter_kinds,
        applies_to=applies_to,
        assumptions=(
            "DESIGN section 3: returning fewer hits than min(k, visible matching chunks) is a contract breach for "
            "every retriever, exact or approximate (never measured as a rate)",
            *assumptions,
        ),
    )


def follow_admitted_only(base: Observation, follow: Observation) -> Verdict:
    """`admitted_only` as a relation check: every hit of the follow-up call passes its filters."""
    return admitted_only(follow)


def _shares_query_words(base: Observation, follow: Observation) -> Verdict:
    hits = [*base.ranking.hits, *follow.ranking.hits]
    if not hits:
        return Verdict.not_applicable("nothing was returned")
    corpus = base.world.corpus
    # The token index's count per chunk, where each deep base ranking (1,000 hits) tokenised every text again; read
    # for every hit at once (a ranking at k past the corpus holds 100k hits).
    shared = shared_tokens(corpus, base.world.case.query)
    positions = np.array(corpus.positions_of(map(_ID, hits)), np.intp)
    known = np.flatnonzero(positions >= 0)
    lacking = known[shared[positions[known]] == 0]
    if len(lacking):
        return Verdict.broken(f"chunk {hits[int(lacking[0])].id!r} shares no word with the query")
    return Verdict.ok("every returned chunk shares a word with the query")


RELATIONS = (
    Relation(
        name="filters.admitted_only",
        family="filters",
        summary="under any filter (current_only, metadata equality, tenant with either), every hit passes it",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=follow_admitted_only,
        judges_filtering=True,
        judges_admission=True,
        assumptions=(
            "Filters semantics of DESIGN section 1: a tenant sees its own and shared chunks, current_only drops any "
            "chunk with superseded_by set, metadata equality needs the key present with an equal value",
        ),
    ),
    Relation(
        name="filters.filtered_equals_admitted",
        exact_search=True,
        family="filters",
        summary="the filtered ranking equals the unfiltered ranking's admitted chunks in order, cut to k (up to ties)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=filtered_equals_admitted,
        judges_filtering=True,
        assumptions=(
            "judged where the chunks both calls returned score alike in both (one scored list, pre- or "
            "post-filtered, k candidates after filtering); a retriever whose scores move with the admitted set "
            "(rank fusion with the filter in each leg, normalisation over the admitted chunks, an index per filter "
            "value) shows it in those scores, and the relation says not_applicable for that pair",
            "only the prefix the unfiltered top `depth` fixes is compared; beyond it, chunks tied at the cut pass",
        ),
    ),
    full_k_relation(
        "filters",
        source=f"the retriever's own unfiltered ranking (asked at least {_MIN_DEPTH} deep)",
        applies_to=("ApplyFilters",),
        assumptions=("the filter does not change whether an admitted chunk matches the query (one scored list)",),
    ),
    Relation(
        name="filters.hits_share_query_words_rate",
        family="filters",
        summary="how often every returned chunk shares a word (casefolded word token) with the query (any retriever)",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.SOFT,
        check=_shares_query_words,
        assumptions=("soft: evidence for the trait 'lexical', which the report suggests when it always held",),
    ),
)


FAMILY = Family(
    name="filters",
    summary="apply current_only, metadata equality or a tenant with either; compare with the unfiltered ranking",
    relations=RELATIONS,
    draw=filterings,
    perturbation_types=(ApplyFilters,),
    max_examples=5,
)
