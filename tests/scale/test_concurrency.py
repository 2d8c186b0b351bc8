"""`--concurrency N`: units in flight at once in threads (per process) give the serial run's report exactly.

The retriever waits 20 ms a call, like a service, and counts its calls in flight, so the test sees that the
calls did overlap (what concurrency is for) as well as that nothing else changed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmorph.demo import demo_retrievers
from ragmorph.runner import check
from ragmorph.worlds import demo_world

from support import waiting

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


def test_jobs_times_concurrency_gives_the_serial_report(serial: dict[str, Any]) -> None:
    report = check(RETRIEVERS, WORLD.corpus, CASES, jobs=2, concurrency=2, **SETTINGS).to_dict()
    assert _comparable(report) == _comparable(serial)


def test_fail_fast_with_concurrency_stops_where_a_serial_run_stops() -> None:
    buggy = {"bm25-postfilter": RETRIEVERS["bm25-postfilter"]}
    serial_report = check(buggy, WORLD.corpus, CASES, fail_fast=True, **SETTINGS).to_dict()
    threaded = check(buggy, WORLD.corpus, CASES, fail_fast=True, concurrency=3, **SETTINGS).to_dict()
    assert serial_report["summary"]["hard_failures"] == 1
    assert _comparable(threaded) == _comparable(serial_report)
