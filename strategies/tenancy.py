"""Tenancy family: a tenant filter hides exactly the other tenants' chunks and changes nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Filters, World
from ragmorph.relations import Concern, Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, corpus_tenants, ks_strategy
from .filtering import admitted_prefix, full_k_relation

__all__ = ["FAMILY", "RELATIONS", "ApplyTenantFilter", "AskAsOtherTenant", "tenant_changes"]

# The unfiltered base is fetched this many times deeper than k (at least _MIN_DEPTH) so that the filtered
# top k can usually be checked in full against the visible part of the unfiltered ranking.
_DEPTH_FACTOR = 3
_MIN_DEPTH = 30


@attrs.frozen
class ApplyTenantFilter(PerturbationBase):
    """Compare an unfiltered ranking fetched `depth` deep with the ranking under the case's tenant filter."""

    family: ClassVar[str] = "tenancy"
    k: int
    depth: int

    def base(self, world: World) -> World:
        """The unfiltered world, asked `depth` deep."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.depth, filters=Filters()))

    def apply(self, world: World) -> World:
        """The same query under the case's tenant filter, at k."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k, filters=Filters(tenant=world.case.tenant)))


@attrs.frozen
class AskAsOtherTenant(PerturbationBase):
    """Ask the case's query as `tenant` (with that tenant's filter) instead of the case's own tenant."""

    family: ClassVar[str] = "tenancy"
    k: int
    tenant: str

    def apply(self, world: World) -> World:
        """The world with the case asked by `tenant`."""
        case = attrs.evolve(world.case, tenant=self.tenant)
        return attrs.evolve(world, case=case, params=attrs.evolve(world.params, k=self.k, filters=Filters(tenant=self.tenant)))


def tenant_changes(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[PerturbationBase]:
    """Draw a tenant filter check or a change of asking tenant; shrinks toward the filter check at the smallest k."""
    depth = min(len(world.corpus), max(_DEPTH_FACTOR * max(ks), _MIN_DEPTH))
    filtered = st.builds(lambda k: ApplyTenantFilter(k=k, depth=max(depth, k)), ks_strategy(ks))
    others = sorted(corpus_tenants(world.corpus) - {None, world.case.tenant})
    # A tenant nobody has is always available: it must see the shared chunks only.
    candidates = [*others, _unused_tenant(world)]
    other = st.builds(lambda k, t: AskAsOtherTenant(k=k, tenant=t), ks_strategy(ks), st.sampled_from(candidates))
    return st.one_of(filtered, other)


def _unused_tenant(world: World) -> str:
    tenants = corpus_tenants(world.corpus)
    name = "outsider"
    while name in tenants or name == world.case.tenant:
        name += "_"
    return name


def _chunk_tenant(observation: Observation, chunk_id: str) -> str | None:
    chunk = observation.world.corpus.get(chunk_id)
    return None if chunk is None else chunk.tenant


def _unauthorized_zero(base: Observation, follow: Observation) -> Verdict:
    if not isinstance(follow.world.params.filters.tenant, str):
        return Verdict.not_applicable("the follow-up call has no tenant filter")
    tenant = follow.world.params.filters.tenant
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        owner = _chunk_tenant(follow, hit.id)
        if owner is not None and owner != tenant:
            return Verdict.broken(
                f"chunk {hit.id!r} of tenant {owner!r} returned at rank {rank} to tenant {tenant!r}", 0, 1, culprits=(hit.id,)
            )
    return Verdict.ok(f"only chunks visible to {tenant!r} returned", 0, 0)


def _filtered_equals_visible(base: Observation, follow: Observation) -> Verdict:
    if base.world.params.filters.tenant is not None or follow.world.params.filters.tenant is None:
        return Verdict.not_applicable("only judged for an unfiltered base and a tenant-filtered follow-up")
    tenant = follow.world.params.filters.tenant
    corpus = base.world.corpus
    return admitted_prefix(
        base,
        follow,
        [h for h in base.ranking.hits if h.id in corpus and corpus[h.id].visible_to(tenant)],
        already=lambda shown: f"the unfiltered ranking already shows {shown} chunks visible to {tenant!r}",
        mismatch=(
            f"the ranking under the tenant filter is not the visible part of the unfiltered ranking (nothing of "
            f"another tenant is implied: a chunk visible to {tenant!r} was dropped or moved)"
        ),
    )


def _no_cross_tenant(base: Observation, follow: Observation) -> Verdict:
    first, second = base.world.case.tenant, follow.world.case.tenant
    if first is None or first == second:
        return Verdict.not_applicable("only judged when a case of one tenant is asked as another")
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        if _chunk_tenant(follow, hit.id) == first:
            return Verdict.broken(f"chunk {hit.id!r} private to {first!r} returned at rank {rank} to {second!r}", culprits=(hit.id,))
    return Verdict.ok(f"no chunk private to {first!r} returned to {second!r}")


RELATIONS = (
    Relation(
        name="tenancy.unauthorized_zero",
        family="tenancy",
        summary="under the case's tenant filter, Unauthorized@k is zero",
        target="Unauthorized@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        concern=Concern.TENANT_LEAK,
        judges_filtering=True,
        filter_kinds=("tenant",),
        judges_admission=True,
        check=_unauthorized_zero,
        applies_to=("ApplyTenantFilter",),
        assumptions=("a chunk with tenant None is shared and visible to every tenant",),
    ),
    Relation(
        name="tenancy.filtered_equals_visible",
        exact_search=True,
        family="tenancy",
        summary="the filtered ranking equals the unfiltered ranking's visible chunks in order, cut to k (up to ties)",
        target="ranking@k",
        direction=Direction.INVARIANT_UP_TO_TIES,
        severity=Severity.HARD,
        # A break drops or reorders visible chunks; it returns nothing of another tenant (unauthorized_zero judges
        # that), so it is never titled a tenant leak.
        concern=Concern.HARD,
        judges_filtering=True,
        filter_kinds=("tenant",),
        check=_filtered_equals_visible,
        applies_to=("ApplyTenantFilter",),
        assumptions=(
            "judged where the chunks both calls returned score alike in both (one scored list, pre- or "
            "post-filtered); a retriever whose scores move with the admitted set (rank fusion with the filter in "
            "each leg, an index per tenant with its own term statistics) shows it in those scores, and the "
            "relation says not_applicable for that pair",
            "only the prefix the unfiltered top `depth` fixes is compared; beyond it, chunks tied at the cut pass",
        ),
    ),
    Relation(
        name="tenancy.no_cross_tenant",
        family="tenancy",
        summary="asked as another tenant, no chunk private to the case's tenant is returned",
        target="Unauthorized@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        concern=Concern.TENANT_LEAK,
        judges_filtering=True,
        filter_kinds=("tenant",),
        judges_admission=True,
        check=_no_cross_tenant,
        applies_to=("AskAsOtherTenant",),
    ),
    full_k_relation(
        "tenancy",
        source=f"the retriever's own unfiltered ranking (asked at least {_MIN_DEPTH} deep)",
        applies_to=("ApplyTenantFilter",),
        assumptions=("the tenant filter does not change whether a visible chunk matches the query (one scored list)",),
        filter_kinds=("tenant",),
    ),
)


def _applicable(world: World) -> str | None:
    if world.case.tenant is None:
        return "the case has no tenant context (tenant is null)"
    return None


FAMILY = Family(
    name="tenancy",
    summary="apply the case's tenant filter, or ask as another tenant",
    relations=RELATIONS,
    perturbation_types=(ApplyTenantFilter, AskAsOtherTenant),
    draw=tenant_changes,
    applicable=_applicable,
    max_examples=5,
)
