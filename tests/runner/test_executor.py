"""The executor runs every kind of call a plan can ask for: the base instance (cached), the same instance (uncached,
with an edit applied and undone), a fresh or twin instance, a derived ranking; it closes what it built."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import BM25Retriever
from ragmorph.errors import ContractRule, UsageError
from ragmorph.model import Chunk, Corpus, Params, Ranking, World
from ragmorph.relations import Call, Edit, Instance, Plan, Role
from ragmorph.runner import CallCache, Executor, RetrieverSpec
from support import engine_retrievers as er

CORPUS, CASES = er.small_world()
WORLD = World(CORPUS, CASES[0], Params(3))
CLOSED: list[str] = []


class EditableBM25(BM25Retriever):
    """BM25 with the optional protocol methods: update in place, re-index the same instance, close."""

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus, **kwargs)
        self.label = f"index of {len(corpus)}"

    def update(self, chunks: Sequence[Chunk]) -> None:
        """Replace the chunks with these ids by these chunks."""
        self.remove([c.id for c in chunks])
        self.add(list(chunks))

    def index(self, corpus: Corpus) -> None:
        """Index exactly `corpus` on this instance."""
        self.remove([c.id for c in self.corpus])
        self.add(list(corpus))

    def close(self) -> None:
        """Record that the runner closed this instance."""
        CLOSED.append(self.label)


def _executor(target: Any = EditableBM25) -> Executor:
    return Executor(RetrieverSpec.of(target, "editable"), CORPUS, cache=CallCache())


def _rewritten(world: World) -> World:
    gold = world.corpus[world.case.gold_ids[0]]
    changed = attrs.evolve(gold, text="zzzz qqqq")
    return attrs.evolve(world, corpus=Corpus(changed if c.id == gold.id else c for c in world.corpus))


def test_an_update_in_place_is_applied_for_the_call_and_undone_after() -> None:
    executor = _executor()
    edited = _rewritten(WORLD)
    gold = WORLD.case.gold_ids[0]
    probe = executor.run(Plan.pair(WORLD, edited, instance=Instance.SAME, edit=Edit.UPDATE))
    assert gold in probe.base.ranking.ids and gold not in probe.follow.ranking.ids
    assert executor.steps[-1].update and executor.steps[-1].update[0].id == gold
    # Undone: the base call on the same instance finds the gold chunk again.
    again = executor.run(Plan.pair(WORLD, WORLD, instance=Instance.SAME))
    assert again.follow.ranking.ids == probe.base.ranking.ids


def test_a_reindex_of_the_same_instance_and_a_fresh_index_agree_for_a_correct_retriever() -> None:
    executor = _executor()
    smaller = attrs.evolve(WORLD, corpus=CORPUS.restricted(set(WORLD.case.gold_ids) | set(CORPUS.ids[:3])))
    reindexed = executor.run(Plan.pair(WORLD, smaller, instance=Instance.SAME, edit=Edit.INDEX))
    fresh = executor.run(Plan.pair(WORLD, smaller, instance=Instance.FRESH))
    assert reindexed.follow.ranking.ids == fresh.follow.ranking.ids
    assert set(reindexed.follow.ranking.ids) <= set(smaller.corpus.ids)


def test_fresh_instances_are_closed_after_their_call_and_the_base_instance_by_close() -> None:
    CLOSED.clear()
    executor = _executor()
    smaller = attrs.evolve(WORLD, corpus=CORPUS.restricted(set(WORLD.case.gold_ids)))
    executor.run(Plan.pair(WORLD, smaller, instance=Instance.FRESH))
    assert CLOSED == [f"index of {len(smaller.corpus)}"]
    executor.close()
    assert CLOSED[-1] == f"index of {len(CORPUS)}"


def test_a_missing_capability_is_a_reason_not_a_call() -> None:
    executor = _executor(BM25Retriever)
    assert executor.run(Plan.pair(WORLD, _rewritten(WORLD), instance=Instance.SAME, edit=Edit.UPDATE)) == (
        "the retriever has no update(chunks) to apply and undo an update in place"
    )
    assert "no exact twin" in executor.run(Plan.pair(WORLD, WORLD, instance=Instance.TWIN))
    black_box = Executor(RetrieverSpec.of(BM25Retriever(CORPUS), "box"), CORPUS, cache=CallCache())
    assert "black-box" in black_box.run(Plan.pair(WORLD, WORLD, instance=Instance.FRESH))


def test_a_twin_answers_over_the_calls_corpus() -> None:
    def factory(corpus: Corpus) -> BM25Retriever:
        return BM25Retriever(corpus)

    factory.ragmorph_twin = BM25Retriever  # type: ignore[attr-defined]
    probe = Executor(RetrieverSpec.of(factory, "twinned"), CORPUS, cache=CallCache()).run(
        Plan.pair(WORLD, WORLD, instance=Instance.TWIN)
    )
    assert probe.follow.ranking.ids == probe.base.ranking.ids


def test_base_calls_are_cached_and_same_instance_calls_are_not() -> None:
    executor = _executor()
    executor.run(Plan.pair(WORLD, WORLD))
    assert (executor.calls, executor.served) == (1, 1)
    executor.run(Plan.pair(WORLD, WORLD, instance=Instance.SAME))
    assert (executor.calls, executor.served) == (2, 2)


def test_an_invalid_response_ends_the_plan_with_a_typed_rule() -> None:
    executor = Executor(RetrieverSpec.of(er.OneTooMany, "long"), CORPUS, cache=CallCache())
    world = attrs.evolve(WORLD, params=Params(1))
    probe = executor.run(Plan.pair(world, attrs.evolve(world, params=Params(2))))
    assert probe.base.rule is ContractRule.TOO_MANY_HITS and probe.invalid is probe.base
    assert probe.follow.ranking == Ranking() and probe.follow.rule is None and executor.calls == 1


def test_metrics_are_attached_to_observations() -> None:
    probe = _executor().run(Plan.pair(WORLD, WORLD))
    gold = set(WORLD.case.gold_ids)
    expected = len(gold & set(probe.base.ranking.ids)) / len(gold)
    assert probe.base.metrics["R@3"] == expected


def test_a_plan_needs_one_base_then_one_follow_up_call() -> None:
    with pytest.raises(UsageError, match="one base call"):
        Plan((Call(WORLD, role=Role.FOLLOW),))
    with pytest.raises(UsageError, match="derive"):
        Plan((Call(WORLD, role=Role.BASE), Call(WORLD, Instance.DERIVED, role=Role.FOLLOW)))


def test_a_plan_starting_with_the_call_the_last_plan_ended_with_takes_its_answer_and_step() -> None:
    executor = _executor()
    other = attrs.evolve(WORLD, params=Params(1))
    reads = Plan((Call(WORLD, Instance.SAME, role=Role.BASE), Call(other, Instance.SAME), Call(WORLD, Instance.SAME, role=Role.FOLLOW)))
    again = Plan((Call(WORLD, Instance.SAME, role=Role.BASE), Call(WORLD, Instance.SAME, role=Role.FOLLOW)))
    first = executor.run(reads)
    assert executor.calls == 3
    chained = executor.run(again)
    # Nothing reached the instance since it answered this call: that answer and its recorded step stand for it.
    assert (executor.calls, executor.served) == (4, 1) and len(executor.steps) == 4
    assert chained.sources[0] == first.sources[1] and chained.base.ranking == first.follow.ranking
    # A call on the instance in between, or an instance built since, ends the chain.
    executor.observe_base(attrs.evolve(WORLD, params=Params(2)))
    executor.run(again)
    assert executor.calls == 7
    executor.cache.note_build()
    executor.run(again)
    assert executor.calls == 9
    # A plan ending with an edited call leaves nothing to continue from (its first call continued the last plan).
    executor.run(Plan((Call(WORLD, Instance.SAME, role=Role.BASE), Call(_rewritten(WORLD), Instance.SAME, Edit.UPDATE, Role.FOLLOW))))
    assert executor.calls == 10
    executor.run(again)
    assert executor.calls == 12


def test_a_reindexed_call_is_never_continued_as_an_unedited_one() -> None:
    # A Step's `index` takes no part in its equality, so a re-index of the same query and k looks like the plain
    # call: neither answer may stand for the other.
    executor = _executor()
    without_gold = attrs.evolve(WORLD, corpus=CORPUS.restricted(set(CORPUS.ids) - set(WORLD.case.gold_ids)))
    again = Plan((Call(WORLD, Instance.SAME, role=Role.BASE), Call(WORLD, Instance.SAME, role=Role.FOLLOW)))
    executor.run(Plan((Call(WORLD, Instance.SAME, role=Role.BASE), Call(without_gold, Instance.SAME, Edit.INDEX, Role.FOLLOW))))
    after_reindex = executor.run(again)
    assert after_reindex.base.ranking == after_reindex.follow.ranking and WORLD.case.gold_ids[0] in after_reindex.base.ranking.ids
    reindexed = executor.run(Plan((Call(without_gold, Instance.SAME, Edit.INDEX, Role.BASE), Call(WORLD, Instance.SAME, role=Role.FOLLOW))))
    assert WORLD.case.gold_ids[0] not in reindexed.base.ranking.ids


@st.composite
def _related_corpora(draw: st.DrawFn) -> tuple[Corpus, Corpus]:
    """A base corpus and another of as many chunks or not: reordered, derived by edits, or rebuilt with copies."""
    size = draw(st.integers(1, 8))
    base = Corpus(Chunk(f"c{i}", f"text {i}") for i in range(size))
    after = base
    for step in draw(st.lists(st.sampled_from(["reorder", "remove", "add", "replace", "copy", "rebuild"]), max_size=3)):
        if step == "reorder":
            after = after.reordered(draw(st.permutations(range(len(after)))))
        elif step == "remove" and len(after) > 1:
            after = after.without([draw(st.sampled_from(after.ids))])
        elif step == "add":
            fresh = f"n{draw(st.integers(0, 99))}"
            if fresh not in after:
                after = after.with_chunks([Chunk(fresh, "new")])
        elif step == "replace":
            after = after.replaced(Chunk(draw(st.sampled_from(after.ids)), "replaced"))
        elif step == "copy":  # equal chunks, other objects
            after = Corpus(Chunk(c.id, c.text) for c in after)
        elif step == "rebuild":  # the very objects, in a corpus built anew
            after = Corpus(list(after.chunks))
    return base, after


@given(_related_corpora())
@settings(max_examples=200, deadline=None)
def test_a_reordering_is_told_exactly_as_the_identity_sets_tell_it(corpora: tuple[Corpus, Corpus]) -> None:
    from ragmorph.runner._executor import _is_reordering
    from ragmorph.strategies import derivation

    base, after = corpora
    plain = len(after) == len(base) and derivation(base, after) is None and {id(c) for c in after} == {id(c) for c in base}
    assert _is_reordering(base, after) is plain


def test_an_update_of_metadata_from_one_to_true_is_an_update() -> None:
    from ragmorph.runner._executor import _updated

    base = Corpus([Chunk("c1", "leave policy", metadata={"flag": 1}), Chunk("c2", "vpn setup")])
    edited = base.replaced(attrs.evolve(base["c1"], metadata={"flag": True}))
    assert _updated(base, edited) == (edited["c1"],)
