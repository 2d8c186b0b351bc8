"""Query family: edits that keep the intent (case, whitespace, punctuation) should not move the ranking (soft)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict, compare_up_to_ties

from ._core import Family, PerturbationBase, ks_strategy

__all__ = ["EDITS", "FAMILY", "RELATIONS", "EditQuery", "query_edits"]

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


def _invariant(base: Observation, follow: Observation) -> Verdict:
    if base.world.case.query == follow.world.case.query:
        return Verdict.not_applicable("the edit left the query unchanged")
    verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits, scores_comparable=False)
    if not verdict.holds:
        return Verdict.broken(
            f"query {base.world.case.query!r} -> {follow.world.case.query!r} changed the ranking: {verdict.detail}"
        )
    return verdict


RELATIONS = (
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
    draw=query_edits,
    applicable=_applicable,
)
