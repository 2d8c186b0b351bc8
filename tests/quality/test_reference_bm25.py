"""The reference BM25 is the oracle of the bug zoo: check it against hand arithmetic and the real bm25s."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus, Filters
from support.reference_bm25 import ReferenceBM25, reference_tokenize

WORDS = ("leave", "policy", "begins", "september", "tenant", "acme", "Leave", "ÉTÉ", "été", "q3", "the")


@st.composite
def text_corpora(draw: st.DrawFn, min_size: int = 1, max_size: int = 8) -> Corpus:
    """Small corpora over a tiny vocabulary, so terms repeat and scores tie often; shrinks to fewer, shorter chunks."""
    texts = draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join),
            min_size=min_size,
            max_size=max_size,
        )
    )
    tenants = draw(st.lists(st.sampled_from([None, "acme", "globex"]), min_size=len(texts), max_size=len(texts)))
    return Corpus(Chunk(f"c{i}", text, tenant=tenant) for i, (text, tenant) in enumerate(zip(texts, tenants)))


queries = st.lists(st.sampled_from(WORDS + ("absent",)), min_size=1, max_size=4).map(" ".join)


def test_scores_match_hand_arithmetic() -> None:
    corpus = Corpus([Chunk("a", "leave policy"), Chunk("b", "leave leave september now"), Chunk("c", "other")])
    retriever = ReferenceBM25(corpus)
    n, avgdl, k1, b = 3, 7 / 3, 1.5, 0.75
    idf_leave = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    idf_september = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    expected_a = idf_leave * 1 / (1 + k1 * (1 - b + b * 2 / avgdl))
    expected_b = idf_leave * 2 / (2 + k1 * (1 - b + b * 4 / avgdl)) + idf_september * 1 / (
        1 + k1 * (1 - b + b * 4 / avgdl)
    )
    scores = retriever.scores("Leave September")
    assert scores == pytest.approx([expected_a, expected_b, 0.0], abs=1e-12)
    assert [hit.id for hit in retriever.retrieve("Leave September", k=5)] == ["b", "a"]


def test_repeated_query_terms_count_again() -> None:
    retriever = ReferenceBM25(Corpus([Chunk("a", "leave policy"), Chunk("b", "september")]))
    assert retriever.scores("leave LEAVE")[0] == pytest.approx(2 * retriever.scores("leave")[0], abs=1e-12)


def test_ties_are_broken_by_corpus_position() -> None:
    corpus = Corpus([Chunk("x", "other"), Chunk("b", "leave"), Chunk("a", "leave")])
    assert [hit.id for hit in ReferenceBM25(corpus).retrieve("leave", k=2)] == ["b", "a"]
    assert [hit.id for hit in ReferenceBM25(corpus.reordered([2, 1, 0])).retrieve("leave", k=2)] == ["a", "b"]


def test_tokens_are_casefolded_word_runs() -> None:
    assert reference_tokenize("Leave-policy, ÉTÉ q3!") == ["leave", "policy", "été", "q3"]


@pytest.mark.integration
@settings(max_examples=40, deadline=None)
@given(
    corpus=text_corpora(),
    query=queries,
)
def test_scores_equal_bm25s_lucene(corpus: Corpus, query: str) -> None:
    bm25s = pytest.importorskip("bm25s")
    assume(any(reference_tokenize(chunk.text) for chunk in corpus))  # bm25s refuses an index with no tokens at all
    # The numpy backend avoids bm25s's silent numba compile; bm25s computes in float32, hence the tolerance.
    index = bm25s.BM25(method="lucene", k1=1.5, b=0.75, backend="numpy")
    index.index([reference_tokenize(chunk.text) for chunk in corpus], show_progress=False)
    expected = [float(s) for s in index.get_scores(reference_tokenize(query))]
    assert ReferenceBM25(corpus).scores(query) == pytest.approx(expected, rel=1e-5, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(corpus=text_corpora(min_size=2), query=queries, data=st.data())
def test_add_and_remove_equal_a_rebuild(corpus: Corpus, query: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(corpus) - 1))
    removed = data.draw(st.lists(st.sampled_from(corpus.ids[:cut]), unique=True, max_size=cut))
    retriever = ReferenceBM25(corpus.chunks[:cut])
    retriever.add(corpus.chunks[cut:])
    retriever.remove(removed)
    rebuilt = ReferenceBM25(corpus.without(removed))
    assert retriever.retrieve(query, k=10) == rebuilt.retrieve(query, k=10)


@settings(max_examples=40, deadline=None)
@given(corpus=text_corpora(), query=queries, k=st.integers(1, 5), tenant=st.sampled_from(["acme", "globex"]))
def test_filters_apply_before_the_cut_to_k(corpus: Corpus, query: str, k: int, tenant: str) -> None:
    retriever = ReferenceBM25(corpus)
    visible = [hit for hit in retriever.retrieve(query, k=len(corpus)) if corpus[hit.id].visible_to(tenant)]
    assert retriever.retrieve(query, k=k, filters=Filters(tenant=tenant)) == visible[:k]


@settings(max_examples=60, deadline=None)
@given(corpus=text_corpora(max_size=10), query=queries, k=st.integers(1, 6), tenant=st.sampled_from([None, "acme"]), data=st.data())
def test_equals_the_built_in_bm25_retriever(corpus: Corpus, query: str, k: int, tenant: str | None, data: st.DataObject) -> None:
    from ragmorph.adapters import BM25Retriever

    filters = Filters(tenant=tenant)
    built_in, reference = BM25Retriever(corpus), ReferenceBM25(corpus)
    expected = reference.retrieve(query, k=k, filters=filters)
    got = built_in.retrieve(query, k=k, filters=filters)
    assert [hit.id for hit in got] == [hit.id for hit in expected]
    assert [hit.score for hit in got] == pytest.approx([hit.score for hit in expected], rel=1e-9, abs=1e-12)
    # After a delta both must still agree (the built-in applies it incrementally, the reference rebuilds).
    removed = data.draw(st.lists(st.sampled_from(corpus.ids), unique=True, max_size=2))
    added = [Chunk(f"new{i}", text) for i, text in enumerate(data.draw(st.lists(st.sampled_from(WORDS), max_size=2)))]
    for retriever in (built_in, reference):
        retriever.remove(removed)
        retriever.add(added)
    got, expected = built_in.retrieve(query, k=k, filters=filters), reference.retrieve(query, k=k, filters=filters)
    assert [hit.id for hit in got] == [hit.id for hit in expected]
    assert [hit.score for hit in got] == pytest.approx([hit.score for hit in expected], rel=1e-9, abs=1e-12)
