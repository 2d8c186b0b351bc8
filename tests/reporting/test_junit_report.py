"""JUnit XML: one testcase per retriever x strategy x relation; failures, errors and skips where CI expects them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings

from ragmorph.reporting import write_junit
from support.report_samples import sample_report
from support.report_strategies import reports


def parse(report: dict, tmp_path) -> ET.Element:
    return ET.parse(write_junit(report, tmp_path / "junit.xml")).getroot()


def test_one_testcase_per_retriever_strategy_relation(tmp_path) -> None:
    root = parse(sample_report(), tmp_path)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("10", "1", "1", "2")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["ragmorph[bm25]", "ragmorph[cached-bm25]"]
    names = [(c.get("classname"), c.get("name")) for c in suites[1].findall("testcase")]
    assert names == [
        ("ragmorph.cached-bm25.reorder", "reorder.invariant"),
        ("ragmorph.cached-bm25.removal", "removal.recall_non_increasing"),
        ("ragmorph.cached-bm25.removal", "removal.removed_never_returned"),
        ("ragmorph.cached-bm25.tenancy", "tenancy.unauthorized_zero"),
        ("ragmorph.cached-bm25.supersede", "supersede.stale_zero"),
    ]
    properties = {p.get("name"): p.get("value") for p in suites[1].find("properties")}
    assert properties["seed"] == "0" and properties["retriever_kind"] == "factory"


def test_failure_carries_the_minimal_case(tmp_path) -> None:
    root = parse(sample_report(), tmp_path)
    case = root.find(".//testcase[@name='removal.removed_never_returned'][@classname='ragmorph.cached-bm25.removal']")
    failure = case.find("failure")
    assert failure.get("message") == "1 of 2 cases violate removal.removed_never_returned (hard): q03"
    assert failure.get("type") == "hard"
    assert "How many days of parental leave does Acme grant?" in failure.text
    assert "RemoveChunks(k=3, ids=('acme-handbook-1#1',), group=0)" in failure.text
    assert "ragmorph replay replays/cached-bm25-q03-removal.json" in failure.text
    assert case.find("error") is None


def test_errors_skips_and_soft_rates(tmp_path) -> None:
    root = parse(sample_report(), tmp_path)
    error = root.find(".//testcase[@classname='ragmorph.cached-bm25.tenancy']/error")
    assert "RetrieverFailed: KeyError('acme')" in error.get("message")
    skipped = root.findall(".//skipped")
    assert [s.get("message") for s in skipped] == ["case has no evidence with a superseded version"] * 2
    soft = root.find(".//testcase[@name='removal.recall_non_increasing']")
    assert soft.find("failure") is None
    assert soft.find("system-out").text.startswith("soft relation held in 48/50 perturbations (96%)")


def test_junit_is_golden(tmp_path, golden) -> None:
    golden("junit.xml", write_junit(sample_report(), tmp_path / "junit.xml").read_text(encoding="utf-8"))


def test_xml_invalid_characters_are_replaced(tmp_path) -> None:
    report = sample_report()
    violation = report["results"][11]["violation"]
    violation["query"] = "nul\x00 bell\x07 lone\ud800 surrogate <tag> & ]]>"
    root = parse(report, tmp_path)
    # The failure body is the terminal rendering, which already turns control characters into '?'.
    assert "nul? bell? lone? surrogate <tag> & ]]>" in root.find(".//failure").text
    report["results"][11]["relation"] = "rel\x00ation\ud800"
    report["results"][11]["violation"]["query"] = "fine"
    root = parse(report, tmp_path)
    assert root.find(".//failure").get("message").startswith("1 of 1 cases violate rel\ufffdation\ufffd (hard)")


@settings(max_examples=25, deadline=None)
@given(report=reports())
def test_any_report_gives_parseable_xml_with_consistent_counts(report: dict, tmp_path_factory) -> None:
    root = parse(report, tmp_path_factory.mktemp("junit"))
    cases = root.findall(".//testcase")
    assert int(root.get("tests")) == len(cases) == len({(r["retriever"], r["relation"]) for r in report["results"]})
    assert int(root.get("failures")) == len(root.findall(".//testcase/failure"))
    assert int(root.get("errors")) == len(root.findall(".//testcase/error"))
    assert int(root.get("skipped")) == len(root.findall(".//testcase/skipped"))
    failed = {(r["retriever"], r["relation"]) for r in report["results"] if r["status"] == "fail"}
    assert int(root.get("failures")) == len(failed)
