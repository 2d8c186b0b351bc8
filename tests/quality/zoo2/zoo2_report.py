"""Print, per bug of the second zoo, whether the default suite catches it and what finding and shrinking cost.

Run: python tests/quality/zoo2/zoo2_report.py [--cases q01,q02] [--seed 0] [--json out.json] [member ...]
Columns as tests/quality/zoo_report.py: detected (a hard relation failed), calls to the first violation (the
calls its unit asked for, cache hits included), calls spent shrinking it, the size of its minimal corpus ("*"
when not 1-minimal) and the relations that failed. Uses the built-in demo world and check() with default
settings; the correct `PlainBM25` runs first as a control.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from quality.zoo_report import summarise  # noqa: E402
from quality.zoo2.bugs import ZOO2, Zoo2Member  # noqa: E402
from quality.zoo2.plain import PlainBM25  # noqa: E402
from ragmorph.runner import check  # noqa: E402
from ragmorph.worlds import demo_world  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the second zoo (or the named members) and print one row per bug."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("members", nargs="*")
    parser.add_argument("--cases", default="", help="comma-separated case ids of the demo world (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    world = demo_world()
    cases = [c for c in world.cases if not args.cases or c.id in args.cases.split(",")]
    members = [m for m in ZOO2 if not args.members or m.name in args.members]
    controls = [Zoo2Member("control: PlainBM25", PlainBM25, "-", "none (correct)", (), ())] if not args.members else []
    print(f"{len(world.corpus)} chunks, cases {[c.id for c in cases]}, seed {args.seed}, default check() settings")
    header = f"{'bug':36} {'detected':8} {'calls->1st':>10} {'shrinking':>9} {'minimal':>7} {'secs':>5}  relations"
    print(header)
    print("-" * len(header))
    rows = []
    for member in controls + members:
        started = time.perf_counter()
        report = check({member.name: member.factory}, world.corpus, cases, seed=args.seed).to_dict()
        row = summarise(member.name, report)
        row["seconds"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        relations = ", ".join(row["relations"]) or row["error_reason"] or f"soft only: {row['soft_breaks']}"
        minimal = "-" if row["minimal"] is None else f"{row['minimal']}{'' if row['one_minimal'] else '*'}"
        print(
            f"{row['name']:36} {row['detected']:8} {str(row['first'] or '-'):>10} {str(row['shrinking'] or '-'):>9} "
            f"{minimal:>7} {row['seconds']:5.1f}  {relations}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
