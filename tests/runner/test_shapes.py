"""The correct retrievers of tests/support/shapes.py keep their own contract on generated worlds.

They are the population ragmorph must not fail, so they are checked here without ragmorph's relations: each call
is deterministic (the noisy store up to its score noise), returns at most k distinct ids, only admitted chunks and
as many as its semantics promise, and an instance edited by deltas ranks like a fresh instance of the edited
corpus.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus, Filters
from ragmorph.worlds import demo_world
from support.generators import chunk_ids, metadata, texts, worlds
from support.shapes import (
    SHAPE_TRAITS,
    SHAPES,
    ExactDense,
    HybridRRFPrefilter,
    NoisyScoreStore,
    OperatorStore,
    PagedClient,
    TwoStageRerank,
    bm25_tokens,
    where_from_filters,
    where_matches,
)

_RELAXED = [h for h in HealthCheck if h.name in {"too_slow", "data_too_large", "filter_too_much"}]
_SETTINGS = settings(max_examples=25, deadline=None, database=None, suppress_health_check=_RELAXED)

# Exact scores are bit-identical for the same texts; the noisy store moves scores by 1e-7 relative per call.
_EXACT_TIES = 1e-9
_NOISY_TIES = 1e-6


def _tolerance(name: str) -> float:
    return _NOISY_TIES if SHAPES[name] is NoisyScoreStore else _EXACT_TIES


def _tied(a: float, b: float, rel: float) -> bool:
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def _same_up_to_ties(
    expected: Sequence[tuple[str, float]], actual: Sequence[tuple[str, float]], rel: float
) -> str | None:
    """None when `actual` is `expected` up to reordering within score ties (the last tie may be cut differently)."""
    if len(expected) != len(actual):
        return f"lengths differ: {list(expected)} vs {list(actual)}"
    start = 0
    while start < len(expected):
        end = start + 1
        while end < len(expected) and _tied(expected[start][1], expected[end][1], rel):
            end += 1
        want = {chunk_id for chunk_id, _ in expected[start:end]}
        for chunk_id, score in actual[start:end]:
            boundary = end == len(expected)
            if chunk_id not in want and not (boundary and _tied(score, expected[start][1], rel)):
                shown = f"{list(expected)} vs {list(actual)}"
                return f"rank {start + 1}..{end}: expected one of {sorted(want)}, got {chunk_id!r}: {shown}"
        start = end
    return None


@st.composite
def _filters_over(draw: st.DrawFn, corpus: Corpus) -> Filters | None:
    """None, or Filters from the corpus: a chunk's tenant or none, current_only, a metadata pair a chunk holds."""
    if draw(st.booleans()):
        return None
    tenants = sorted({chunk.tenant for chunk in corpus if chunk.tenant is not None})
    pairs = [(key, value) for chunk in corpus for key, value in chunk.metadata.items()]
    wanted = {}
    if pairs and draw(st.booleans()):
        key, value = draw(st.sampled_from(pairs))
        wanted = {key: value}
    return Filters(tenant=draw(st.sampled_from([None, *tenants])), current_only=draw(st.booleans()), metadata=wanted)


def _admitted(corpus: Corpus, filters: Filters | None) -> list[Chunk]:
    return [chunk for chunk in corpus if filters is None or filters.allows(chunk)]


def _shares_word(query: str, chunk: Chunk) -> bool:
    return bool(set(bm25_tokens(query)) & set(bm25_tokens(chunk.text)))


def _expected_length(name: str, corpus: Corpus, query: str, k: int, filters: Filters | None) -> int:
    admitted = _admitted(corpus, filters)
    if name == "paged_client":
        return min(k, sum(_shares_word(query, chunk) for chunk in admitted))
    return min(k, len(admitted))  # these worlds stay under every window and pool (8 chunks at most)


