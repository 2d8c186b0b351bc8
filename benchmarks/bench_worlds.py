"""Benchmark: building built-in worlds and rendering large reports, each against a baseline timed in the same run.

Worlds: `ragmorph.worlds.generate` (word lists + one seeded random.Random) against the obvious alternative the
design rejects, a Faker call per chunk (`fake.paragraph()`), timed on a sample and extrapolated per chunk.
Reports: HTML and JUnit rendering of a report with many results against plain `json.dumps` of the same dict.

    python benchmarks/bench_worlds.py              # up to 100,000 chunks
    python benchmarks/bench_worlds.py --quick      # up to 10,000 chunks
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from faker import Faker

from ragmorph.reporting import render_html, render_report, write_junit
from ragmorph.worlds import generate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.report_samples import sample_report  # noqa: E402


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def faker_seconds_per_chunk(sample: int = 2_000) -> float:
    """Seconds per chunk when every chunk's text is a Faker paragraph (the rejected design)."""
    fake = Faker()
    fake.seed_instance(0)
    seconds, _ = timed(lambda: [fake.paragraph(nb_sentences=4) for _ in range(sample)])
    return seconds / sample


def big_report(results: int) -> dict:
    """The sample report with its results repeated (distinct case ids) to `results` rows."""
    report = sample_report()
    base = report["results"]
    rows = []
    for number in range(results):
        row = copy.deepcopy(base[number % len(base)])
        row["case"] = f"q{number // len(base):05d}"
        rows.append(row)
    report["results"] = rows
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10,000 chunks and 2,000 results")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    per_chunk = faker_seconds_per_chunk()
    print(f"{'chunks':>8} {'cases':>6} {'generate s':>11} {'Faker/chunk s (est.)':>21} {'speed-up':>9}")
    for size in sizes:
        seconds, world = timed(generate, 0, chunks=size)
        baseline = per_chunk * size
        print(f"{size:>8} {len(world.cases):>6} {seconds:>11.3f} {baseline:>21.3f} {baseline / seconds:>8.1f}x")
    print()
    counts = (2_000,) if args.quick else (2_000, 20_000)
    print(f"{'results':>8} {'json.dumps s':>12} {'summary s':>10} {'html s':>8} {'junit s':>8} {'html/json':>10}")
    for count in counts:
        report = big_report(count)
        json_s, _ = timed(json.dumps, report)
        summary_s, _ = timed(render_report, report, max_violations=20)
        html_s, _ = timed(render_html, report)
        with tempfile.TemporaryDirectory() as folder:
            junit_s, _ = timed(write_junit, report, Path(folder) / "junit.xml")
        print(f"{count:>8} {json_s:>12.3f} {summary_s:>10.3f} {html_s:>8.3f} {junit_s:>8.3f} {html_s / json_s:>9.1f}x")


if __name__ == "__main__":
    main()
