"""Contract family: every response obeys the retriever contract of DESIGN section 3.

A response with more than k hits, a repeated id, an id the index does not hold, a non-finite score, scores
rising down the list or a malformed hit is rejected by the adapters' validator (`InvalidResponse`). The runner
records such a response as an observation with `rule` (the broken `ContractRule`) set, in *any* family's plan, and judges it with
`contract.valid_response`: a hard failure with a shrunk, minimised, replayable world like any other, not an
`error` (errors are reserved for exceptions and timeouts, which prevent a verdict). This family's own
perturbations ask the case's query at other cutoffs and filters, so the contract is tested even where no other
family looks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Filters, Params, World
from ragmorph.relations import Concern, Direction, Observation, Relation, Severity, Verdict

from ._core import Family, PerturbationBase, default_filters, ks_strategy

__all__ = ["FAMILY", "RELATIONS", "VALID_RESPONSE", "CallWith", "calls_with", "covers", "describe_params"]


@attrs.frozen
class CallWith(PerturbationBase):
    """Ask the case's query again with cutoff `k_to` and `filters` (the base call uses k and the case's filters)."""

    family: ClassVar[str] = "contract"
    k: int
    k_to: int
    filters: Filters = Filters()

    def apply(self, world: World) -> World:
        """The same world asked with `k_to` and `filters`."""
        return attrs.evolve(world, params=Params(self.k_to, self.filters))


def _filter_choices(world: World, filters: bool) -> list[Filters]:
    tenant = world.case.tenant
    choices = [default_filters(world.case)]
    if filters:
        choices += [Filters(), Filters(current_only=True)]
        if tenant is not None:
            choices.append(Filters(tenant=tenant, current_only=True))
    return list(dict.fromkeys(choices))


def calls_with(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> st.SearchStrategy[CallWith]:
    """Draw another cutoff and filter set for the case's query; shrinks toward the smallest k, the case's filters.

    Other filters are drawn only for retrievers that take filters.
    """
    cutoffs = sorted(set(ks) | {2 * max(ks)})
    return st.builds(CallWith, k=ks_strategy(ks), k_to=st.sampled_from(cutoffs), filters=st.sampled_from(_filter_choices(world, filters)))


def covers(world: World, asked: World, *, ks: Sequence[int], filters: bool = True) -> bool:
    """Whether this family's own draws for `world` make the call `asked` (so its unit reports a breach there).

    Other families ask other queries (odd queries), cutoffs (past candidate pools) and filters (metadata): a
    breach on such a call must be reported by the family that made it, even on the unedited corpus.
    """
    return (
        asked.corpus is world.corpus
        and asked.case.query == world.case.query
        and asked.params.k in set(ks) | {2 * max(ks)}
        and asked.params.filters in _filter_choices(world, filters)
    )


def describe_params(params: Params) -> str:
    """`k=3, tenant='acme', current_only` style text of a call's parameters."""
    parts = [f"k={params.k}"]
    filters = params.filters
    if filters.tenant is not None:
        parts.append(f"tenant={filters.tenant!r}")
    if filters.current_only:
        parts.append("current_only")
    parts.extend(f"{key}={value!r}" for key, value in filters.metadata.items())
    return ", ".join(parts) if len(parts) > 1 else f"{parts[0]}, no filters"


def _valid(base: Observation, follow: Observation) -> Verdict:
    for label, observation in (("base", base), ("follow-up", follow)):
        if observation.rule is not None:
            return Verdict.broken(
                f"the {label} call ({describe_params(observation.world.params)}) broke the retriever contract: "
                f"{observation.invalid}"
            )
    return Verdict.ok("every response obeys the retriever contract")


VALID_RESPONSE = Relation(
    name="contract.valid_response",
    family="contract",
    summary="every response has at most k hits, distinct known ids, finite scores that do not rise down the list",
    target="response",
    direction=Direction.NEVER,
    severity=Severity.HARD,
    concern=Concern.CONTRACT,
    check=_valid,
    assumptions=(
        "DESIGN section 3's validation rules; judged on every call any family makes, so a breach found while "
        "testing another relation fails this one (exceptions and timeouts stay errors)",
    ),
)

RELATIONS = (VALID_RESPONSE,)


FAMILY = Family(
    name="contract",
    summary="ask the query at other cutoffs and filters; every response must obey the retriever contract",
    relations=RELATIONS,
    perturbation_types=(CallWith,),
    draw=calls_with,
    max_examples=8,
)
