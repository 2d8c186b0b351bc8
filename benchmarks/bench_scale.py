"""The default suite at scale: built-in worlds of 1k, 10k and 100k chunks, serially, on local processes and on Ray.

Retrievers: the built-in BM25 and dense (hashing embedder) retrievers, and BM25 behind a 50 ms sleep per call (a
stand-in for a service's latency: the sleep is the point). Every row runs in a fresh Python process of its own,
so peak memory is that row's alone. Printed side by side:

- wall: seconds for `check()` (the world is generated before the clock starts);
- retriever: seconds inside the retriever (index builds, calls, deltas, and freeing a built index: 'teardown'),
  summed over every process that ran one;
- teardown: of those, the seconds freeing the instances the factory built, once the runner drops them (a 100k
  index is a dict and a list of 100k entries each: ~10 ms to free, paid by whichever code drops the last
  reference; the retriever's own structures, so counted as its time);
- runner share: 1 - retriever / (wall x width), width = batches in flight (processes x threads, at most the
  run's batches: one per retriever x case): the part of the slots' time not spent in the retriever (the
  runner's own work, worker start-up, idle slots); goal < 10% at 100k chunks. 'w/o td' is the same share with
  teardown counted as the runner's, as this bench did before it timed teardown;
- cpu: CPU seconds of the calling process and its workers (the runner and the retriever's own work, index
  builds included): Python runs one thread at a time, so a process's CPU seconds bound its wall time from below
  however many calls wait at once;
- vs ideal: for the 50 ms retriever, wall / (retriever time / width), the retriever's own time spread perfectly
  over the units in flight. It flatters a threaded row: the retriever's time measured under threads includes
  waiting for the GIL (a call that has slept cannot run again until another thread lets go);
- vs serial: the honest figure, wall / (the SERIAL row's retriever time / width): the suite's total call time as
  one thread measures it, spread perfectly over the slots. It is printed when the same run has a serial row of
  the same size and retriever (else blank); goal <= 1.5 (issue 15);
- vs sleep: wall / (calls x 50 ms / width), the same against the sleeps alone (what a service that costs the
  caller no CPU would allow);
- builds: the indexes the retriever's factory built (base instances, fresh indexes, minimisation), summed over
  every process;
- peak MB: the largest resident set of the calling process and of any worker, and per 1,000 chunks.

    python benchmarks/bench_scale.py            # 1k, 10k, 100k chunks (tens of minutes on 2 cores)
    python benchmarks/bench_scale.py --quick    # 1k and 10k chunks, one case, small budget (a few minutes)

Options: --sizes 1000,10000 --cases N --max-examples N --modes serial,jobs,ray --sleepy-modes ... --slots N
--concurrency N --sleepy-cases N --strategies a,b --retrievers bm25,dense (which of BM25 and dense run; default both). Modes: serial, threads (--concurrency N), jobs (--jobs N), ray,
and jobs+threads / ray+threads. 'calls/case' is the report's own retriever_calls per case (the same in every mode).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragmorph.adapters import BM25Retriever, DenseRetriever

_SLEEP = 0.05
_SPENT = {"retriever": 0.0, "calls": 0, "builds": 0, "teardown": 0.0}
_SPENT_DIR = "RAGMORPH_BENCH_SPENT_DIR"


# Each process's totals, rewritten in place after every call: one record of this many bytes (space padded).
_RECORD = 512
_FILES: dict[str, int] = {}


def _flush() -> None:
    """Write this process's totals to its own file after every call, so the caller can sum them over workers.

    After every call, not at exit: Ray ends its actors without running exit handlers. One positioned write on a
    file kept open (a few microseconds; opening and replacing the file each time cost ~0.2 ms a call under
    load), which counts as runner time.
    """
    folder = os.environ.get(_SPENT_DIR)
    if folder is None:
        return
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record = json.dumps({**_SPENT, "maxrss_kb": peak, "cpu": time.process_time()}).encode()
    descriptor = _FILES.get(folder)
    if descriptor is None:
        descriptor = _FILES[folder] = os.open(Path(folder, f"{os.getpid()}.json"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(descriptor, record.ljust(_RECORD), 0)  # json.loads ignores the padding


def _timed(base: type, name: str, sleep: float = 0.0) -> type:
    """A subclass of `base` whose construction, calls and deltas count as retriever time (plus `sleep` per call)."""

    def clocked(method_name: str) -> Any:
        inner = getattr(base, method_name)

        @functools.wraps(inner)  # keeps the signature the factory detection reads
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                if method_name == "retrieve" and sleep:
                    time.sleep(sleep)
                return inner(self, *args, **kwargs)
            finally:
                _SPENT["retriever"] += time.perf_counter() - start
                if method_name == "retrieve":
                    _SPENT["calls"] += 1
                elif method_name == "__init__":
                    _SPENT["builds"] += 1
                _flush()

        return method

    names = ("__init__", "retrieve", "add", "remove", "update", "checkpoint", "rollback")
    namespace = {n: clocked(n) for n in names if hasattr(base, n)}

    def __del__(self: Any) -> None:
        # Freeing the instance's index (its dicts, lists and arrays) inside the clock: what is left after an empty
        # __dict__ is one object.
        start = time.perf_counter()
        self.__dict__.clear()
        spent = time.perf_counter() - start
        _SPENT["retriever"] += spent
        _SPENT["teardown"] += spent
        _flush()

    namespace["__del__"] = __del__
    namespace["__module__"] = __name__
    namespace["__qualname__"] = name
    return type(name, (base,), namespace)


TimedBM25 = _timed(BM25Retriever, "TimedBM25")
TimedDense = _timed(DenseRetriever, "TimedDense")
SleepyBM25 = _timed(BM25Retriever, "SleepyBM25", sleep=_SLEEP)

RETRIEVERS = {"bm25": "TimedBM25", "dense": "TimedDense", "bm25+50ms": "SleepyBM25"}


def _options(mode: str, slots: int, concurrency: int) -> dict[str, Any]:
    """check() options of a mode: serial, threads, jobs, jobs+threads, ray, ray+threads."""
    where, _, threaded = mode.partition("+")
    options: dict[str, Any] = {"concurrency": concurrency} if threaded or where == "threads" else {}
    if where == "jobs":
        options["jobs"] = slots
    elif where == "ray":
        options.update(executor="ray", jobs=slots)
    return options


def _width(row: dict[str, Any]) -> int:
    """Batches in flight at once in a mode: processes x threads, at most the run's batches (one per case here)."""
    options = _options(row["mode"], row["slots"], row["concurrency"])
    return min(int(options.get("jobs", 1)) * int(options.get("concurrency", 1)), row["cases"])


