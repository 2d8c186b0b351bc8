"""The bug zoo: correct BM25 retrievers with ONE planted, realistic bug each, and the relation meant to catch it.

Every member is a factory (the class takes the corpus) built on the brute-force `ReferenceBM25`, so anything
a member does differently from the reference is its bug and nothing else. `ZOO` lists them with the relations
expected to catch each; tests/quality checks that ragmorph's default suite does, and zoo_report.py prints the
cost of finding and shrinking each bug.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import attrs

from ragmorph.model import Chunk, Corpus, Filters, Hit

from .reference_bm25 import ReferenceBM25

__all__ = ["ZOO", "ZooMember", "zoo_member"]


class TenantFilterIgnored(ReferenceBM25):
    """Bug: the tenant filter is dropped when the request is built (only current_only/metadata are honoured).

    Caught by: tenancy.unauthorized_zero (another tenant's chunk returned under the case's tenant filter).
    """

    def ranked(self, query: str, filters: Filters | None = None) -> list[tuple[int, Chunk, float]]:
        if filters is not None:
            filters = attrs.evolve(filters, tenant=None)
        return super().ranked(query, filters)


class TenantFilterAfterTruncation(ReferenceBM25):
    """Bug: the tenant filter is applied to the top k *after* truncation (a post-filter on a k-sized page).

    It never leaks, but returns fewer than k visible chunks although more exist. Caught by:
    tenancy.filtered_equals_visible.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        page = self.ranked(query, None)[:k]
        return [Hit(chunk.id, score) for _, chunk, score in page if filters is None or filters.allows(chunk)]


class SharedChunksDropped(ReferenceBM25):
    """Bug: the tenant filter is `chunk.tenant == tenant`, so shared chunks (tenant None) vanish under it.

    Caught by: tenancy.filtered_equals_visible (a visible shared chunk of the unfiltered ranking is missing).
    """

    def ranked(self, query: str, filters: Filters | None = None) -> list[tuple[int, Chunk, float]]:
        rows = super().ranked(query, filters)
        if filters is None or filters.tenant is None:
            return rows
        return [row for row in rows if row[1].tenant == filters.tenant]


class ShortByOne(ReferenceBM25):
    """Bug: an off-by-one slice returns k - 1 hits (`ranked[: k - 1]`).

    Caught by: cutoff.prefix (the ranking at k is not the ranking at a larger k' cut to k).
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return [Hit(chunk.id, score) for _, chunk, score in self.ranked(query, filters)[: k - 1]]


class LongByOne(ReferenceBM25):
    """Bug: an off-by-one slice returns k + 1 hits (`ranked[: k + 1]`).

    The response validator rejects it (more than k hits). Caught by: contract.valid_response.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return [Hit(chunk.id, score) for _, chunk, score in self.ranked(query, filters)[: k + 1]]


class RerankWhenKLarge(ReferenceBM25):
    """Bug: a "cheap reranker" (shortest chunk first among the top k, scored 1 / tokens) runs only when k > 3.

    Rankings then depend on k beyond truncation. Caught by: cutoff.prefix.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        page = self.ranked(query, filters)[:k]
        if k <= 3:
            return [Hit(chunk.id, score) for _, chunk, score in page]
        rescored = [(position, chunk, 1.0 / (1 + len(self.tokens_of(chunk)))) for position, chunk, _ in page]
        rescored.sort(key=lambda row: (-row[2], row[0]))
        return [Hit(chunk.id, score) for _, chunk, score in rescored]


class UnstableTies(ReferenceBM25):
    """Bug: scores are rounded to one decimal (as some services report them) and the chunks of each run of equal
    scores are served round-robin, rotated by one with every call "to spread load" — so the same call twice
    gives two orders whenever the page holds a tie.

    A fixed tie-break (corpus position, id) would be correct. Caught by: repeat.identical.
    """

    def __init__(self, corpus: Corpus | Sequence[Chunk], **kwargs: float) -> None:
        super().__init__(corpus, **kwargs)
        self.calls = 0

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        self.calls += 1
        rows = [(chunk, round(score, 1)) for _, chunk, score in self.ranked(query, filters)]
        served: list[tuple[Chunk, float]] = []
        start = 0
        while start < len(rows):
            end = start
            while end < len(rows) and rows[end][1] == rows[start][1]:
                end += 1
            tie = rows[start:end]
            shift = self.calls % len(tie)
            served.extend(tie[shift:] + tie[:shift])
            start = end
        return [Hit(chunk.id, score) for chunk, score in served[:k]]


class IgnoresDeletes(ReferenceBM25):
    """Bug: `remove()` is a no-op (the delete is acknowledged but never reaches the index).

    Caught by: removal.removed_never_returned (and repeat.identical after an undone add).
    """

    def remove(self, ids: Sequence[str]) -> None:
        return None

    def add(self, chunks: Sequence[Chunk]) -> None:
        # Upserts, like the stores this imitates: re-adding a chunk it still holds changes nothing.
        held = {chunk.id for chunk in self.chunks}
        super().add([chunk for chunk in chunks if chunk.id not in held])


class StaleUnderCurrentOnly(ReferenceBM25):
    """Bug: `current_only` drops only chunks whose successor is indexed (a "stale" test), so an outdated
    version whose successor is gone is still returned.

    Caught by: supersede.current_only_excludes_superseded.
    """

    def ranked(self, query: str, filters: Filters | None = None) -> list[tuple[int, Chunk, float]]:
        if filters is None or not filters.current_only:
            return super().ranked(query, filters)
        present = {chunk.id for chunk in self.chunks}
        rows = super().ranked(query, attrs.evolve(filters, current_only=False))
        return [row for row in rows if row[1].superseded_by not in present]


class SupersededPreferred(ReferenceBM25):
    """Bug: the freshness boost has its sign flipped, so an outdated version outranks its successor.

    It declares the freshness trait it claims to implement. Caught by: supersede.successor_first.
    """

    ragmorph_traits = ("lexical", "freshness")

    def ranked(self, query: str, filters: Filters | None = None) -> list[tuple[int, Chunk, float]]:
        rows = super().ranked(query, filters)
        boosted = [(p, c, s * (1.5 if c.superseded_by is not None else 1.0)) for p, c, s in rows]
        boosted.sort(key=lambda row: (-row[2], row[0]))
        return boosted


class DuplicateIds(ReferenceBM25):
    """Bug: hits are the union of per-term posting lists without de-duplication, so a chunk matching two query
    terms comes back twice.

    The response validator rejects it (a repeated id). Caught by: contract.valid_response.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        hits = []
        for _, chunk, score in self.ranked(query, filters):
            matched = set(self.query_tokens(query)) & set(self.tokens_of(chunk))
            hits.extend(Hit(chunk.id, score) for _ in matched)
        return hits[:k]


