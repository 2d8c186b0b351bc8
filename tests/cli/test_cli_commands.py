"""Every CLI command end to end on real files and the real engine: outputs, report files and exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.demo import DEMO_MAX_EXAMPLES
from ragmorph.worlds import generate

ROOT = Path(__file__).resolve().parents[2]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small generated world as native files (tenants, superseded versions, several cases)."""
    folder = tmp_path_factory.mktemp("world")
    world = generate(3, chunks=24, cases=3)
    corpus = _write_jsonl(folder / "corpus.jsonl", [chunk.to_dict() for chunk in world.corpus])
    cases = _write_jsonl(folder / "cases.jsonl", [case.to_dict() for case in world.cases])
    return corpus, cases


def _run(*argv: str) -> list[str]:
    return ["run", *argv, "--max-examples", "3", "--k", "1,3,5"]


# ------------------------------------------------------------------------------------------------ strategies


def test_strategies_lists_every_relation_of_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    from ragmorph.strategies import CATALOG

    assert main(["strategies"]) == EXIT_OK
    out = capsys.readouterr().out
    for relation in CATALOG:
        assert f"{relation.name}: {relation.summary}" in out
    assert out.splitlines()[0].split() == ["family", "relation", "direction", "severity", "default"]


def test_strategies_json_is_the_catalog_as_data(capsys: pytest.CaptureFixture[str]) -> None:
    from ragmorph.strategies import CATALOG

    assert main(["strategies", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "ragmorph.catalog/1"
    assert [row["name"] for row in data["relations"]] == [relation.name for relation in CATALOG]
    for row in data["relations"]:
        assert row["severity"] in ("hard", "soft")
        assert isinstance(row["assumptions"], list) and isinstance(row["default"], bool)


# --------------------------------------------------------------------------------------------------- metrics

QRELS = "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\nq2 0 d9 0\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d4 2 2.0 t\nq1 Q0 d2 3 1.0 t\nq2 Q0 d5 1 2.0 t\nq2 Q0 d3 2 1.0 t\n"


def test_metrics_over_trec_files_prints_macro_micro_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "qrels.trec"
    run = tmp_path / "run.trec"
    qrels.write_text(QRELS, encoding="utf-8")
    run.write_text(RUN, encoding="utf-8")
    out_json = tmp_path / "out" / "metrics.json"
    code = main(["metrics", "--run", str(run), "--qrels", str(qrels), "--k", "1,3", "--metrics", "P,R,Hit",
                 "--json", str(out_json)])
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert "k=1" in out and "k=3" in out and "counts: queries=2" in out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["schema"] == "ragmorph.metrics/1"
    metrics = data["metrics"]
    # q1 top1 d1 relevant, q2 top1 d5 not: P@1 = (1 + 0) / 2; both find all their relevant docs by rank 3.
    assert metrics["P@1"] == {"macro": 0.5, "micro": 0.5, "queries": 2, "errored": 0}
    assert metrics["R@3"]["macro"] == 1.0
    assert metrics["Hit@1"]["macro"] == 0.5
    assert data["counts"]["queries"] == 2


def test_metrics_over_native_files_adds_group_recall_and_governance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "a1", "text": "acme leave policy", "tenant": "acme"},
        {"id": "a2", "text": "acme leave policy v2", "tenant": "acme"},
        {"id": "g1", "text": "globex leave policy", "tenant": "globex"},
    ])
    cases = _write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "q1", "query": "leave policy", "tenant": "acme", "evidence": [["a1", "a2"]]},
    ])
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 g1 1 2.0 t\nq1 Q0 a2 2 1.0 t\n", encoding="utf-8")
    code = main(["metrics", "--run", str(run), "--corpus", str(corpus), "--cases", str(cases), "--k", "2",
                 "--json", str(tmp_path / "m.json")])
    assert code == EXIT_OK
    metrics = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["GroupR@2"]["macro"] == 1.0
    assert metrics["R@2"]["macro"] == 0.5
    assert metrics["Unauthorized@2"]["macro"] == 1.0
    assert "Unauthorized@2" in capsys.readouterr().out


