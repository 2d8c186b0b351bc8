"""Query family: edits that keep the intent (case, whitespace, punctuation) should not move the ranking.

Soft for every retriever: a case-sensitive tokenizer or a dense encoder legitimately sees another query. Hard
for retrievers declaring the trait `normalising`, which promise that what they retrieve depends only on the
query's *words*: the runs of characters between whitespace and ASCII punctuation (other than `_`), ASCII
letters compared case-insensitively (`query_words`). The hard relation judges only edits that keep those
words (an upper-cased "ß" or a deleted apostrophe inside "don't" changes them and is not judged). A word
tokenizer such as `\\w+` over casefolded text keeps the promise: no separator is a word character, so the word
runs of two queries with the same `query_words` are the same strings up to ASCII case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties

from ._core import Family, PerturbationBase, ks_strategy

__all__ = ["EDITS", "FAMILY", "RELATIONS", "EditQuery", "query_edits", "query_words"]

EDITS = ("lower", "upper", "title", "spaces", "trailing_punctuation", "no_punctuation")


def _edited(query: str, edit: str) -> str:
    if edit == "lower":
        return query.lower()
    if edit == "upper":
        return query.upper()
    if edit == "title":
        return query.title()
    if edit == "spaces":
        return "  " + "   ".join(query.split()) + " "
    if edit == "trailing_punctuation":
        return query.rstrip(" ?!.") + " ?"
    return "".join(ch for ch in query if ch.isalnum() or ch.isspace())


@attrs.frozen
class EditQuery(PerturbationBase):
    """Rewrite the query with one intent-preserving `edit` (see EDITS)."""

    family: ClassVar[str] = "query"
    k: int
    edit: str

    def apply(self, world: World) -> World:
        """The world whose case asks the edited query."""
        case = attrs.evolve(world.case, query=_edited(world.case.query, self.edit))
        return attrs.evolve(world, case=case, params=attrs.evolve(world.params, k=self.k))


def query_edits(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[EditQuery]:
    """Draw one query edit; shrinks toward lower-casing at the smallest k."""
    return st.builds(EditQuery, k=ks_strategy(ks), edit=st.sampled_from(EDITS))


def every_edit(world: World, *, ks: Sequence[int], **_: object) -> tuple[EditQuery, ...]:
    """Each edit once, the cutoffs taken in turn: the whole space of edits in as many examples."""
    ordered = sorted(set(ks))
    return tuple(EditQuery(k=ordered[n % len(ordered)], edit=edit) for n, edit in enumerate(EDITS))


# Whitespace and ASCII punctuation except "_" (a word character for \w-based tokenizers).
_SEPARATORS = re.compile(r"[\s!-/:-@\[-\^`{-~]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def query_words(query: str) -> tuple[str, ...]:
    """The words a `normalising` retriever promises to depend on: runs between whitespace and ASCII punctuation
    (other than `_`), with ASCII letters lower-cased (other characters kept as they are)."""
    return tuple(word for word in _SEPARATORS.split(query.translate(_ASCII_LOWER)) if word)


def _invariant(base: Observation, follow: Observation) -> Verdict:
    if base.world.case.query == follow.world.case.query:
        return Verdict.not_applicable("the edit left the query unchanged")
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits, scores_comparable=False)
    if not verdict.holds:
        return Verdict.broken(
            f"query {base.world.case.query!r} -> {follow.world.case.query!r} changed the ranking: {verdict.detail}"
        )
    return verdict


def _normalised_invariant(base: Observation, follow: Observation) -> Verdict:
    before, after = base.world.case.query, follow.world.case.query
    if before == after:
        return Verdict.not_applicable("the edit left the query unchanged")
    if query_words(before) != query_words(after):
        return Verdict.not_applicable(
            f"the edit {before!r} -> {after!r} changes more than ASCII case, whitespace and punctuation between words"
        )
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
    if not verdict.holds:
        return Verdict.broken(
            f"query {before!r} -> {after!r} has the same words (ASCII case, whitespace and punctuation aside), yet "
            f"the ranking changed: {verdict.detail}"
        )
    return verdict


RELATIONS = (
    Relation(
        name="query.normalised_invariant",
        family="query",
        summary="for normalising retrievers, ASCII case, whitespace and punctuation edits leave the ranking invariant up to ties",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        check=_normalised_invariant,
        requires=("normalising",),
        assumptions=(
            "the retriever declares the trait 'normalising': what it retrieves depends only on the query's words "
            "(runs between whitespace and ASCII punctuation other than '_', ASCII case ignored)",
            "edits that change those words (non-ASCII case mappings, punctuation removed inside a word) are not judged",
        ),
    ),
    Relation(
        name="query.ranking_invariant",
        family="query",
        summary="case, whitespace and punctuation edits leave the ranking invariant up to ties",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.SOFT,
        check=_invariant,
        assumptions=("soft: case-sensitive tokenizers and dense encoders legitimately see a different query",),
    ),
)


def _applicable(world: World) -> str | None:
    if not world.case.query.strip():
        return "the query is empty"
    return None


FAMILY = Family(
    name="query",
    summary="case, whitespace and punctuation edits that keep the intent",
    relations=RELATIONS,
    perturbation_types=(EditQuery,),
    draw=query_edits,
    applicable=_applicable,
    max_examples=6,
    explicit=every_edit,
)
