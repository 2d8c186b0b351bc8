"""Pre-commit speed: `ragmorph run` on the `ragmorph init` sample under the default and smoke profiles, serially
and with `--jobs 2`, each as a user runs it (a fresh process, interpreter start-up included).

    python benchmarks/bench_profiles.py [repeats]

Prints the best and median wall time of each variant and its speed-up against the default serial run, measured
alternately in the same run so machine load hits every variant alike.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS: dict[str, tuple[str, ...]] = {
    "default": (),
    "smoke": ("--profile", "smoke"),
    "default --jobs 2": ("--jobs", "2"),
    "smoke --jobs 2": ("--profile", "smoke", "--jobs", "2"),
}


def _run(folder: Path, extra: tuple[str, ...]) -> float:
    started = time.perf_counter()
    # Exit 0 or 1 (the sample may hold violations under some budgets); anything else is a broken benchmark.
    done = subprocess.run([sys.executable, "-m", "ragmorph.cli", "run", *extra], cwd=folder, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"ragmorph run {' '.join(extra)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def main(argv: list[str]) -> int:
    """Scaffold the init sample in a temporary folder, time every variant `argv[0]` times (default 3)."""
    repeats = int(argv[0]) if argv else 3
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "rag"
        subprocess.run([sys.executable, "-m", "ragmorph.cli", "init", str(folder)], check=True, capture_output=True)
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(repeats):
            for name, extra in VARIANTS.items():
                times[name].append(_run(folder, extra))
    base = min(times["default"])
    print(f"{'variant':<18} {'best s':>7} {'median s':>9} {'speed-up':>9}")
    for name, values in times.items():
        print(f"{name:<18} {min(values):7.2f} {statistics.median(values):9.2f} {base / min(values):8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
