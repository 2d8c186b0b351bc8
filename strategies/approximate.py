"""Approximate family: an index judged against its declared exact twin over the same vectors.

A retriever (or factory) that declares ``ragmorph_twin``, a factory building an exact-search retriever over the
same corpus, embeddings and filters (pgvector without an index for pgvector HNSW, FAISS flat for FAISS HNSW,
LanceDB flat for a LanceDB ANN index), is asked the case's query with and without the case's tenant filter,
and so is its twin. Two relations compare them:

- `approximate.full_k` (hard): the index returns at least min(k, visible matching chunks) hits, the visible
  ones being what the twin returns under the same filters: `filtering.full_k`, the one definition of
  under-return (the filters, tenancy and scale families judge it against the retriever's own unfiltered
  ranking). Exact search over the same vectors and filters finds that many matching chunks, so a shorter list
  is a breach of the retriever contract whatever the index: it is how pgvector's HNSW scan under a selective
  filter, LanceDB's post-filter and FAISS's HNSW with an ID selector fail a tenant.
- `approximate.recall_vs_exact` (soft, a rate): the index finds at least `RECALL_BOUND` of the twin's top k
  (recall@k against exact search), the measure by which approximate indexes are tuned (ef_search, nprobes).

Retrievers without a twin report both as not_applicable with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Filters, World
from ragmorph.relations import Call, Direction, Instance, Observation, Plan, Relation, Role, Severity, Verdict

from ._core import Family, PerturbationBase, ks_strategy
from .filtering import full_k_relation

__all__ = ["FAMILY", "RECALL_BOUND", "RELATIONS", "CompareWithTwin", "twin_comparisons"]

# The recall@k against exact search an approximate index is expected to reach; below it the pair counts as
# not holding in the reported rate (never as a failure: approximate search may miss neighbours by design).
RECALL_BOUND = 0.9


@attrs.frozen
class CompareWithTwin(PerturbationBase):
    """Ask the query at k on the retriever and on its exact twin, under the case's tenant filter or unfiltered."""

    family: ClassVar[str] = "approximate"
    k: int
    filtered: bool

    def base(self, world: World) -> World:
        """The same world as the follow-up: the twin and the index are asked the same question."""
        return self.apply(world)

    def apply(self, world: World) -> World:
        """The world asked at k, with the case's tenant filter when `filtered`."""
        filters = Filters(tenant=world.case.tenant) if self.filtered else Filters()
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=filters))

    def plan(self, world: World) -> Plan:
        """The twin's answer is the base, the retriever's the follow-up, over the same world."""
        asked = self.apply(world)  # `base` is the same world
        return Plan((Call(asked, Instance.TWIN, role=Role.BASE), Call(asked, Instance.BASE, role=Role.FOLLOW)))


def twin_comparisons(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[CompareWithTwin]:
    """Draw a k and whether to filter; shrinks toward the smallest k, filtered (where indexes fail tenants)."""
    filtered = st.just(True) if world.case.tenant is not None else st.just(False)
    return st.builds(CompareWithTwin, k=ks_strategy(ks), filtered=filtered | st.just(False))


def _recall(exact: Observation, index: Observation) -> Verdict:
    k = index.world.params.k
    wanted = [h.id for h in exact.ranking.hits[:k]]
    if not wanted:
        return Verdict.not_applicable("exact search returns nothing here, so recall against it is undefined")
    found = {h.id for h in index.ranking.hits[:k]}
    recall = sum(chunk_id in found for chunk_id in wanted) / len(wanted)
    detail = f"recall@{k} against exact search {recall:.2f} (bound {RECALL_BOUND})"
    return Verdict.ok(detail, 1.0, recall) if recall >= RECALL_BOUND else Verdict.broken(detail, 1.0, recall)


_TWIN = "the retriever declares an exact twin (`ragmorph_twin`, a factory) over the same vectors and filters"

RELATIONS = (
    full_k_relation(
        "approximate",
        source="exact search over the same vectors and filters (the exact twin)",
        applies_to=("CompareWithTwin",),
        assumptions=(_TWIN,),
    ),
    Relation(
        name="approximate.recall_vs_exact",
        family="approximate",
        summary=f"recall@k of the index against its exact twin's top k is at least {RECALL_BOUND}",
        target="R@k vs exact",
        direction=Direction.NON_DECREASING,
        severity=Severity.SOFT,
        check=_recall,
        assumptions=(_TWIN, "soft: approximate search may miss neighbours by design; the rate is the measure"),
    ),
)


FAMILY = Family(
    name="approximate",
    summary="an index against its exact twin over the same vectors: full k, recall@k",
    relations=RELATIONS,
    draw=twin_comparisons,
    perturbation_types=(CompareWithTwin,),
)
