"""A relation's precondition only rules out pairs its check cannot judge: the adaptive search skips their calls."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.model import Hit, Ranking, World
from ragmorph.runner import observation
from ragmorph.strategies import FAMILIES, relation_applies

from tests.support.generators import worlds

_RULED = {f.name: [r for r in f.relations if r.precondition is not None] for f in FAMILIES.values()}
_RULED = {name: ruled for name, ruled in _RULED.items() if ruled}


def _rankings(draw: st.DrawFn, world: World, other: World) -> Ranking:
    """Any ranking a retriever (correct or not) could return: ids of either corpus, any scores or none."""
    ids = sorted({c.id for c in world.corpus} | {c.id for c in other.corpus})
    chosen = draw(st.lists(st.sampled_from(ids), max_size=world.params.k, unique=True)) if ids else []
    if draw(st.booleans()):
        scores = sorted(draw(st.lists(st.floats(-5, 5), min_size=len(chosen), max_size=len(chosen))), reverse=True)
        return Ranking(Hit(i, s) for i, s in zip(chosen, scores))
    return Ranking.of(chosen)


def test_some_relations_declare_preconditions() -> None:
    assert _RULED  # the property below is vacuous without them


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data(), worlds(max_size=6))
def test_a_ruled_out_pair_is_never_judged(data: st.DataObject, world: World) -> None:
    """Whatever the retriever answers, a pair a precondition rules out gets not_applicable with that reason."""
    family = FAMILIES[data.draw(st.sampled_from(sorted(_RULED)))]
    if family.applicable(world) is not None:
        return
    perturbation = data.draw(family.perturbations(world, ks=(world.params.k,)))
    plan = perturbation.plan(world)
    base = observation(plan.base, _rankings(data.draw, plan.base, plan.follow))
    follow = observation(plan.follow, _rankings(data.draw, plan.follow, plan.base))
    for relation in _RULED[family.name]:
        why = relation.precondition(plan.base, plan.follow)  # type: ignore[misc]
        if why is not None and relation_applies(relation, perturbation):
            verdict = relation.check(base, follow)
            assert not verdict.applicable and why in verdict.detail, (relation.name, why, verdict)
