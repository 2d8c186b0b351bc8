"""Quality: a pipeline whose packer cuts a supporting span is caught, shrinks, and the violation names the stage.

`EvenSharePacker` is a user-style packer with a common bug: it gives each of the k hits an equal share of the
token budget (budget // k) instead of filling the budget best first. Raising k then cuts the top hit, and with it
the sentence that answers the question, although the retriever still ranks that chunk first. The correct
`ContextPacker` over the same pipeline is the control: it never cuts what it kept at a smaller k.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from ragmorph.adapters import BM25Retriever, ContextPacker, Pipeline, Reranker
from ragmorph.model import Case, Chunk, Corpus
from ragmorph.reporting import render_violation
from ragmorph.runner import check

# The buggy packer and the reranker score live in the README's example (examples/pipeline/pipeline.py).
_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "pipeline.py"
_spec = importlib.util.spec_from_file_location("ragmorph_example_pipeline", _EXAMPLE)
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)  # type: ignore[union-attr]
EvenSharePacker, overlap = example.EvenSharePacker, example.overlap

SUPPORT = "Revised parental leave starts on 1 September 2026 for every employee."
GOLD_TEXT = (
    "Parental leave policy. This section explains how the parental leave policy of the company works, who may "
    "ask for it, which forms the manager signs, and how the payroll team records the leave days. " + SUPPORT
)
START = GOLD_TEXT.index(SUPPORT)
CORPUS = Corpus(
    [
        Chunk("hr-12#3", GOLD_TEXT),
        Chunk("hr-12#4", "Parental leave forms are signed by the manager and sent to payroll."),
        Chunk("hr-14#1", "Annual leave carries over to the next year up to five days."),
        Chunk("it-3#1", "Laptops are replaced every four years by the IT service desk."),
        Chunk("fin-2#1", "Travel expenses are paid back within thirty days of the claim."),
    ]
)
CASE = Case(
    "q-leave",
    "When does the revised parental leave policy start?",
    evidence=[[{"chunk": "hr-12#3", "span": [START, START + len(SUPPORT)]}]],
)


def pipeline(packer: Any) -> Pipeline:
    return Pipeline([BM25Retriever, Reranker(score_fn=overlap, depth=30), packer])


@pytest.fixture(scope="module")
def caught() -> Any:
    report = check({"even-share": pipeline(EvenSharePacker(token_budget=60))}, CORPUS, [CASE], strategies=["cutoff"], seed=0)
    failed = [r for r in report.results if r.status == "fail"]
    assert [r.relation for r in failed] == ["cutoff.recall"], [(r.relation, r.status, r.reason) for r in report.results]
    return failed[0].violation.to_dict()


def test_the_cut_span_is_caught_and_shrinks_to_the_gold_chunk_and_k_1_to_2(caught: Any) -> None:
    assert caught["perturbation"]["repr"] == "RaiseCutoff(k=1, k_to=2)"
    assert [c["id"] for c in caught["minimal_corpus"]] == ["hr-12#3"]
    assert caught["one_minimal"] is True
    assert "supporting span" in caught["detail"] and "SpanR dropped from 1 to 0" in caught["detail"]
    (cut,) = caught["follow_up"]["ranking"]
    assert cut["id"] == "hr-12#3" and cut["kept"][1] < START  # the packed text ends before the support begins


def test_the_attribution_names_the_packer_and_says_where_it_cut(caught: Any) -> None:
    stages = caught["stages"]
    assert stages["stages"] == ["BM25Retriever", "Reranker", "EvenSharePacker"]
    assert (stages["broken_at"], stages["culprit"]) == (2, "EvenSharePacker")
    assert stages["detail"] == (
        "evidence present after Reranker, lost in EvenSharePacker: 'hr-12#3' truncated at 30 tokens of context "
        f"(token budget 60) before its supporting span, which starts at character {START} (the packed text ends "
        f"at character {caught['follow_up']['ranking'][0]['kept'][1]})"
    )
    assert f"  stage         {stages['detail']}" in render_violation(caught)


def test_the_correct_packer_keeps_the_span_it_kept_at_a_smaller_k() -> None:
    for budget in (20, 30, 45, 60, 200):
        report = check({"packer": pipeline(ContextPacker(token_budget=budget))}, CORPUS, [CASE], strategies=["cutoff"], seed=0)
        assert [r.relation for r in report.results if r.status == "fail"] == [], budget


def test_every_report_format_and_the_pytest_message_show_the_attribution(tmp_path: Any) -> None:
    from ragmorph.reporting import load_report, render_report, write_reports
    from ragmorph.triage import summary_text

    report = check({"even-share": pipeline(EvenSharePacker(token_budget=60))}, CORPUS, [CASE], strategies=["cutoff"], seed=0)
    data = report.to_dict()
    paths = write_reports(data, {"json": tmp_path / "r.json", "html": tmp_path / "r.html", "junit": tmp_path / "r.xml"})
    wanted = "lost in EvenSharePacker: &#x27;hr-12#3&#x27; truncated at 30 tokens"
    json_file, html_file, junit_file = paths
    (row,) = [r for r in load_report(json_file)["results"] if r["status"] == "fail"]
    assert row["violation"]["stages"]["culprit"] == "EvenSharePacker"
    assert row["violation"]["follow_up"]["metrics"]["SpanR(cover=all)@2"] == 0.0
    assert wanted in html_file.read_text(encoding="utf-8")
    assert "stage         evidence present after Reranker, lost in EvenSharePacker" in junit_file.read_text(encoding="utf-8")
    assert "stage         evidence present after Reranker" in render_report(data)
    assert "     stage: evidence present after Reranker, lost in EvenSharePacker" in summary_text(data)
