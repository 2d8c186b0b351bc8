"""The token index against the scans it replaced (as they were at 0576c88), over any Unicode text: casefold
special cases ("ß", "İ", "ﬁ", final sigma), tabs and other whitespace, NUL, digits in other scripts, empty and
duplicate texts, derived corpora; one index per live corpus even when a dead corpus's object id is reused, and
the same answers when two threads build the same corpus's index at once."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import default_tokenize
from ragmorph.model import Case, Chunk, Corpus, Params, World
from ragmorph.strategies import _core
from ragmorph.strategies._core import TokenIndex, matching_ids, query_tokens, token_index, vocabulary
from ragmorph.strategies.odd_query import _unrelated_words


def _holders(index: TokenIndex, token: str) -> np.ndarray:
    """The corpus positions of the chunks holding `token`, ascending."""
    return np.flatnonzero(index.holding([(token,)]))


_WORD_CHARACTER = re.compile(r"\w")


def _old_shared_tokens(tokens: Iterable[str]) -> Callable[[str], int]:
    # strategies/_core.py's shared_tokens at 0576c88: a substring test per token, then a whole-token check.
    patterns = [(token, re.compile(re.escape(token) + r"(?!\w)")) for token in dict.fromkeys(tokens)]

    def count(text: str) -> int:
        folded, found = text.casefold(), 0
        for token, pattern in patterns:
            if token in folded:
                for match in pattern.finditer(folded):
                    start = match.start()
                    if start == 0 or not _WORD_CHARACTER.match(folded, start - 1):
                        found += 1
                        break
        return found

    return count


def _old_matching(corpus: Corpus, query: str) -> list[str]:
    count = _old_shared_tokens(query_tokens(query))
    rows = sorted((-count(c.text), n, c.id) for n, c in enumerate(corpus.chunks))
    return [chunk_id for unshared, _, chunk_id in rows if unshared]


def _old_unrelated(corpus: Corpus) -> list[str]:
    # odd_query.py's _unrelated_words at 0576c88.
    filler = vocabulary().filler
    tokens = frozenset(token for word in filler for token in query_tokens(word))
    held: set[str] = set()
    for chunk in corpus.chunks:
        held.update(tokens.intersection(default_tokenize(chunk.text)))
    return [word for word in filler if not held.intersection(query_tokens(word))][:200]


_SPECIAL = list("ßİıﬁﬀﬃΣσςǄǅ\u212a\u017fÅ\u212be\u0301\u0307\u00a0\u2028\u3000\t\n\r\x0b\x0c\x1c\x1f\x00_-.,1٣²aAzQ 中ŉǰ")
_CHARACTERS = st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8"), st.characters(max_codepoint=127))
_TEXT = st.text(_CHARACTERS, max_size=16)


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    """A corpus of any texts, or one derived from it by removals, additions (some duplicating a text) and updates."""
    corpus = Corpus([Chunk(f"c{i}", text or "-") for i, text in enumerate(draw(st.lists(_TEXT, max_size=8)))])
    for step in range(draw(st.integers(0, 3))):
        ids, edit = list(corpus.ids), draw(st.sampled_from(["remove", "add", "update", "duplicate"]))
        if edit == "remove" and ids:
            corpus = corpus.without(draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)))
        elif edit == "update" and ids:
            corpus = corpus.replaced(Chunk(draw(st.sampled_from(ids)), draw(_TEXT) or "-"))
        elif edit == "duplicate" and ids:
            corpus = corpus.with_chunks([Chunk(f"d{step}", corpus[draw(st.sampled_from(ids))].text)])
        else:
            corpus = corpus.with_chunks([Chunk(f"n{step}", draw(_TEXT) or "-")], at=draw(st.integers(0, len(ids))))
    return corpus


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Blocks of 2 chunks, so ASCII blocks (split) and other blocks (the tokenizer) meet in one corpus."""
    monkeypatch.setattr(_core, "_BLOCK", 2)
    yield


@settings(max_examples=200, deadline=None)
@given(corpus=corpora(), query=_TEXT, filler=st.lists(st.sampled_from(vocabulary().filler[:30]), max_size=3))
def test_the_index_answers_as_the_old_scans_over_any_unicode_text(corpus: Corpus, query: str, filler: list[str]) -> None:
    if filler:
        corpus = corpus.with_chunks([Chunk("filler", "\t".join(filler))])
    held = [set(default_tokenize(chunk.text)) for chunk in corpus]
    index = TokenIndex.of(corpus.chunks)
    assert set(index.numbers) == set().union(*held)
    for token in set(index.numbers) | set(query_tokens(query)):
        assert _holders(index, token).tolist() == [n for n, tokens in enumerate(held) if token in tokens]
    world = World(corpus=corpus, case=Case(id="q", query=query), params=Params(5))
    assert matching_ids(world) == _old_matching(corpus, query)
    assert _unrelated_words(corpus) == _old_unrelated(corpus)


def test_a_new_corpus_never_gets_a_dead_corpus_index_even_under_its_reused_object_id() -> None:
    # A corpus without cycles dies at `del` (reference counting), and the next one often takes its address.
    for n in range(200):
        corpus = Corpus([Chunk("a", f"w{n} shared")])
        assert set(token_index(corpus).numbers) == {f"w{n}", "shared"}
        del corpus


def test_two_threads_building_one_corpus_index_get_the_same_answers() -> None:
    corpus = Corpus([Chunk(f"c{i}", f"t{i % 7} é{i % 3} common") for i in range(3000)])
    start, indexes = threading.Barrier(2), []

    def build() -> None:
        start.wait()
        indexes.append(token_index(corpus))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first, second = indexes
    assert first.numbers.keys() == second.numbers.keys()
    for token in first.numbers:
        assert _holders(first, token).tolist() == _holders(second, token).tolist()

