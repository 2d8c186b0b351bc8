"""Hypothesis strategies that perturb retrieval worlds, one module per family, and the relation catalog.

Each family module (`ragmorph.strategies.reorder`, `.removal`, `.claims`, `.distractors`, `.duplicate`, `.supersede`,
`.tenancy`, `.filtering`, `.cutoff`, `.depth`, `.query`, `.odd_query`, `.repeat`, `.state`, `.lifecycle`,
`.approximate`, `.scale`, `.contract`) exposes a strategy function drawing perturbations for a given world, the
perturbation classes, `RELATIONS` and `FAMILY`. `CATALOG` lists every relation; `FAMILIES` maps family names to
their record; `DEFAULT_SUITE` names the families `check()` runs by default.
"""

from __future__ import annotations

from typing import Any

from ragmorph.errors import InputError, UsageError
from ragmorph.relations import Relation

from . import (
    approximate,
    claims,
    contract,
    cutoff,
    depth,
    distractors,
    duplicate,
    filtering,
    lifecycle,
    odd_query,
    query,
    removal,
    reorder,
    repeat,
    scale,
    state,
    supersede,
    tenancy,
)
from ._core import decode_value as _decode_value
from ._core import (
    Family,
    Derivation,
    PerturbationBase,
    Vocabulary,
    corpus_diff,
    default_filters,
    derivation,
    perturbation_label,
    relation_applies,
    vocabulary,
)

__all__ = [
    "CATALOG",
    "DEFAULT_SUITE",
    "FAMILIES",
    "PERTURBATIONS",
    "Derivation",
    "Family",
    "PerturbationBase",
    "Vocabulary",
    "corpus_diff",
    "default_filters",
    "derivation",
    "family",
    "perturbation_from_dict",
    "perturbation_label",
    "relation",
    "relation_applies",
    "vocabulary",
]

FAMILIES: dict[str, Family] = {
    module.FAMILY.name: module.FAMILY
    for module in (
        reorder, removal, claims, distractors, duplicate, supersede, tenancy, filtering, cutoff, depth, query, odd_query,
        repeat, state, lifecycle, approximate, scale, contract,
    )
}

CATALOG: tuple[Relation, ...] = tuple(r for f in FAMILIES.values() for r in f.relations)

# Every family but the opt-in ones (`scale`: worlds of thousands of chunks): each one reports not_applicable
# (with the reason) where it cannot run, so none is skipped silently.
DEFAULT_SUITE: tuple[str, ...] = tuple(name for name, f in FAMILIES.items() if f.default)

# Perturbation classes by name (replay files name them), from the families that draw them.
PERTURBATIONS: dict[str, type] = {cls.__name__: cls for f in FAMILIES.values() for cls in f.perturbation_types}


def family(name: str) -> Family:
    """The family record named `name` (UsageError listing the valid names otherwise)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise UsageError(f"expected a strategy family in {sorted(FAMILIES)}, got {name!r}") from None


def relation(name: str) -> Relation:
    """The catalog relation named `name`, e.g. 'cutoff.prefix'."""
    for candidate in CATALOG:
        if candidate.name == name:
            return candidate
    raise UsageError(f"expected a relation in {[r.name for r in CATALOG]}, got {name!r}")


def perturbation_from_dict(data: dict[str, Any]) -> Any:
    """Rebuild a perturbation from its `to_dict()` form (as stored in replay files)."""
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in PERTURBATIONS:
        raise InputError(f"expected a perturbation type in {sorted(PERTURBATIONS)}, got type={kind!r}", field="perturbation")
    fields = {name: _decode_value(value) for name, value in data.get("fields", {}).items()}
    return PERTURBATIONS[kind](**fields)
