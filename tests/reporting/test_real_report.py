"""A real report from `ragmorph.runner.check` on the demo world validates and renders in every format."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.triage import plural, triage
from ragmorph.reporting import ProgressBar, load_report, render_html, render_report, validate_report, write_json, write_junit
from ragmorph.runner import check
from ragmorph.worlds import demo_world
from support.zoo import TenantFilterAfterTruncation


@pytest.fixture(scope="module")
def real_report() -> dict:
    world = demo_world()
    answerable = [c for c in world.cases if c.is_answerable][:3]
    report = check(
        {"bm25": BM25Retriever, "post-filter": TenantFilterAfterTruncation},
        world.corpus,
        answerable,
        strategies=["tenancy", "cutoff", "removal"],
        ks=(1, 3, 5),
        max_examples=5,
        seed=1,
    )
    return report.to_dict()


class Terminal(io.StringIO):
    """A text stream that claims to be a TTY."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_is_a_check_progress_callback() -> None:
    world = demo_world()
    stream = Terminal()
    bar = ProgressBar(0, stream, delay=0.0)
    with bar:
        check(BM25Retriever, world.corpus, world.cases[:2], strategies=["cutoff"], ks=(1, 3), max_examples=2,
              progress=bar)
    assert bar.done == bar.total == 2
    assert re.search(r"\] 2/2 \(100%\) \d+s\n$", stream.getvalue())


def test_real_report_matches_the_schema_and_round_trips(real_report: dict, tmp_path) -> None:
    validate_report(real_report)
    assert load_report(write_json(real_report, tmp_path / "report.json")) == real_report


def test_real_report_renders_the_planted_bug_everywhere(real_report: dict, tmp_path) -> None:
    failing = [r for r in real_report["results"] if r["status"] == "fail"]
    assert failing and {r["retriever"] for r in failing} == {"post-filter"}
    text = render_report(real_report, max_violations=1)
    assert "FAIL" in text and "retriever post-filter" in text
    groups = triage(real_report)
    assert {(g.retriever, g.relation) for g in groups} == {(r["retriever"], r["relation"]) for r in failing}
    if len(groups) > 1:
        assert f"... and {plural(len(groups) - 1, 'more group')}" in text
    root = ET.parse(write_junit(real_report, tmp_path / "junit.xml")).getroot()
    failed = {(c.get("classname"), c.get("name")) for c in root.iter("testcase") if c.find("failure") is not None}
    assert failed == {(f"ragmorph.post-filter.{r['strategy']}", r["relation"]) for r in failing}
    html = render_html(real_report)
    assert f"Violations: {plural(len(failing), 'violation')} in {plural(len(groups), 'group')}" in html
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 3
