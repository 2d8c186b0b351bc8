"""GuardedRetriever: normalises, validates, counts, times out, and turns exceptions into typed errors."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from ragmorph.adapters import BM25Retriever, FunctionRetriever, GuardedRetriever
from ragmorph.errors import InvalidResponse, RetrieverFailed, RetrieverTimeout, UsageError
from ragmorph.model import Chunk, Corpus, Filters, Hit, Params, Ranking

CORPUS = Corpus([Chunk("a", "leave policy", tenant="acme"), Chunk("b", "leave tax"), Chunk("c", "bonus")])
K3 = Params(k=3)


class Recording:
    """Returns a fixed response and records the arguments it was called with."""

    def __init__(self, response: object) -> None:
        self.response = response
        self.seen: list[tuple[str, int, Filters | None]] = []

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> object:
        self.seen.append((query, k, filters))
        return self.response


def test_normalises_counts_and_passes_no_filters_when_empty() -> None:
    inner = Recording([("a", 2.0), "b"])
    guard = GuardedRetriever(inner, corpus=CORPUS)
    ranking = guard.retrieve("leave", K3)
    assert ranking == Ranking([Hit("a", 2.0), Hit("b")])
    assert guard.retrieve("leave", Params(k=2, filters=Filters(tenant="acme"))) == ranking
    assert guard.calls == 2
    assert inner.seen == [("leave", 3, None), ("leave", 2, Filters(tenant="acme"))]


def test_invalid_responses_raise_and_use_the_call_corpus() -> None:
    guard = GuardedRetriever(Recording(["a", "zz"]), corpus=CORPUS)
    with pytest.raises(InvalidResponse, match="unknown id='zz'"):
        guard.retrieve("q", K3)
    bigger = CORPUS.with_chunks([Chunk("zz", "new")])
    assert guard.retrieve("q", K3, corpus=bigger).ids == ("a", "zz")


def test_exceptions_become_retriever_failed_never_an_empty_ranking() -> None:
    def broken(query: str, k: int) -> list[str]:
        raise ValueError("index corrupted")

    guard = GuardedRetriever(FunctionRetriever(broken))
    with pytest.raises(RetrieverFailed, match="ValueError: index corrupted") as caught:
        guard.retrieve("annual leave", K3)
    assert caught.value.query == "annual leave"
    assert isinstance(caught.value.__cause__, ValueError)
    assert guard.calls == 1


def test_timeout_stops_waiting_for_a_hung_call() -> None:
    release = threading.Event()

    def hangs(query: str, k: int) -> list[str]:
        release.wait(10)
        return []

    guard = GuardedRetriever(FunctionRetriever(hangs), timeout=0.05)
    started = time.perf_counter()
    with pytest.raises(RetrieverTimeout, match="timeout=0.05") as caught:
        guard.retrieve("slow query", K3)
    assert time.perf_counter() - started < 2
    assert caught.value.query == "slow query"
    release.set()
    fast = GuardedRetriever(FunctionRetriever(lambda q, k: ["a"]), timeout=5, corpus=CORPUS)
    assert fast.retrieve("q", K3).ids == ("a",)
    with pytest.raises(RetrieverFailed, match="ZeroDivisionError"):
        GuardedRetriever(FunctionRetriever(lambda q, k: 1 / 0), timeout=5).retrieve("q", K3)


def test_filters_for_a_retriever_that_cannot_take_them_are_a_usage_error() -> None:
    guard = GuardedRetriever(FunctionRetriever(lambda q, k: ["a"]))
    assert guard.retrieve("q", K3).ids == ("a",)
    with pytest.raises(UsageError, match="TenantFilter"):
        guard.retrieve("q", Params(k=3, filters=Filters(tenant="acme")))


class Batched:
    def __init__(self) -> None:
        self.batches = 0

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[str]:
        return self.retrieve_batch([query], k=k, filters=filters)[0]

    def retrieve_batch(self, queries: Sequence[str], *, k: int, filters: Filters | None = None) -> list[list[str]]:
        self.batches += 1
        return [["a"] if "leave" in q else [] for q in queries]


def test_batch_uses_one_call_and_checks_the_count() -> None:
    inner = Batched()
    guard = GuardedRetriever(inner, corpus=CORPUS)
    rankings = guard.retrieve_batch(["leave", "other", "leave too"], K3)
    assert [r.ids for r in rankings] == [("a",), (), ("a",)]
    assert inner.batches == 1 and guard.calls == 3
    inner.retrieve_batch = lambda queries, k, filters=None: [["a"]]  # type: ignore[method-assign]
    with pytest.raises(InvalidResponse, match="one response per query"):
        guard.retrieve_batch(["x", "y"], K3)
    bm25 = BM25Retriever(CORPUS)
    loop = GuardedRetriever(bm25)
    expected = [tuple(h.id for h in bm25.retrieve(q, k=3)) for q in ("leave", "bonus")]
    assert [r.ids for r in loop.retrieve_batch(["leave", "bonus"], K3)] == expected
    assert expected[1] == ("c",) and loop.calls == 2


class AsyncOnly:
    async def aretrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        await asyncio.sleep(0)
        if query == "boom":
            raise RuntimeError("async failure")
        if query == "slow":
            await asyncio.sleep(5)
        return [("b", 1.0)]


def test_async_only_retrievers_work_from_sync_and_async_code() -> None:
    guard = GuardedRetriever(AsyncOnly(), corpus=CORPUS, timeout=0.2)
    assert guard.retrieve("q", K3).ids == ("b",)
    assert asyncio.run(guard.aretrieve("q", K3)).ids == ("b",)
    with pytest.raises(RetrieverFailed, match="async failure"):
        asyncio.run(guard.aretrieve("boom", K3))
    with pytest.raises(RetrieverTimeout):
        asyncio.run(guard.aretrieve("slow", K3))
    assert guard.calls == 4


def test_sync_retrievers_serve_aretrieve_in_a_thread() -> None:
    guard = GuardedRetriever(BM25Retriever(CORPUS), corpus=CORPUS)
    assert asyncio.run(guard.aretrieve("bonus", K3)).ids == ("c",)


@pytest.mark.parametrize(
    ("retriever", "options", "message"),
    [
        (BM25Retriever, {}, "a factory itself is called with the corpus first"),
        (Recording([]), {"timeout": 0}, "positive, finite timeout"),
        (Recording([]), {"score_order": "sometimes"}, "score_order"),
    ],
)
def test_construction_errors(retriever: object, options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        GuardedRetriever(retriever, **options)  # type: ignore[arg-type]