@pytest.mark.parametrize("name", sorted(SHAPES))
@_SETTINGS
@given(data=st.data(), world=worlds(min_size=1, max_size=8))
def test_calls_keep_the_contract(name, data, world) -> None:
    """Deterministic, at most k distinct admitted ids, as many as the shape promises, scores not rising."""
    corpus = world.corpus
    retriever = SHAPES[name](corpus)
    query = data.draw(st.one_of(st.just(world.case.query), texts()), label="query")
    filters = data.draw(_filters_over(corpus), label="filters")
    k = data.draw(st.integers(1, 12), label="k")
    first = retriever.retrieve(query, k=k, filters=filters)
    second = retriever.retrieve(query, k=k, filters=filters)

    ids = [chunk_id for chunk_id, _ in first]
    assert len(first) <= k
    assert len(ids) == len(set(ids)), f"repeated ids: {ids}"
    held = {chunk.id for chunk in corpus}
    admitted = {chunk.id for chunk in _admitted(corpus, filters)}
    assert set(ids) <= held
    assert set(ids) <= admitted, f"not admitted by {filters}: {sorted(set(ids) - admitted)}"
    assert len(first) == _expected_length(name, corpus, query, k, filters)
    scores = [score for _, score in first]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True), "scores rise down the list"
    if SHAPES[name] is NoisyScoreStore:
        problem = _same_up_to_ties(first, second, _NOISY_TIES)
        assert problem is None, problem
    else:
        assert first == second, "two identical calls differ"
    if name == "paged_client":
        assert all(_shares_word(query, corpus[chunk_id]) for chunk_id in ids)


@st.composite
def _edits(draw: st.DrawFn, corpus: Corpus) -> tuple[list[str], list[Chunk], list[Chunk]]:
    """Ids to remove, held chunks updated (same ids, new text and metadata), chunks to add (some upserting)."""
    held = [chunk.id for chunk in corpus]
    removed = draw(st.lists(st.sampled_from(held), unique=True, max_size=3))
    kept = [chunk_id for chunk_id in held if chunk_id not in removed]
    updated = [
        attrs.evolve(corpus[chunk_id], text=draw(texts()), metadata=draw(metadata()))
        for chunk_id in draw(st.lists(st.sampled_from(kept), unique=True, max_size=2) if kept else st.just([]))
    ]
    new_ids = draw(st.lists(st.one_of(chunk_ids(), st.sampled_from(held)), unique=True, max_size=3))
    added = [
        Chunk(
            id=chunk_id,
            text=draw(texts()),
            tenant=draw(st.sampled_from([None, "acme", "globex"])),
            metadata=draw(metadata()),
        )
        for chunk_id in new_ids
    ]
    return removed, updated, added


def _edited(corpus: Corpus, removed: list[str], updated: list[Chunk], added: list[Chunk]) -> Corpus:
    chunks = {chunk.id: chunk for chunk in corpus if chunk.id not in removed}
    chunks.update((chunk.id, chunk) for chunk in updated)
    chunks.update((chunk.id, chunk) for chunk in added)
    return Corpus(list(chunks.values()))


@pytest.mark.parametrize("name", sorted(SHAPES))
@_SETTINGS
@given(data=st.data(), world=worlds(min_size=1, max_size=8))
def test_deltas_rank_like_a_fresh_index(name, data, world) -> None:
    """remove/update/add deltas, and index() of another instance, rank like a fresh index (up to score ties)."""
    factory = SHAPES[name]
    removed, updated, added = data.draw(_edits(world.corpus), label="edits")
    edited = _edited(world.corpus, removed, updated, added)
    query = data.draw(st.one_of(st.just(world.case.query), texts()), label="query")
    filters = data.draw(_filters_over(edited), label="filters")
    k = data.draw(st.integers(1, 12), label="k")

    instance = factory(world.corpus)
    instance.retrieve(query, k=k, filters=filters)  # a call before the edits: state must not leak through
    instance.remove(removed)
    instance.update(updated)
    instance.add(added)
    reindexed = factory(Corpus([Chunk(id="old#1", text=query or "x")]))
    reindexed.index(edited)
    fresh = factory(edited).retrieve(query, k=k, filters=filters)
    for edited_instance in (instance, reindexed):
        problem = _same_up_to_ties(fresh, edited_instance.retrieve(query, k=k, filters=filters), _tolerance(name))
        assert problem is None, problem


def test_traits_are_declared_for_every_shape() -> None:
    """Every shape has traits; only the pure-BM25 paged client is lexical; the ANN index names its exact twin."""
    assert set(SHAPE_TRAITS) == set(SHAPES)
    assert [n for n, traits in SHAPE_TRAITS.items() if "lexical" in traits] == ["paged_client"]
    assert SHAPES["approximate_dense"].ragmorph_twin is ExactDense


