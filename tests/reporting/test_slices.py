"""Slices: every aggregate per case tag and per tenant, with counts, in JSON, terminal, HTML and JUnit; worst first."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.metrics import aggregate, evaluate, standard_metrics
from ragmorph.reporting import render_html, render_report, validate_report, write_junit
from ragmorph.reporting._common import worst_slices
from ragmorph.runner import check
from ragmorph.worlds import demo_world
from support.zoo import TenantFilterIgnored

KS = (1, 3, 5)


@pytest.fixture(scope="module")
def sliced() -> tuple[dict, list]:
    world = demo_world()
    cases = [c for c in world.cases if c.id in ("q01", "q02", "q03", "q05", "q07")]
    report = check(
        {"bm25": BM25Retriever, "leaky": TenantFilterIgnored}, world.corpus, cases, strategies=["tenancy", "removal"],
        ks=KS, max_examples=5, seed=3,
    )
    return report.to_dict(), cases


def test_every_tag_and_tenant_is_a_slice_with_counts_that_match_the_results(sliced) -> None:
    report, cases = sliced
    validate_report(report)
    rows = {(row["kind"], row["name"]): row for row in report["slices"]["bm25"]}
    tags = {tag for case in cases for tag in case.tags}
    tenants = {case.tenant or "(no tenant)" for case in cases}
    assert set(rows) == {("tag", t) for t in tags} | {("tenant", t) for t in tenants}
    for (kind, name), row in rows.items():
        members = [c for c in cases if (name in c.tags if kind == "tag" else (c.tenant or "(no tenant)") == name)]
        ids = {c.id for c in members}
        results = [r for r in report["results"] if r["retriever"] == "bm25" and r["case"] in ids]
        assert row["cases"] == len(members)
        assert row["status"] == {s: sum(r["status"] == s for r in results) for s in ("pass", "fail", "error", "not_applicable")}
        soft = [r["rate"] for r in results if r["severity"] == "soft" and r["rate"]]
        assert (row["soft"]["held"], row["soft"]["tested"]) == (sum(s["held"] for s in soft), sum(s["tested"] for s in soft))
        # Metrics are the aggregate of exactly the slice's queries (recomputed here from the base rankings).
        expected = aggregate(
            {
                c.id: evaluate([h[0] for h in report["queries"]["bm25"][c.id]["ranking"]], c, standard_metrics(KS),
                               corpus=demo_world().corpus)
                for c in members
            }
        ).to_dict()
        assert row["metrics"]["R@5"] == pytest.approx(expected["metrics"]["R@5"])
        assert row["counts"]["queries"] == len(members)


def test_the_leaking_tenants_slices_come_first(sliced) -> None:
    report, _ = sliced
    leaky = worst_slices(report, "leaky")
    assert leaky[0]["failing_cases"], [(r["name"], r["failing_cases"]) for r in leaky]
    shares = [len(r["failing_cases"]) / r["cases"] for r in leaky]
    assert shares == sorted(shares, reverse=True)
    html = render_html(report)
    section = html[html.index('id="slices"'):]
    section = section[section.index("<h3>leaky</h3>"):]
    first_row = section[section.index("<tbody>"):].split("</tr>")[0]
    assert 'class="fail"' in first_row and f"{leaky[0]['kind']} {leaky[0]['name']}" in first_row
    text = render_report(report)
    assert "slices of leaky, worst first" in text and "slices of bm25, worst first" in text


def test_junit_carries_every_slice_as_a_property_without_adding_tests(sliced, tmp_path) -> None:
    report, _ = sliced
    root = ET.parse(write_junit(report, tmp_path / "junit.xml")).getroot()
    suite = next(s for s in root.iter("testsuite") if s.get("name") == "ragmorph[leaky]")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    slices = {k: v for k, v in props.items() if k.startswith("slice ")}
    assert len(slices) == len(report["slices"]["leaky"])
    worst = worst_slices(report, "leaky")[0]
    value = slices[f"slice {worst['kind']} {worst['name']}"]
    assert f"cases={worst['cases']}" in value and "R@5=" in value and "cases_with_hard_failures=" in value
    assert int(suite.get("tests")) == len({(r["strategy"], r["relation"]) for r in report["results"] if r["retriever"] == "leaky"})
