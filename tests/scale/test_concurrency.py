"""`--concurrency N`: batches in flight at once in threads (per process), and the independent calls of a plan at
once, give the serial run's report exactly; the call cache makes each call once however many threads ask.

The retrievers wait 20 ms a call, like a service, and count their calls in flight, so the tests see that the
calls did overlap (what concurrency is for) as well as that nothing else changed.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.demo import demo_retrievers
from ragmorph.model import Filters, Ranking
from ragmorph.relations import Call, Instance, Plan, Role
from ragmorph.runner import CallCache, CallPool, Executor, RetrieverSpec, check
from ragmorph.runner._spec import start_world
from ragmorph.worlds import demo_world

from support import waiting
from support.zoo import zoo_member

pytestmark = pytest.mark.slow

WORLD = demo_world()
CASES = WORLD.cases[:4]
SETTINGS: dict[str, Any] = {"max_examples": 4, "seed": 2, "ks": (1, 3, 5)}
RETRIEVERS = {"waiting": "support.waiting:WaitingBM25", "bm25-postfilter": demo_retrievers()["bm25-postfilter"]}


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    report = json.loads(json.dumps(report))
    report["manifest"].pop("created")
    return report


@pytest.fixture(scope="module")
def serial() -> dict[str, Any]:
    """The plain serial report: one unit after the other."""
    return check(RETRIEVERS, WORLD.corpus, CASES, **SETTINGS).to_dict()


def test_four_batches_in_threads_give_the_serial_report_with_calls_overlapping(serial: dict[str, Any]) -> None:
    waiting.IN_FLIGHT.update(now=0, most=0)
    report = check(RETRIEVERS, WORLD.corpus, CASES, concurrency=4, **SETTINGS).to_dict()
    assert serial["summary"]["hard_failures"] > 0  # the planted bug's violations are compared too
    assert _comparable(report) == _comparable(serial)
    assert waiting.IN_FLIGHT["most"] >= 2  # the waits overlapped
    assert waiting.IN_FLIGHT["now"] == 0


def test_more_batches_than_call_slots_run_at_once_but_never_more_calls_than_slots() -> None:
    # 4 batches on 2 call slots: all 4 start at once (batches_in_flight), and 2 calls at most are in flight.
    waiting.IN_FLIGHT.update(now=0, most=0)
    waiting.ASKED.clear()
    only = {"waiting": RETRIEVERS["waiting"]}
    serial_report = check(only, WORLD.corpus, CASES, **SETTINGS).to_dict()
    waiting.IN_FLIGHT.update(now=0, most=0)
    waiting.ASKED.clear()
    report = check(only, WORLD.corpus, CASES, concurrency=2, **SETTINGS).to_dict()
    assert _comparable(report) == _comparable(serial_report)
    assert waiting.IN_FLIGHT["most"] == 2
    asked = waiting.ASKED
    first = [asked.index(case.query) for case in CASES]
    last = [len(asked) - 1 - asked[::-1].index(case.query) for case in CASES]
    # The third and fourth batches started before either of the first two finished.
    assert max(first) < min(last[:2])


def test_jobs_times_concurrency_gives_the_serial_report(serial: dict[str, Any]) -> None:
    report = check(RETRIEVERS, WORLD.corpus, CASES, jobs=2, concurrency=2, **SETTINGS).to_dict()
    assert _comparable(report) == _comparable(serial)


def test_fail_fast_with_concurrency_stops_where_a_serial_run_stops() -> None:
    buggy = {"bm25-postfilter": RETRIEVERS["bm25-postfilter"]}
    serial_report = check(buggy, WORLD.corpus, CASES, fail_fast=True, **SETTINGS).to_dict()
    threaded = check(buggy, WORLD.corpus, CASES, fail_fast=True, concurrency=3, **SETTINGS).to_dict()
    # One failing unit (its tenancy unit breaks filtered_equals_visible and, by the same short list, full_k).
    failing = {(r["retriever"], r["case"], r["strategy"]) for r in serial_report["results"] if r["status"] == "fail"}
    assert len(failing) == 1 and serial_report["summary"]["hard_failures"] >= 1
    assert _comparable(threaded) == _comparable(serial_report)


# ------------------------------------------------------------------------ calls inside a plan, and the cache


class CountingBM25(BM25Retriever):
    """BM25 behind a 20 ms wait, counting its calls by (query, k, filters, chunks indexed) and how many were in
    flight at once."""

    lock = threading.Lock()
    made: Counter[tuple[str, int, Any, int]] = Counter()
    flight = {"now": 0, "most": 0}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """BM25's hits, after the wait."""
        with self.lock:
            self.made[(query, k, filters, len(self))] += 1
            self.flight["now"] += 1
            self.flight["most"] = max(self.flight["most"], self.flight["now"])
        try:
            time.sleep(0.02)
            return super().retrieve(query, k=k, filters=filters)
        finally:
            with self.lock:
                self.flight["now"] -= 1

    @classmethod
    def reset(cls) -> None:
        """Forget the counts."""
        cls.made.clear()
        cls.flight.update(now=0, most=0)


