"""No lost or damaged file: output paths checked before any work, atomic writes, inputs never overwritten.

Items 3, 6, 7, 9, 12, 14 and 15 of issue 12.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, main
from ragmorph.reporting import write_html, write_json, write_junit
from reliability.worldfiles import run_args

COUNTING = "reliability.faults:raises"  # never called when a path check fails first


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


def test_empty_cases_are_an_input_error(world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, cases = world
    cases.write_text("\n  \n", encoding="utf-8")
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever")) == EXIT_USAGE
    assert f"{cases}: expected at least one case, got none" in _err(capsys)
    corpus.write_text("", encoding="utf-8")
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever")) == EXIT_USAGE


def test_metrics_with_no_judged_query_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 1.0 t\n", encoding="utf-8")
    (tmp_path / "qrels.trec").write_text("", encoding="utf-8")
    assert main(["metrics", "--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.trec")]) == EXIT_USAGE
    assert "expected at least one judged query" in _err(capsys)


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "-inf"])
def test_timeouts_threads_cannot_wait_for_are_refused_when_parsing(
    world: tuple[Path, Path], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_args(world, COUNTING, "--timeout", value)) == EXIT_USAGE
    assert "argument --timeout: expected" in _err(capsys)


@pytest.mark.parametrize("value", ["inf", "1e300", "nan"])
def test_a_config_file_timeout_threads_cannot_wait_for_is_refused_when_reading_it(
    world: tuple[Path, Path], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world
    config = corpus.parent / "ragmorph.toml"
    config.write_text(f'corpus = "{corpus.name}"\ncases = "{cases.name}"\ntimeout = {value}\n'
                      f'[retrievers]\nmine = "{COUNTING}"\n', encoding="utf-8")
    assert main(["run", "--config", str(config)]) == EXIT_USAGE
    assert "timeout" in _err(capsys)


def test_a_folder_given_as_corpus_says_folder(world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, cases = world
    argv = run_args((corpus.parent, cases), COUNTING)
    assert main(argv) == EXIT_USAGE
    err = _err(capsys)
    assert "expected a file for --corpus" in err and "which is a folder" in err


@pytest.mark.parametrize(
    ("option", "make", "message"),
    [
        ("--json", lambda base: base.mkdir() or base, "expected --json to name a file"),
        ("--html", lambda base: base.mkdir() or base, "expected --html to name a file"),
        ("--junit", lambda base: (base.write_text("x") and None) or base / "junit.xml", "is a file"),
        ("--replay-dir", lambda base: (base.write_text("x") and None) or base, "expected --replay-dir to name a folder"),
    ],
)
def test_unwritable_output_paths_fail_before_the_first_retriever_call(
    world: tuple[Path, Path], tmp_path: Path, option: str, make, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = make(tmp_path / "target")
    # The retriever raises on every call: exit 2 (not 3) shows no call was made.
    assert main(run_args(world, COUNTING, option, str(target))) == EXIT_USAGE
    assert message in _err(capsys)


def test_an_output_that_is_a_hard_link_to_an_input_is_refused(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _ = world
    before = corpus.read_bytes()
    link = tmp_path / "report.json"
    os.link(corpus, link)
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever", "--json", str(link))) == EXIT_USAGE
    assert "which is the --corpus input" in _err(capsys)
    assert corpus.read_bytes() == before


def test_an_output_that_is_the_retriever_file_is_refused(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = tmp_path / "adapter.py"
    adapter.write_text("from ragmorph.adapters import BM25Retriever as factory\n", encoding="utf-8")
    assert main(run_args(world, f"{adapter}:factory", "--html", str(adapter))) == EXIT_USAGE
    assert "which is the --retriever" in _err(capsys)


def test_two_outputs_naming_one_file_are_refused(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x"
    argv = run_args(world, "ragmorph.adapters:BM25Retriever", "--json", str(out), "--html", str(tmp_path / "." / "x"))
    assert main(argv) == EXIT_USAGE
    assert "expected --json and --html to name different files" in _err(capsys)
    assert not out.exists()


def test_metrics_json_never_touches_an_unrelated_tmp_file_or_the_input_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "myrun.tmp"
    run.write_text("q1 Q0 a 1 1.0 t\n", encoding="utf-8")
    (tmp_path / "qrels.trec").write_text("q1 0 a 1\n", encoding="utf-8")
    unrelated = tmp_path / "out.json.tmp"
    unrelated.write_text("keep me", encoding="utf-8")
    for target in (tmp_path / "myrun", tmp_path / "out.json"):
        argv = ["metrics", "--run", str(run), "--qrels", str(tmp_path / "qrels.trec"), "--json", str(target)]
        assert main(argv) == EXIT_OK
        assert json.loads(target.read_text(encoding="utf-8"))["schema"] == "ragmorph.metrics/1"
    assert run.read_text(encoding="utf-8") == "q1 Q0 a 1 1.0 t\n"
    assert unrelated.read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["myrun", "myrun.tmp", "out.json", "out.json.tmp", "qrels.trec"]


_FSIZE_SCRIPT = """
import resource, sys
from ragmorph.reporting import {writer}
from support.report_samples import {sample}
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
try:
    {writer}({sample}(), sys.argv[1])
except OSError as error:
    print("refused:", error.strerror)
"""


@pytest.mark.parametrize("writer", ["write_json", "write_html", "write_junit"])
def test_a_failed_report_write_keeps_the_previous_report_whole(tmp_path: Path, writer: str) -> None:
    from support.report_samples import sample_report

    sample = "sample_report"
    target = tmp_path / "report.out"
    {"write_json": write_json, "write_html": write_html, "write_junit": write_junit}[writer](sample_report(), target)
    good = target.read_bytes()
    assert len(good) > 1000, "the sample report must exceed the file-size limit used below"
    script = _FSIZE_SCRIPT.format(writer=writer, sample=sample)
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, cwd=tests,
                          env={**os.environ, "PYTHONPATH": str(tests)}, timeout=120)
    assert "refused: File too large" in done.stdout, done.stderr
    assert target.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.out"]  # no temporary file left behind


def test_strategies_into_a_closed_pipe_exits_quietly() -> None:
    done = subprocess.run(
        f"{sys.executable} -c 'import sys; from ragmorph.cli import main; sys.exit(main([\"strategies\"]))' | head -1",
        shell=True, capture_output=True, text=True, timeout=120,
    )
    assert done.stdout.startswith("family")
    assert done.stderr == ""


def test_a_file_retriever_error_names_the_file_not_an_internal_module(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = tmp_path / "adapter.py"
    adapter.write_text("answer = 42\n", encoding="utf-8")
    assert main(run_args(world, f"{adapter}:answer")) == EXIT_USAGE
    err = _err(capsys)
    assert str(adapter) in err and "_ragmorph_file_" not in err
