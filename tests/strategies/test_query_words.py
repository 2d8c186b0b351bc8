"""The `normalising` promise: queries with the same `query_words` retrieve the same. Checked for the tokenizers
the trait is declared on (ragmorph.adapters' default tokenizer, the reference BM25's) and end to end for
BM25Retriever, on queries that differ in ASCII case, whitespace and ASCII punctuation between words."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import BM25Retriever
from ragmorph.adapters import default_tokenize
from ragmorph.model import Chunk, Corpus
from ragmorph.strategies.query import EDITS, _edited, query_words
from support.reference_bm25 import reference_tokenize

_SEPARATORS = string.whitespace + "".join(c for c in string.punctuation if c != "_") + "\u00a0\u2003"
_WORD = st.text(st.characters(blacklist_characters=_SEPARATORS, blacklist_categories=("Cs",)), min_size=1, max_size=6)
_GAP = st.text(st.sampled_from(_SEPARATORS), min_size=1, max_size=3)


def _flip_ascii_case(text: str, flips: list[bool]) -> str:
    return "".join(ch.swapcase() if ch.isascii() and ch.isalpha() and flip else ch for ch, flip in zip(text, flips + [False] * len(text)))


@st.composite
def same_words(draw: st.DrawFn) -> tuple[str, str]:
    """Two queries built from the same words with other separators, ends and ASCII case."""
    words = draw(st.lists(_WORD, min_size=1, max_size=5))

    def spelled() -> str:
        gaps = [draw(_GAP) for _ in words[1:]]
        text = words[0] + "".join(g + w for g, w in zip(gaps, words[1:]))
        lead, trail = draw(st.text(st.sampled_from(_SEPARATORS), max_size=2)), draw(st.text(st.sampled_from(_SEPARATORS), max_size=2))
        return _flip_ascii_case(lead + text + trail, draw(st.lists(st.booleans(), max_size=40)))

    return spelled(), spelled()


@settings(max_examples=300, deadline=None)
@given(pair=same_words())
def test_queries_with_the_same_words_have_the_same_tokens(pair: tuple[str, str]) -> None:
    first, second = pair
    assert query_words(first) == query_words(second)
    assert default_tokenize(first) == default_tokenize(second)
    assert reference_tokenize(first) == reference_tokenize(second)


@settings(max_examples=200, deadline=None)
@given(query=st.text(max_size=30), edit=st.sampled_from(EDITS))
def test_every_judged_edit_keeps_the_default_tokens(query: str, edit: str) -> None:
    edited = _edited(query, edit)
    if query_words(edited) == query_words(query):
        assert default_tokenize(edited) == default_tokenize(query)


def test_edits_that_change_words_are_told_apart() -> None:
    assert query_words("Don't stop") != query_words(_edited("Don't stop", "no_punctuation"))
    assert query_words("straße") != query_words(_edited("straße", "upper"))
    assert query_words("When does leave begin?") == query_words(_edited("When does leave begin?", "upper"))


@settings(max_examples=60, deadline=None)
@given(pair=same_words(), texts=st.lists(st.lists(_WORD, min_size=1, max_size=6), min_size=1, max_size=6))
def test_bm25_retriever_ranks_queries_with_the_same_words_identically(pair: tuple[str, str], texts: list[list[str]]) -> None:
    first, second = pair
    # Chunks mix the query's words with other words, so scores and ties are not trivial.
    words = list(query_words(first))
    chunks = [Chunk(f"c{i}", " ".join(t + words[: i % (len(words) + 1)])) for i, t in enumerate(texts)]
    retriever = BM25Retriever(Corpus(chunks))
    assert retriever.retrieve(first, k=10) == retriever.retrieve(second, k=10)
