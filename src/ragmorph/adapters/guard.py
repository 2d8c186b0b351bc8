"""GuardedRetriever: the runner's one door to a user retriever.

It normalises and validates every response, counts calls, enforces a per-call timeout, and turns the
retriever's exceptions into RetrieverFailed (chained, with the query), never into an empty ranking.

Timeouts run the call in a daemon worker thread and stop waiting for it. Python cannot kill a thread, so a
timed-out call keeps running in the background until it returns on its own; its result is discarded.
`bounded_call` gives the same limit to every other call into the user's code (a factory, add/remove/update,
close), so no call of a retriever can hang a run that set a timeout.

`exit_guard` supervises `os._exit`: while a run is inside it, `os._exit(code)` called from a thread that runs
the user's code (a batch thread, a call-pool thread, a timed call's thread) raises `ProcessExitCalled` instead
of ending the process, so it becomes an `error` result rather than a run that ends with exit 0 and no report.
Threads the user's code starts itself, forked children, calls after the run and exits that bypass `os._exit`
(a signal, `os.abort()`, a crash in native code) are not intercepted.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import CorpusChanged, InvalidResponse, RetrieverFailed, RetrieverTimeout, UsageError, describe, retriever_errors
from ..model import Corpus, Filters, Params, Ranking
from ._protocol import excerpt
from .capabilities import describe_capabilities, display_name, is_retriever
from .function import FunctionRetriever, positional_arity
from .validation import ScoreOrder, _check_score_order, validate_hits

__all__ = ["GuardedRetriever", "ProcessExitCalled", "bounded_call", "exit_guard", "supervised"]


class ProcessExitCalled(BaseException):
    """`os._exit(code)` was called by the user's code inside `exit_guard`: raised instead of ending the process.

    A BaseException, so the user's own `except Exception` does not swallow it (os._exit never returns).
    """

    def __init__(self, code: Any) -> None:
        super().__init__(
            f"os._exit({code!r}), which ragmorph stopped from ending the process (it would have ended the run "
            "with no report); a retriever must return hits or raise"
        )
        self.code = code


_thread_state = threading.local()
_exit_lock = threading.Lock()
_exit_users = 0
_exit_pid: int | None = None
_previous_exit: Callable[[int], Any] = os._exit


@contextmanager
def supervised() -> Iterator[None]:
    """Mark this thread as running the user's code for `exit_guard` (nested marks are counted)."""
    _thread_state.depth = getattr(_thread_state, "depth", 0) + 1
    try:
        yield
    finally:
        _thread_state.depth -= 1


def _guarded_exit(code: int) -> Any:
    # Only in the process that installed the guard (a forked child must exit for real: multiprocessing's fork
    # start method ends every child with os._exit) and only from a thread running the user's code (pytest-timeout
    # and other supervisors end a hung process with os._exit from their own threads).
    if os.getpid() == _exit_pid and getattr(_thread_state, "depth", 0) > 0:
        raise ProcessExitCalled(code)
    return _previous_exit(code)


@contextmanager
def exit_guard() -> Iterator[None]:
    """While inside (re-entrant, from any thread), `os._exit` in the user's code raises ProcessExitCalled."""
    global _exit_users, _exit_pid, _previous_exit
    with _exit_lock:
        if _exit_users == 0 and os._exit is not _guarded_exit:
            _previous_exit, _exit_pid = os._exit, os.getpid()
            os._exit = _guarded_exit
        _exit_users += 1
    try:
        with supervised():
            yield
    finally:
        with _exit_lock:
            _exit_users -= 1
            if _exit_users == 0 and os._exit is _guarded_exit:
                os._exit = _previous_exit


