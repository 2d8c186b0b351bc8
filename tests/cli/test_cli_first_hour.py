"""A new user's first hour (issue 13): file adapters with sibling imports, replays that run as printed, readable
reports, Ragas and BEIR inputs; each through the real CLI and engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.io import write_cases, write_corpus
from ragmorph.worlds import generate

# A search module next to the adapter file, imported by its bare name: the layout that failed before.
HELPER = "from ragmorph.adapters import BM25Retriever\n"
LEAKY_ADAPTER = '''
from wiki_search import BM25Retriever


def factory(corpus):
    """Returns a plain search function (not a retriever object) that applies the tenant filter after the cut."""
    index = BM25Retriever(corpus)

    def search(query, k, filters=None):
        hits = list(index.retrieve(query, k=k))
        if filters is not None and filters.tenant is not None:
            hits = [h for h in hits if corpus[h.id].tenant in (None, filters.tenant)]
        return hits

    return search
'''


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A user's folder: data files and an adapter file that imports its sibling module."""
    world = generate(3, chunks=24, cases=3)
    write_corpus(world.corpus, tmp_path / "corpus.jsonl")
    write_cases(world.cases, tmp_path / "cases.jsonl")
    search = tmp_path / "search"
    search.mkdir()
    (search / "wiki_search.py").write_text(HELPER, encoding="utf-8")
    (search / "adapter.py").write_text(LEAKY_ADAPTER, encoding="utf-8")
    return tmp_path


def _console(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ""}
    return subprocess.run([sys.executable, "-m", "ragmorph.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def test_a_file_adapter_imports_its_sibling_module_and_its_plain_function_is_wrapped(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    code = main(["run", "--retriever", "search/adapter.py:factory", "--corpus", "corpus.jsonl", "--cases",
                 "cases.jsonl", "--strategies", "tenancy", "--max-examples", "10", "--json", "out/report.json"])
    out = capsys.readouterr().out
    # The planted leak is found; no unit errored because the factory returned a function, not an object.
    assert code == EXIT_VIOLATIONS, out
    report = json.loads((project / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["error"] == 0
    assert report["manifest"]["retrievers"][0]["description"] == "search/adapter.py:factory"
    assert "0x" not in json.dumps(report["manifest"])


def test_an_import_that_still_fails_names_the_module_and_the_folder_on_sys_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "search" / "other.py").write_text("from wiki_search_gone import BM25Retriever\n", encoding="utf-8")
    code = main(["run", "--retriever", f"{project / 'search' / 'other.py'}:factory", "--corpus",
                 str(project / "corpus.jsonl"), "--cases", str(project / "cases.jsonl")])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "no module named 'wiki_search_gone'" in err and str(project / "search") in err and "Traceback" not in err


def test_the_printed_replay_command_of_a_file_retriever_runs_from_another_folder(project: Path) -> None:
    done = _console("run", "--retriever", "search/adapter.py:factory", "--corpus", "corpus.jsonl", "--cases",
                    "cases.jsonl", "--strategies", "tenancy", "--max-examples", "10", "--replay-dir", "replays",
                    cwd=project)
    assert done.returncode == EXIT_VIOLATIONS, done.stdout + done.stderr
    printed = [line.split("replay  ", 1)[1] for line in done.stdout.splitlines() if line.startswith("  replay  ragmorph")]
    assert printed, done.stdout
    saved = json.loads((project / printed[0].split()[-1]).read_text(encoding="utf-8"))
    assert saved["retriever"]["spec"] == "search/adapter.py:factory"
    assert saved["retriever"]["file"] == f"{(project / 'search' / 'adapter.py').resolve()}:factory"
    # As printed, from the project folder: the bug reproduces (exit 1).
    again = _console(*printed[0].split()[1:], cwd=project)
    assert again.returncode == EXIT_VIOLATIONS and "reproduced" in again.stdout, again.stdout + again.stderr
    # From elsewhere, the relative spec no longer resolves and the absolute adapter path is used instead.
    elsewhere = _console("replay", str(project / printed[0].split()[-1]), cwd=project.parent)
    assert elsewhere.returncode == EXIT_VIOLATIONS, elsewhere.stdout + elsewhere.stderr
