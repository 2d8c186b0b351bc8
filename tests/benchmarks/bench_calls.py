"""Retriever calls per case against what they find: the bug zoo (detection) and correct retrievers (soundness).

The baseline for spending fewer calls per verdict (issue 15, item 4): a change that saves calls must keep every
zoo bug detected and every correct retriever free of hard failures. Printed per retriever: detected (a hard
relation failed), calls per case (the report's own `retriever_calls`, summed over a case's units: calls the
retriever answered, cache hits excluded), and of those the calls spent shrinking violations.

    python tests/benchmarks/bench_calls.py [--jobs 2] [--seed 0] [--worlds 6]

Uses the demo world with default check() settings for the zoo, and `ragmorph.worlds.generate` worlds of 12 to
60 chunks for the correct retrievers. Runs on `--jobs` processes (the report is the serial one).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragmorph.adapters import BM25Retriever, DenseRetriever  # noqa: E402
from ragmorph.runner import check  # noqa: E402
from ragmorph.worlds import demo_world, generate  # noqa: E402
from support.reference_bm25 import ReferenceBM25  # noqa: E402
from support.zoo import ZOO  # noqa: E402

CORRECT = {"bm25": BM25Retriever, "dense": DenseRetriever, "reference_bm25": ReferenceBM25}
TRAITS = {"bm25": ["lexical", "normalising"], "reference_bm25": ["lexical", "normalising"]}


def calls(report: dict[str, Any], retriever: str) -> tuple[int, int, int]:
    """(calls, calls spent shrinking, cases) of one retriever in a report; every row of a unit carries its calls."""
    units: dict[tuple[str, str], int] = {}
    shrinking = 0
    for row in report["results"]:
        if row["retriever"] != retriever:
            continue
        units[(row["case"], row["strategy"])] = row["retriever_calls"]
        if row.get("violation"):
            shrinking += row["violation"].get("calls_shrinking") or 0
    cases = len({case for case, _ in units})
    return sum(units.values()), shrinking, cases


def main() -> int:
    """Print the zoo and soundness tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worlds", type=int, default=6, help="generated worlds for the correct retrievers")
    args = parser.parse_args()
    world = demo_world()
    started = time.perf_counter()
    zoo = {member.name: member.factory for member in ZOO}
    report = check(zoo, world.corpus, world.cases, seed=args.seed, jobs=args.jobs).to_dict()
    print(f"zoo: {len(ZOO)} planted bugs on the demo world ({len(world.corpus)} chunks, {len(world.cases)} cases), "
          f"seed {args.seed}, default settings, {time.perf_counter() - started:.0f} s")
    header = f"{'bug':34} {'detected':8} {'calls/case':>10} {'shrinking/case':>14}  hard relations failed"
    print(header + "\n" + "-" * len(header))
    total = detected = 0
    for member in ZOO:
        spent, shrinking, cases = calls(report, member.name)
        hard = sorted({r["relation"] for r in report["results"]
                       if r["retriever"] == member.name and r["status"] == "fail" and r["severity"] == "hard"})
        detected += bool(hard)
        total += spent
        print(f"{member.name:34} {'yes' if hard else 'no':8} {spent / cases:10.0f} {shrinking / cases:14.0f}  {', '.join(hard)}")
    print(f"detected {detected}/{len(ZOO)}; mean calls per case {total / (len(ZOO) * len(world.cases)):.0f}\n")

    started = time.perf_counter()
    header = f"{'correct retriever':34} {'hard fails':>10} {'calls/case':>10}"
    rows: dict[str, list[int]] = {name: [0, 0, 0] for name in CORRECT}
    for seed in range(args.worlds):
        generated = generate(seed, chunks=12 + 48 * seed // max(1, args.worlds - 1), cases=3)
        found = check(CORRECT, generated.corpus, generated.cases, seed=args.seed, traits=TRAITS, jobs=args.jobs).to_dict()
        for name in CORRECT:
            spent, _, cases = calls(found, name)
            rows[name][0] += sum(1 for r in found["results"] if r["retriever"] == name and r["status"] == "fail" and r["severity"] == "hard")
            rows[name][1] += spent
            rows[name][2] += cases
    print(f"soundness: {args.worlds} generated worlds of 12-60 chunks, 3 cases each, {time.perf_counter() - started:.0f} s")
    print(header + "\n" + "-" * len(header))
    for name, (fails, spent, cases) in rows.items():
        print(f"{name:34} {fails:>10} {spent / max(1, cases):10.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
