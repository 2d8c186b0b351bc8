"""CorpusMemo: the strategies' per-corpus memos keep no corpus alive, and an answer remembered for a corpus that
died never answers for a new corpus that happens to get its id (a wrong corpus_diff would misjudge which chunks
a perturbation removed)."""

from __future__ import annotations

import gc
import weakref

from ragmorph.model import Chunk, Corpus
from ragmorph.strategies._core import CorpusMemo, corpus_diff


def test_a_remembered_corpus_is_not_kept_alive() -> None:
    memo = CorpusMemo(4)
    corpus = Corpus([Chunk("a", "alpha")])
    memo.store((corpus,), "key", "answer")
    assert memo.lookup((corpus,), "key") == "answer"
    ref = weakref.ref(corpus)
    del corpus
    gc.collect()
    assert ref() is None


def test_an_answer_for_a_dead_corpus_never_answers_for_one_that_reuses_its_id() -> None:
    memo = CorpusMemo(4)
    before, after = Corpus([Chunk("a", "alpha")]), Corpus([Chunk("a", "alpha"), Chunk("b", "beta")])
    assert corpus_diff(before, after) == ({"b"}, frozenset())
    memo.store((after,), "key", "answer for the dead corpus")
    dead = id(after)
    del after
    gc.collect()
    alive = []  # kept alive so that each new corpus gets a new address until one lands on the dead one's
    for _ in range(10_000):
        fresh = Corpus([Chunk("c", "gamma")])
        alive.append(fresh)
        if id(fresh) == dead:
            break
    assert id(fresh) == dead, "CPython hands a freed object's memory to the next object of its size"
    assert memo.lookup((fresh,), "key") is CorpusMemo.ABSENT
    assert corpus_diff(before, fresh) == ({"c"}, {"a"})
