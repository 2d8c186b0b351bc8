"""BM25Retriever: the formula, deltas bit-for-bit equal to a re-index, filters before truncation, bm25s agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.adapter_worlds import WORDS, corpora, filters

from ragmorph.adapters import BM25Retriever, BM25sRetriever
from ragmorph.errors import InputError, UsageError
from ragmorph.model import Chunk, Corpus, Filters

QUERIES = st.lists(st.sampled_from(WORDS + ("unseen",)), min_size=1, max_size=4).map(" ".join)


def test_score_matches_the_documented_formula() -> None:
    corpus = Corpus([Chunk("a", "cat sat"), Chunk("b", "dog sat on cat cat"), Chunk("c", "bird")])
    hits = BM25Retriever(corpus, k1=1.2, b=0.75).retrieve("cat", k=3)
    n, df, average = 3, 2, (2 + 5 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def term(tf: int, length: int) -> float:
        return idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * length / average))

    # The short chunk wins despite the lower tf (length normalisation); "c" does not match and is not returned.
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(term(1, 2), rel=1e-12)
    assert hits[1].score == pytest.approx(term(2, 5), rel=1e-12)


def test_ties_are_broken_by_corpus_position_and_tokens_are_casefolded() -> None:
    corpus = Corpus([Chunk("z", "Leave policy"), Chunk("a", "leave, POLICY!"), Chunk("m", "policy leave")])
    assert [h.id for h in BM25Retriever(corpus).retrieve("LEAVE", k=3)] == ["z", "a", "m"]
    reordered = corpus.reordered([2, 0, 1])
    assert [h.id for h in BM25Retriever(reordered).retrieve("leave", k=3)] == ["m", "z", "a"]


def test_custom_tokenizer_and_argument_checks() -> None:
    corpus = Corpus([Chunk("a", "x-y"), Chunk("b", "x y")])
    assert [h.id for h in BM25Retriever(corpus, tokenizer=str.split).retrieve("x-y", k=2)] == ["a"]
    with pytest.raises(UsageError, match="k1"):
        BM25Retriever(corpus, k1=-1)
    with pytest.raises(UsageError, match="b"):
        BM25Retriever(corpus, b=2)
    with pytest.raises(UsageError, match="positive integer k"):
        BM25Retriever(corpus).retrieve("x", k=0)
    with pytest.raises(InputError, match="Corpus"):
        BM25Retriever([Chunk("a", "x")])  # type: ignore[arg-type]


def test_delta_errors_change_nothing() -> None:
    corpus = Corpus([Chunk("a", "leave policy"), Chunk("b", "tax")])
    retriever = BM25Retriever(corpus)
    with pytest.raises(InputError, match="already indexed"):
        retriever.add([Chunk("c", "tax"), Chunk("a", "dup")])
    with pytest.raises(InputError, match="unknown"):
        retriever.remove(["b", "nope"])
    assert retriever.corpus == corpus
    assert retriever.retrieve("tax", k=5) == BM25Retriever(corpus).retrieve("tax", k=5)


def test_empty_corpus_and_empty_texts_return_nothing() -> None:
    assert BM25Retriever(Corpus([])).retrieve("leave", k=3) == []
    assert BM25Retriever(Corpus([Chunk("a", ""), Chunk("b", "!!")])).retrieve("leave", k=3) == []


@pytest.mark.integration
@settings(max_examples=25, deadline=None)
@given(corpus=corpora(min_size=1, max_size=10), query=QUERIES, chosen=filters())
def test_agrees_with_bm25s_lucene(corpus: Corpus, query: str, chosen: Filters | None) -> None:
    ours = BM25Retriever(corpus).retrieve(query, k=10, filters=chosen)
    theirs = BM25sRetriever(corpus).retrieve(query, k=10, filters=chosen)
    # bm25s scores in float32, so compare scores loosely and rankings only away from near-ties.
    assert sorted(h.id for h in ours) == sorted(h.id for h in theirs)
    by_id = {h.id: h.score for h in theirs}
    for hit in ours:
        assert by_id[hit.id] == pytest.approx(hit.score, rel=1e-5)
    scores = np.array([h.score for h in ours])
    if len(scores) < 2 or np.min(np.abs(np.diff(scores))) > 1e-4:
        assert [h.id for h in ours] == [h.id for h in theirs]


@pytest.mark.integration
def test_bm25s_is_a_factory_without_deltas() -> None:
    from ragmorph.adapters import describe_capabilities

    capabilities = describe_capabilities(BM25sRetriever)
    assert capabilities.kind == "factory" and not capabilities.supports_delta
    assert BM25sRetriever(Corpus([])).retrieve("x", k=2) == []


def test_an_index_pickled_into_another_process_answers_the_same() -> None:
    # Term numbers are per process (first sight): a copy sent to a worker (--jobs, Ray) must find its terms by name.
    import pickle
    import subprocess
    import sys

    BM25Retriever(Corpus([Chunk("z", "zebra yak xylophone quokka")]))  # numbers this process's terms unlike a new one's
    retriever = BM25Retriever(Corpus([Chunk("a", "leave policy"), Chunk("b", "tax leave leave"), Chunk("c", "bonus")]))
    retriever.remove(["c"])
    retriever.add([Chunk("n", "leave bonus")])
    retriever.retrieve("tax", k=3)  # one posting made from the build's ranges, the others not
    script = (
        "import pickle, sys\n"
        "from ragmorph.adapters import BM25Retriever\n"
        "from ragmorph.model import Chunk, Corpus\n"
        "BM25Retriever(Corpus([Chunk('o', 'other words first bonus')]))\n"
        "copy = pickle.loads(sys.stdin.buffer.read())\n"
        "copy.remove(['a'])\n"
        "copy.add([Chunk('m', 'policy leave')])\n"
        "sys.stdout.buffer.write(pickle.dumps([copy.retrieve(q, k=5) for q in ('leave', 'tax bonus', 'policy')]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(retriever), capture_output=True, check=True)
    retriever.remove(["a"])
    retriever.add([Chunk("m", "policy leave")])
    assert pickle.loads(done.stdout) == [retriever.retrieve(q, k=5) for q in ("leave", "tax bonus", "policy")]