def bounded_call(
    thunk: Callable[[], Any], timeout: float | None, what: str, *, query: str | None = None, thread: bool = False
) -> Any:
    """`thunk()` in a supervised thread, given up with RetrieverTimeout after `timeout` seconds (None: no limit).

    `what` completes "expected ... within timeout" ("an answer", "factory X to build its index"). Without a
    timeout the call runs in this thread unless `thread` is set. The thread of an abandoned call keeps running
    until the call returns on its own (Python cannot stop a thread); its result is discarded.
    """
    if timeout is None and not thread:
        return thunk()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            with supervised():
                outcome["value"] = thunk()
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    worker = threading.Thread(target=work, name="ragmorph-retriever-call", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise RetrieverTimeout(
            f"expected {what} within timeout={timeout} s, got none; the call was abandoned (it keeps running in a "
            "background thread, which Python cannot stop); raise the timeout if it is only slow",
            query=query,
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _run_with_timeout(thunk: Callable[[], Any], timeout: float | None, query: str) -> Any:
    return bounded_call(thunk, timeout, "an answer", query=query, thread=True)


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
            hint = (
                "did the factory forget to `return` the retriever it built?"
                if retriever is None
                else "a factory must return the retriever it built (a factory itself is called with the corpus first)"
            )
            raise UsageError(
                f"expected a retriever object with retrieve(query, *, k, filters), got {describe(retriever)}; {hint}"
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= threading.TIMEOUT_MAX
        ):
            # inf or 1e300 would pass a `> 0` check and then fail every call inside Thread.join (OverflowError),
            # blamed on the retriever; None is the way to say "no limit".
            raise UsageError(
                f"expected a positive, finite timeout in seconds up to {threading.TIMEOUT_MAX:.0f}, or None for no "
                f"limit, got timeout={describe(timeout)}"
            )
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

    def _call(
        self, thunk: Callable[[], Any], query: str, corpus: Corpus | None, *, force_thread: bool = False
    ) -> Any:
        def materialised() -> Any:
            # A generator runs the retriever's code while it is iterated: iterate it here, inside the error
            # guard and the time limit, rather than later in validation.
            response = thunk()
            return list(response) if isinstance(response, Iterator) else response

        try:
            with retriever_errors(f"retriever {self.name}", query=query):
                if self.timeout is None and not force_thread:
                    response = materialised()
                else:
                    response = _run_with_timeout(materialised, self.timeout, query)
        except BaseException:
            self._corpora_edited(corpus)  # repaired; the call's own error is the one to report
            raise
        self._check_corpus_unchanged(query, corpus)
        return response

    def _corpora_edited(self, corpus: Corpus | None) -> list[tuple[int, int]]:
        """Restore every corpus this call could see; (chunks before, chunks after the edit) for each edited one."""
        edited = []
        for given in {id(c): c for c in (self.corpus, corpus) if c is not None}.values():
            size = len(given)  # the chunks now held (len does not build a derived tuple)
            if given.restore_if_changed():
                edited.append((len(given.chunks), size))
        return edited

    def _check_corpus_unchanged(self, query: str, corpus: Corpus | None) -> None:
        # O(1) per call: the chunk tuple is immutable, so user code can only change a corpus by swapping it.
        for before, after in self._corpora_edited(corpus):
            raise RetrieverFailed(
                f"expected retriever {self.name} to leave the Corpus it was given unchanged, got its chunks "
                f"replaced ({before} -> {after} chunks; ragmorph restored them); a retriever must copy what it "
                "needs instead of editing ragmorph's corpus",
                query=query,
            )

    def _validated(self, response: Any, query: str, params: Params, corpus: Corpus | None) -> Ranking:
        try:
            hits = validate_hits(
                response,
                k=params.k,
                query=query,
                corpus=corpus if corpus is not None else self.corpus,
                score_order=self.score_order,
            )
        except CorpusChanged as error:
            raise RetrieverFailed(
                f"expected retriever {self.name} to leave the Corpus it was given unchanged, got {error}", query=query
            ) from None
        return Ranking(hits)

    def retrieve(self, query: str, params: Params, *, corpus: Corpus | None = None) -> Ranking:
        """One validated call; `corpus` overrides the guard's corpus for the id check (e.g. after a delta)."""
        arguments = self._filter_arguments(params)
        self._count(1)
        if callable(getattr(self.retriever, "retrieve", None)):
            response = self._call(lambda: self.retriever.retrieve(query, **arguments), query, corpus)
        else:
            # Async-only retriever: asyncio.run in a worker thread works even when the caller runs an event loop.
            response = self._call(
                lambda: asyncio.run(self.retriever.aretrieve(query, **arguments)), query, corpus, force_thread=True
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
        responses = self._call(lambda: self.retriever.retrieve_batch(queries, **arguments), label, corpus)
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
        try:
            with retriever_errors(f"retriever {self.name}", query=query):
                try:
                    response = await asyncio.wait_for(self.retriever.aretrieve(query, **arguments), self.timeout)
                except asyncio.TimeoutError:
                    raise RetrieverTimeout(
                        f"expected an answer within timeout={self.timeout} s, got none; the coroutine was cancelled",
                        query=query,
                    ) from None
        except BaseException:
            self._corpora_edited(corpus)
            raise
        self._check_corpus_unchanged(query, corpus)
        return self._validated(response, query, params, corpus)
