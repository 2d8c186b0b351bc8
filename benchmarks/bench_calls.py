"""Retriever calls per case against what they find, the full budget and the adaptive one side by side.

Spending fewer calls per verdict (issue 15, item 4) must keep every planted bug of both zoos detected and every
correct retriever free of hard failures. Each table runs the same inputs twice in this process: with
`budget="full"` (every family draws `max_examples`, no draw skipped, no per-family caps: more than the suite
spent before adaptive budgets, whose few capped families drew 10-15) and with the default `budget="adaptive"`. Printed per retriever: detected (a hard relation failed) and calls per case
(the report's own `summary.calls_by_retriever`: calls the retriever answered, cache hits excluded, shrinking and
minimisation included).

    python benchmarks/bench_calls.py [--jobs 2] [--seed 0] [--worlds 6] [--zoo zoo,zoo2,correct]
        [--budgets adaptive,full] [--demo] [--by-family]

`--demo` adds the correct built-in retrievers (bm25 with its traits, dense) on the demo world, the figures docs/performance.md
quotes; `--by-family` splits their calls per case by strategy family (where the calls go); `--budgets adaptive`
skips the full budget's runs (half the time).

Uses the demo world with default check() settings for the zoos, and `ragmorph.worlds.generate` worlds of 12 to
60 chunks for the correct retrievers. Runs on `--jobs` processes (the report is the serial one).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from quality.zoo2.bugs import ZOO2  # noqa: E402
from ragmorph.adapters import BM25Retriever, DenseRetriever  # noqa: E402
from ragmorph.runner import BUDGETS, budget_problem, check  # noqa: E402
from ragmorph.worlds import demo_world, generate  # noqa: E402
from support.reference_bm25 import ReferenceBM25  # noqa: E402
from support.zoo import ZOO  # noqa: E402

CORRECT = {"bm25": BM25Retriever, "dense": DenseRetriever, "reference_bm25": ReferenceBM25}
TRAITS = {"bm25": ["lexical", "normalising"], "reference_bm25": ["lexical", "normalising"]}


def hard_failures(report: dict[str, Any], retriever: str) -> list[str]:
    """The hard relations `retriever` failed in `report`."""
    return sorted({r["relation"] for r in report["results"]
                   if r["retriever"] == retriever and r["status"] == "fail" and r["severity"] == "hard"})


def spent(report: dict[str, Any], retriever: str) -> tuple[int, int]:
    """(retriever calls, retriever x case pairs) of one retriever, from the report's summary."""
    entry = report["summary"]["calls_by_retriever"].get(retriever, {"retriever_calls": 0, "cases": 0})
    return entry["retriever_calls"], entry["cases"]


def zoo_table(title: str, members: dict[str, Any], args: argparse.Namespace) -> None:
    """One row per planted bug: detected and calls per case under each budget."""
    world = demo_world()
    reports, seconds = {}, {}
    for budget in args.budgets:
        started = time.perf_counter()
        reports[budget] = check(members, world.corpus, world.cases, seed=args.seed, jobs=args.jobs, budget=budget).to_dict()
        seconds[budget] = time.perf_counter() - started
    print(f"{title}: {len(members)} planted bugs on the demo world ({len(world.corpus)} chunks, {len(world.cases)} cases), "
          f"seed {args.seed}; " + ", ".join(f"{b} {seconds[b]:.0f} s" for b in args.budgets))
    header = f"{'bug':36} " + " ".join(f"{b + ' found':>14} {b + ' calls':>14}" for b in args.budgets)
    header += f"  hard relations failed ({args.budgets[0]})"
    print(header + "\n" + "-" * len(header))
    totals = {b: [0, 0, 0] for b in args.budgets}
    for name in members:
        cells = []
        for budget in args.budgets:
            failed = hard_failures(reports[budget], name)
            calls, cases = spent(reports[budget], name)
            totals[budget][0] += bool(failed)
            totals[budget][1] += calls
            totals[budget][2] += cases
            cells.append(f"{'yes' if failed else 'NO':>14} {calls / max(1, cases):14.0f}")
        print(f"{name:36} " + " ".join(cells) + "  " + ", ".join(hard_failures(reports[args.budgets[0]], name)))
    print(f"{'detected / mean calls per case':36} " + " ".join(
        f"{f'{t[0]}/{len(members)}':>14} {t[1] / max(1, t[2]):14.0f}" for t in totals.values()) + "\n")


