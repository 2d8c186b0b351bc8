"""Issue 31, compare: retriever errors never read as "no regression", a misspelt critical tag is refused, and a
hostile metric value in a saved report is an input error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, main
from reliability.worldfiles import CASES, CHUNKS, write_jsonl

HOLLOW = '''
from ragmorph.adapters import BM25Retriever


class Hollow(BM25Retriever):
    """Returns nothing: every evidence group is lost."""

    def retrieve(self, query, *, k, filters=None):
        return []
'''


@pytest.fixture
def critical_world(tmp_path: Path) -> tuple[Path, Path]:
    """The reliability world with q2 ('reset password', which PartialOutage cannot answer) tagged critical."""
    cases = [dict(case, tags=["critical"]) if case["id"] == "q2" else dict(case) for case in CASES]
    return write_jsonl(tmp_path / "corpus.jsonl", CHUNKS), write_jsonl(tmp_path / "cases.jsonl", cases)


def _compare(world: tuple[Path, Path], baseline: str, candidate: str, *extra: str) -> list[str]:
    corpus, cases = world
    return ["compare", "--baseline", baseline, "--candidate", candidate, "--corpus", str(corpus), "--cases", str(cases),
            "--strategies", "cutoff", "--max-examples", "2", *extra]


def test_a_candidate_that_always_raises_has_no_verdict(critical_world, tmp_path, capsys) -> None:
    out_json = tmp_path / "c.json"
    code = main(_compare(critical_world, "ragmorph.adapters:BM25Retriever", "reliability.faults:raises",
                         "--json", str(out_json)))
    out = capsys.readouterr().out
    assert code == EXIT_ERRORS, out
    assert "NO VERDICT on q1" in out and "NO VERDICT on critical case q2" in out and "index unavailable" in out
    data = json.loads(out_json.read_text())
    assert data["summary"]["queries"] == 0 and data["summary"]["no_verdict"] == 2
    assert {entry["side"] for entry in data["no_verdict"]} == {"candidate"}


def test_a_candidate_that_raises_only_on_the_critical_case_has_no_verdict(critical_world, tmp_path, capsys) -> None:
    junit = tmp_path / "c.xml"
    code = main(_compare(critical_world, "ragmorph.adapters:BM25Retriever", "reliability.faults:PartialOutage",
                         "--junit", str(junit)))
    out = capsys.readouterr().out
    assert code == EXIT_ERRORS, out
    assert "NO VERDICT on critical case q2" in out and "shard down" in out
    assert 'type="retriever_error"' in junit.read_text()


def test_a_baseline_that_errored_on_the_critical_case_leaves_it_without_verdict(critical_world, tmp_path, capsys) -> None:
    corpus, cases = critical_world
    base = tmp_path / "base.json"
    run = ["run", "--retriever", "reliability.faults:PartialOutage", "--corpus", str(corpus), "--cases", str(cases),
           "--strategies", "cutoff", "--max-examples", "2", "--json", str(base)]
    assert main(run) == EXIT_ERRORS
    (tmp_path / "hollow.py").write_text(HOLLOW, encoding="utf-8")
    capsys.readouterr()
    # The candidate loses every evidence group; the critical case cannot be paired: never exit 0.
    code = main(_compare(critical_world, str(base), f"{tmp_path / 'hollow.py'}:Hollow"))
    out = capsys.readouterr().out
    assert code == EXIT_ERRORS, out
    assert "NO VERDICT on critical case q2: the baseline errored" in out


def test_a_baseline_that_errored_on_an_ordinary_case_lists_it_as_unpaired(tmp_path, capsys) -> None:
    # No case is critical: q2 unpaired on the baseline side decides nothing, and is shown.
    world = (write_jsonl(tmp_path / "corpus.jsonl", CHUNKS), write_jsonl(tmp_path / "cases.jsonl", CASES))
    base = tmp_path / "base.json"
    main(["run", "--retriever", "reliability.faults:PartialOutage", "--corpus", str(world[0]), "--cases",
          str(world[1]), "--strategies", "cutoff", "--max-examples", "2", "--json", str(base)])
    capsys.readouterr()
    code = main(_compare(world, str(base), "ragmorph.adapters:BM25Retriever"))
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "unpaired on q2: the baseline errored" in out


def test_a_critical_tag_no_case_carries_is_a_usage_error(critical_world, capsys) -> None:
    code = main(_compare(critical_world, "ragmorph.adapters:BM25Retriever", "ragmorph.adapters:BM25Retriever",
                         "--critical", "critcal"))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "'critcal'" in err and "tags in the cases: critical" in err and "Traceback" not in err


@pytest.mark.parametrize("value", [1e308, -0.5, 2.0])
def test_an_out_of_range_metric_in_a_saved_baseline_is_an_input_error(critical_world, tmp_path, capsys, value) -> None:
    corpus, cases = critical_world
    base = tmp_path / "base.json"
    main(["run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever", "--corpus", str(corpus), "--cases", str(cases),
          "--strategies", "cutoff", "--max-examples", "2", "--json", str(base)])
    data = json.loads(base.read_text())
    for query in data["queries"]["bm25"].values():
        query["metrics"]["nDCG@10"] = value
    base.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    code = main(_compare(critical_world, str(base), "ragmorph.adapters:BM25Retriever"))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert f"{base}: field 'baseline.queries.bm25.q1.metrics.nDCG@10'" in err and "[0, 1]" in err
    assert "Traceback" not in err
