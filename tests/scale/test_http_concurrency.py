"""`--concurrency N` against a real HTTP service on 127.0.0.1 that takes 20 ms a request: the service answers
several requests at once (what concurrency is for), never more than N, and the report is the serial one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.adapters.http import HTTPRetriever
from ragmorph.runner import check
from ragmorph.worlds import demo_world

from support.retriever_server import RetrieverServer

pytestmark = pytest.mark.slow

WORLD = demo_world()
CASES = WORLD.cases[:3]
SETTINGS: dict[str, Any] = {"max_examples": 4, "seed": 3, "ks": (1, 5)}


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    report = json.loads(json.dumps(report))
    report["manifest"].pop("created")
    return report


def test_a_served_retriever_gets_concurrent_requests_and_the_serial_report() -> None:
    runs = {}
    with RetrieverServer(BM25Retriever(WORLD.corpus), latency=0.02) as server, HTTPRetriever(server.url()) as remote:
        for concurrency in (None, 3):
            server.max_in_flight, server.requests = 0, []
            report = check({"service": remote}, WORLD.corpus, CASES, concurrency=concurrency, **SETTINGS).to_dict()
            runs[concurrency] = (report, server.max_in_flight, len(server.requests))
    (serial, serial_peak, serial_requests), (concurrent, peak, requests) = runs[None], runs[3]
    assert serial_peak == 1 and 2 <= peak <= 3, (serial_peak, peak)
    assert requests == serial_requests == serial["summary"]["retriever_calls"] > 0  # the cache made each call once
    assert _comparable(concurrent) == _comparable(serial)