def correct_table(args: argparse.Namespace) -> None:
    """Hard failures (must be 0) and calls per case of the correct retrievers over generated worlds."""
    rows = {budget: {name: [0, 0, 0] for name in CORRECT} for budget in args.budgets}
    started = time.perf_counter()
    for seed in range(args.worlds):
        generated = generate(seed, chunks=12 + 48 * seed // max(1, args.worlds - 1), cases=3)
        for budget in args.budgets:
            report = check(CORRECT, generated.corpus, generated.cases, seed=args.seed, traits=TRAITS, jobs=args.jobs,
                           budget=budget).to_dict()
            for name in CORRECT:
                calls, cases = spent(report, name)
                rows[budget][name][0] += len(hard_failures(report, name))
                rows[budget][name][1] += calls
                rows[budget][name][2] += cases
    print(f"soundness: {args.worlds} generated worlds of 12-60 chunks, 3 cases each, {time.perf_counter() - started:.0f} s")
    header = f"{'correct retriever':36} " + " ".join(f"{b + ' hard fails':>19} {b + ' calls':>14}" for b in args.budgets)
    print(header + "\n" + "-" * len(header))
    for name in CORRECT:
        print(f"{name:36} " + " ".join(
            f"{rows[b][name][0]:19} {rows[b][name][1] / max(1, rows[b][name][2]):14.0f}" for b in args.budgets))


def by_family(report: dict[str, Any], retriever: str) -> dict[str, int]:
    """Retriever calls of each strategy family's units (every row of a unit carries the unit's count), most first."""
    units = {(r["case"], r["strategy"]): r["retriever_calls"] or 0 for r in report["results"] if r["retriever"] == retriever}
    totals: dict[str, int] = {}
    for (_, strategy), calls in units.items():
        totals[strategy] = totals.get(strategy, 0) + calls
    return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


def demo_table(args: argparse.Namespace) -> None:
    """Calls per case of the built-in correct retrievers on the demo world (the default suite, default settings)."""
    world = demo_world()
    demo = {"bm25": BM25Retriever, "dense": DenseRetriever}
    print(f"demo world, built-in retrievers ({len(world.cases)} cases), seed {args.seed}")
    for budget in args.budgets:
        report = check(demo, world.corpus, world.cases, seed=args.seed, traits={"bm25": TRAITS["bm25"]}, jobs=args.jobs,
                       budget=budget).to_dict()
        print(f"  {budget:9} " + ", ".join(
            f"{name} {spent(report, name)[0] / max(1, spent(report, name)[1]):.1f} calls per case, "
            f"{len(hard_failures(report, name))} hard failures" for name in demo))
        if args.by_family:
            for name in demo:
                cases = max(1, spent(report, name)[1])
                print(f"    {name} by family (calls per case): " + ", ".join(
                    f"{family} {calls / cases:.1f}" for family, calls in by_family(report, name).items()))


def main() -> int:
    """Print the zoo tables and the soundness table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worlds", type=int, default=6, help="generated worlds for the correct retrievers")
    parser.add_argument("--zoo", default="zoo,zoo2,correct", help="which tables to print")
    parser.add_argument("--budgets", default=",".join(BUDGETS), help="budgets to run, comma separated (first: the one whose failures are listed)")
    parser.add_argument("--demo", action="store_true", help="also the built-in bm25 and dense on the demo world")
    parser.add_argument("--by-family", action="store_true", help="with --demo: their calls per case by family")
    args = parser.parse_args()
    args.budgets = [b for b in args.budgets.split(",") if b]
    if not args.budgets:
        parser.error(f"--budgets: expected names among {', '.join(BUDGETS)}")
    for budget in args.budgets:
        problem = budget_problem(budget)
        if problem is not None:
            parser.error(f"--budgets: {problem}")
    tables = args.zoo.split(",")
    if "zoo" in tables:
        zoo_table("zoo", {member.name: member.factory for member in ZOO}, args)
    if "zoo2" in tables:
        zoo_table("zoo2", {member.name: member.factory for member in ZOO2}, args)
    if "correct" in tables:
        correct_table(args)
    if args.demo:
        demo_table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
