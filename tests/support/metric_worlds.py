"""Hypothesis strategies for metric tests: small id pools, cases with evidence groups, rankings, runs and qrels."""

from __future__ import annotations

from hypothesis import strategies as st

from ragmorph.model import Case

__all__ = ["DOC_IDS", "cases", "ranked_lists", "single_member_cases", "trec_order"]

DOC_IDS = tuple(f"d{i}" for i in range(24))


@st.composite
def cases(draw: st.DrawFn, *, min_groups: int = 1, max_groups: int = 5, max_members: int = 3) -> Case:
    """Answerable cases over DOC_IDS whose evidence groups may share members (shrinks toward one 1-member group)."""
    groups = draw(
        st.lists(
            st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=max_members, unique=True),
            min_size=min_groups,
            max_size=max_groups,
        )
    )
    return Case(id="q", query="query text", evidence=groups)


@st.composite
def single_member_cases(draw: st.DrawFn, *, max_gold: int = 8) -> Case:
    """Cases whose evidence groups each hold one distinct id (the binary-qrels world)."""
    gold = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=max_gold, unique=True))
    return Case(id="q", query="query text", evidence=[[doc] for doc in gold])


def ranked_lists(*, unique: bool = True, max_size: int = 20) -> st.SearchStrategy[list[str]]:
    """Rankings as id lists over DOC_IDS, with or without repeated ids (shrinks toward the empty ranking)."""
    return st.lists(st.sampled_from(DOC_IDS), max_size=max_size, unique=unique)


def trec_order(scores: dict[str, float]) -> list[str]:
    """The order trec_eval ranks a scored run in: score descending, then doc id descending."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]