class QueryOnlyCache(ReferenceBM25):
    """Bug: results are cached under (query, k) alone: the key forgets the filters and the corpus version.

    A page cached before add/remove is served after it (a removed chunk comes back), and a page cached for one
    filter is served to another. Caught by: removal.removed_never_returned, repeat.identical (and the tenancy
    relations when the unfiltered call comes first).
    """

    def __init__(self, corpus: Corpus | Sequence[Chunk], **kwargs: float) -> None:
        super().__init__(corpus, **kwargs)
        self.cache: dict[tuple[str, int], list[Hit]] = {}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        key = (query, k)
        if key not in self.cache:
            self.cache[key] = super().retrieve(query, k=k, filters=filters)
        return self.cache[key]


class CaseSensitiveQuery(ReferenceBM25):
    """Bug: chunks are casefolded at index time but the query is not, so "Leave" never matches "leave".

    It still declares the `normalising` trait of the BM25 it was forked from (case-insensitive matching is what
    its users were promised). Caught by: query.normalised_invariant (lower-casing the query changes the ranking).
    """

    ragmorph_traits = ("lexical", "normalising")

    def query_tokens(self, query: str) -> list[str]:
        return re.findall(r"\w+", query)


class TruncatedQuery(ReferenceBM25):
    """Bug: the query is cut to its first 40 characters (a column width in a request log reused as input).

    It declares `normalising` like the BM25 it wraps. Caught by: query.normalised_invariant (a whitespace edit
    moves the cut, so the same words retrieve differently).
    """

    ragmorph_traits = ("lexical", "normalising")

    def query_tokens(self, query: str) -> list[str]:
        return super().query_tokens(query[:40])


class DropsLastChunk(ReferenceBM25):
    """Bug: an off-by-one loop never indexes the last chunk of the corpus it is built from.

    Which chunk is lost depends on corpus order. Caught by: reorder.invariant, hard for a retriever declaring
    `single_list`, which a run on the demo world suggests for it (tests/quality/test_zoo.py).
    """

    ragmorph_traits: tuple[str, ...] = ("single_list",)

    def __init__(self, corpus: Corpus | Sequence[Chunk], **kwargs: float) -> None:
        chunks = list(corpus)
        super().__init__(chunks[:-1], **kwargs)


class LengthBias(ReferenceBM25):
    """Bug: a configuration typo sets b = 10 instead of 1.0, far outside [0, 1]: the length norm
    1 - b + b * len / avgdl goes negative for chunks a little shorter than average, so their scores turn
    negative and they drop out, while a longer copy of the same text scores.

    Caught by: distractors.padded_below_original (a gold chunk padded with words that do not match the query
    is returned although its original is not).
    """

    def __init__(self, corpus: Corpus | Sequence[Chunk], **kwargs: float) -> None:
        super().__init__(corpus, **{**kwargs, "b": 10.0})


