"""Strategy families: drawn perturbations are valid for their world, pure, printable, and shrink to simple values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import ragmorph.strategies as strategies
from ragmorph.model import Case, Chunk, Corpus, Params, World
from ragmorph.strategies import CATALOG, DEFAULT_SUITE, FAMILIES, perturbation_from_dict
from ragmorph.strategies._core import query_tokens, shares_word, vocabulary, vocabulary_from
from ragmorph.strategies.distractors import InjectDistractors, distractor_injections
from support.generators import worlds

KS = (1, 3, 5)
_QUICK = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _world() -> World:
    corpus = Corpus(
        [
            Chunk("hr-1", "The revised leave policy begins on 1 September 2026", tenant="acme", version=2),
            Chunk("hr-2", "Parental leave lasts sixteen weeks", tenant="acme"),
            Chunk("gx-1", "Globex leave policy", tenant="globex"),
            Chunk("it-1", "Reset your password in the portal"),
        ]
    )
    case = Case("q1", "When does the revised leave policy begin?", tenant="acme", evidence=[["hr-1"], ["hr-2"]],
                claims=["begins on 1 September 2026"])
    return World(corpus, case, Params(5, strategies.default_filters(case)))


@pytest.mark.parametrize("name", sorted(FAMILIES))
@_QUICK
@given(data=st.data())
def test_drawn_perturbations_apply_purely_and_round_trip(name: str, data: st.DataObject) -> None:
    world = _world()
    family = FAMILIES[name]
    perturbation = data.draw(family.perturbations(world, ks=KS))
    snapshot = (world.corpus.ids, world.case, world.params)
    base, after = perturbation.base(world), perturbation.apply(world)
    # Pure: the world is untouched and applying twice gives the same world.
    assert (world.corpus.ids, world.case, world.params) == snapshot
    assert perturbation.apply(world) == after
    assert isinstance(after, World) and isinstance(base, World)
    # Families that ask past the default cutoffs (depth, lifecycle) draw a k above them.
    assert perturbation.k in KS or perturbation.k > max(KS)
    assert set(perturbation.referenced_ids()) <= set(world.corpus.ids)
    # Printable and replayable: the repr names the type; the dict form rebuilds an equal value.
    assert repr(perturbation).startswith(type(perturbation).__name__ + "(")
    assert perturbation_from_dict(perturbation.to_dict()) == perturbation
    assert perturbation.family == name and type(perturbation) in family.perturbation_types
    # Plain data for the executor: a plan whose base and follow-up worlds are the world change.
    plan = perturbation.plan(world)
    assert plan.base == base and plan.follow == after


@_QUICK
@given(world=worlds(min_size=1, max_size=6), data=st.data())
def test_generated_worlds_get_valid_perturbations(world: World, data: st.DataObject) -> None:
    for name, family in FAMILIES.items():
        if family.applicable(world) is not None:
            continue
        perturbation = data.draw(family.perturbations(world, ks=KS), label=name)
        after = perturbation.apply(world)
        assert len(set(after.corpus.ids)) == len(after.corpus)


def test_unrelated_distractors_share_no_word_with_the_query() -> None:
    world = _world()
    tokens = query_tokens(world.case.query)

    @_QUICK
    @given(distractor_injections(world, ks=KS))
    def check(p: InjectDistractors) -> None:
        if p.kind in ("unrelated", "boilerplate"):
            for chunk in p.chunks:
                assert not any(shares_word(w, tokens) for w in chunk.text.split())
                assert chunk.id not in world.corpus
                assert chunk.tenant == world.case.tenant

    check()


def test_lookalikes_belong_to_another_tenant_and_copy_gold() -> None:
    world = _world()
    found = find(
        distractor_injections(world, ks=KS), lambda p: p.kind == "lookalike", settings=settings(database=None, max_examples=500)
    )
    (chunk,) = found.chunks
    assert chunk.tenant not in (None, world.case.tenant)
    assert chunk.metadata["copy_of"] in world.case.gold_ids


def test_distractors_shrink_to_one_short_chunk_at_the_front() -> None:
    world = _world()
    minimal = find(
        distractor_injections(world, ks=KS),
        lambda p: p.kind == "unrelated" and any(len(c.text) >= 1 for c in p.chunks),
        settings=settings(database=None, max_examples=500),
    )
    assert minimal.k == 1 and minimal.at == 0
    assert len(minimal.chunks) == 1 and len(minimal.chunks[0].text.split()) == 1


def test_cutoff_shrinks_to_the_smallest_gap() -> None:
    world = _world()
    minimal = find(FAMILIES["cutoff"].perturbations(world, ks=KS), lambda p: p.k_to >= 4, settings=settings(database=None))
    assert (minimal.k, minimal.k_to) in {(1, 4), (3, 4)}


def test_shares_word_catches_case_stems_and_short_words() -> None:
    tokens = query_tokens("When does the revised Leave policy begin?")
    assert shares_word("POLICIES", tokens)
    assert shares_word("the", tokens)
    assert not shares_word("lorem", tokens)


def test_catalog_covers_every_family_with_stated_rows() -> None:
    names = [r.name for r in CATALOG]
    assert len(names) == len(set(names))
    # Opt-in: worlds of thousands of chunks, run by `--profile scale` or by name.
    assert not FAMILIES["scale"].default and FAMILIES["scale"].grows_corpus
    assert set(DEFAULT_SUITE) == set(FAMILIES) - {"scale"} == {
        "reorder", "removal", "claims", "distractors", "duplicate", "supersede", "tenancy", "filters", "cutoff",
        "depth", "query", "odd_query", "repeat", "state", "lifecycle", "approximate", "contract",
    }
    for relation in CATALOG:
        row = relation.describe()
        assert row["summary"] and row["family"] in FAMILIES and row["severity"] in ("hard", "soft")
        assert relation.name.startswith(relation.family + ".")
    soft = {r.name for r in CATALOG if r.severity.value == "soft"}
    assert {"removal.recall_non_increasing", "query.ranking_invariant"} <= soft


def test_unknown_family_is_a_usage_error() -> None:
    from ragmorph.errors import UsageError

    with pytest.raises(UsageError, match="reorder"):
        strategies.family("shuffle")


def test_family_refuses_a_world_it_does_not_apply_to() -> None:
    from ragmorph.errors import UsageError

    world = _world()
    no_tenant = World(world.corpus, Case("q", "x", evidence=[["hr-1"]]), world.params)
    with pytest.raises(UsageError, match="no tenant context"):
        FAMILIES["tenancy"].perturbations(no_tenant, ks=KS)


def test_the_vocabulary_is_what_faker_draws_with_every_provider_loaded() -> None:
    # vocabulary() loads only the providers it reads (a default Faker scans every provider's locales): the seeded
    # draws, and so every perturbation and report, must be those of a default Faker.
    from faker import Faker

    assert vocabulary() == vocabulary_from(Faker("la"), Faker("en_US"))


def test_a_copy_scores_like_its_original_in_a_single_list_and_is_judged_only_when_both_are_returned() -> None:
    from ragmorph.model import Case, Chunk, Corpus, Hit, Params, World
    from ragmorph.relations import Observation, Ranking
    from ragmorph.strategies.duplicate import AddCopy

    world = World(Corpus([Chunk("a", "leave policy", tenant="t", metadata={"x": 1}), Chunk("b", "other")]),
                  Case("q", "leave"), Params(k=3))
    plan = AddCopy(k=3, original="a", copy_id="a~copy", at=0)
    follow_world = plan.apply(world)
    assert follow_world.corpus.ids[0] == "a~copy" and plan.referenced_ids() == ("a",)
    assert follow_world.corpus["a~copy"].metadata == {"x": 1} and follow_world.corpus["a~copy"].tenant == "t"
    check = strategies.relation("duplicate.copy_ties").check
    base = Observation(world, Ranking(()))

    def judged(*hits: Hit) -> Any:
        return check(base, Observation(follow_world, Ranking(hits)))

    held = judged(Hit("a", 0.5), Hit("a~copy", 0.5))
    assert held.applicable and held.holds
    broken = judged(Hit("a~copy", 0.0164), Hit("a", 0.0161))
    assert not broken.holds and "0.0164" in broken.detail and "rank fusion" in broken.detail
    assert not judged(Hit("a", 0.5)).applicable
