"""The claims family's supporters, found through the token index (only chunks holding enough of a claim's words
are judged), against the plain judge over every chunk: the same ids for any claims over ASCII and other texts
(ligatures, full-width digits, casefold special cases), numbers, dates, words inside tokens ("x1y", "5g", "a_b"),
and corpora derived by removals, additions and in-place updates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus
from ragmorph.strategies import claims as claims_module
from ragmorph.strategies.claims import _candidates, supporters
from ragmorph.support import DEFAULT_SUPPORT

_PIECES = st.sampled_from(
    ["leave", "Leave", "LEAVE", "leaves", "starts", "the", "of", "ﬁle", "file", "FILE", "days", "25", "1,000", "1000",
     "3.5", "2026", "2026-09-01", "1 September 2026", "September 1, 2026", "may", "May 2026", "３", "ß", "ss",
     "strasse", "x1y", "5g", "g", "a_b", "b", "_", "-", ",", ".", "é", "e\u0301", "\u212a", "k", "seats", "user",
     "user_seats", "users2", "\n"]
)
_GLUE = st.sampled_from([" ", "", "-", "\t", "/"])
_TEXT = st.lists(st.tuples(_PIECES, _GLUE), max_size=8).map(lambda parts: "".join(a + b for a, b in parts))


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    """A corpus, or one derived from it by removals, additions and in-place updates."""
    corpus = Corpus([Chunk(f"c{i}", text or "-") for i, text in enumerate(draw(st.lists(_TEXT, max_size=10)))])
    for step in range(draw(st.integers(0, 3))):
        ids, edit = list(corpus.ids), draw(st.sampled_from(["remove", "add", "update"]))
        if edit == "remove" and ids:
            corpus = corpus.without(draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)))
        elif edit == "update" and ids:
            corpus = corpus.replaced(Chunk(draw(st.sampled_from(ids)), draw(_TEXT) or "-"))
        else:
            corpus = corpus.with_chunks([Chunk(f"n{step}", draw(_TEXT) or "-")], at=draw(st.integers(0, len(ids))))
    return corpus


@settings(max_examples=300, deadline=None)
@given(corpus=corpora(), claims=st.lists(_TEXT, min_size=1, max_size=3))
def test_supporters_are_the_chunks_the_judge_accepts_over_the_whole_corpus(corpus: Corpus, claims: list[str]) -> None:
    claims_module._SUPPORTERS._entries.clear()
    texts = [chunk.text for chunk in corpus.chunks]
    candidates = _candidates(corpus, claims)
    assert candidates == sorted(set(candidates))
    for claim in claims:
        expected = tuple(chunk.id for chunk in corpus.chunks if DEFAULT_SUPPORT.supports(claim, chunk.text))
        assert supporters(corpus, claim) == expected
        assert {corpus.chunks[n].id for n in candidates} >= set(expected)
    assert DEFAULT_SUPPORT.supporting(claims, texts) == {
        claim: [n for n, text in enumerate(texts) if DEFAULT_SUPPORT.supports(claim, text)] for claim in dict.fromkeys(claims)
    }
