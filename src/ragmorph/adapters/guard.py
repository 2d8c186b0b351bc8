"""GuardedRetriever: the runner's one door to a user retriever.

It normalises and validates every response, counts calls, enforces a per-call timeout, and turns the
retriever's exceptions into RetrieverFailed (chained, with the query), never into an empty ranking.

Timeouts run the call in a daemon worker thread and stop waiting for it. Python cannot kill a thread, so a
timed-out call keeps running in the background until it returns on its own; its result is discarded.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InvalidResponse, RetrieverTimeout, UsageError, describe, retriever_errors
from ..model import Corpus, Filters, Params, Ranking
from ._protocol import excerpt
from .capabilities import describe_capabilities, display_name, is_retriever
from .function import FunctionRetriever, positional_arity
from .validation import ScoreOrder, _check_score_order, validate_hits

__all__ = ["GuardedRetriever"]


def _run_with_timeout(thunk: Callable[[], Any], timeout: float | None, query: str) -> Any:
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = thunk()
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    worker = threading.Thread(target=work, name="ragmorph-retriever-call", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise RetrieverTimeout(
            f"expected an answer within timeout={timeout} s, got none; the call was abandoned (it keeps running "
            "in a background thread, which Python cannot stop)",
            query=query,
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _is_search_function(obj: object) -> bool:
    arity = positional_arity(obj) if callable(obj) and not inspect.isclass(obj) else None  # type: ignore[arg-type]
    return arity is not None and arity[0] in (2, 3)


class GuardedRetriever:
    """Wraps a retriever: `retrieve(query, params) -> Ranking`, validated against `corpus`, with `calls` counted."""

    def __init__(
        self,
        retriever: Any,
        *,
        corpus: Corpus | None = None,
        timeout: float | None = None,
        score_order: ScoreOrder = "error",
        name: str | None = None,
    ) -> None:
        if isinstance(retriever, GuardedRetriever):
            retriever = retriever.retriever
        if not is_retriever(retriever) and _is_search_function(retriever):
            # A factory may build a plain search function fn(query, k[, filters]): wrapped as load_retriever does.
            retriever = FunctionRetriever(retriever)
        if not is_retriever(retriever):
            raise UsageError(
                f"expected a retriever object with retrieve(query, *, k, filters), got {describe(retriever)}; "
                "a factory must be called with the corpus first"
            )
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UsageError(f"expected a positive timeout in seconds or None, got timeout={describe(timeout)}")
        _check_score_order(score_order)
        self.retriever = retriever
        self.corpus = corpus
        self.timeout = timeout
        self.score_order: ScoreOrder = score_order
        self.name = name or display_name(retriever)
        self.capabilities = describe_capabilities(retriever)
        self.calls = 0
        self._count_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GuardedRetriever({self.name}, calls={self.calls})"

    def _count(self, calls: int) -> None:
        with self._count_lock:
            self.calls += calls

    def _filter_arguments(self, params: Params) -> dict[str, Any]:
        filters: Filters | None = None if params.filters.is_empty else params.filters
        if not self.capabilities.supports_filters:
            if filters is not None:
                raise UsageError(f"{self.name}: {self.capabilities.why_not('filters')}; got filters={filters!r}")
            return {"k": params.k}
        return {"k": params.k, "filters": filters}

    def _call(self, thunk: Callable[[], Any], query: str, *, force_thread: bool = False) -> Any:
        with retriever_errors(f"retriever {self.name}", query=query):
            if self.timeout is None and not force_thread:
                return thunk()
            return _run_with_timeout(thunk, self.timeout, query)

    def _validated(self, response: Any, query: str, params: Params, corpus: Corpus | None) -> Ranking:
        hits = validate_hits(
            response,
            k=params.k,
            query=query,
            corpus=corpus if corpus is not None else self.corpus,
            score_order=self.score_order,
        )
        return Ranking(hits)

    def retrieve(self, query: str, params: Params, *, corpus: Corpus | None = None) -> Ranking:
        """One validated call; `corpus` overrides the guard's corpus for the id check (e.g. after a delta)."""
        arguments = self._filter_arguments(params)
        self._count(1)
        if callable(getattr(self.retriever, "retrieve", None)):
            response = self._call(lambda: self.retriever.retrieve(query, **arguments), query)
        else:
            # Async-only retriever: asyncio.run in a worker thread works even when the caller runs an event loop.
            response = self._call(
                lambda: asyncio.run(self.retriever.aretrieve(query, **arguments)), query, force_thread=True
            )
        return self._validated(response, query, params, corpus)

    def retrieve_batch(
        self, queries: Sequence[str], params: Params, *, corpus: Corpus | None = None
    ) -> tuple[Ranking, ...]:
        """Validated rankings for many queries: one `retrieve_batch` call when the retriever has it, else a loop."""
        queries = list(queries)
        if not self.capabilities.supports_batch:
            return tuple(self.retrieve(query, params, corpus=corpus) for query in queries)
        arguments = self._filter_arguments(params)
        label = f"batch of {len(queries)} queries starting {queries[0]!r}" if queries else "empty batch"
        self._count(len(queries))
        responses = self._call(lambda: self.retriever.retrieve_batch(queries, **arguments), label)
        if isinstance(responses, (str, bytes)) or not hasattr(responses, "__len__") or len(responses) != len(queries):
            raise InvalidResponse(
                f"expected one response per query ({len(queries)}) from retrieve_batch, got {describe(responses)}",
                query=label,
                excerpt=excerpt(responses),
            )
        return tuple(self._validated(r, q, params, corpus) for q, r in zip(queries, responses))

    async def aretrieve(self, query: str, params: Params, *, corpus: Corpus | None = None) -> Ranking:
        """Async form of `retrieve`: awaits `aretrieve` when the retriever has it, else runs `retrieve` in a thread."""
        if not self.capabilities.supports_async:
            return await asyncio.to_thread(self.retrieve, query, params, corpus=corpus)
        arguments = self._filter_arguments(params)
        self._count(1)
        with retriever_errors(f"retriever {self.name}", query=query):
            try:
                response = await asyncio.wait_for(self.retriever.aretrieve(query, **arguments), self.timeout)
            except asyncio.TimeoutError:
                raise RetrieverTimeout(
                    f"expected an answer within timeout={self.timeout} s, got none; the coroutine was cancelled",
                    query=query,
                ) from None
        return self._validated(response, query, params, corpus)
