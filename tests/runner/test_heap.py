"""The heap a run starts with stays out of the collector's full passes during the run, and only then.

`frozen_heap` moves the objects alive on entry to the garbage collector's permanent generation and back on exit:
re-entrant across threads, leaving a caller's own freeze (or a disabled collector) exactly as it was.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from ragmorph.runner import check
from ragmorph.runner._heap import YOUNG_THRESHOLD, frozen_heap
from support import engine_retrievers as er

CORPUS, CASES = er.small_world()


class _Node:
    """An object that can sit in a reference cycle and be weakly referenced."""

    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    """Each test starts and ends with nothing frozen, the collector enabled and its thresholds as they were."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()
    gc.set_threshold(*thresholds)


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_run_calls_the_retriever_with_its_starting_heap_frozen_and_thaws_it_after() -> None:
    report = check(er.FrozenHeapBM25, CORPUS, CASES[:1], strategies=["removal", "query"], max_examples=5)
    assert {r.status for r in report.results} <= {"pass", "not_applicable"}
    assert any(r.status == "pass" for r in report.results)
    assert gc.get_freeze_count() == 0


@pytest.mark.slow
def test_worker_processes_freeze_their_heap_too() -> None:
    report = check(er.FrozenHeapBM25, CORPUS, CASES[:2], strategies=["removal"], max_examples=4, jobs=2)
    assert {r.status for r in report.results} <= {"pass", "not_applicable"}
    assert any(r.status == "pass" for r in report.results)


def test_a_cycle_made_garbage_during_the_run_is_freed_after_it_and_one_made_in_the_run_during_it() -> None:
    before = _cycle()
    held = before()
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        del held
        during = _cycle()
        gc.collect()
        assert during() is None  # made during the run: collected as ever
        assert before() is not None  # existed before the run: frozen until it ends
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None


def test_nested_and_overlapping_runs_share_one_freeze_undone_when_the_last_leaves() -> None:
    entered, leave = threading.Event(), threading.Event()
    seen: list[int] = []

    def other_run() -> None:
        with frozen_heap():
            entered.set()
            leave.wait(10)
            seen.append(gc.get_freeze_count())

    with frozen_heap():
        assert gc.get_freeze_count() > 0
        with frozen_heap():
            pass
        assert gc.get_freeze_count() > 0  # the inner exit did not thaw the outer run's heap
        thread = threading.Thread(target=other_run)
        thread.start()
        assert entered.wait(10)
    assert gc.get_freeze_count() > 0  # the other run is still inside
    leave.set()
    thread.join(10)
    assert seen and seen[0] > 0
    assert gc.get_freeze_count() == 0


def test_young_passes_are_rarer_during_a_run_and_the_callers_thresholds_come_back_after_it() -> None:
    gc.set_threshold(700, 11, 12)
    seen: list[tuple[int, ...]] = []
    with frozen_heap():
        seen.append(gc.get_threshold())
        with frozen_heap():  # nested: the outer run's setting stays
            seen.append(gc.get_threshold())
    assert seen == [(YOUNG_THRESHOLD, 11, 12)] * 2
    assert gc.get_threshold() == (700, 11, 12)
    gc.set_threshold(5 * YOUNG_THRESHOLD, 10, 10)  # a caller's higher threshold is never lowered
    with frozen_heap():
        assert gc.get_threshold() == (5 * YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (5 * YOUNG_THRESHOLD, 10, 10)


def test_cyclic_garbage_made_during_a_run_is_still_collected_by_the_collectors_own_passes() -> None:
    with frozen_heap():
        first = _cycle()
        for _ in range(3 * YOUNG_THRESHOLD):  # no gc.collect(): the raised threshold still triggers passes
            _cycle()
        assert first() is None


def test_a_callers_own_freeze_and_a_disabled_collector_are_left_as_they_are() -> None:
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    own = gc.get_freeze_count()
    young = [_Node() for _ in range(1000)]  # made after the caller's freeze: a freeze of ours would take them
    with frozen_heap():
        assert 0 < gc.get_freeze_count() <= own
        assert gc.get_threshold() == (700, 10, 10)  # a process that manages its own heap keeps its thresholds
    assert 0 < gc.get_freeze_count() <= own  # nothing of the caller's was thawed
    del young
    gc.unfreeze()
    gc.disable()
    with frozen_heap():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


class _Held:
    """Something a search's test refers to (as a unit's test refers to its executor and call cache)."""


def test_a_finished_search_keeps_nothing_its_test_refers_to_alive() -> None:
    """Only counted references free what a passing search's test held (a failing search's exceptions, which
    Hypothesis keeps with their frames, hold it until a collection)."""
    from hypothesis import strategies as st

    from ragmorph.runner import search

    held = _Held()
    alive = weakref.ref(held)

    def test(value: int, held: _Held = held) -> None:  # held as a default: `del held` below cannot reach it
        return None

    gc.collect()
    gc.disable()  # Hypothesis's own reference cycles stay uncollected: only references counted free anything
    try:
        assert search(st.integers(0, 10), test, max_examples=20, derandomize=False, seed=0, on_flaky=lambda: None) is None
        del held, test
        assert alive() is None
    finally:
        gc.enable()
