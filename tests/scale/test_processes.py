"""`--jobs N` / `check(..., jobs=N)`: units in local worker processes give the serial run's report exactly.

Real worker processes, real built-in retrievers (and the demo's planted bug, so violation records, minimised
corpora and replay files are compared too); nothing stands in for the engine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ragmorph import UsageError
from ragmorph.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.demo import BUGGY_NAME, demo_retrievers
from ragmorph.io import write_cases, write_corpus
from ragmorph.runner import EXECUTORS, check
from ragmorph.worlds import demo_world

pytestmark = pytest.mark.slow

WORLD = demo_world()
CASES = WORLD.cases[:3]
SETTINGS: dict[str, Any] = {"max_examples": 4, "seed": 11, "ks": (1, 3, 5)}


def _comparable(report: dict[str, Any], replays: Path | None = None) -> dict[str, Any]:
    """The report without its creation time (the one field a run may change), replay folder written as DIR."""
    text = json.dumps(report)
    if replays is not None:
        text = text.replace(str(replays), "DIR")
    report = json.loads(text)
    report["manifest"].pop("created")
    return report


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The serial report of the demo retrievers on three cases, with its replay folder."""
    replays = tmp_path_factory.mktemp("replays-serial")
    report = check(demo_retrievers(), WORLD.corpus, CASES, replay_dir=replays, **SETTINGS)
    return report.to_dict(), replays


