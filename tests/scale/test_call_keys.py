"""Cache keys of corpora edited in place (same ids, other content) are cheap at scale and canonical: the same
content is one key however the corpus was built, other content another."""

from __future__ import annotations

import attrs
import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Corpus
from ragmorph.relations import Instance, Plan
from ragmorph.runner import CallCache, Executor, RetrieverSpec, _executor
from ragmorph.runner._spec import start_world
from ragmorph.worlds import demo_world

WORLD = demo_world()
START = start_world(WORLD.corpus, WORLD.cases[0], (3,))


def _rewritten(position: int, text: str) -> Corpus:
    chunk = WORLD.corpus.chunks[position]
    return WORLD.corpus.replaced(attrs.evolve(chunk, text=text))


def _fresh_calls(*corpora: Corpus) -> tuple[int, int]:
    executor = Executor(RetrieverSpec.of(BM25Retriever, "bm25"), WORLD.corpus, cache=CallCache())
    for corpus in corpora:
        probe = executor.run(Plan.pair(START, attrs.evolve(START, corpus=corpus), instance=Instance.FRESH))
        assert not isinstance(probe, str)
    executor.close()
    return executor.calls, executor.served


def test_the_same_update_in_place_built_twice_is_one_call() -> None:
    once, again = _rewritten(3, "an edited text"), _rewritten(3, "an edited text")
    assert once is not again and once.chunks[3] is not again.chunks[3]
    # The base call once, the fresh index of the edited corpus once: the second edit is served from the cache.
    assert _fresh_calls(once, again) == (2, 2)


def test_other_content_in_place_is_another_call() -> None:
    assert _fresh_calls(_rewritten(3, "one text"), _rewritten(3, "another text"), _rewritten(4, "one text")) == (4, 2)


def test_a_copy_of_a_chunk_is_the_chunk_and_many_edits_fall_back_to_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    copied = Corpus(attrs.evolve(c) if n == 5 else c for n, c in enumerate(WORLD.corpus.chunks))
    edited = _rewritten(3, "an edited text")
    mixed = Corpus(attrs.evolve(c) if n == 5 else c for n, c in enumerate(edited.chunks))
    assert _fresh_calls(edited, mixed) == (2, 2)  # the copy at position 5 changes nothing
    monkeypatch.setattr(_executor, "_PATCHES", 4)  # the demo corpus is small: fewer patches make "many"
    many = Corpus(attrs.evolve(c, text=f"text {n}") for n, c in enumerate(WORLD.corpus.chunks))
    assert _executor._patched(WORLD.corpus, many) is None
    rebuilt = Corpus(attrs.evolve(c) for c in many.chunks)
    assert _fresh_calls(many, rebuilt) == (2, 2)
    assert copied.chunks == WORLD.corpus.chunks
