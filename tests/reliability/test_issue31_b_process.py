"""Issue 31, items 8, 18, 20 and 25: a retriever that ends its process, hangs outside retrieve(), or outlives its
caller.

Runs that could end the test process (os._exit) or a worker's stderr run in subprocesses; hangs are bounded.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragmorph import check
from ragmorph.adapters import BM25Retriever
from ragmorph.cli import EXIT_ERRORS
from ragmorph.io import case_from_dict, chunk_from_dict
from ragmorph.model import Corpus
from reliability.worldfiles import CASES, CHUNKS, run_args

CORPUS = Corpus(chunk_from_dict(row) for row in CHUNKS)
WORLD_CASES = tuple(case_from_dict(row) for row in CASES)

EXITS = '''
import os
from ragmorph.adapters import BM25Retriever


class Exits:
    """BM25 that ends the process with exit status 0 (as a library's fatal-error path may) on one query."""

    def __init__(self, corpus):
        self.inner = BM25Retriever(corpus)

    def retrieve(self, query, *, k, filters=None):
        if "reset" in query:
            os._exit(0)
        return self.inner.retrieve(query, k=k, filters=filters)


def factory(corpus):
    return Exits(corpus)
'''


def _ragmorph(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragmorph.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def test_os_exit_in_a_serial_run_is_an_error_with_a_report_not_exit_0(world: tuple[Path, Path], tmp_path: Path) -> None:
    """Item 8: os._exit(0) ended a serial run with exit 0 and no report."""
    (tmp_path / "exits.py").write_text(EXITS, encoding="utf-8")
    report = tmp_path / "r.json"
    done = _ragmorph(*run_args(world, str(tmp_path / "exits.py") + ":factory", "--json", str(report)), cwd=tmp_path)
    assert done.returncode == EXIT_ERRORS, done.stdout + done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    errors = [row for row in data["results"] if row["status"] == "error"]
    assert errors and all(row["case"] == "q2" for row in errors)  # the query with "reset"
    assert "os._exit(0)" in errors[0]["reason"]
    assert any(row["status"] == "pass" and row["case"] == "q1" for row in data["results"])  # the rest ran
    assert "Traceback" not in done.stderr


def test_os_exit_in_a_pytest_session_fails_its_items_instead_of_ending_the_session(tmp_path: Path) -> None:
    """Item 8, in the pytest plugin: the session ended with exit 0 and no summary."""
    (tmp_path / "exits.py").write_text(EXITS, encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(f'''
        from ragmorph.io import case_from_dict, chunk_from_dict
        from ragmorph.model import Corpus
        from ragmorph.pytest_plugin import suite

        CHUNKS = {CHUNKS!r}
        CASES = {CASES!r}
        ragmorph_suite = suite(retrievers={{"exits": "exits:factory"}},
                               corpus=Corpus(chunk_from_dict(r) for r in CHUNKS),
                               cases=[case_from_dict(r) for r in CASES], strategies=("cutoff",), ks=(1, 3))
        '''), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--ragmorph-max-examples", "2", "test_suite.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed" in done.stdout and "os._exit(0)" in done.stdout


class _Hangs:
    """BM25 whose named lifecycle method waits `seconds` (far past the run's timeout) before going on."""

    hang = ""
    seconds = 8.0

    def __init__(self, corpus: Corpus) -> None:
        self._wait("factory")
        self.corpus = corpus
        self.inner = BM25Retriever(corpus)

    def _wait(self, where: str) -> None:
        if self.hang == where:
            threading.Event().wait(self.seconds)

    def retrieve(self, query: str, *, k: int, filters: Any = None) -> Any:
        return self.inner.retrieve(query, k=k, filters=filters)

    def add(self, chunks: Any) -> None:
        self._wait("add")
        self.inner.add(chunks)

    def remove(self, ids: Any) -> None:
        self._wait("remove")
        self.inner.remove(ids)

    def close(self) -> None:
        self._wait("close")


@pytest.mark.parametrize(("where", "strategy"), [("factory", "cutoff"), ("add", "distractors"), ("close", "cutoff")])
def test_the_timeout_bounds_the_factory_add_and_close_too(where: str, strategy: str) -> None:
    """Item 18: --timeout bounded only retrieve(); a factory, add() or close() that never returns hung the run."""
    hangs = type(f"Hangs_{where}", (_Hangs,), {"hang": where})
    started = time.monotonic()
    report = check({"hangs": hangs}, CORPUS, WORLD_CASES[:1], strategies=[strategy], ks=(1, 3), max_examples=2,
                   timeout=0.3).to_dict()
    elapsed = time.monotonic() - started
    assert elapsed < _Hangs.seconds - 2, f"the run waited for the hung {where} ({elapsed:.1f} s)"
    errors = [row for row in report["results"] if row["status"] == "error"]
    assert errors, report["results"]
    assert all("timeout=0.3" in row["reason"] and where in row["reason"] for row in errors), errors[0]["reason"]
    assert report["summary"]["exit_code"] == EXIT_ERRORS


def _worker(**kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ragmorph.runner._worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def _setup() -> bytes:
    corpora = pickle.dumps((CORPUS,))
    return pickle.dumps(([p for p in sys.path if p], (), corpora, 1))


def test_a_worker_whose_caller_is_gone_ends_quietly() -> None:
    """Item 25: a caller stopped by SIGTERM while its workers start closes their pipes; each printed a
    BrokenPipeError traceback."""
    worker = _worker()
    assert worker.stdout is not None and worker.stdin is not None and worker.stderr is not None
    worker.stdout.close()  # the caller's end of the reply pipe is gone, as when the caller was killed
    worker.stdin.write(_setup())
    worker.stdin.close()
    err = worker.stderr.read().decode()
    assert worker.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_worker_whose_setup_is_cut_short_ends_quietly() -> None:
    """Item 25: a caller killed while writing the setup leaves half a pickle on the worker's input."""
    worker = _worker()
    _, err = worker.communicate(_setup()[:100], timeout=60)
    assert worker.returncode == 0
    assert b"Traceback" not in err, err.decode()


def test_sigterm_while_jobs_workers_start_prints_no_worker_traceback(world: tuple[Path, Path], tmp_path: Path) -> None:
    """Item 25 as a user meets it: `ragmorph run --jobs 2`, then SIGTERM to ragmorph alone."""
    for delay in (0.3, 0.8, 1.5):
        run = subprocess.Popen(
            [sys.executable, "-m", "ragmorph.cli", *run_args(world, "ragmorph.adapters:BM25Retriever", "--jobs", "2",
                                                            "--json", str(tmp_path / "r.json"))],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(delay)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)  # until every worker (they share the stderr pipe) has ended
        assert "Traceback" not in err and "BrokenPipeError" not in err, f"after {delay} s:\n{err}"


KILLED = """
import os
import signal


def factory(corpus):
    # Only Ray actors build the index: the process dies the way a crash in native code ends it.
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
@pytest.mark.integration
def test_a_ray_worker_that_dies_is_a_retriever_error_exit_3_without_a_traceback(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 20: an ActorDiedError traceback and exit 1 (which reads as "violations found")."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'ragmorph[ray]'")
    (tmp_path / "killed.py").write_text(KILLED, encoding="utf-8")
    done = _ragmorph(*run_args(world, str(tmp_path / "killed.py") + ":factory", "--executor", "ray", "--jobs", "2",
                               "--json", str(tmp_path / "r.json")), cwd=tmp_path, timeout=300)
    assert done.returncode == EXIT_ERRORS, done.stdout + done.stderr
    assert "Ray worker" in done.stderr and "Traceback" not in done.stderr, done.stderr
