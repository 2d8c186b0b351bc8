"""DenseRetriever: exact cosine, deltas equal to a re-index, embeddings reused across perturbed corpora."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.adapter_worlds import WORDS, corpora, delta_scripts, filters

from ragmorph.adapters import CachedEmbedder, DenseRetriever, HashingEmbedder, applied_delta, shared_cache
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters

QUERIES = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def test_scores_are_cosines_and_every_chunk_ranks() -> None:
    embedder = HashingEmbedder(64)
    corpus = Corpus([Chunk("a", "leave policy"), Chunk("b", "tax bonus"), Chunk("c", "")])
    hits = DenseRetriever(corpus, embedder=embedder).retrieve("leave policy", k=5)
    rows = embedder.embed(["leave policy", "tax bonus", ""])
    query = embedder.embed(["leave policy"])[0]
    expected = {cid: float(rows[i] @ query) for i, cid in enumerate("abc")}
    assert [h.id for h in hits][0] == "a" and len(hits) == 3
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.id], abs=1e-6)


def test_ties_are_broken_by_corpus_position() -> None:
    corpus = Corpus([Chunk("z", "tax"), Chunk("a", "tax"), Chunk("m", "TAX!")])
    assert [h.id for h in DenseRetriever(corpus).retrieve("tax", k=3)] == ["z", "a", "m"]


def test_reindexing_a_perturbed_corpus_embeds_only_new_chunks() -> None:
    embedder = CachedEmbedder(HashingEmbedder(32))
    corpus = Corpus([Chunk(f"d{i}", f"text number {i}") for i in range(10)])
    DenseRetriever(corpus, embedder=embedder)
    assert embedder.embedded == 10
    perturbed = corpus.without(["d3"]).with_chunks([Chunk("n", "a brand new text")])
    DenseRetriever(perturbed, embedder=embedder).retrieve("which number", k=3)
    assert embedder.embedded == 12  # the new chunk and the query, nothing else


def test_plain_embedders_share_one_cache_per_process() -> None:
    embedder = HashingEmbedder(16)
    assert shared_cache(embedder) is shared_cache(embedder)
    first = DenseRetriever(Corpus([Chunk("a", "alpha beta")]), embedder=embedder)
    DenseRetriever(Corpus([Chunk("b", "alpha beta")]), embedder=embedder)
    assert first.embedder.embedded == 1
    with pytest.raises(UsageError, match="Embedder"):
        shared_cache(object())  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), corpus=corpora(max_size=8))
def test_deltas_equal_a_fresh_index_bit_for_bit(data: st.DataObject, corpus: Corpus) -> None:
    retriever = DenseRetriever(corpus)
    current = corpus
    queries = data.draw(st.lists(QUERIES, min_size=1, max_size=3))
    for add, remove in data.draw(delta_scripts(corpus)):
        retriever.remove(remove)
        retriever.add(add)
        current = current.without(remove).with_chunks(add)
        fresh = DenseRetriever(current)
        for query in queries:
            for k in (1, 4, 30):
                assert retriever.retrieve(query, k=k) == fresh.retrieve(query, k=k)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), corpus=corpora(max_size=8))
def test_applied_delta_restores_the_exact_index(data: st.DataObject, corpus: Corpus) -> None:
    retriever = DenseRetriever(corpus)
    query = data.draw(QUERIES)
    before = retriever.retrieve(query, k=30)
    (add, remove), *_ = data.draw(delta_scripts(corpus, max_steps=1))
    with applied_delta(retriever, add=add, remove=remove):
        pass
    assert retriever.retrieve(query, k=30) == before == DenseRetriever(corpus).retrieve(query, k=30)


@settings(max_examples=40, deadline=None)
@given(corpus=corpora(max_size=10), query=QUERIES, chosen=filters(), k=st.integers(1, 12))
def test_filters_never_leak_and_apply_before_truncation(
    corpus: Corpus, query: str, chosen: Filters | None, k: int
) -> None:
    retriever = DenseRetriever(corpus)
    everything = retriever.retrieve(query, k=len(corpus) + 1)
    allowed = [h for h in everything if chosen is None or chosen.allows(corpus[h.id])]
    assert retriever.retrieve(query, k=k, filters=chosen) == allowed[:k]


def test_large_index_scores_match_a_row_by_row_dot_product() -> None:
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)]
    corpus = Corpus(Chunk(f"d{i}", " ".join(rng.choice(words, 12))) for i in range(2000))
    retriever = DenseRetriever(corpus, embedder=HashingEmbedder(128))
    hits = retriever.retrieve("w1 w2 w3", k=5)
    rows = retriever.embedder.embed([corpus[h.id].text for h in hits])
    query = retriever.embedder.embed(["w1 w2 w3"])[0]
    np.testing.assert_allclose([h.score for h in hits], rows @ query, rtol=1e-5)
