"""Trait suggestions: which undeclared traits a run's own evidence supports, and which hard relations they enable.

A trait is a promise only the user can make (`lexical`, `normalising`, ...); ragmorph never applies one
silently. But each trait has soft relations that measure, for any retriever, what the trait promises; when they
held in every probe of a run (and enough probes), the report suggests declaring the trait, with the evidence
and the hard relations it would enable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ragmorph.relations import Relation, Severity

__all__ = ["MIN_PROBES", "TRAIT_EVIDENCE", "Suggestion", "suggest_traits"]

# Fewer probes than this are too little evidence to suggest a promise.
MIN_PROBES = 10


@attrs.frozen
class _Evidence:
    relations: tuple[str, ...]
    what: str  # completes "... in 412/412 probes"
    # True: one kind of evidence seen is enough (the others need methods a retriever may lack); else every kind.
    any_kind: bool = False


TRAIT_EVIDENCE: dict[str, _Evidence] = {
    "lexical": _Evidence(
        ("filters.hits_share_query_words_rate", "odd_query.unrelated_query_unmatched_rate"),
        "every returned chunk shared a word with the query, and no chunk scored above zero for queries sharing none,",
    ),
    "normalising": _Evidence(("query.ranking_invariant",), "case, whitespace and punctuation edits left the ranking unchanged"),
    "unicode_normalising": _Evidence(
        ("odd_query.unicode_invariant_rate",), "NFC/NFD, full-width and ligature forms of the query left the ranking unchanged"
    ),
    "exact_deltas": _Evidence(("lifecycle.edit_equals_fresh_rate",), "every edit ranked like a fresh index of the edited corpus"),
    "single_list": _Evidence(
        ("lifecycle.updated_copy_ties", "lifecycle.added_existing_one_version", "duplicate.copy_ties"),
        "two chunks with the same content scored alike (no rank fusion breaking their tie)",
        any_kind=True,
    ),
}


@attrs.frozen
class Suggestion:
    """Declare `trait` for `retriever`: the evidence held in `held`/`tested` probes and enables `enables`."""

    retriever: str
    trait: str
    held: int
    tested: int
    evidence: tuple[str, ...]
    enables: tuple[str, ...]

    @property
    def message(self) -> str:
        """One sentence for the reports."""
        what = TRAIT_EVIDENCE[self.trait].what
        count = len(self.enables)
        return (
            f"{what} in {self.held}/{self.tested} probes: declare `{self.trait}` to enable {count} hard "
            f"relation{'s' if count != 1 else ''} ({', '.join(self.enables)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (report `suggestions` rows)."""
        return {
            "retriever": self.retriever,
            "trait": self.trait,
            "held": self.held,
            "tested": self.tested,
            "evidence": list(self.evidence),
            "enables": list(self.enables),
            "message": self.message,
        }


def suggest_traits(
    rows: Iterable[Any], declared: Mapping[str, Iterable[str]], catalog: Iterable[Relation]
) -> tuple[Suggestion, ...]:
    """Suggestions for every retriever of `rows` (results with `retriever`, `relation`, `rate`) and every trait
    it does not declare whose evidence held in all of at least MIN_PROBES probes (pure)."""
    catalog = tuple(catalog)
    rates: dict[tuple[str, str], list[int]] = {}
    retrievers: list[str] = []
    for row in rows:
        if row.retriever not in retrievers:
            retrievers.append(row.retriever)
        if row.rate is not None:
            tally = rates.setdefault((row.retriever, row.relation), [0, 0])
            tally[0] += row.rate[0]
            tally[1] += row.rate[1]
    found = []
    for retriever in retrievers:
        have = set(declared.get(retriever, ()))
        for trait, evidence in TRAIT_EVIDENCE.items():
            if trait in have:
                continue
            # Every kind of evidence must have been seen, and have held every time.
            seen = [rates.get((retriever, name), [0, 0]) for name in evidence.relations]
            held, tested = sum(t[0] for t in seen), sum(t[1] for t in seen)
            enables = tuple(
                r.name for r in catalog if (trait in r.requires or trait in r.hard_with) and r.severity is Severity.HARD
            )
            kinds_seen = any(t[1] for t in seen) if evidence.any_kind else all(t[1] for t in seen)
            if kinds_seen and tested >= MIN_PROBES and held == tested and enables:
                found.append(Suggestion(retriever, trait, held, tested, evidence.relations, enables))
    return tuple(found)
