"""Odd-query family: queries real users send that test suites rarely do; every answer must still be valid.

Kinds: a query sharing no word with the corpus, one made only of punctuation or of stop words, a very long
query (past the token windows of encoders and query parsers), repeated words, and Unicode forms of the case's
query (NFC, NFD, full-width letters, ligatures). Whatever the query, the response must obey the retriever
contract (at most k hits, known distinct ids, finite scores; `contract.valid_response` judges every call) and
the call's filters (`odd_query.admitted_only`); an empty result is fine. Retrievers declaring the trait
`unicode_normalising` promise that only the NFKC-normalised, casefolded words of the query matter, so the
Unicode forms must not change their ranking (`odd_query.unicode_invariant`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Corpus, Filters, World
from ragmorph.relations import NO_SCORES, Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties

from ._core import Family, PerturbationBase, default_filters, ks_strategy, query_tokens, token_index, vocabulary
from .filtering import follow_admitted_only
from .query import query_words

__all__ = ["FAMILY", "KINDS", "RELATIONS", "UNICODE_KINDS", "OddQuery", "first_odd_queries", "nfkc_words", "odd_queries"]

UNICODE_KINDS = ("fullwidth", "ligature", "nfd", "nfc")
KINDS = ("no_shared_word", "punctuation", "stopwords", "long", "repeated", *UNICODE_KINDS)

_PUNCTUATION = ("?", "...", "!!", "-- ; :", "(?)", "\u201c\u201d", "\u00bf?")
# Stop-like tokens: English function words that most stop lists drop and many chunks contain.
_STOPWORDS = ("the", "of", "and", "to", "a", "in", "is", "it", "what", "how")
# A long query repeats the case's query this many times: several hundred words, past a 512-token window.
_LONG_REPEATS = 60
_LIGATURES = (("ffi", "\ufb03"), ("ffl", "\ufb04"), ("ff", "\ufb00"), ("fi", "\ufb01"), ("fl", "\ufb02"))


def _fullwidth(text: str) -> str:
    # ASCII letters and digits have full-width forms at U+FF01 + (ord - 0x21); NFKC maps them back.
    return "".join(chr(ord(ch) + 0xFEE0) if ch.isascii() and ch.isalnum() else ch for ch in text)


def _ligatures(text: str) -> str:
    for plain, ligature in _LIGATURES:
        text = text.replace(plain, ligature)
    return text


@attrs.frozen
class OddQuery(PerturbationBase):
    """Ask `query` (an odd query of kind `kind`) instead of the case's query, with `filters`, at k."""

    family: ClassVar[str] = "odd_query"
    k: int
    kind: str
    query: str
    filters: Filters = Filters()

    def base(self, world: World) -> World:
        """The case's query at k with the same filters."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=self.filters))

    def apply(self, world: World) -> World:
        """The world asking the odd query."""
        case = attrs.evolve(world.case, query=self.query)
        return attrs.evolve(world, case=case, params=attrs.evolve(world.params, k=self.k, filters=self.filters))


def odd_query_text(world: World, kind: str, words: Sequence[str] = ()) -> str:
    """The query of `kind` for `world` (`words` are the unrelated words of a `no_shared_word` query)."""
    query = world.case.query
    if kind == "no_shared_word":
        return " ".join(words)
    if kind == "punctuation":
        return words[0] if words else _PUNCTUATION[0]
    if kind == "stopwords":
        return " ".join(words) if words else _STOPWORDS[0]
    if kind == "long":
        return " ".join([query] * _LONG_REPEATS)
    if kind == "repeated":
        return " ".join(word for word in query.split() for _ in range(3))
    if kind == "fullwidth":
        return _fullwidth(query)
    if kind == "ligature":
        return _ligatures(query)
    return unicodedata.normalize("NFD" if kind == "nfd" else "NFC", query)


def _unrelated_words(corpus: Corpus) -> list[str]:
    """Up to 200 filler words none of whose tokens a chunk of `corpus` holds; every case of a corpus asks."""
    held = token_index(corpus).numbers
    return [word for word in vocabulary().filler if not any(token in held for token in query_tokens(word))][:200]


def odd_queries(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> st.SearchStrategy[OddQuery]:
    """Draw an odd query and the filters to ask it with; shrinks toward an unrelated word at the smallest k,
    with the case's own filters."""
    unrelated = _unrelated_words(world.corpus)
    filter_choices = [default_filters(world.case)]
    if filters:
        filter_choices.append(attrs.evolve(filter_choices[0], current_only=True))
    parts = []
    if unrelated:
        no_word = st.lists(st.sampled_from(unrelated), min_size=1, max_size=4).map(lambda ws: ("no_shared_word", ws))
        parts.append(no_word)
    parts.append(st.sampled_from(_PUNCTUATION).map(lambda p: ("punctuation", [p])))
    parts.append(st.lists(st.sampled_from(_STOPWORDS), min_size=1, max_size=6).map(lambda ws: ("stopwords", ws)))
    parts.append(st.sampled_from([k for k in KINDS if k not in ("no_shared_word", "punctuation", "stopwords")]).map(lambda k: (k, [])))
    return st.builds(
        lambda k, drawn, f: OddQuery(k=k, kind=drawn[0], query=odd_query_text(world, drawn[0], drawn[1]), filters=f),
        ks_strategy(ks),
        st.one_of(parts),
        st.sampled_from(list(dict.fromkeys(filter_choices))),
    )