def test_threads_asking_the_cache_for_one_key_at_once_make_one_call() -> None:
    cache = CallCache()
    made: list[int] = []

    def call() -> Ranking:
        made.append(1)
        time.sleep(0.05)  # long enough for every thread to ask while the first call is in flight
        return Ranking()

    with ThreadPoolExecutor(8) as threads:
        answers = list(threads.map(lambda _: cache.get_or_call(("same key",), call), range(8)))
    assert len(made) == 1
    assert (cache.misses, cache.hits) == (1, 7)
    assert all(a is answers[0] for a in answers)


def test_executors_sharing_a_cache_across_threads_never_call_one_key_twice() -> None:
    CountingBM25.reset()
    with CallPool(4) as pool:
        cache = CallCache(pool)
        spec = RetrieverSpec.of(CountingBM25, "counting")

        def one(number: int) -> list[str]:
            executor = Executor(spec, WORLD.corpus, cache=cache)
            world = attrs.evolve(START, params=attrs.evolve(START.params, k=1 + number % 3))
            probe = executor.run(Plan.pair(world, attrs.evolve(world, corpus=world.corpus.without([WORLD.corpus.ids[0]])), instance=Instance.FRESH))
            executor.close()
            return list(probe.follow.ranking.ids)

        with ThreadPoolExecutor(6) as threads:
            answers = list(threads.map(one, range(12)))
    # 12 plans in 6 threads ask 6 distinct calls (3 k's, base and fresh instance): each is made once.
    assert len(CountingBM25.made) == 6 and set(CountingBM25.made.values()) == {1}
    assert answers[:3] == answers[3:6]


START = start_world(WORLD.corpus, WORLD.cases[0], (1, 3, 5))


def _run_alone(plan: Plan, pool: CallPool | None) -> tuple[Any, ...]:
    executor = Executor(RetrieverSpec.of(CountingBM25, "counting"), WORLD.corpus, cache=CallCache(pool))
    try:
        probe = executor.run(plan)
    finally:
        executor.close()
    assert not isinstance(probe, str)
    return probe.base.ranking, probe.follow.ranking, probe.sources, executor.calls, executor.served, tuple(executor.steps)


def test_the_calls_of_one_plan_on_instances_of_their_own_overlap_and_change_nothing() -> None:
    without = attrs.evolve(START, corpus=START.corpus.without([START.corpus.ids[0]]))
    plan = Plan(
        (
            Call(START, Instance.SAME, role=Role.BASE),
            Call(without, Instance.FRESH),
            Call(attrs.evolve(START, params=attrs.evolve(START.params, k=1)), Instance.SAME),
            Call(without, Instance.FRESH, role=Role.FOLLOW),  # the same key again: served, not called twice
        )
    )
    CountingBM25.reset()
    serial = _run_alone(plan, None)
    assert CountingBM25.flight["most"] == 1
    CountingBM25.reset()
    with CallPool(4) as pool:
        overlapped = _run_alone(plan, pool)
    assert CountingBM25.flight["most"] == 2  # the fresh instance's call ran while the base instance answered
    assert overlapped == serial
    # The SAME instance answers twice (uncached, at two k's), the fresh instance's key once although asked twice.
    assert set(CountingBM25.made.values()) == {1}
    assert serial[3:5] == (3, 1)


def test_a_call_after_a_plan_stopped_is_neither_counted_nor_cached() -> None:
    # The follow-up cannot be made (this retriever declares no twin): the fresh call before it counts, the one
    # after it was started ahead but the serial run never reaches it, so its answer is dropped.
    without = attrs.evolve(START, corpus=START.corpus.without([START.corpus.ids[0]]))
    plan = Plan(
        (
            Call(START, Instance.SAME, role=Role.BASE),
            Call(without, Instance.FRESH),
            Call(START, Instance.TWIN, role=Role.FOLLOW),
            Call(attrs.evolve(without, params=attrs.evolve(START.params, k=1)), Instance.FRESH),
        )
    )
    for pool in (None, CallPool(4)):
        executor = Executor(RetrieverSpec.of(CountingBM25, "counting"), WORLD.corpus, cache=CallCache(pool))
        assert isinstance(executor.run(plan), str)
        assert (executor.calls, len(executor.cache)) == (2, 1)
        executor.close()
        if pool is not None:
            pool.close()


# ------------------------------------------------------------------- reports with calls overlapping inside plans

STATEFUL = {
    # Their answers depend on the calls made before (a cache keyed on the query, click feedback, ignored deletes):
    # any change in the order of calls on one instance would change the report.
    name: zoo_member(name).factory for name in ("query_only_cache", "popularity_feedback", "ignores_deletes")
}


def test_more_slots_than_batches_give_the_serial_report_for_retrievers_with_state() -> None:
    retrievers = {**STATEFUL, "counting": CountingBM25}
    cases = WORLD.cases[:2]
    serial_report = check(retrievers, WORLD.corpus, cases, **SETTINGS).to_dict()
    CountingBM25.reset()
    overlapped = check(retrievers, WORLD.corpus, cases, concurrency=12, **SETTINGS).to_dict()
    assert serial_report["summary"]["hard_failures"] > 0
    assert _comparable(overlapped) == _comparable(serial_report)
    # 8 batches and 12 slots: the spare slots took calls inside plans.
    assert CountingBM25.flight["most"] >= 3
