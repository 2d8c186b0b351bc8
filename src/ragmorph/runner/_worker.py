"""Local worker processes for the processes backend: a pool in the caller and the loop each worker runs.

A worker is `python -m ragmorph.runner._worker`, talking pickles over its stdin/stdout. The first message
carries the caller's sys.path, the adapter files to load and the run's corpora; each later one a batch of
units (without their corpus), answered with the batch's results. Every message travels as an outer pickle of
plain values wrapping an inner pickle, so a payload that fails to unpickle is reported without losing the
stream. Whatever the retriever prints goes to stderr: stdout carries only replies.

Every reply also carries the secrets registered in the worker (`ragmorph.secrets.registered`): the caller
renders the reports, and must hide what the worker's retrievers registered (an HTTP token the caller never
saw, because only the worker built the retriever). A worker whose caller is gone (stopped by a signal, or a
pipe closed early) ends quietly: the caller reports the interruption, not each worker.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO, cast

from ..errors import RagmorphError, RetrieverFailed
from ..secrets import register_secret, registered

__all__ = ["WorkerPool", "main"]

_PROTOCOL = pickle.HIGHEST_PROTOCOL


def _send(stream: BinaryIO, message: Any) -> None:
    pickle.dump(message, stream, protocol=_PROTOCOL)
    stream.flush()


def _portable(error: BaseException) -> bytes:
    """The error pickled so the caller can raise it; a RuntimeError with the traceback when it does not pickle."""
    text = "".join(traceback.format_exception(error))
    try:
        blob = pickle.dumps(error, protocol=_PROTOCOL)
        pickle.loads(blob)
    except Exception:
        blob = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"), protocol=_PROTOCOL)
    return pickle.dumps((blob, text), protocol=_PROTOCOL)


def _raise_from_worker(payload: bytes) -> None:
    blob, text = pickle.loads(payload)
    error = pickle.loads(blob)
    if not isinstance(error, RagmorphError):
        error.add_note(f"in a ragmorph worker process:\n{text}")
    raise error


def main() -> None:
    """A worker's loop: set up from the first message, then answer batches until told to stop."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a print() in the user's retriever goes to stderr, never into the reply stream
    try:
        _serve_caller(sys.stdin.buffer, replies)
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        # The caller is gone or was interrupted (Ctrl-C reaches the whole process group): it reports that itself.
        # The reply stream points at /dev/null, so closing it at exit cannot raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, replies.fileno())
        os.close(devnull)


