"""Wall time of the default suite on the demo world, to compare two checkouts side by side.

Runs check() with default settings on the built-in demo world (56 chunks, 12 cases) for the built-in BM25 and
dense retrievers, `repeats` times, and prints the best and median wall time with the families run. Run it with
each checkout's interpreter, alternating, on an otherwise idle machine (the target of issue 10: the default
suite within 1.5x of the suite before it):

    /work/venv/bin/python tests/benchmarks/bench_default_suite.py 3        # main
    /work/venv-zoo2/bin/python tests/benchmarks/bench_default_suite.py 3   # this branch
"""

from __future__ import annotations

import statistics
import sys
import time

from ragmorph.adapters import BM25Retriever, DenseRetriever
from ragmorph.runner import check
from ragmorph.strategies import DEFAULT_SUITE
from ragmorph.worlds import demo_world


def main(argv: list[str]) -> int:
    """Time the default suite `argv[0]` times (default 3) and print one line per retriever."""
    repeats = int(argv[0]) if argv else 3
    world = demo_world()
    print(f"{len(world.corpus)} chunks, {len(world.cases)} cases, families: {', '.join(DEFAULT_SUITE)}")
    for name, factory in (("bm25", BM25Retriever), ("dense", DenseRetriever)):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            report = check({name: factory}, world.corpus, world.cases)
            times.append(time.perf_counter() - started)
        print(f"{name:6} best {min(times):6.2f} s  median {statistics.median(times):6.2f} s  exit {report.exit_code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