def run_one(row: dict[str, Any]) -> dict[str, Any]:
    """One measurement, in this (fresh) process: generate the world, run check(), collect every process's totals."""
    from ragmorph.runner import check
    from ragmorph.worlds import generate

    started = time.perf_counter()
    world = generate(1, chunks=row["size"], cases=row["cases"])
    _ = world.corpus.fingerprint
    generated = time.perf_counter() - started
    folder = tempfile.mkdtemp(prefix="rm-bench-")
    os.environ[_SPENT_DIR] = folder
    options = _options(row["mode"], row["slots"], row["concurrency"])
    name = row["retriever"]
    cpu_before = time.process_time()
    start = time.perf_counter()
    # By import string, so workers build it from its spec; the script runs as `bench_scale` (see the bottom).
    report = check(
        {name: f"bench_scale:{RETRIEVERS[name]}"}, world.corpus, world.cases, strategies=row["strategies"],
        max_examples=row["max_examples"], seed=0, **options,
    )
    wall = time.perf_counter() - start
    totals = {"inside": 0.0, "teardown": 0.0, "calls": 0, "builds": 0, "worker_kb": 0, "cpu": time.process_time() - cpu_before}
    for path in Path(folder).glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        totals["inside"] += data["retriever"]
        totals["teardown"] += data["teardown"]
        totals["calls"] += data["calls"]
        totals["builds"] += data["builds"]
        if int(path.stem) != os.getpid():
            totals["worker_kb"] = max(totals["worker_kb"], data["maxrss_kb"])
            totals["cpu"] += data["cpu"]  # a worker's CPU up to its last retriever call
    return {
        **row,
        "wall": wall,
        "generated": generated,
        "results": len(report.results),
        "exit_code": report.exit_code,
        "reported_calls": sum({(r.case, r.strategy): r.retriever_calls for r in report.results}.values()),
        "caller_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        **totals,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    serial = {(r["size"], r["retriever"]): r["inside"] for r in rows if r["mode"] == "serial"}
    head = (
        f"{'chunks':>7} {'retriever':>10} {'mode':>13} {'wall s':>8} {'cpu s':>7} {'retr. s':>8} {'teardown':>8} {'runner':>7} {'w/o td':>7} {'vs ideal':>8} "
        f"{'vs serial':>9} {'vs sleep':>8} "
        f"{'calls':>7} {'calls/case':>10} {'builds':>6} {'caller MB':>9} {'worker MB':>9} {'MB/1k ch.':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        width = _width(r)
        share = 1 - r["inside"] / (r["wall"] * width) if r["wall"] else 0.0
        share_untimed = 1 - (r["inside"] - r["teardown"]) / (r["wall"] * width) if r["wall"] else 0.0
        sleepy = r["retriever"] == "bm25+50ms"
        ideal = r["inside"] / width if sleepy else None
        versus = f"{r['wall'] / ideal:8.2f}" if ideal else f"{'':>8}"
        # The serial row's retriever time is the suite's call time without GIL waits (see the docstring).
        honest = serial.get((r["size"], r["retriever"])) if sleepy else None
        versus_serial = f"{r['wall'] * width / honest:9.2f}" if honest else f"{'':>9}"
        # The sleeps alone spread over the slots: what a retriever that costs this process no CPU would allow.
        slept = r["calls"] * _SLEEP / width if sleepy else None
        versus_sleep = f"{r['wall'] / slept:8.2f}" if slept else f"{'':>8}"
        peak = max(r["caller_kb"], r["worker_kb"]) / 1024
        options = _options(r["mode"], r["slots"], r["concurrency"])
        mode = "+".join(f"{k[:4]}{v}" for k, v in options.items() if k != "executor") or "serial"
        mode = f"ray:{mode}" if options.get("executor") == "ray" else mode
        lines.append(
            f"{r['size']:>7} {r['retriever']:>10} {mode:>13} {r['wall']:8.1f} {r.get('cpu', 0.0):7.1f} {r['inside']:8.1f} "
            f"{r['teardown']:8.2f} {100 * share:6.1f}% {100 * share_untimed:6.1f}% {versus} {versus_serial} {versus_sleep} "
            f"{r['calls']:>7} {r['reported_calls'] / max(1, r['cases']):>10.0f} {r['builds']:>6} {r['caller_kb'] / 1024:9.0f} "
            f"{r['worker_kb'] / 1024:9.0f} {1000 * peak / r['size']:9.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k chunks, one case, a small budget")
    parser.add_argument("--sizes", help="world sizes, comma separated (default 1000,10000,100000)")
    parser.add_argument("--cases", type=int, help="cases per world (default 2; quick: 1)")
    parser.add_argument("--sleepy-cases", type=int, help="cases for the 50 ms retriever, on the smallest world (default 4; quick: 2)")
    parser.add_argument("--max-examples", type=int, help="perturbations per unit (default 10; quick: 4)")
    parser.add_argument("--modes", default="serial,jobs,ray", help="for BM25 and dense: serial, threads, jobs, ray, jobs+threads, ...")
    parser.add_argument("--sleepy-modes", default="serial,threads,jobs,jobs+threads,ray+threads", help="for the 50 ms retriever")
    parser.add_argument("--slots", type=int, default=2, help="processes / Ray workers (default 2)")
    parser.add_argument("--concurrency", type=int, default=8, help="threads per process in the +threads modes (default 8)")
    parser.add_argument("--strategies", help="strategy families (default: the default suite)")
    parser.add_argument("--retrievers", default="bm25,dense", help="which of bm25 and dense run in --modes (default both)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")).split(",")]
    cases = args.cases or (1 if args.quick else 2)
    budget = args.max_examples or (4 if args.quick else 10)
    modes = [m for m in args.modes.split(",") if m]
    sleepy_modes = [m for m in args.sleepy_modes.split(",") if m]
    try:
        import ray  # noqa: F401
    except ImportError:
        print("(ray is not installed: pip install 'ragmorph[ray]'; the ray rows are skipped)")
        modes = [m for m in modes if not m.startswith("ray")]
        sleepy_modes = [m for m in sleepy_modes if not m.startswith("ray")]
    common = dict(max_examples=budget, slots=args.slots, concurrency=args.concurrency, strategies=args.strategies)
    retrievers = [r for r in args.retrievers.split(",") if r]
    unknown = sorted(set(retrievers) - {"bm25", "dense"})
    if unknown:
        parser.error(f"--retrievers: expected bm25 and/or dense, got {', '.join(unknown)}")
    plan = []
    for size in sizes:
        for retriever in retrievers:
            plan += [dict(size=size, retriever=retriever, cases=cases, mode=m, **common) for m in modes]
    sleepy = args.sleepy_cases or (2 if args.quick else 4)
    plan += [dict(size=min(sizes), retriever="bm25+50ms", cases=sleepy, mode=m, **common) for m in sleepy_modes]
    rows = []
    suite = args.strategies or "the default suite"
    print(f"machine: {os.cpu_count()} CPUs; {suite}; budget {budget} perturbations per unit; every row in a fresh process\n", flush=True)
    for row in plan:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--one", json.dumps(row)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"row {row} failed:\n{done.stderr[-2000:]}", flush=True)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(_table(rows).splitlines()[-1] if len(rows) > 1 else _table(rows), flush=True)
    print("\n" + _table(rows))
    print(
        "\nruns: world generation is not timed; 'calls' counts calls the retriever answered (the call cache served the "
        "rest); 'builds' counts the indexes the factory built"
    )


if __name__ == "__main__":
    # Run as the importable module `bench_scale` (its folder is sys.path[0]): the retriever classes that the caller
    # and its workers load by import string are then the very ones whose timers this process reads.
    import bench_scale

    bench_scale.main()
