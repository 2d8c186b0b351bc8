"""The config file, `ragmorph init` and the run options around it (issue 13), through the real CLI and engine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.io import write_cases, write_corpus
from ragmorph.worlds import generate


def _console(*argv: str, cwd: Path, module: str = "ragmorph.cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": ""})


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    generated = generate(3, chunks=24, cases=3)
    write_corpus(generated.corpus, tmp_path / "corpus.jsonl")
    write_cases(generated.cases, tmp_path / "cases.jsonl")
    return tmp_path


def _config(folder: Path, text: str, name: str = "ragmorph.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_init_then_the_suggested_commands_run_on_the_sample_data(tmp_path: Path) -> None:
    done = _console("init", "rag", cwd=tmp_path)
    assert done.returncode == EXIT_OK, done.stderr
    suggested = [line.strip().split(" && ", 1)[1] for line in done.stdout.splitlines() if " && " in line]
    assert suggested == ["ragmorph run --profile smoke", "ragmorph run", "pytest test_ragmorph.py"]
    folder = tmp_path / "rag"
    for command in suggested[:2]:
        ran = _console(*command.split()[1:], cwd=folder)
        assert ran.returncode == EXIT_OK, ran.stdout + ran.stderr
    assert json.loads((folder / "ragmorph-report" / "report.json").read_text(encoding="utf-8"))["summary"]["pass"] > 0
    assert (folder / "ragmorph-report" / "report.html").is_file()
    tested = _console("test_ragmorph.py", "-q", "-p", "no:cacheprovider", cwd=folder, module="pytest")
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert " passed" in tested.stdout


def test_run_without_flags_runs_the_config_and_flags_override_its_keys(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(world, 'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["tenancy"]\nks = [1, 3]\n'
                   'max_examples = 3\n[retrievers]\nbm25 = "ragmorph.adapters:BM25Retriever"\n'
                   '[outputs]\njson = "out/report.json"\n')
    monkeypatch.chdir(world)
    assert main(["run"]) == EXIT_OK, capsys.readouterr().out
    report = json.loads((world / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["manifest"]["strategies"] == ["tenancy"] and report["manifest"]["settings"]["ks"] == [1, 3]
    assert main(["run", "--strategies", "cutoff", "--k", "5", "--json", "other.json"]) == EXIT_OK
    report = json.loads((world / "other.json").read_text(encoding="utf-8"))
    assert report["manifest"]["strategies"] == ["cutoff"] and report["manifest"]["settings"]["ks"] == [5]
    assert report["manifest"]["settings"]["max_examples"] == 3, "a key the flags do not name still applies"


def test_corpus_or_cases_on_the_command_line_overrides_only_that_key(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, either flag replaced the file's whole world, so the other key was lost: "got no corpus", exit 2.
    _config(world, 'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["cutoff"]\nmax_examples = 2\n'
                   '[retrievers]\nbm25 = "ragmorph.adapters:BM25Retriever"\n')
    lines = (world / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    (world / "one.jsonl").write_text(lines[0] + "\n", encoding="utf-8")
    monkeypatch.chdir(world)
    assert main(["run", "--cases", "one.jsonl", "--json", "one.json"]) == EXIT_OK, capsys.readouterr().err
    assert json.loads((world / "one.json").read_text(encoding="utf-8"))["manifest"]["cases"]["count"] == 1
    assert main(["run", "--corpus", "corpus.jsonl", "--json", "all.json"]) == EXIT_OK, capsys.readouterr().err
    assert json.loads((world / "all.json").read_text(encoding="utf-8"))["manifest"]["cases"]["count"] == len(lines)


def test_pyproject_tool_table_is_found_from_a_subfolder(world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _config(world, '[project]\nname = "x"\n[tool.ragmorph]\ncorpus = "corpus.jsonl"\ncases = "cases.jsonl"\n'
                   'strategies = ["cutoff"]\nprofile = "smoke"\n[tool.ragmorph.retrievers]\n'
                   'bm25 = "ragmorph.adapters:BM25Retriever"\n', name="pyproject.toml")
    (world / "sub").mkdir()
    monkeypatch.chdir(world / "sub")
    assert main(["run"]) == EXIT_OK
    assert "k 1,5,20 · max_examples 5" in capsys.readouterr().out, "the smoke profile's budget"
    (world / "pyproject.toml").write_text(
        (world / "pyproject.toml").read_text(encoding="utf-8").replace('profile = "smoke"', "ks = [3]\nmax_examples = 2"),
        encoding="utf-8",
    )
    assert main(["run"]) == EXIT_OK
    assert "k 3 · max_examples 2" in capsys.readouterr().out, "the file's keys"
    assert main(["run", "--profile", "smoke"]) == EXIT_OK
    assert "k 1,5,20 · max_examples 5" in capsys.readouterr().out, "a profile flag beats the file's budget keys"
    assert main(["run", "--profile", "smoke", "--k", "3"]) == EXIT_OK
    assert "k 3 · max_examples 5" in capsys.readouterr().out, "an explicit flag beats the profile flag"


def test_the_scale_profile_runs_its_family_over_the_files_strategies(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(world, 'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["tenancy"]\n'
                   '[retrievers]\ndense = "ragmorph.adapters:DenseRetriever"\n')
    monkeypatch.chdir(world)
    assert main(["run", "--profile", "scale", "--json", "scale.json"]) == EXIT_OK, capsys.readouterr().out
    report = json.loads((world / "scale.json").read_text(encoding="utf-8"))
    assert report["manifest"]["strategies"] == ["scale"] and report["manifest"]["settings"]["ks"] == [10]
    assert {r["relation"] for r in report["results"]} == {"scale.full_k"}
    assert main(["run", "--profile", "scale", "--strategies", "cutoff", "--json", "cut.json"]) == EXIT_OK
    assert json.loads((world / "cut.json").read_text(encoding="utf-8"))["manifest"]["strategies"] == ["cutoff"]


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ('corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nmax_exmples = 3\n', "max_exmples", "unknown key"),
        ('ks = "1,3"\n', "ks", "expected a non-empty list of positive integers"),
        ('[retrievers]\nmine = { traits = ["lexical"] }\n', "retrievers.mine.spec", "import spec"),
        ('[retrievers]\nmine = { spec = "a:b", trait = [] }\n', "retrievers.mine.trait", "unknown key"),
        ('profile = "quick"\n', "profile", "expected one of default, smoke"),
        ('budget = "half"\n', "budget", "expected one of adaptive, full, got 'half'"),
        ('[outputs]\nhtml = 3\n', "outputs.html", "expected a non-empty string"),
        ('corpus = [\n', None, "expected valid TOML"),
        ('[retrievers]\nmine = { spec = "a:b", options = { api_key = "sk-1" } }\n', "retrievers.mine.options.api_key",
         "expected no secrets in options"),
    ],
)
def test_a_bad_config_exits_2_naming_the_file_and_the_key(
    world: Path, text: str, key: str | None, message: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _config(world, text)
    monkeypatch.chdir(world)
    assert main(["run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"ragmorph: error: {path}") and message in err and "Traceback" not in err, err
    if key is not None:
        assert f"field {key!r}" in err, err


def test_a_bad_key_in_pyproject_names_the_tool_table(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(world, '[tool.ragmorph]\nseed = "zero"\n', name="pyproject.toml")
    assert main(["run", "--config", str(path)]) == EXIT_USAGE
    assert "field 'tool.ragmorph.seed': expected an integer, got 'zero'" in capsys.readouterr().err


def test_traits_come_from_the_config_and_from_the_traits_option(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plain function retriever declares no traits itself: the lexical relation needs them declared.
    (world / "search.py").write_text(
        "from ragmorph.adapters import BM25Retriever\n\ndef factory(corpus):\n    index = BM25Retriever(corpus)\n"
        "    return lambda query, k, filters=None: index.retrieve(query, k=k, filters=filters)\n",
        encoding="utf-8",
    )
    _config(world, 'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["distractors"]\nmax_examples = 3\n'
                   '[retrievers]\nplain = "search.py:factory"\ntagged = { spec = "search.py:factory", traits = ["lexical"] }\n'
                   '[outputs]\njson = "r.json"\n')
    monkeypatch.chdir(world)

    def lacks_trait(name: str) -> bool:
        report = json.loads((world / "r.json").read_text(encoding="utf-8"))
        return all("assumes a retriever with trait(s) ['lexical']" in (r["reason"] or "") for r in report["results"]
                   if r["retriever"] == name and r["relation"] == "distractors.unrelated_below_gold")

    main(["run"])
    assert lacks_trait("plain") and not lacks_trait("tagged")
    main(["run", "--traits", "plain=lexical"])
    assert not lacks_trait("plain")
    assert main(["run", "--traits", "nobody=lexical"]) == EXIT_USAGE
    assert "expected --traits NAME to name a retriever among ['plain', 'tagged']" in capsys.readouterr().err


def test_fail_fast_stops_at_the_first_hard_violation(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--retriever", "ragmorph.demo:PostFilteredPipeline", "--retriever", "ragmorph.adapters:BM25Retriever",
            "--corpus", str(world / "corpus.jsonl"), "--cases", str(world / "cases.jsonl"), "--strategies", "tenancy",
            "--max-examples", "10", "--replay-dir", str(world / "replays"), "--json", str(world / "r.json")]
    assert main([*argv, "--fail-fast"]) == EXIT_VIOLATIONS
    out = capsys.readouterr().out
    stopped = re.search(r"stopped at the first hard violation \(fail fast\): (\d) of 6 units run", out)
    assert stopped and int(stopped.group(1)) < 6, out
    report = json.loads((world / "r.json").read_text(encoding="utf-8"))
    assert {r["retriever"] for r in report["results"]} == {"PostFilteredPipeline"}
    assert main(argv) == EXIT_VIOLATIONS
    assert "stopped" not in capsys.readouterr().out


def test_ragas_rows_and_beir_folders_run_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"user_input": "How long is parental leave?", "retrieved_context_ids": ["hr-1", "it-1"],
         "retrieved_contexts": ["Parental leave lasts sixteen weeks.", "Laptops are replaced every three years."],
         "reference_context_ids": ["hr-1"], "reference_contexts": ["Parental leave lasts sixteen weeks."]},
        {"user_input": "When are laptops replaced?", "retrieved_context_ids": ["it-1"],
         "retrieved_contexts": ["Laptops are replaced every three years."], "reference_context_ids": ["it-1"],
         "reference_contexts": ["Laptops are replaced every three years."]},
    ]
    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    common = ["--retriever", "ragmorph.adapters:BM25Retriever", "--strategies", "cutoff", "--max-examples", "3"]
    assert main(["run", *common, "--cases", str(ragas), "--format", "ragas", "--json", str(tmp_path / "r.json")]) == EXIT_OK
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["manifest"]["corpus"]["chunks"] == 2 and report["manifest"]["cases"]["count"] == 2
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": text}) + "\n" for i, text in
                enumerate(["parental leave lasts sixteen weeks", "laptops are replaced every three years"])),
        encoding="utf-8",
    )
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "parental leave"}) + "\n", encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n", encoding="utf-8")
    assert main(["run", *common, "--beir", str(beir), "--json", str(tmp_path / "b.json")]) == EXIT_OK
    report = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert report["manifest"]["corpus"]["chunks"] == 2 and report["manifest"]["cases"]["count"] == 1
    capsys.readouterr()
    assert main(["run", *common, "--beir", str(beir), "--corpus", str(ragas)]) == EXIT_USAGE
    assert "either a BEIR folder or corpus and cases" in capsys.readouterr().err


def test_the_readme_config_runs_as_shown_in_an_init_folder(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```toml\n(.*?)```", readme, re.S)
    assert shown, "README shows a config file"
    assert _console("init", "rag", cwd=tmp_path).returncode == EXIT_OK
    folder = tmp_path / "rag"
    (folder / "ragmorph.toml").write_text(shown.group(1), encoding="utf-8")
    done = _console("run", cwd=folder)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    report = json.loads((folder / "ragmorph-report" / "report.json").read_text(encoding="utf-8"))
    described = {r["name"]: r["description"] for r in report["manifest"]["retrievers"]}
    assert described["mine"] == "ragmorph_adapter.py:factory" and "'k1': 1.2" in described["bm25"]
    assert report["manifest"]["settings"]["ks"] == [1, 3, 5, 10], "the file's ks beat the smoke profile's"


def test_the_budget_comes_from_the_file_and_the_flag_beats_it(world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _config(world, 'corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nstrategies = ["repeat"]\nbudget = "full"\n'
                   'max_examples = 12\n[retrievers]\nbm25 = "ragmorph.adapters:BM25Retriever"\n')
    monkeypatch.chdir(world)
    reports = {}
    for name, flags in (("file", []), ("flag", ["--budget", "adaptive"])):
        assert main(["run", *flags, "--json", f"{name}.json"]) == EXIT_OK, capsys.readouterr().out
        reports[name] = json.loads((world / f"{name}.json").read_text(encoding="utf-8"))
    assert [reports[n]["manifest"]["settings"]["budget"] for n in ("file", "flag")] == ["full", "adaptive"]
    # The repeat family's adaptive budget (10 examples) is below the 12 the full budget draws.
    examples = {n: max(r["examples"] for r in reports[n]["results"]) for n in reports}
    assert examples["flag"] < examples["file"] == 12, examples
    assert main(["run", "--budget", "half"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--budget: expected one of adaptive, full, got 'half' (str)" in err and "Traceback" not in err, err
