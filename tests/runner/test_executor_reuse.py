"""A batch hands a base instance from one unit to the next when nothing could tell it from a fresh build followed by
the calls made on it: no edit touched it, no call on it failed, nothing else was built since, and it has no
close(). The calls made on it travel with it, so a stateful violation still reproduces and shrinks. What a built
instance declares is read once per retriever and corpus, not from a build per unit."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Corpus, Params, World
from ragmorph.relations import Instance, Plan
from ragmorph.runner import CallCache, Executor, RetrieverSpec, execute, plan, replay
from ragmorph.runner._backends import run_batch
from ragmorph.worlds import demo_world

from support.zoo import zoo_member

WORLD = demo_world()
CASE = WORLD.cases[0]
SETTINGS: dict[str, Any] = {"max_examples": 6, "seed": 3, "ks": (1, 3, 5)}
# Families whose plans make plain calls on the base instance only, then one that edits it.
READ_ONLY = ("cutoff", "query", "filters", "tenancy")


class CountingBM25(BM25Retriever):
    """BM25 that counts its builds (a correct retriever: its answers depend on the corpus alone)."""

    built: ClassVar[list[int]] = []

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus, **kwargs)
        CountingBM25.built.append(len(corpus))


def _rows(results: Any) -> list[Any]:
    return json.loads(json.dumps([[r.to_dict() for r in unit] for unit in results]))


def _without_reuse(units: Any) -> tuple[Any, ...]:
    cache = CallCache()
    return tuple(execute(unit, cache) for unit in units)


def test_units_of_a_batch_share_a_base_instance_no_edit_touched_and_report_what_fresh_instances_report() -> None:
    units = plan({"bm25": CountingBM25}, WORLD.corpus, [CASE], strategies=READ_ONLY, **SETTINGS)
    CountingBM25.built.clear()
    fresh = _without_reuse(units)
    fresh_builds = len(CountingBM25.built)
    CountingBM25.built.clear()
    shared = run_batch(units)
    assert _rows(shared) == _rows(fresh)
    assert fresh_builds >= len(READ_ONLY)
    assert len(CountingBM25.built) == 1  # one base instance for the four units, no build for capabilities


def _executor(cache: CallCache) -> Executor:
    return Executor(RetrieverSpec.of(CountingBM25, "bm25"), WORLD.corpus, cache=cache, reuse=True)


def _world(corpus: Corpus = WORLD.corpus, k: int = 3) -> World:
    return World(corpus, CASE, Params(k))


def test_an_instance_an_edit_touched_is_never_handed_on() -> None:
    cache = CallCache(reuse=True)
    first = _executor(cache)
    fewer = Corpus(c for c in WORLD.corpus if c.id != CASE.gold_ids[0])
    first.run(Plan.pair(_world(), _world(fewer), instance=Instance.SAME))  # a delta applied and undone
    first.close()
    CountingBM25.built.clear()
    second = _executor(cache)
    second.observe_base(_world(k=5))
    assert CountingBM25.built == [len(WORLD.corpus)]
    assert [s.params.k for s in second.steps] == [5]  # its own history only: nothing was handed on


def test_an_instance_is_not_handed_on_after_another_was_built() -> None:
    cache = CallCache(reuse=True)
    first = _executor(cache)
    first.observe_base(_world())
    first.close()
    other = _executor(cache)
    # A fresh index built for one call: an instance sharing state with others may have changed since.
    other.run(Plan.pair(_world(), _world(), instance=Instance.FRESH))
    other.close()
    CountingBM25.built.clear()
    third = _executor(cache)
    third.observe_base(_world(k=5))
    assert CountingBM25.built == [len(WORLD.corpus)]


def test_shrinking_executors_neither_take_nor_park_instances() -> None:
    cache = CallCache(reuse=True)
    first = _executor(cache)
    first.observe_base(_world())
    first.close()
    CountingBM25.built.clear()
    shrinking = Executor(RetrieverSpec.of(CountingBM25, "bm25"), WORLD.corpus, cache=cache)
    shrinking.observe_base(_world(k=5))
    shrinking.close()
    assert CountingBM25.built == [len(WORLD.corpus)]


def test_a_handed_on_instance_brings_its_calls_as_history() -> None:
    cache = CallCache(reuse=True)
    first = _executor(cache)
    first.observe_base(_world())
    first.close()
    CountingBM25.built.clear()
    second = _executor(cache)
    second.observe_base(_world(k=5))
    assert CountingBM25.built == []
    assert [s.params.k for s in second.steps] == [3, 5]


def test_a_stateful_violation_that_needs_an_earlier_units_calls_still_reproduces(tmp_path: Any) -> None:
    # A cache keyed on (query, k) alone, its instance handed from the tenancy unit to the filters unit: every
    # violation still reproduces and shrinks (these need only their own unit's calls; the test below needs the
    # carried history).
    factory = zoo_member("query_only_cache").factory
    units = plan({"cache": factory}, WORLD.corpus, [CASE], strategies=("tenancy", "filters"), replay_dir=tmp_path, **SETTINGS)
    results = [r for unit in run_batch(units) for r in unit if r.status == "fail"]
    assert results
    for result in results:
        violation = result.violation
        assert violation is not None and violation.replay is not None
        assert "cannot rebuild" not in (violation.minimal_reason or "")
        assert len(violation.minimal_corpus) < len(WORLD.corpus)
        assert replay(violation.replay, factory).reproduced


def test_a_call_served_again_from_the_cache_names_its_own_step_after_a_handed_on_history() -> None:
    cache = CallCache(reuse=True)
    first = _executor(cache)
    first.observe_base(_world())
    first.observe_base(_world(k=1))
    first.close()
    second = _executor(cache)
    pair = Plan.pair(_world(k=5), _world(k=5), instance=Instance.SAME)
    second.run(pair)
    again = second.run(pair)  # answered from the cache: its sources are the steps that made those calls
    assert not isinstance(again, str)
    assert [second.steps[n].params.k for n in again.sources if n is not None] == [5, 5]


def test_a_leak_that_needs_the_earlier_units_call_replays_with_the_history_handed_on() -> None:
    from ragmorph.model import Filters
    from ragmorph.runner._executor import run_after

    # A cache keyed on (query, k) alone: the first unit's unfiltered page is served to the second unit's filtered
    # call on the same instance, so the leak exists only after the first unit's call.
    spec = RetrieverSpec.of(zoo_member("query_only_cache").factory, "cache")
    cache = CallCache(reuse=True)
    first = Executor(spec, WORLD.corpus, cache=cache, reuse=True)
    first.observe_base(_world(k=5))
    first.close()
    second = Executor(spec, WORLD.corpus, cache=cache, reuse=True)
    filtered = World(WORLD.corpus, CASE, Params(5, Filters(tenant=CASE.tenant)))
    pair = Plan.pair(_world(k=5), filtered, instance=Instance.SAME)
    probe = second.run(pair)
    assert not isinstance(probe, str)
    leaked = [h.id for h in probe.follow.ranking.hits if WORLD.corpus[h.id].tenant not in (None, CASE.tenant)]
    assert leaked
    again = run_after(spec, pair, tuple(enumerate(second.steps)), probe.sources)
    assert not isinstance(again, str)
    assert [h.id for h in again.follow.ranking.hits] == [h.id for h in probe.follow.ranking.hits]
