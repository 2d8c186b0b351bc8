"""Benchmark: ragmorph.metrics.evaluate_batch against ranx and pytrec_eval, from the same Python dicts.

Every tool starts from the same `run` (qid -> {doc_id: score}, depth 100) and `qrels` (qid -> {doc_id: level})
and is timed from those dicts to the numbers: P@10, R@100, nDCG@10, AP@100 and RR@100 (trec_eval:
P_10, recall_100, ndcg_cut_10, map_cut_100, recip_rank; ranx: precision@10, recall@100, ndcg@10, map@100,
mrr@100). ranx compiles with numba on first use: its JIT time is measured on a tiny input and reported
separately, then the full input is timed warm. Means are printed side by side to show the tools agree.
ragmorph is timed twice: with its compiled kernel (the default when it was built) and with the numpy path
that runs where no C compiler was at install time; the targets are checked against the default.

    python benchmarks/bench_metrics.py --repeat 3   # 100,000 rankings, best of three per tool
    python benchmarks/bench_metrics.py --fresh-ids  # ids laid out as when parsed from TREC files
    python benchmarks/bench_metrics.py --n 10000    # a quick run
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from collections.abc import Callable

import numpy as np

from ragmorph.metrics import BATCH_BACKEND, evaluate_batch

OURS = ["P@10", "R@100", "nDCG@10", "AP@100", "RR@100"]
TREC = ["P_10", "recall_100", "ndcg_cut_10", "map_cut_100", "recip_rank"]
RANX = ["precision@10", "recall@100", "ndcg@10", "map@100", "mrr@100"]


def make_data(queries: int, depth: int, seed: int, *, fresh_ids: bool = False) -> tuple[dict, dict]:
    """A run of `depth` scored docs per query and qrels of 1..20 judged docs, about half of them retrieved.

    Doc ids are shared string objects from a pool of a million, scattered in memory; with `fresh_ids` every
    entry gets its own string, allocated in order, as when run and qrels are parsed from TREC files.
    """
    rng = np.random.default_rng(seed)
    pool = [f"doc{i}" for i in range(1_000_000)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    docs = rng.integers(0, len(pool), size=(queries, depth))
    scores = rng.random((queries, depth)).round(12)
    judged_counts = rng.integers(1, 21, size=queries)
    for row in range(queries):
        qid = f"q{row}"
        names = [pool[i] for i in docs[row].tolist()]
        run[qid] = dict(zip(names, scores[row].tolist()))
        count = int(judged_counts[row])
        from_run = names[: count // 2 * 3 : 3]  # spread over the ranking (scores are random, so ranks too)
        elsewhere = [pool[i] for i in rng.integers(0, len(pool), size=count - len(from_run)).tolist()]
        levels = rng.integers(0, 4, size=count).tolist()
        levels[0] = max(levels[0], 1)
        qrels[qid] = dict(zip(from_run + elsewhere, levels))
    if fresh_ids:
        run = {qid: {(doc + " ")[:-1]: score for doc, score in scores.items()} for qid, scores in run.items()}
        qrels = {qid: {(doc + " ")[:-1]: level for doc, level in levels.items()} for qid, levels in qrels.items()}
    return run, qrels


def timed(fn: Callable[[], dict[str, float]], repeat: int = 1) -> tuple[float, float, dict[str, float]]:
    """Best wall and CPU seconds over `repeat` calls of `fn` (garbage collection off, as timeit does), and its means.

    CPU time (process_time) is printed next to wall time because the benchmark machine is shared: wall time
    then mostly measures the neighbours.
    """
    best_wall = best_cpu = math.inf
    means: dict[str, float] = {}
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            means = fn()
            best_wall = min(best_wall, time.perf_counter() - wall)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        finally:
            gc.enable()
    return best_wall, best_cpu, means


def ours(run: dict, qrels: dict, backend: str | None = None) -> dict[str, float]:
    """ragmorph's batch path (`backend` None: the default one)."""
    result = evaluate_batch(run, qrels, OURS, backend=backend)
    return {name: float(np.nanmean(result[name])) for name in OURS}