def test_metrics_needs_a_source_of_relevance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.trec"
    run.write_text(RUN, encoding="utf-8")
    assert main(["metrics", "--run", str(run)]) == EXIT_USAGE
    assert "expected --qrels QRELS (TREC) or --cases" in capsys.readouterr().err


def test_metrics_refuses_governance_measures_on_trec_qrels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q").write_text(QRELS, encoding="utf-8")
    (tmp_path / "r").write_text(RUN, encoding="utf-8")
    assert main(["metrics", "--run", str(tmp_path / "r"), "--qrels", str(tmp_path / "q"), "--metrics", "GroupR"]) == EXIT_USAGE
    assert "--cases cases.jsonl" in capsys.readouterr().err


def test_metrics_bad_run_line_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels.trec").write_text(QRELS, encoding="utf-8")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 high t\n", encoding="utf-8")
    code = main(["metrics", "--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.trec")])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith(f"ragmorph: error: {tmp_path / 'run.trec'}:2")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_metrics_never_writes_over_an_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels.trec").write_text(QRELS, encoding="utf-8")
    (tmp_path / "run.trec").write_text(RUN, encoding="utf-8")
    code = main(["metrics", "--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.trec"),
                 "--json", str(tmp_path / "run.trec")])
    assert code == EXIT_USAGE
    assert "which is the --run input" in capsys.readouterr().err
    assert (tmp_path / "run.trec").read_text(encoding="utf-8") == RUN


# ------------------------------------------------------------------------------------------------------- run


def test_run_a_correct_retriever_exits_0_and_writes_every_report(
    world_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world_files
    before = corpus.read_bytes(), cases.read_bytes()
    reports = tmp_path / "reports"
    code = main(_run("--retriever", "bm25=ragmorph.adapters:BM25Retriever", "--corpus", str(corpus),
                     "--cases", str(cases), "--strategies", "cutoff,tenancy",
                     "--json", str(reports / "r.json"), "--junit", str(reports / "j.xml"), "--html", str(reports / "r.html")))
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    report = json.loads((reports / "r.json").read_text(encoding="utf-8"))
    assert report["schema"] == "ragmorph.report/1"
    assert {r["retriever"] for r in report["results"]} == {"bm25"}
    assert {r["strategy"] for r in report["results"]} == {"cutoff", "tenancy"}
    assert report["summary"]["exit_code"] == 0
    assert ET.parse(reports / "j.xml").getroot().iter("testcase")
    assert "<html" in (reports / "r.html").read_text(encoding="utf-8").lower()
    assert f"wrote {reports / 'r.json'}" in out
    assert (corpus.read_bytes(), cases.read_bytes()) == before


def test_run_the_planted_bug_exits_1_and_replay_tracks_the_fix(
    world_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world_files
    replays = tmp_path / "replays"
    code = main(["run", "--retriever", "ragmorph.demo:PostFilteredPipeline", "--corpus", str(corpus), "--cases",
                 str(cases), "--strategies", "tenancy", "--max-examples", "10", "--replay-dir", str(replays)])
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATIONS, out
    files = sorted(replays.rglob("*.json"))
    assert files, "a violation writes a replay file"
    assert main(["replay", str(files[0])]) == EXIT_VIOLATIONS
    assert "reproduced" in capsys.readouterr().out
    assert main(["replay", str(files[0]), "--retriever", "ragmorph.adapters:BM25Retriever"]) == EXIT_OK
    assert "fixed" in capsys.readouterr().out


def test_run_retriever_errors_exit_3(world_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, cases = world_files
    source = tmp_path / "broken.py"
    source.write_text(
        "class Broken:\n"
        "    def __init__(self, corpus):\n        pass\n"
        "    def retrieve(self, query, *, k, filters=None):\n        raise ConnectionError('index server down')\n",
        encoding="utf-8",
    )
    code = main(_run("--retriever", f"{source}:Broken", "--corpus", str(corpus), "--cases", str(cases),
                     "--strategies", "cutoff"))
    assert code == EXIT_ERRORS, capsys.readouterr().out


def test_run_bad_corpus_line_is_one_line_naming_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "c", "text": 42}\n', encoding="utf-8")
    cases = _write_jsonl(tmp_path / "cases.jsonl", [{"id": "q", "query": "x", "evidence": [["a"]]}])
    code = main(_run("--retriever", "ragmorph.adapters:BM25Retriever", "--corpus", str(corpus), "--cases", str(cases)))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith(f"ragmorph: error: {corpus}:3: field 'text': ")
    assert "42 (int)" in err and err.count("\n") == 1


def test_run_case_citing_an_unknown_chunk_names_the_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x"}])
    cases = _write_jsonl(tmp_path / "cases.jsonl", [{"id": "q9", "query": "x", "evidence": [["zz"]]}])
    code = main(_run("--retriever", "ragmorph.adapters:BM25Retriever", "--corpus", str(corpus), "--cases", str(cases)))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "q9" in err and "zz" in err and f"{cases}:1" in err


def test_run_unknown_retriever_module_is_a_usage_error(world_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, cases = world_files
    assert main(_run("--retriever", "nosuchpkg.search:factory", "--corpus", str(corpus), "--cases", str(cases))) == EXIT_USAGE
    assert "nosuchpkg" in capsys.readouterr().err


def test_replay_of_a_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "gone.json")]) == EXIT_USAGE
    assert "expected an existing file for FILE" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- examples as written


