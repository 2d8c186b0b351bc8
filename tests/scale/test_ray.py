"""`--executor ray`: units on a real Ray cluster (2 CPUs, loopback only) give the serial run's report exactly.

Two clusters, each started by the test and stopped by it: the private local one the executor starts itself
when no address is given, and an existing head (`ray start --head`) reached with `--address`, as README shows.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from ragmorph.cli import EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.demo import demo_retrievers
from ragmorph.io import write_cases, write_corpus
from ragmorph.runner import check
from ragmorph.worlds import demo_world

# Ray binds its servers to every interface unless it runs in single-machine mode; set before Ray is imported, so
# this test's clusters (and the head process started below, which inherits it) listen on 127.0.0.1 only.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'ragmorph[ray]'")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WORLD = demo_world()
CASES = WORLD.cases[:3]
SETTINGS: dict[str, Any] = {"max_examples": 4, "seed": 5, "ks": (1, 3, 5)}


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its creation time and replay paths (the CLI saves replays next to its report)."""
    report = json.loads(json.dumps(report))
    report["manifest"].pop("created")
    for row in report["results"]:
        if row.get("violation"):
            row["violation"]["replay"] = None
    return report


@pytest.fixture(scope="module")
def serial() -> dict[str, Any]:
    """The serial report of the demo retrievers (one of them with a planted bug) on three cases."""
    return check(demo_retrievers(), WORLD.corpus, CASES, **SETTINGS).to_dict()


def test_a_local_ray_cluster_gives_the_serial_report(serial: dict[str, Any]) -> None:
    assert not ray.is_initialized()
    report = check(demo_retrievers(), WORLD.corpus, CASES, executor="ray", jobs=2, concurrency=2, **SETTINGS).to_dict()
    assert report["summary"]["hard_failures"] > 0
    assert _comparable(report) == _comparable(serial)
    assert not ray.is_initialized()  # the executor stopped the cluster it started


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


HEAD = """
import signal, sys, time
import ray

context = ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 * 1024, _temp_dir=sys.argv[1])
print(context.address_info["gcs_address"], flush=True)
signal.signal(signal.SIGTERM, lambda *_: (ray.shutdown(), sys.exit(0)))
time.sleep(600)  # bounded: the cluster stops itself after ten minutes even if the test never stops it
"""


@pytest.fixture()
def ray_head() -> Any:
    """A Ray head in a process of its own (2 CPUs, loopback only, stops itself); yields its address."""
    # A short temp dir: Ray's unix sockets live under it and pytest's tmp paths exceed the socket path limit.
    temp = tempfile.mkdtemp(prefix="rm-ray-", dir="/tmp")
    head = subprocess.Popen(
        [sys.executable, "-c", HEAD, temp], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True,  # its own process group: stopping it stops its raylet and workers, nothing else
    )
    try:
        address = head.stdout.readline().strip() if head.stdout else ""
        if not address:
            pytest.fail(f"the Ray head did not start (exit code {head.wait(timeout=60)})")
        yield address
    finally:
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def test_cli_runs_on_an_existing_cluster_by_address(serial: dict[str, Any], ray_head: str, tmp_path: Path) -> None:
    corpus, cases = tmp_path / "corpus.jsonl", tmp_path / "cases.jsonl"
    write_corpus(WORLD.corpus, corpus)
    write_cases(CASES, cases)
    argv = ["run", "--corpus", str(corpus), "--cases", str(cases), "--max-examples", "4", "--seed", "5", "--k", "1,3,5"]
    for name, spec in demo_retrievers().items():
        argv += ["--retriever", f"{name}={spec}"]
    out = tmp_path / "ray.json"
    assert main([*argv, "--executor", "ray", "--address", ray_head, "--json", str(out)]) == EXIT_VIOLATIONS
    report = json.loads(out.read_text(encoding="utf-8"))
    # The CLI names retrievers by the names given; check() above used the same names, so the reports agree.
    assert ray_head.startswith("127.0.0.1:")
    assert _comparable(report)["results"] == _comparable(serial)["results"]
    assert report["metrics"] == serial["metrics"]
    assert not ray.is_initialized()


def test_an_address_nothing_answers_on_is_a_usage_error_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, cases = tmp_path / "corpus.jsonl", tmp_path / "cases.jsonl"
    write_corpus(WORLD.corpus, corpus)
    write_cases(CASES[:1], cases)
    started = time.monotonic()
    argv = ["run", "--retriever", "ragmorph.adapters:BM25Retriever", "--corpus", str(corpus), "--cases", str(cases)]
    assert main([*argv, "--executor", "ray", "--address", f"127.0.0.1:{_free_port()}"]) == EXIT_USAGE
    assert "expected a Ray cluster at --address" in capsys.readouterr().err
    assert time.monotonic() - started < 30  # Ray alone would retry for minutes
