"""Outputs do only what was asked (issue 32 item 4): command-line outputs replace the config's, and `ragmorph
report` re-renders a saved report from that one run; through the real CLI and engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.io import write_cases, write_corpus
from ragmorph.reporting import render_html
from ragmorph.worlds import generate

LEAKY = '''
from ragmorph.adapters import BM25Retriever


def factory(corpus):
    """Applies the tenant filter after the cut to k: the tenancy family catches it."""
    index = BM25Retriever(corpus)

    def search(query, k, filters=None):
        hits = list(index.retrieve(query, k=k))
        if filters is not None and filters.tenant is not None:
            hits = [h for h in hits if corpus[h.id].tenant in (None, filters.tenant)]
        return hits

    return search
'''


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with data, a leaky adapter and a config whose [outputs] name JSON, HTML and replays."""
    world = generate(3, chunks=24, cases=3)
    write_corpus(world.corpus, tmp_path / "corpus.jsonl")
    write_cases(world.cases, tmp_path / "cases.jsonl")
    (tmp_path / "adapter.py").write_text(LEAKY, encoding="utf-8")
    (tmp_path / "ragmorph.toml").write_text(
        'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["tenancy"]\nks = [1, 5]\nmax_examples = 5\n'
        '[retrievers]\nleaky = "adapter.py:factory"\n'
        '[outputs]\njson = "main/report.json"\nhtml = "main/report.html"\nreplays = "main/replays"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_output_on_the_command_line_replaces_the_configs_outputs_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--json", "side/report.json"]) == EXIT_VIOLATIONS
    captured = capsys.readouterr()
    # The side run writes only what it was asked for: the main HTML report and replays are untouched.
    assert not (project / "main").exists()
    assert (project / "side" / "report.json").is_file()
    assert (project / "side" / "replays").is_dir()  # replays follow the report given, not the config's folder
    assert "ragmorph: note: outputs given on the command line replace the config's [outputs]" in captured.err
    assert "html = 'main/report.html'" in captured.err and "replays = 'main/replays'" in captured.err
    assert "wrote side/report.json" in captured.out and "report.html" not in captured.out


def test_a_replay_dir_alone_also_replaces_the_configs_reports(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--replay-dir", "side-replays"]) == EXIT_VIOLATIONS
    assert not (project / "main").exists()
    assert any((project / "side-replays").iterdir())
    assert "json = 'main/report.json'" in capsys.readouterr().err


def test_without_output_flags_the_configs_outputs_are_written_and_nothing_is_said(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run"]) == EXIT_VIOLATIONS
    assert (project / "main" / "report.json").is_file() and (project / "main" / "report.html").is_file()
    assert "note:" not in capsys.readouterr().err


def test_report_re_renders_a_saved_report_in_every_format_from_that_one_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--json", "saved.json"]) == EXIT_VIOLATIONS
    run_out = capsys.readouterr().out
    saved = (project / "saved.json").read_text(encoding="utf-8")
    code = main(["report", "saved.json", "--html", "again/out.html", "--junit", "again/junit.xml", "--json", "again/copy.json"])
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATIONS  # the exit code of the run that wrote it
    # The terminal summary is the run's own, and every file comes from the saved report.
    assert out.split("wrote ")[0] == run_out.split("wrote ")[0]
    html = (project / "again" / "out.html").read_text(encoding="utf-8")
    report = json.loads(saved)
    assert html == render_html(report)
    assert json.loads((project / "again" / "copy.json").read_text(encoding="utf-8")) == report
    junit = (project / "again" / "junit.xml").read_text(encoding="utf-8")
    assert "<failure" in junit
    assert (project / "saved.json").read_text(encoding="utf-8") == saved


def test_report_of_a_passing_run_exits_0_and_prints_only_the_summary(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--retriever", "ragmorph.adapters:BM25Retriever", "--json", "ok.json"]) == EXIT_OK
    capsys.readouterr()
    assert main(["report", "ok.json"]) == EXIT_OK
    assert "wrote" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "ok.json:1: expected JSON"),
        ('{"schema": "ragmorph.report/1"}', "ok.json"),
        ('{"schema": "ragmorph.compare/1", "summary": {}}', "ok.json"),
    ],
)
def test_report_refuses_a_bad_file_with_one_line_and_exit_2(
    content: str, message: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "ok.json").write_text(content, encoding="utf-8")
    assert main(["report", "ok.json", "--html", "out.html"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("ragmorph: error: ") and message in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert not (project / "out.html").exists()


def test_report_refuses_a_missing_file_and_an_output_that_is_the_input(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "nowhere.json"]) == EXIT_USAGE
    assert "expected an existing file for FILE" in capsys.readouterr().err
    assert main(["run", "--json", "saved.json"]) == EXIT_VIOLATIONS
    capsys.readouterr()
    assert main(["report", "saved.json", "--json", "saved.json"]) == EXIT_USAGE
    assert "ragmorph never overwrites its inputs" in capsys.readouterr().err
