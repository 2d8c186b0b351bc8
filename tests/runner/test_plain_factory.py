"""A plain factory (no return annotation, or a string one) is judged on every method the instance it builds has."""

from __future__ import annotations

from ragmorph.runner import check
from ragmorph.worlds import demo_world
from quality.zoo2.plain import PlainBM25


def plain_factory(corpus):  # noqa: ANN001, ANN201 - the factory README shows, without annotations
    return PlainBM25(corpus)


def string_annotated_factory(corpus) -> "PlainBM25":  # noqa: ANN001
    return PlainBM25(corpus)


def _judged(report, family: str) -> dict[str, str]:
    return {r.relation: r.status for r in report.results if r.strategy == family}


def test_a_plain_factory_reaches_in_the_default_suite_what_a_single_family_run_reaches() -> None:
    world = demo_world()
    cases = world.cases[:2]
    traits = {"plain": ["lexical", "normalising", "exact_deltas"]}
    for factory in (plain_factory, string_annotated_factory):
        default = check({"plain": factory}, world.corpus, cases, max_examples=12, seed=3, traits=traits)
        alone = check({"plain": factory}, world.corpus, cases, strategies=["lifecycle", "state"], max_examples=12, seed=3, traits=traits)
        for family in ("lifecycle", "state"):
            judged = _judged(default, family)
            assert judged == _judged(alone, family), factory.__name__
        # The update/add/index relations are judged, not excused as if the instance had no such methods.
        excused = [(r.relation, r.reason) for r in default.results if r.reason and "the retriever has no" in r.reason]
        assert not excused, excused
        lifecycle = _judged(default, "lifecycle")
        for name in ("updated_copy_ties", "added_existing_one_version", "reindexed_forgets_removed", "edit_equals_fresh"):
            assert lifecycle[f"lifecycle.{name}"] == "pass", (factory.__name__, lifecycle)