def test_two_jobs_give_the_serial_report_byte_for_byte(serial: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    serial_report, serial_replays = serial
    seen: list[tuple[int, int]] = []
    report = check(
        demo_retrievers(), WORLD.corpus, CASES, replay_dir=tmp_path, jobs=2, progress=lambda d, t, u: seen.append((d, t)), **SETTINGS
    ).to_dict()
    assert report["summary"]["hard_failures"] > 0  # the planted bug is caught, so violations are compared too
    assert {r["retriever"] for r in report["results"] if r["status"] == "fail"} == {BUGGY_NAME}
    assert _comparable(report, tmp_path) == _comparable(serial_report, serial_replays)
    # Replay files are written by the workers: the same names and, apart from their paths, the same content.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in serial_replays.iterdir())
    for path in tmp_path.iterdir():
        assert path.read_text(encoding="utf-8") == (serial_replays / path.name).read_text(encoding="utf-8")
    total = len(report["results"]) and seen[-1][1]
    assert [d for d, _ in seen] == list(range(1, total + 1))


@pytest.fixture()
def world_files(tmp_path: Path) -> tuple[Path, Path]:
    """The three cases as native files."""
    corpus, cases = tmp_path / "corpus.jsonl", tmp_path / "cases.jsonl"
    write_corpus(WORLD.corpus, corpus)
    write_cases(CASES, cases)
    return corpus, cases


def _cli(corpus: Path, cases: Path, out: Path, *extra: str, retrievers: tuple[str, ...] = ()) -> int:
    argv = ["run", "--corpus", str(corpus), "--cases", str(cases), "--max-examples", "4", "--seed", "11", "--k", "1,3,5"]
    for spec in retrievers or tuple(f"{name}={spec}" for name, spec in demo_retrievers().items()):
        argv += ["--retriever", spec]
    return main([*argv, "--json", str(out), *extra])


def test_cli_jobs_writes_the_serial_json_report(world_files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, cases = world_files
    assert _cli(corpus, cases, tmp_path / "serial.json") == EXIT_VIOLATIONS
    assert _cli(corpus, cases, tmp_path / "jobs.json", "--jobs", "2") == EXIT_VIOLATIONS
    serial_report, jobs_report = (json.loads((tmp_path / n).read_text(encoding="utf-8")) for n in ("serial.json", "jobs.json"))
    assert _comparable(jobs_report) == _comparable(serial_report)


ADAPTER = '''
from ragmorph.adapters import BM25Retriever


def factory(corpus):
    print("a print in the adapter goes to stderr, not into the workers' reply stream")
    return BM25Retriever(corpus)
'''


def test_an_adapter_file_is_loaded_in_every_worker(world_files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, cases = world_files
    adapter = tmp_path / "adapter.py"
    adapter.write_text(ADAPTER, encoding="utf-8")
    spec = (f"bm25={adapter}:factory",)
    assert _cli(corpus, cases, tmp_path / "serial.json", retrievers=spec) == EXIT_OK
    assert _cli(corpus, cases, tmp_path / "jobs.json", "--jobs", "2", retrievers=spec) == EXIT_OK
    serial_report, jobs_report = (json.loads((tmp_path / n).read_text(encoding="utf-8")) for n in ("serial.json", "jobs.json"))
    assert jobs_report["results"] == serial_report["results"]
    assert jobs_report["metrics"] == serial_report["metrics"]


def test_an_object_that_cannot_be_pickled_is_a_usage_error_naming_it() -> None:
    from ragmorph.adapters import BM25Retriever

    class Local(BM25Retriever):  # a class defined in a function cannot be pickled
        pass

    with pytest.raises(UsageError, match=r"retriever 'local-bm25'.*cannot be pickled.*import string"):
        check({"local-bm25": Local}, WORLD.corpus, CASES[:1], jobs=2, **SETTINGS)


def test_a_retriever_defined_in_the_main_script_is_a_usage_error(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from ragmorph import UsageError
            from ragmorph.adapters import BM25Retriever
            from ragmorph.runner import check
            from ragmorph.worlds import demo_world

            class Mine(BM25Retriever):
                pass

            world = demo_world()
            try:
                check({"mine": Mine}, world.corpus, world.cases[:1], jobs=2, max_examples=2)
            except UsageError as error:
                print(error)
                sys.exit(2)
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "'mine' defined in the main script (__main__)" in done.stdout
    assert "module:attr" in done.stdout


CRASHING = '''
import os
import signal
from ragmorph.adapters import BM25Retriever


def factory(corpus):
    if os.environ.get("RAGMORPH_TEST_PARENT") != str(os.getpid()):
        # Dies the way a segfaulting native library would, only inside a worker (an os._exit is caught since
        # issue 31: it is an error of its unit, and the worker lives on).
        os.kill(os.getpid(), signal.SIGKILL)
    return BM25Retriever(corpus)
'''


def test_a_worker_that_dies_is_a_retriever_error_not_a_hang(
    world_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world_files
    adapter = tmp_path / "crashing.py"
    adapter.write_text(CRASHING, encoding="utf-8")
    monkeypatch.setenv("RAGMORPH_TEST_PARENT", str(os.getpid()))
    assert _cli(corpus, cases, tmp_path / "jobs.json", "--jobs", "2", retrievers=(f"{adapter}:factory",)) == EXIT_ERRORS
    err = capsys.readouterr().err
    assert "worker process" in err and f"exited with code {-signal.SIGKILL}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--executor", "threads"), "expected executor to be one of serial, processes, ray"),
        (("--address", "127.0.0.1:6379"), "expected address only with executor 'ray'"),
        (("--executor", "serial", "--jobs", "2"), "expected jobs=1 with executor 'serial'"),
        (("--jobs", "0"), "--jobs"),
    ],
)
def test_bad_executor_options_are_usage_errors(
    world_files: tuple[Path, Path], tmp_path: Path, extra: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world_files
    assert _cli(corpus, cases, tmp_path / "r.json", *extra) == EXIT_USAGE
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_the_cli_help_names_every_executor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in EXECUTORS)


def test_workers_stopped_early_leave_without_a_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """Fail-fast stops the workers by closing their input (no stop message): they end quietly, not with EOFError."""
    retrievers = {name: spec for name, spec in demo_retrievers().items() if name != "bm25"}  # the bug comes early
    report = check(retrievers, WORLD.corpus, CASES, fail_fast=True, jobs=2, **SETTINGS)
    assert report.to_dict()["summary"]["hard_failures"] >= 1
    assert "Traceback" not in capfd.readouterr().err  # the workers write to this process's stderr descriptor


def test_fail_fast_on_two_jobs_stops_where_a_serial_run_stops() -> None:
    retrievers = {name: spec for name, spec in demo_retrievers().items() if name != "bm25"}  # the bug comes early
    serial_report = check(retrievers, WORLD.corpus, CASES, fail_fast=True, **SETTINGS).to_dict()
    jobs_report = check(retrievers, WORLD.corpus, CASES, fail_fast=True, jobs=2, **SETTINGS).to_dict()
    # One failing unit (the post-filter's tenancy unit breaks filtered_equals_visible and full_k by one short list).
    failing = {(r["retriever"], r["case"], r["strategy"]) for r in serial_report["results"] if r["status"] == "fail"}
    assert len(failing) == 1 and serial_report["summary"]["hard_failures"] >= 1
    assert len(serial_report["results"]) < len(check(retrievers, WORLD.corpus, CASES[:1], **SETTINGS).results) * len(CASES)
    assert _comparable(jobs_report) == _comparable(serial_report)
