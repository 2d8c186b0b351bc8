"""Laws every built-in index retriever obeys: deltas equal a fresh index bit for bit, applied_delta restores
the exact index, and filters never leak and apply before truncation."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.adapter_worlds import WORDS, corpora, delta_scripts, filters

from ragmorph.adapters import BM25Retriever, DenseRetriever, applied_delta
from ragmorph.model import Chunk, Corpus, Filters

QUERIES = st.lists(st.sampled_from(WORDS + ("unseen",)), min_size=1, max_size=4).map(" ".join)
FACTORIES = pytest.mark.parametrize("factory", [BM25Retriever, DenseRetriever], ids=["bm25", "dense"])
Factory = Callable[[Corpus], "BM25Retriever | DenseRetriever"]


@FACTORIES
@settings(max_examples=40, deadline=None)
@given(data=st.data(), corpus=corpora(max_size=8))
def test_deltas_equal_a_fresh_index_bit_for_bit(factory: Factory, data: st.DataObject, corpus: Corpus) -> None:
    retriever = factory(corpus)
    current = corpus
    queries = data.draw(st.lists(QUERIES, min_size=1, max_size=3))
    for add, remove in data.draw(delta_scripts(corpus)):
        retriever.remove(remove)
        retriever.add(add)
        current = current.without(remove).with_chunks(add)
        assert retriever.corpus == current
        fresh = factory(current)
        for query in queries:
            for k in (1, 3, 30):
                assert retriever.retrieve(query, k=k) == fresh.retrieve(query, k=k)


@FACTORIES
@settings(max_examples=30, deadline=None)
@given(data=st.data(), corpus=corpora(max_size=8))
def test_applied_delta_restores_the_exact_index(factory: Factory, data: st.DataObject, corpus: Corpus) -> None:
    retriever = factory(corpus)
    query = data.draw(QUERIES)
    before = retriever.retrieve(query, k=30)
    (add, remove), *_ = data.draw(delta_scripts(corpus, max_steps=1))
    with applied_delta(retriever, add=add, remove=remove):
        edited = corpus.without(remove).with_chunks(add)
        assert retriever.retrieve(query, k=30) == factory(edited).retrieve(query, k=30)
    assert retriever.corpus == corpus
    assert retriever.retrieve(query, k=30) == before == factory(corpus).retrieve(query, k=30)


@FACTORIES
@settings(max_examples=40, deadline=None)
@given(corpus=corpora(max_size=10), query=QUERIES, chosen=filters(), k=st.integers(1, 12))
def test_filters_never_leak_and_apply_before_truncation(
    factory: Factory, corpus: Corpus, query: str, chosen: Filters | None, k: int
) -> None:
    retriever = factory(corpus)
    everything = retriever.retrieve(query, k=len(corpus) + 1)
    allowed = [h for h in everything if chosen is None or chosen.allows(corpus[h.id])]
    assert retriever.retrieve(query, k=k, filters=chosen) == allowed[:k]


@FACTORIES
def test_indexes_survive_pickling_with_their_deltas(factory: Factory) -> None:
    corpus = Corpus([Chunk("a", "leave policy"), Chunk("b", "tax leave"), Chunk("c", "bonus")])
    retriever = factory(corpus)
    retriever.remove(["a"])
    retriever.add([Chunk("n", "leave leave")])
    copy = pickle.loads(pickle.dumps(retriever))
    assert copy.retrieve("leave", k=3) == retriever.retrieve("leave", k=3)
    copy.add([Chunk("m", "leave")])  # the copy has a working lock and is independent
    assert "m" not in retriever
