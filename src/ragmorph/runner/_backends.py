"""Backends: where a run's units execute (this process, N local processes, a Ray cluster), one report either way.

`check(executor=...)` / `ragmorph run --executor` name a backend from EXECUTORS. (The call executor that runs one
perturbation's plan inside a unit is `_executor.Executor`; a backend only decides where whole units run.)

A run is cut into *batches*: the units of one retriever x case, in plan order, sharing one call cache. A batch is
the unit of distribution because its units share base calls through that cache; running every batch with a
fresh cache in any process therefore gives the very results a serial run gives (same seed, same calls, same
`retriever_calls`), and the report folded from them is identical apart from its `created` time.

Retrievers travel as their spec: an import string is resolved in the worker (the worker builds its own index or
client), an object or factory is pickled. Modules a fresh interpreter cannot import by name (an adapter file
loaded by path) are loaded from their file in each local worker, and pickled by value for Ray.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import attrs

from ..adapters.guard import exit_guard
from ..errors import RetrieverFailed, UsageError, describe
from ..secrets import register_secret, registered
from ._determinism import without_local_constants
from ._heap import frozen_heap
from ._engine import Result, Unit, execute
from ._executor import CallCache, CallPool

__all__ = ["EXECUTORS", "Backend", "Batch", "ProcessBackend", "RayBackend", "SerialBackend", "backend_for", "batches", "batches_in_flight", "call_pool", "run_here", "file_modules", "load_file_modules", "rebuild", "run_batch"]

Batch = tuple[Unit, ...]
# What an executor yields per finished batch: its index in the run and each unit's results, in batch order.
Finished = tuple[int, tuple[tuple[Result, ...], ...]]

EXECUTORS = ("serial", "processes", "ray")


def batches(units: Sequence[Unit]) -> tuple[Batch, ...]:
    """Consecutive units of the same retriever x case, in plan order (the groups that share a call cache)."""
    grouped: list[list[Unit]] = []
    for unit in units:
        if grouped and (grouped[-1][0].retriever.name, grouped[-1][0].case.id) == (unit.retriever.name, unit.case.id):
            grouped[-1].append(unit)
        else:
            grouped.append([unit])
    return tuple(tuple(group) for group in grouped)


def run_batch(batch: Batch, fail_fast: bool = False, pool: CallPool | None = None) -> tuple[tuple[Result, ...], ...]:
    """Execute the units of one batch in order over one fresh call cache (what every backend does per batch).

    With `fail_fast` the batch stops after the first unit with a hard violation, as a serial run stops there.
    `pool` (the process's, with --concurrency) makes the independent calls of each plan at once. An `os._exit`
    in the retriever's code is an error result of its unit, not the end of the process (see `exit_guard`).
    """
    cache = CallCache(pool, reuse=True)
    done: list[tuple[Result, ...]] = []
    try:
        # The heap the batch starts with (its corpus above all) stays out of the collector's full passes.
        with exit_guard(), without_local_constants(), frozen_heap():
            for unit in batch:
                done.append(execute(unit, cache))
                if fail_fast and any(r.status == "fail" and r.severity == "hard" for r in done[-1]):
                    break
    finally:
        cache.drop_parked()
    return tuple(done)


class Backend(Protocol):
    """Runs batches somewhere and yields `(index, results)` as each finishes, in any order."""

    name: str

    def run(self, work: Sequence[Batch], fail_fast: bool = False) -> Iterator[Finished]:
        """Execute every batch of `work` (`fail_fast`: see run_batch); yields each batch's index and results."""
        ...


def call_pool(concurrency: int) -> CallPool | None:
    """The process's call pool for `--concurrency N` (None for 1: every call in its batch's thread)."""
    return CallPool(concurrency) if concurrency > 1 else None


# With --concurrency N a process runs this many times N batches at once over its N call slots: a batch spends part
# of its time on the runner's own work and index builds outside a slot, and a batch waiting for a slot costs only
# a thread, so the slots stay busy; and a run of B batches on N slots no longer ends with a round of B mod N.
BATCHES_PER_SLOT = 2


def batches_in_flight(concurrency: int) -> int:
    """How many batches one process runs at once with `concurrency` call slots (1: one batch at a time)."""
    return concurrency * BATCHES_PER_SLOT if concurrency > 1 else 1


def run_here(work: Sequence[tuple[int, Batch]], *, concurrency: int = 1, fail_fast: bool = False) -> Iterator[Finished]:
    """Execute numbered batches in this process, in threads over `concurrency` call slots; yields each as it finishes.

    Threads suit retrievers that wait (a service, a database): `batches_in_flight` batches share one pool of N
    call slots, so N calls are in flight while some batches do the runner's own work, and the independent
    calls of a plan overlap too (when few batches are left, the spare slots go to them). Batches share
    nothing but the process, so the results are those of running them one by one.
    """
    if concurrency <= 1:
        for number, batch in work:
            yield number, run_batch(batch, fail_fast)
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    upcoming = iter(work)
    width = batches_in_flight(concurrency)
    # Entered once around every thread: each batch's own entry then only nests.
    with (
        without_local_constants(),
        CallPool(concurrency) as pool,
        ThreadPoolExecutor(width, thread_name_prefix="ragmorph-batch") as threads,
    ):
        running: dict[Any, int] = {}

        def top_up() -> None:
            # Batches are started in plan order and only as others finish, so a fail-fast stop wastes little.
            for number, batch in upcoming:
                running[threads.submit(run_batch, batch, fail_fast, pool)] = number
                if len(running) >= width:
                    return

        top_up()
        try:
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield running.pop(future), future.result()
                top_up()
        finally:
            for future in running:
                future.cancel()


class SerialBackend:
    """Every batch in this process: one after the other, or `concurrency` at a time in threads."""

    name = "serial"

    def __init__(self, concurrency: int = 1) -> None:
        self.concurrency = concurrency

    def run(self, work: Sequence[Batch], fail_fast: bool = False) -> Iterator[Finished]:
        """Execute the batches here."""
        yield from run_here(list(enumerate(work)), concurrency=self.concurrency, fail_fast=fail_fast)


# --------------------------------------------------------------------------------------- shipping units

# A unit travels without its corpus (the same for every unit of a run, and the one large field): the corpus is
# sent once per worker and each unit is rebuilt around it there.
_UNIT_FIELDS = tuple(f.name for f in attrs.fields(Unit) if f.name != "corpus")


def _strip(unit: Unit, corpora: dict[int, int]) -> tuple[int, dict[str, Any]]:
    return corpora[id(unit.corpus)], {name: getattr(unit, name) for name in _UNIT_FIELDS}


def _corpora(work: Sequence[Batch]) -> tuple[tuple[Any, ...], dict[int, int]]:
    distinct: dict[int, Any] = {}
    for batch in work:
        for unit in batch:
            distinct.setdefault(id(unit.corpus), unit.corpus)
    return tuple(distinct.values()), {key: n for n, key in enumerate(distinct)}


def rebuild(corpora: Sequence[Any], shipped: Sequence[tuple[int, dict[str, Any]]]) -> Batch:
    return tuple(Unit(corpus=corpora[n], **fields) for n, fields in shipped)


def _targets(work: Sequence[Batch]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for batch in work:
        for unit in batch:
            found.setdefault(unit.retriever.name, unit.retriever.target)
    return found


def _module_of(target: Any) -> str | None:
    # Functions, classes and instances all name their defining module (an instance through its class).
    return getattr(target, "__module__", None) or type(target).__module__


def file_modules(targets: Sequence[Any]) -> tuple[tuple[str, str], ...]:
    """(name, file) of the modules `targets` come from that a fresh interpreter cannot import by name.

    An adapter file loaded by path (`ragmorph run --retriever adapter.py:factory`) is such a module; `__main__` is
    not listed (multiprocessing re-imports the main script itself).
    """
    found: dict[str, str] = {}
    for target in targets:
        if isinstance(target, str):
            continue
        name = _module_of(target)
        module = sys.modules.get(name or "")
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if name in (None, "__main__", "__mp_main__") or module is None or not origin or not os.path.isfile(origin):
            continue
        if importlib.machinery.PathFinder.find_spec(name.partition(".")[0], sys.path) is None:
            found[name] = origin
    return tuple(found.items())


def load_file_modules(modules: Sequence[tuple[str, str]]) -> None:
    """Load each (name, file) module into sys.modules unless it is there (a worker's first step)."""
    for name, path in modules:
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"expected an importable Python file for retriever module {name!r}, got {path!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def _unpicklable(name: str, target: Any, error: BaseException, where: str) -> UsageError:
    return UsageError(
        f"expected retriever {name!r} to be sendable to {where}, got {describe(target)} that cannot be pickled "
        f"({type(error).__name__}: {error}); give it as an import string 'package.module:attr' (built in each worker) "
        "or a module-level class or function, or run without --jobs/--executor"
    )


def _check_picklable(work: Sequence[Batch], where: str, dumps: Callable[[Any], bytes] = pickle.dumps) -> None:
    """Raise a UsageError naming the retriever whose object or factory cannot travel to the workers."""
    for name, target in _targets(work).items():
        if isinstance(target, str):
            continue
        try:
            dumps(target)
        except Exception as error:
            raise _unpicklable(name, target, error, where) from error


# ------------------------------------------------------------------------------------------- processes


def _main_script_targets(work: Sequence[Batch]) -> list[str]:
    return [name for name, target in _targets(work).items() if not isinstance(target, str) and _module_of(target) == "__main__"]


class ProcessBackend:
    """Batches in `jobs` local worker processes (each running `concurrency` at a time in threads), each a fresh
    interpreter that builds its retrievers from their spec.

    Workers are plain `python -m ragmorph.runner._worker` processes fed pickles over a pipe, not a
    multiprocessing pool: nothing of the caller's main script runs in them (no `if __name__ == "__main__"` guard
    needed) and they share no sockets or threads with the caller (HTTP clients, torch thread pools).
    """

    name = "processes"

    def __init__(self, jobs: int, concurrency: int = 1) -> None:
        self.jobs = jobs
        self.concurrency = concurrency

    def run(self, work: Sequence[Batch], fail_fast: bool = False) -> Iterator[Finished]:
        """Execute the batches in worker processes; yields each as it finishes."""
        from ._worker import WorkerPool

        if not work:
            return
        in_main = _main_script_targets(work)
        if in_main:
            raise UsageError(
                f"expected retrievers that worker processes can import, got {', '.join(map(repr, in_main))} defined in the "
                "main script (__main__), which workers do not run; move it into a module and pass 'module:attr', or run "
                "without jobs"
            )
        _check_picklable(work, "worker processes")
        corpora, index = _corpora(work)
        modules = file_modules(list(_targets(work).values()))
        with WorkerPool(min(self.jobs, len(work)), corpora=corpora, modules=modules, concurrency=self.concurrency) as pool:
            yield from pool.run([tuple(_strip(u, index) for u in batch) for batch in work], fail_fast)


# ------------------------------------------------------------------------------------------------- Ray


class _RayWorker:
    """A Ray actor holding the run's corpora and its call pool; executes one shipped batch per call."""

    def __init__(self, corpora: Any, concurrency: int = 1) -> None:
        self.corpora = corpora
        self.pool = call_pool(concurrency)

    def run(self, shipped: tuple[tuple[int, dict[str, Any]], ...], fail_fast: bool) -> tuple[bool, Any, tuple[str, ...]]:
        """Rebuild the batch around the corpora and execute it: (ok, results or the pickled error, secrets).

        The secrets this actor registered travel with every answer (the caller renders the reports), and an error
        travels as a local worker's does, raised in the caller as itself rather than as a Ray traceback.
        """
        from ._worker import _portable

        try:
            return True, run_batch(rebuild(self.corpora, shipped), fail_fast, self.pool), registered()
        except BaseException as error:
            return False, _portable(error), registered()


def _check_reachable(address: str) -> None:
    """Fail fast on a `host:port` address nothing listens on (Ray itself retries for minutes)."""
    import socket

    host, colon, port = address.rpartition(":")
    if "://" in address or not colon or not port.isdigit():
        return  # ray://, auto and other forms are Ray's to interpret
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise UsageError(
            f"expected a Ray cluster at --address {address!r} (the head's GCS port, e.g. 127.0.0.1:6379), got no answer: {error}"
        ) from error


class RayBackend:
    """Batches on a Ray cluster: `address` of an existing one, else a local one started (and stopped) here.

    One actor per worker slot (`jobs`, default the cluster's CPUs) holds the corpora, put in the object store
    once; batches go to whichever actor is free.
    """

    name = "ray"

    def __init__(self, address: str | None = None, jobs: int | None = None, concurrency: int = 1) -> None:
        self.address = address
        self.jobs = jobs
        self.concurrency = concurrency

    def _connect(self, ray: Any) -> bool:
        """Connect to the cluster; True when this backend started Ray (and so shuts it down)."""
        if ray.is_initialized():
            return False  # the caller's own ray.init (its address, runtime_env, resources) is used as it is
        if self.address is not None:
            _check_reachable(self.address)
        try:
            if self.address is None:
                # A private local cluster whose workers import what the caller imports (the caller's sys.path), as
                # local worker processes do.
                ray.init(
                    num_cpus=self.jobs,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
                )
            else:
                ray.init(address=self.address, log_to_driver=False)
        except Exception as error:
            where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray cluster"
            raise UsageError(f"expected to connect to {where}, got {type(error).__name__}: {error}") from error
        return True

    @staticmethod
    def _answer(ray: Any, reference: Any, batch: Batch) -> tuple[tuple[Result, ...], ...]:
        """The results of one batch; its actor's secrets registered here first. A dead actor is a RetrieverFailed."""
        from ._worker import _raise_from_worker

        try:
            ok, outcome, secrets = ray.get(reference)
        except ray.exceptions.RayError as error:
            # An actor that died (os.kill, a crash in native code, the node lost) ends the run as a local worker's
            # death does: a retriever error (exit 3) naming what ran there, not a Ray traceback.
            lines = str(error).strip().splitlines()
            first = batch[0]
            raise RetrieverFailed(
                f"a Ray worker failed ({type(error).__name__}: {lines[0] if lines else 'no detail'}) while running "
                f"retriever {first.retriever.name!r} on case {first.case.id!r}"
            ) from None
        for secret in secrets:
            register_secret(secret)  # before anything of the actor's is rendered here
        if not ok:
            _raise_from_worker(outcome)
        return outcome  # type: ignore[no-any-return]

    def run(self, work: Sequence[Batch], fail_fast: bool = False) -> Iterator[Finished]:
        """Execute the batches on Ray actors; yields each as it finishes."""
        if self.address is None and "ray" not in sys.modules:
            # A private local cluster need not listen beyond this machine: Ray's single-machine mode binds its
            # servers to 127.0.0.1 (read when Ray is imported; an explicit setting of the caller's wins).
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            import ray
            from ray import cloudpickle
        except ImportError as error:
            raise UsageError("expected Ray for --executor ray, got no module 'ray'; pip install 'ragmorph[ray]'") from error
        if not work:
            return
        targets = _targets(work)
        for name, _ in file_modules(list(targets.values())):
            # Workers on other machines have no copy of an adapter file: its code travels inside the pickle.
            cloudpickle.register_pickle_by_value(sys.modules[name])
        _check_picklable(work, "Ray workers", cloudpickle.dumps)
        started = self._connect(ray)
        workers: list[Any] = []
        try:
            corpora, index = _corpora(work)
            slots = self.jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
            # A threaded actor runs `batches_in_flight` batches at once (Ray's max_concurrency), as a local worker does.
            width = batches_in_flight(self.concurrency)
            actor = ray.remote(num_cpus=1, max_concurrency=width)(_RayWorker)
            stored = ray.put(corpora)
            workers = [actor.remote(stored, self.concurrency) for _ in range(min(slots, len(work)))]
            todo = list(enumerate(work))
            todo.reverse()  # popped from the end: plan order
            running: dict[Any, tuple[int, Any]] = {}

            def submit(worker: Any) -> None:
                n, batch = todo.pop()
                running[worker.run.remote(tuple(_strip(u, index) for u in batch), fail_fast)] = (n, worker)

            for _ in range(width):
                for worker in workers:
                    if todo:
                        submit(worker)
            while running:
                ready, _ = ray.wait(list(running), num_returns=1)
                n, worker = running.pop(ready[0])
                results = self._answer(ray, ready[0], work[n])
                if todo:
                    submit(worker)
                yield n, results
        finally:
            for worker in workers:
                ray.kill(worker)
            if started:
                ray.shutdown()


def backend_for(
    executor: str | None, *, jobs: int | None = None, address: str | None = None, concurrency: int | None = None
) -> Backend:
    """The backend named `executor` (one of EXECUTORS); None picks serial, or processes when jobs > 1.

    `concurrency` batches run at once in threads of each process (default 1).
    """
    for name, value in (("jobs", jobs), ("concurrency", concurrency)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise UsageError(f"expected {name} to be a positive integer, got {name}={describe(value)}")
    threads = concurrency or 1
    if executor is None:
        executor = "processes" if jobs is not None and jobs > 1 else "serial"
    if executor not in EXECUTORS:
        raise UsageError(f"expected executor to be one of {', '.join(EXECUTORS)}, got executor={describe(executor)}")
    if address is not None and executor != "ray":
        raise UsageError(f"expected address only with executor 'ray', got executor={executor!r}")
    if executor == "serial":
        if jobs is not None and jobs > 1:
            raise UsageError(f"expected jobs=1 with executor 'serial', got jobs={jobs}; use executor 'processes'")
        return SerialBackend(threads)
    if executor == "processes":
        return ProcessBackend(jobs or os.cpu_count() or 1, threads)
    return RayBackend(address=address, jobs=jobs, concurrency=threads)