class NaNScores(ReferenceBM25):
    """Bug: the returned page is min-max normalised for score fusion; a one-hit page divides 0 by 0, NaN.

    The response validator rejects it (a non-finite score). Caught by: contract.valid_response.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        page = super().retrieve(query, k=k, filters=filters)
        if not page:
            return page
        scores = [hit.score or 0.0 for hit in page]
        low, high = min(scores), max(scores)
        spread = high - low
        return [Hit(hit.id, (score - low) / spread if spread else math.nan) for hit, score in zip(page, scores)]


class PopularityFeedback(ReferenceBM25):
    """Bug: every returned chunk gets a 5% "popularity" boost on later calls (click feedback applied online),
    so results change with the history of calls.

    Caught by: repeat.identical.
    """

    def __init__(self, corpus: Corpus | Sequence[Chunk], **kwargs: float) -> None:
        super().__init__(corpus, **kwargs)
        self.popularity: dict[str, int] = {}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        rows = [(p, c, s * 1.05 ** self.popularity.get(c.id, 0)) for p, c, s in self.ranked(query, filters)]
        rows.sort(key=lambda row: (-row[2], row[0]))
        hits = [Hit(chunk.id, score) for _, chunk, score in rows[:k]]
        for hit in hits:
            self.popularity[hit.id] = self.popularity.get(hit.id, 0) + 1
        return hits


@attrs.frozen
class ZooMember:
    """One planted bug: its name, the factory, one sentence on the bug, and what should catch it.

    `caught_by` names the hard relations expected to fail; `invalid_response` marks bugs whose responses the
    validator rejects (caught by contract.valid_response); `hard_detectable=False` marks bugs only a soft
    relation can reveal.
    """

    name: str
    factory: type[ReferenceBM25]
    bug: str
    caught_by: tuple[str, ...] = ()
    invalid_response: bool = False
    hard_detectable: bool = True


ZOO: tuple[ZooMember, ...] = (
    ZooMember("tenant_filter_ignored", TenantFilterIgnored, "the tenant filter is dropped", ("tenancy.unauthorized_zero",)),
    ZooMember(
        "tenant_filter_after_truncation",
        TenantFilterAfterTruncation,
        "the tenant filter runs after the cut to k",
        ("tenancy.filtered_equals_visible",),
    ),
    ZooMember(
        "shared_chunks_dropped",
        SharedChunksDropped,
        "shared chunks vanish under a tenant filter",
        ("tenancy.filtered_equals_visible",),
    ),
    ZooMember("short_by_one", ShortByOne, "returns k - 1 hits", ("cutoff.prefix",)),
    ZooMember("long_by_one", LongByOne, "returns k + 1 hits", ("contract.valid_response",), invalid_response=True),
    ZooMember("rerank_when_k_large", RerankWhenKLarge, "reranks only when k > 3", ("cutoff.prefix",)),
    ZooMember("unstable_ties", UnstableTies, "rounded scores, ties rotate with each call", ("repeat.identical",)),
    ZooMember(
        "ignores_deletes",
        IgnoresDeletes,
        "remove() is a no-op",
        ("removal.removed_never_returned", "repeat.identical"),
    ),
    ZooMember(
        "stale_under_current_only",
        StaleUnderCurrentOnly,
        "current_only keeps superseded chunks whose successor is gone",
        ("supersede.current_only_excludes_superseded",),
    ),
    ZooMember(
        "superseded_preferred",
        SupersededPreferred,
        "the freshness boost favours outdated versions",
        ("supersede.successor_first",),
    ),
    ZooMember(
        "duplicate_ids",
        DuplicateIds,
        "a chunk is returned once per matching term",
        ("contract.valid_response",),
        invalid_response=True,
    ),
    ZooMember(
        "query_only_cache",
        QueryOnlyCache,
        "results cached by (query, k), ignoring filters and index edits",
        ("removal.removed_never_returned", "repeat.identical", "tenancy.unauthorized_zero", "tenancy.filtered_equals_visible"),
    ),
    ZooMember("case_sensitive_query", CaseSensitiveQuery, "the query is not casefolded", ("query.normalised_invariant",)),
    ZooMember(
        "truncated_query",
        TruncatedQuery,
        "only the first 40 characters of the query are used",
        ("query.normalised_invariant",),
    ),
    ZooMember("drops_last_chunk", DropsLastChunk, "the last chunk is never indexed", ("reorder.invariant",)),
    ZooMember(
        "length_bias",
        LengthBias,
        "b = 10: negative length normalisation drops chunks shorter than average",
        ("distractors.padded_below_original",),
    ),
    ZooMember(
        "nan_scores",
        NaNScores,
        "min-max normalising a one-hit page gives NaN",
        ("contract.valid_response",),
        invalid_response=True,
    ),
    ZooMember("popularity_feedback", PopularityFeedback, "returned chunks get boosted on later calls", ("repeat.identical",)),
)


def zoo_member(name: str) -> ZooMember:
    """The zoo member called `name`."""
    for member in ZOO:
        if member.name == name:
            return member
    raise KeyError(f"no zoo member {name!r}; known: {[m.name for m in ZOO]}")