def test_windows_and_pages_on_a_larger_world() -> None:
    """Paging past several pages, the rerank pool of 40 and the RRF windows of 50 on the 56-chunk demo world."""
    corpus = demo_world().corpus  # 56 chunks: past the rerank pool of 40, around the RRF window of 50
    shared = [chunk for chunk in corpus if "the" in bm25_tokens(chunk.text)]
    assert len(shared) > 20
    # Paging: more than two pages of 10, cut at k inside a page.
    assert len(PagedClient(corpus).retrieve("the", k=25)) == 25
    assert len(PagedClient(corpus).retrieve("the", k=100)) == len(shared)
    assert PagedClient(corpus).retrieve("the", k=25) == PagedClient(corpus).retrieve("the", k=100)[:25]
    # The pool of 40 caps the reranked list whatever k is; within it, k only cuts.
    rerank = TwoStageRerank(corpus)
    assert len(rerank.retrieve("leave policy", k=100)) == TwoStageRerank.POOL
    assert rerank.retrieve("leave policy", k=7) == rerank.retrieve("leave policy", k=40)[:7]
    # Each leg's window of 50 bounds the fused list from below by 50 and from above by 100.
    fused = HybridRRFPrefilter(corpus).retrieve("leave policy", k=200)
    assert HybridRRFPrefilter.WINDOW <= len(fused) <= 2 * HybridRRFPrefilter.WINDOW


def test_operator_store_compares_by_json_type() -> None:
    """true, 1, 1.0, "1", [1] and [true] are distinct metadata values; the native operators follow their rules."""
    values = {"a#1": True, "a#2": 1, "a#3": 1.0, "a#4": "1", "a#5": [1], "a#6": [True]}
    pinned = [Chunk(id=i, text="leave policy", metadata={"pinned": v}) for i, v in values.items()]
    corpus = Corpus([*pinned, Chunk(id="a#7", text="leave policy")])
    store = OperatorStore(corpus)
    for chunk_id, value in values.items():
        hits = store.retrieve("leave", k=10, filters=Filters(metadata={"pinned": value}))
        assert [h for h, _ in hits] == [chunk_id], (value, hits)
    # Native operators: a record lacking the field matches $ne and $nin, never $eq, $in or an ordering.
    record = {"tenant": "", "year": 2020}
    assert where_matches(record, {"m:x": {"$ne": 1}}) and where_matches(record, {"m:x": {"$nin": [1]}})
    assert not where_matches(record, {"m:x": {"$eq": None}}) and not where_matches(record, {"m:x": {"$in": [None]}})
    assert where_matches(record, {"$and": [{"year": {"$gte": 2020}}, {"year": {"$lt": 2021.5}}]})
    assert not where_matches({"flag": True}, {"flag": {"$gt": 0}}), "booleans are never numbers"
    assert not where_matches(record, {"year": {"$gt": "1"}}), "numbers and strings are not ordered together"
    assert where_from_filters(Filters()) is None
    assert where_from_filters(Filters(tenant="acme", current_only=True, metadata={"tenant": "x"})) == {
        "$and": [{"tenant": {"$in": ["acme", ""]}}, {"superseded_by": {"$eq": ""}}, {"m:tenant": {"$eq": "x"}}]
    }


def test_noisy_store_noise_alternates_between_identical_calls() -> None:
    """Chunks with equal exact scores swap between identical calls; the noise stays within 1e-7 relative."""
    corpus = Corpus([Chunk(id=f"a#{n}", text="leave policy days") for n in range(6)])
    store = NoisyScoreStore(corpus)
    calls = [store.retrieve("leave days", k=6) for _ in range(2)]
    assert [i for i, _ in calls[0]] != [i for i, _ in calls[1]], "equal exact scores swap with the noise"
    assert Counter(i for i, _ in calls[0]) == Counter(i for i, _ in calls[1])
    exact = ExactDense(corpus).retrieve("leave days", k=1)[0][1]
    assert all(abs(score - exact) <= 2e-7 * exact for call in calls for _, score in call)