@pytest.mark.integration
def test_the_plain_function_example_runs_as_written_through_the_console_script(tmp_path: Path) -> None:
    adapter = ROOT / "examples" / "adapters" / "plain_function.py"
    if not adapter.exists():
        pytest.fail(f"{adapter} is missing: the CI example and README rely on it")
    done = subprocess.run(
        [sys.executable, "-m", "ragmorph.cli", "run", "--retriever", f"plain={adapter}:factory",
         "--corpus", str(ROOT / "examples/data/corpus.jsonl"), "--cases", str(ROOT / "examples/data/cases.jsonl"),
         "--max-examples", "3", "--k", "1,3,5", "--junit", str(tmp_path / "junit.xml")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode in (EXIT_OK, EXIT_VIOLATIONS), done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "junit.xml").exists()


def test_the_ci_workflow_commands_parse_and_name_existing_files() -> None:
    import shlex

    import yaml

    from ragmorph.cli import build_parser

    workflow = yaml.safe_load((ROOT / "examples/ci/github-workflow.yml").read_text(encoding="utf-8"))
    commands = [step["run"] for step in workflow["jobs"]["ragmorph"]["steps"] if "run" in step]
    ragmorph_runs = [shlex.split(c) for c in commands if c.startswith("ragmorph ")]
    assert ragmorph_runs and any("--junit" in argv for argv in ragmorph_runs)
    for argv in ragmorph_runs:
        args = build_parser().parse_args(argv[1:])
        for path in (args.corpus, args.cases):
            assert (ROOT / path).is_file(), path
        specs = getattr(args, "retriever", None) or [getattr(args, "candidate")]
        for spec in specs:
            target = spec.partition("=")[2].rpartition(":")[0]
            assert not target.endswith(".py") or (ROOT / target).is_file(), target
    assert any("pytest examples/pytest" in c for c in commands)


# ------------------------------------------------------------------------------------------------------ demo


@pytest.mark.slow
def test_demo_end_to_end_catches_the_planted_bug(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragmorph.cli", "demo", "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    out = done.stdout
    # Filtering after the cut to k drops visible chunks and returns nothing of another tenant: an under-return
    # (a contract breach) first, never titled a tenant leak.
    assert "1. contract breach · bm25-postfilter · " in out and "tenant leak" not in out
    assert "[1] contract breach" in out and "hard violation · bm25-postfilter · tenancy.filtered_equals_visible" in out
    assert "ragmorph replay " in out
    # The demo prints exactly what `ragmorph run` prints for the same retrievers, world, seed and budget.
    world = tmp_path / "report" / "world"
    run = subprocess.run(
        [sys.executable, "-m", "ragmorph.cli", "run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever",
         "--retriever", "dense=ragmorph.adapters:DenseRetriever",
         "--retriever", "bm25-postfilter=ragmorph.demo:PostFilteredPipeline", "--corpus", str(world / "corpus.jsonl"),
         "--cases", str(world / "cases.jsonl"), "--max-examples", str(DEMO_MAX_EXAMPLES), "--seed", "0"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert run.returncode == EXIT_VIOLATIONS, run.stdout + run.stderr

    def outline(text: str) -> list[str]:
        # The layout and the verdicts, not case lists or counts: the filters family draws its metadata filters
        # in key order, which differs between the in-memory world and the one read back from JSONL.
        kept = []
        for line in text.splitlines():
            if line.startswith(("ragmorph 0.1.0", "FAIL ")) or line.endswith("worst first (group = retriever x relation):"):
                kept.append(line)
            elif re.match(r"  \d+\. ", line):
                kept.append(" · ".join(line.split(" · ")[:3]))
            elif re.match(r"\[\d+\] ", line):
                kept.append(line.split(";")[0])
        return kept

    shown = outline(out)
    assert shown == outline(run.stdout), out
    assert len([line for line in shown if line.startswith("FAIL ")]) >= 2
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["hard_failures"] >= 1
    assert {r["retriever"] for r in report["results"] if r["status"] == "fail" and r["severity"] == "hard"} == {
        "bm25-postfilter"
    }
    assert (tmp_path / "report" / "report.html").stat().st_size > 1000
    replay_path = out.split("ragmorph replay ", 1)[1].split()[0]
    again = subprocess.run([sys.executable, "-m", "ragmorph.cli", "replay", replay_path],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == EXIT_VIOLATIONS, again.stdout + again.stderr


def test_the_pipeline_example_names_the_packer_that_cut_the_supporting_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # README's examples/pipeline: evidence spans in cases.jsonl, a declared Pipeline, stage attribution in every format.
    monkeypatch.chdir(tmp_path)  # the default replay folder goes next to the report, here
    folder = ROOT / "examples" / "pipeline"
    files = ["--corpus", str(folder / "corpus.jsonl"), "--cases", str(folder / "cases.jsonl"), "--strategies", "cutoff"]
    assert main(["run", "--retriever", f"{folder / 'pipeline.py'}:PIPELINE", *files]) == EXIT_OK
    capsys.readouterr()
    reports = ["--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"), "--junit", str(tmp_path / "r.xml")]
    assert main(["run", "--retriever", f"{folder / 'pipeline.py'}:EVEN_SHARE", *files, *reports]) == EXIT_VIOLATIONS
    out = capsys.readouterr().out
    assert "  stage         evidence present after Reranker, lost in EvenSharePacker: 'hr-12#3' truncated at 30 tokens" in out
    assert "SpanR(cover=all)@1->@2  1.000 -> 0.000" in out
    failed = [r for r in json.loads((tmp_path / "r.json").read_text())["results"] if r["status"] == "fail"]
    assert {r["case"] for r in failed} == {"leave-start", "remote-days"}
    assert {r["violation"]["stages"]["culprit"] for r in failed} == {"EvenSharePacker"}
    assert "lost in EvenSharePacker" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "lost in EvenSharePacker" in (tmp_path / "r.xml").read_text(encoding="utf-8")
    # The saved replay file names the same stage through `replay --stages`.
    replay_file = failed[0]["violation"]["replay"]
    assert main(["replay", replay_file, "--stages"]) == EXIT_VIOLATIONS
    assert "lost in EvenSharePacker" in capsys.readouterr().out
