"""`compare` reads the config and `--profile` as `run` does (issue 32 item 5), through the real CLI and engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, main
from ragmorph.io import write_cases, write_corpus
from ragmorph.worlds import generate

PAIR = ["--baseline", "ragmorph.adapters:BM25Retriever", "--candidate", "ragmorph.adapters:DenseRetriever"]


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    world = generate(3, chunks=24, cases=3)
    (tmp_path / "data").mkdir()
    write_corpus(world.corpus, tmp_path / "data" / "corpus.jsonl")
    write_cases(world.cases, tmp_path / "data" / "cases.jsonl")
    (tmp_path / "ragmorph.toml").write_text(
        'corpus = "data/corpus.jsonl"\ncases = "data/cases.jsonl"\nks = [1, 3]\nmax_examples = 3\n'
        'strategies = ["cutoff"]\n', encoding="utf-8",
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def test_compare_takes_the_world_and_budget_from_the_nearest_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *PAIR, "--json", "c.json"]) == EXIT_OK, capsys.readouterr()
    comparison = json.loads((project / "sub" / "c.json").read_text(encoding="utf-8"))
    assert comparison["manifest"]["ks"] == [1, 3] and comparison["manifest"]["cases"]["count"] == 3


def test_a_profile_on_the_command_line_beats_the_files_budget_keys(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *PAIR, "--profile", "smoke", "--json", "c.json"]) == EXIT_OK, capsys.readouterr()
    assert json.loads((project / "sub" / "c.json").read_text(encoding="utf-8"))["manifest"]["ks"] == [1, 5, 20]
    assert main(["compare", *PAIR, "--profile", "smoke", "--k", "5", "--json", "d.json"]) == EXIT_OK
    assert json.loads((project / "sub" / "d.json").read_text(encoding="utf-8"))["manifest"]["ks"] == [5]


def test_an_explicit_config_is_read_and_no_world_at_all_is_one_clear_error(
    project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # no config in it or above
    monkeypatch.chdir(elsewhere)
    assert main(["compare", *PAIR, "--config", str(project / "ragmorph.toml"), "--json", "c.json"]) == EXIT_OK
    assert json.loads((elsewhere / "c.json").read_text(encoding="utf-8"))["manifest"]["ks"] == [1, 3]
    capsys.readouterr()
    assert main(["compare", *PAIR]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("ragmorph: error: expected --corpus corpus.jsonl and --cases cases.jsonl, or a config file")
    assert "Traceback" not in err
