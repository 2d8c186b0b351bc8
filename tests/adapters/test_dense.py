"""DenseRetriever: exact cosine, deltas equal to a re-index, embeddings reused across perturbed corpora."""

from __future__ import annotations

import numpy as np
import pytest

from ragmorph.adapters import CachedEmbedder, DenseRetriever, HashingEmbedder, shared_cache
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus


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


def test_large_index_scores_match_a_row_by_row_dot_product() -> None:
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)]
    corpus = Corpus(Chunk(f"d{i}", " ".join(rng.choice(words, 12))) for i in range(2000))
    retriever = DenseRetriever(corpus, embedder=HashingEmbedder(128))
    hits = retriever.retrieve("w1 w2 w3", k=5)
    rows = retriever.embedder.embed([corpus[h.id].text for h in hits])
    query = retriever.embedder.embed(["w1 w2 w3"])[0]
    np.testing.assert_allclose([h.score for h in hits], rows @ query, rtol=1e-5)
