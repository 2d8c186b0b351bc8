"""Wall time of the default suite on the demo world, against the suite without the families of issue 10.

Runs check() with default settings on the built-in demo world (56 chunks, 12 cases) for the built-in BM25 and
dense retrievers, alternating the whole default suite and the default suite without the filters, depth,
odd_query, state and lifecycle families (the suite before issue 10), `repeats` times each, and prints the best
and median wall times and their ratio (target: within 1.5x):

    python benchmarks/bench_default_suite.py 3
"""

from __future__ import annotations

import statistics
import sys
import time

from ragmorph.adapters import BM25Retriever, DenseRetriever
from ragmorph.runner import check
from ragmorph.strategies import DEFAULT_SUITE
from ragmorph.worlds import demo_world


NEW_FAMILIES = ("filters", "depth", "odd_query", "state", "lifecycle")


def main(argv: list[str]) -> int:
    """Time both suites `argv[0]` times (default 3), alternating, and print one line per retriever and suite."""
    repeats = int(argv[0]) if argv else 3
    world = demo_world()
    before = tuple(f for f in DEFAULT_SUITE if f not in NEW_FAMILIES)
    print(f"{len(world.corpus)} chunks, {len(world.cases)} cases; before: {', '.join(before)}; added: {', '.join(NEW_FAMILIES)}")
    for name, factory in (("bm25", BM25Retriever), ("dense", DenseRetriever)):
        times: dict[str, list[float]] = {"before": [], "default": []}
        for _ in range(repeats):
            for suite, families in (("before", before), ("default", DEFAULT_SUITE)):
                started = time.perf_counter()
                check({name: factory}, world.corpus, world.cases, strategies=families)
                times[suite].append(time.perf_counter() - started)
        best = {suite: min(values) for suite, values in times.items()}
        for suite, values in times.items():
            print(f"{name:6} {suite:8} best {best[suite]:6.2f} s  median {statistics.median(values):6.2f} s")
        print(f"{name:6} ratio (best default / best before) {best['default'] / best['before']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
