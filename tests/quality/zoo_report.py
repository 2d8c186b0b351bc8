"""Print, per bug of the zoo, whether ragmorph's default suite detects it and what finding and shrinking cost.

Run: python tests/quality/zoo_report.py [--cases q01,q02,q05] [--seed 0] [member ...]
Columns: detected (a hard relation failed; "error" when only retriever errors were reported), the relations
that failed, retriever calls to the first violation (the calls its unit asked for, cache hits included),
calls spent shrinking it (perturbation and corpus), and the size of its minimal corpus ("*" when that corpus
is not 1-minimal, with the reason printed below the table). Uses the built-in demo world and check() with
default settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragmorph.runner import check  # noqa: E402
from ragmorph.worlds import demo_world  # noqa: E402
from support.reference_bm25 import ReferenceBM25  # noqa: E402
from support.zoo import ZOO, ZooMember  # noqa: E402


def summarise(member_name: str, report: dict) -> dict:
    """Detection figures of one retriever's report (ragmorph.report/1 dict)."""
    hard = [r for r in report["results"] if r["status"] == "fail" and r["severity"] == "hard"]
    errors = [r for r in report["results"] if r["status"] == "error"]
    soft = [r for r in report["results"] if r["severity"] == "soft" and r["rate"] and r["rate"]["held"] < r["rate"]["tested"]]
    first = min(hard, key=lambda r: r["violation"]["calls_to_first_failure"], default=None)
    return {
        "name": member_name,
        "detected": "yes" if hard else ("error" if errors else "no"),
        "relations": sorted({r["relation"] for r in hard}),
        "soft_breaks": sorted({r["relation"] for r in soft}),
        "first": None if first is None else first["violation"]["calls_to_first_failure"],
        "shrinking": None if first is None else first["violation"]["calls_shrinking"],
        "minimal": None if first is None else len(first["violation"]["minimal_corpus"]),
        "one_minimal": None if first is None else first["violation"].get("one_minimal"),
        "minimal_reason": None if first is None else first["violation"].get("minimal_reason"),
        "error_reason": errors[0]["reason"][:70] if errors and not hard else "",
        "exit": report["summary"]["exit_code"],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the zoo (or the named members) and print one row per bug."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("members", nargs="*")
    parser.add_argument("--cases", default="", help="comma-separated case ids of the demo world (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    world = demo_world()
    cases = [c for c in world.cases if not args.cases or c.id in args.cases.split(",")]
    members = [m for m in ZOO if not args.members or m.name in args.members]
    controls = [ZooMember("control: reference BM25", ReferenceBM25, "none (correct)")] if not args.members else []
    print(f"{len(world.corpus)} chunks, cases {[c.id for c in cases]}, seed {args.seed}, default check() settings")
    header = f"{'bug':32} {'detected':8} {'calls->1st':>10} {'shrinking':>9} {'minimal':>7} {'secs':>5}  relations"
    print(header)
    print("-" * len(header))
    notes: list[str] = []
    for member in controls + members:
        started = time.perf_counter()
        report = check({member.name: member.factory}, world.corpus, cases, seed=args.seed).to_dict()
        row = summarise(member.name, report)
        seconds = time.perf_counter() - started
        relations = ", ".join(row["relations"]) or row["error_reason"] or f"soft only: {row['soft_breaks']}"
        minimal = "-" if row["minimal"] is None else f"{row['minimal']}{'' if row['one_minimal'] else '*'}"
        if row["minimal_reason"]:
            notes.append(f"{row['name']}: {row['minimal_reason']}")
        print(
            f"{row['name']:32} {row['detected']:8} {str(row['first'] or '-'):>10} {str(row['shrinking'] or '-'):>9} "
            f"{minimal:>7} {seconds:5.1f}  {relations}",
            flush=True,
        )
    for note in notes:
        print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