def first_odd_queries(world: World, *, ks: Sequence[int], **_: object) -> tuple[OddQuery, ...]:
    """The odd queries tried first: each Unicode form of the case's query that differs from it, at the largest k
    with the case's own filters (all in the space `odd_queries` draws from).

    A draw picks a given Unicode form one time in 24 (one of four parts, one of six kinds; any of the four one
    time in six), so a unit's few draws would often leave the `unicode_normalising` promise untested (of 300
    units of 8 draws on the demo world, a fifth drew no Unicode form and none all four); the other kinds are
    drawn often enough.
    """
    forms: dict[str, str] = {}  # each distinct text -> the first kind giving it
    for kind in UNICODE_KINDS:
        forms.setdefault(odd_query_text(world, kind), kind)
    forms.pop(world.case.query, None)
    return tuple(
        OddQuery(k=max(ks), kind=kind, query=text, filters=default_filters(world.case)) for text, kind in forms.items()
    )


def nfkc_words(query: str) -> tuple[str, ...]:
    """The words a `unicode_normalising` retriever promises to depend on: `query_words` of the NFKC-normalised,
    casefolded query."""
    return query_words(unicodedata.normalize("NFKC", query).casefold())


def _unrelated_unmatched(base: Observation, follow: Observation) -> Verdict:
    hits = follow.ranking.hits
    if any(not hit.has_finite_score for hit in hits):
        return Verdict.not_applicable(NO_SCORES)
    for rank, hit in enumerate(hits, start=1):
        if hit.score > 0:  # type: ignore[operator]
            return Verdict.broken(f"query {follow.world.case.query!r} shares no word with the corpus, yet {hit.id!r} scores {hit.score:.6g} at rank {rank}")
    return Verdict.ok("no chunk scores above zero for a query sharing no word with the corpus")


def _unicode_invariant(base: Observation, follow: Observation) -> Verdict:
    before, after = base.world.case.query, follow.world.case.query
    if before == after:
        return Verdict.not_applicable("the Unicode form of the query is the query itself")
    if nfkc_words(before) != nfkc_words(after):
        return Verdict.not_applicable(f"{before!r} -> {after!r} changes the NFKC-casefolded words of the query")
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(
            f"query {before!r} -> {after!r} has the same NFKC-casefolded words, yet the ranking changed: {verdict.detail}"
        )
    return verdict


RELATIONS = (
    Relation(
        name="odd_query.admitted_only",
        family="odd_query",
        summary="whatever the query (no shared word, punctuation, stop words, very long, Unicode forms), every hit passes the call's filters",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=follow_admitted_only,
        judges_filtering=True,
        judges_admission=True,
        applies_to=tuple(f"OddQuery:{kind}" for kind in KINDS),
        assumptions=("an empty result is a valid answer; contract.valid_response judges every response too",),
    ),
    Relation(
        name="odd_query.unrelated_query_unmatched_rate",
        family="odd_query",
        summary="how often a query sharing no word with the corpus gets no hit scoring above zero (any retriever)",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.SOFT,
        check=_unrelated_unmatched,
        applies_to=("OddQuery:no_shared_word",),
        assumptions=("soft: evidence for the trait 'lexical', which the report suggests when it always held",),
    ),
    Relation(
        name="odd_query.unicode_invariant_rate",
        family="odd_query",
        summary="how often NFC/NFD, full-width and ligature forms of the query leave the ranking invariant up to ties (any retriever)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.SOFT,
        check=_unicode_invariant,
        applies_to=tuple(f"OddQuery:{kind}" for kind in UNICODE_KINDS),
        assumptions=("soft: evidence for the trait 'unicode_normalising', which the report suggests when it always held",),
    ),
    Relation(
        name="odd_query.unicode_invariant",
        family="odd_query",
        summary="for unicode_normalising retrievers, NFC/NFD, full-width and ligature forms of the query leave the ranking invariant up to ties",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_unicode_invariant,
        applies_to=tuple(f"OddQuery:{kind}" for kind in UNICODE_KINDS),
        requires=("unicode_normalising",),
        assumptions=(
            "the retriever declares the trait 'unicode_normalising': what it retrieves depends only on the query's "
            "words after NFKC normalisation and casefolding (runs between whitespace and ASCII punctuation)",
        ),
    ),
)


def _applicable(world: World) -> str | None:
    if not world.case.query.strip():
        return "the query is empty"
    return None


FAMILY = Family(
    name="odd_query",
    summary="queries with no shared word, only punctuation or stop words, very long, repeated words, Unicode forms",
    relations=RELATIONS,
    draw=odd_queries,
    applicable=_applicable,
    perturbation_types=(OddQuery,),
    explicit=first_odd_queries,
    max_examples=8,
)