def _serve_caller(requests: BinaryIO, replies: BinaryIO) -> None:
    try:
        sys_path, modules, corpora_blob, concurrency = pickle.load(requests)
    except (EOFError, pickle.UnpicklingError):
        # The caller stopped before (or while) sending the setup, e.g. killed by SIGTERM: nothing to do.
        return
    # The caller's import path first, so its modules (and its copy of ragmorph) are the ones found here.
    sys.path[:] = [*sys_path, *(p for p in sys.path if p not in sys_path)]
    try:
        from ._backends import batches_in_flight, call_pool, load_file_modules, rebuild, run_batch
        from ._determinism import without_local_constants
        from ._heap import frozen_heap

        load_file_modules(modules)
        corpora = pickle.loads(corpora_blob)
    except BaseException as error:
        _send(replies, (None, False, _portable(error), registered()))
        return
    _send(replies, (None, True, b"", registered()))
    writing = threading.Lock()
    slots = call_pool(concurrency)  # the call slots every batch of this worker shares

    def answer(number: int, payload: bytes, fail_fast: bool) -> None:
        try:
            results = run_batch(rebuild(corpora, pickle.loads(payload)), fail_fast, slots)
            reply = (number, True, pickle.dumps(results, protocol=_PROTOCOL), registered())
        except BaseException as error:
            reply = (number, False, _portable(error), registered())
        try:
            with writing:  # replies of batches running in threads must not interleave on the pipe
                _send(replies, reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller is gone; the loop below sees the end of its requests and stops

    from concurrent.futures import ThreadPoolExecutor

    # The caller keeps at most `batches_in_flight(concurrency)` batches in flight here, each in a thread of its own.
    width = batches_in_flight(concurrency)
    # Frozen once the corpora arrived: the collector's full passes skip them for the worker's life (see _heap).
    with without_local_constants(), frozen_heap(), ThreadPoolExecutor(width, thread_name_prefix="ragmorph-batch") as pool:
        while True:
            try:
                message = pickle.load(requests)
            except (EOFError, pickle.UnpicklingError):
                return  # the caller stopped without a stop message (fail-fast, an error there, a signal)
            if message is None:
                return
            pool.submit(answer, *message)


class WorkerPool:
    """`size` worker processes, each fed up to `batches_in_flight(concurrency)` batches at a time by one thread (at
    first an even share of the run, so no worker starts with most of it); `run` yields (index, results) as they
    finish."""

    def __init__(self, size: int, *, corpora: Any, modules: Sequence[tuple[str, str]], concurrency: int = 1) -> None:
        from ._backends import batches_in_flight

        self.size = size
        self.width = batches_in_flight(concurrency)
        self._first = self.width  # batches each worker is sent at first (set per run)
        self._setup_parts = ([p for p in sys.path if p], tuple(modules), corpora, concurrency)
        self._setup = b""
        self._processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> WorkerPool:
        for _ in range(self.size):
            self._processes.append(
                subprocess.Popen([sys.executable, "-m", "ragmorph.runner._worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            )
        # Pickled while the workers start their interpreters (a 100k-chunk corpus takes seconds either way).
        path, modules, corpora, concurrency = self._setup_parts
        try:
            self._setup = pickle.dumps((path, modules, pickle.dumps(corpora, protocol=_PROTOCOL), concurrency), protocol=_PROTOCOL)
        except BaseException as error:
            self.__exit__(type(error), error, error.__traceback__)  # no worker is left waiting for its setup
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for process in self._processes:
            try:
                if process.stdin is not None and not process.stdin.closed:
                    if exc[0] is None:
                        _send(process.stdin, None)
                    process.stdin.close()
            except OSError:
                pass  # the worker is gone already
        for process in self._processes:
            try:
                process.wait(timeout=10 if exc[0] is None else 0.5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _serve(self, process: subprocess.Popen[bytes], todo: queue.Queue, done: queue.Queue, fail_fast: bool) -> None:
        """One worker's feeder: wait for its ready message, send its first share, then keep that many in flight."""
        requests, replies = cast(BinaryIO, process.stdin), cast(BinaryIO, process.stdout)
        labels: dict[int, str] = {}

        def send_next() -> None:
            try:
                number, payload, label = todo.get_nowait()
            except queue.Empty:
                return
            labels[number] = label
            _send(requests, (number, payload, fail_fast))

        try:
            # Written here, not at start: every worker starts its interpreter while the others are fed.
            requests.write(self._setup)
            requests.flush()
            ready = pickle.load(replies)
            if not ready[1]:
                done.put(ready)
                return
            for _ in range(self._first):
                send_next()
            while labels:
                reply = pickle.load(replies)
                labels.pop(reply[0], None)
                done.put(reply)
                send_next()
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):  # ValueError: the pool closed the pipe
            try:
                code: int | None = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            what = " or ".join(sorted(labels.values())) or "setting up"
            error = RetrieverFailed(f"a ragmorph worker process (pid {process.pid}) exited with code {code} while {what}")
            done.put((None, False, _portable(error), ()))

    def run(self, batches: Sequence[Any], fail_fast: bool = False) -> Iterator[tuple[int, Any]]:
        """Run the shipped batches on the workers; yields (index, results) in the order they finish."""
        todo: queue.Queue = queue.Queue()
        for number, shipped in enumerate(batches):
            first = shipped[0][1]
            label = f"running retriever {first['retriever'].name!r} on case {first['case'].id!r}"
            todo.put((number, pickle.dumps(shipped, protocol=_PROTOCOL), label))
        done: queue.Queue = queue.Queue()
        # An even share first: feeders start in whatever order their workers come up, and a worker that took the
        # whole width of a small run would do its CPU work alone while the others idle.
        self._first = min(self.width, -(-len(batches) // max(1, len(self._processes))))
        for process in self._processes:
            threading.Thread(target=self._serve, args=(process, todo, done, fail_fast), daemon=True).start()
        for _ in range(len(batches)):
            number, ok, payload, secrets = done.get()
            for secret in secrets:
                register_secret(secret)  # before anything of the worker's is rendered here
            if not ok:
                _raise_from_worker(payload)
            yield number, pickle.loads(payload)


if __name__ == "__main__":
    main()