def trec(run: dict, qrels: dict) -> dict[str, float]:
    """pytrec_eval (trec_eval in C behind a Python dict interface)."""
    import pytrec_eval

    values = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
    return {o: float(np.mean([v[t] for v in values.values()])) for o, t in zip(OURS, TREC)}


def ranx_eval(run: dict, qrels: dict) -> dict[str, float]:
    """ranx (numba-compiled), including its conversion from the dicts."""
    from ranx import Qrels, Run, evaluate

    values = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), RANX, make_comparable=True)
    return {o: float(values[r]) for o, r in zip(OURS, RANX)}


def main(argv: list[str] | None = None) -> None:
    """Build the data, time each tool from the dicts, print seconds, ratios and means."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="number of rankings (default 100,000)")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="time each tool this many times, keep the best")
    parser.add_argument("--skip-trec", action="store_true", help="leave pytrec_eval out")
    parser.add_argument("--fresh-ids", action="store_true", help="one string per entry, as parsed from files")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    run, qrels = make_data(args.n, args.depth, args.seed, fresh_ids=args.fresh_ids)
    layout = "one string per entry" if args.fresh_ids else "ids shared from a pool of 1,000,000"
    print(f"data: {args.n:,} rankings x depth {args.depth} ({layout}), built in {time.perf_counter() - start:.1f} s")
    print(f"metrics: {', '.join(OURS)}")

    tiny_run, tiny_qrels = make_data(20, 10, args.seed + 1)
    jit_wall, jit_cpu, _ = timed(lambda: ranx_eval(tiny_run, tiny_qrels))
    timings: dict[str, tuple[float, float, dict[str, float]]] = {}
    timings["ragmorph"] = timed(lambda: ours(run, qrels), args.repeat)
    if BATCH_BACKEND == "compiled":
        timings["ragmorph numpy"] = timed(lambda: ours(run, qrels, "numpy"), args.repeat)
    timings["ranx (warm)"] = timed(lambda: ranx_eval(run, qrels), args.repeat)
    if not args.skip_trec:
        timings["pytrec_eval"] = timed(lambda: trec(run, qrels), args.repeat)

    base_wall, base_cpu, _ = timings["ragmorph"]
    print(f"\nragmorph's default path: {BATCH_BACKEND}")
    print(f"ranx first-call JIT (20 tiny rankings): {jit_wall:.2f} s wall, {jit_cpu:.2f} s CPU, not counted below")
    header = f"{'tool':<14}{'wall s':>9}{'x ours':>8}{'CPU s':>9}{'x ours':>8}   "
    print(header + "".join(f"{name:>10}" for name in OURS))
    for tool, (wall, cpu, means) in timings.items():
        row = "".join(f"{means[name]:>10.5f}" for name in OURS)
        print(f"{tool:<14}{wall:>9.2f}{wall / base_wall:>8.2f}{cpu:>9.2f}{cpu / base_cpu:>8.2f}   {row}")
    if BATCH_BACKEND != "compiled":
        print("!! the compiled kernel is not built here (no C compiler at install time): timing the numpy path")
    for tool, target in (("ranx (warm)", 1), ("pytrec_eval", 5)):
        if tool in timings:
            wall, cpu, _ = timings[tool]
            print(f"ragmorph vs {tool}: {wall / base_wall:.2f}x faster wall, {cpu / base_cpu:.2f}x CPU (target >= {target})")
            if "ragmorph numpy" in timings:  # what a machine without a C compiler gets
                numpy_wall, numpy_cpu, _ = timings["ragmorph numpy"]
                print(f"  numpy path vs {tool}: {wall / numpy_wall:.2f}x wall, {cpu / numpy_cpu:.2f}x CPU")

if __name__ == "__main__":
    main()
