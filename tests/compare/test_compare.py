"""Paired comparison: the randomisation test (exact, Monte Carlo, and against ranx), refusal of unpaired runs,
lost critical cases, new and fixed violations, significant regressions, and every output format."""

from __future__ import annotations

import itertools
import json
import random
import xml.etree.ElementTree as ET

import attrs
import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.compare import compare_reports, holm, randomization_test
from ragmorph.errors import InputError, UsageError
from ragmorph.model import Corpus
from ragmorph.reporting import comparison_html, render_comparison, write_comparison
from ragmorph.runner import check
from ragmorph.worlds import generate
from support.reference_bm25 import ReferenceBM25
from support.zoo import IgnoresDeletes

KS = (1, 3, 5)


def _report(retriever, corpus, cases, strategies=("removal",)) -> dict:
    return check(retriever, corpus, cases, strategies=list(strategies), ks=KS, max_examples=4, seed=1).to_dict()


class Forgets(BM25Retriever):
    """BM25 that never returns the chunks in FORGOTTEN: a candidate that lost evidence (a correct index over a
    corpus without them would do the same)."""

    FORGOTTEN: frozenset[str] = frozenset()

    def retrieve(self, query, *, k, filters=None):
        hits = super().retrieve(query, k=k + len(self.FORGOTTEN), filters=filters)
        return [hit for hit in hits if hit.id not in self.FORGOTTEN][:k]


class Hollow(BM25Retriever):
    """Returns nothing: every recall falls."""

    def retrieve(self, query, *, k, filters=None):
        return []


# --- the test itself ---------------------------------------------------------------------------------------------


def test_small_samples_are_enumerated_exactly() -> None:
    assert randomization_test([0] * 5, [1] * 5) == pytest.approx(2 / 32)  # only all-plus and all-minus are as far
    assert randomization_test([0.2, 0.4], [0.2, 0.4]) == 1.0
    assert randomization_test([], []) is None
    base, cand = [0.1, 0.5, 0.3, 0.9, 0.0, 0.4], [0.3, 0.4, 0.8, 0.9, 0.2, 0.1]
    diffs = [c - b for b, c in zip(base, cand)]
    observed = abs(sum(diffs))
    flips = list(itertools.product((1, -1), repeat=len(diffs)))
    brute = sum(abs(sum(s * d for s, d in zip(signs, diffs))) >= observed - 1e-12 for signs in flips) / len(flips)
    assert randomization_test(base, cand) == pytest.approx(brute)
    with pytest.raises(UsageError, match="paired"):
        randomization_test([1.0], [1.0, 2.0])


def test_large_samples_use_seeded_monte_carlo_and_never_report_zero() -> None:
    rng = random.Random(4)
    base = [rng.random() for _ in range(60)]
    cand = [b + 0.5 for b in base]
    p = randomization_test(base, cand, permutations=2000, seed=3)
    assert p == pytest.approx(1 / 2001)
    noisy = [b + rng.gauss(0.02, 0.2) for b in base]
    assert randomization_test(base, noisy, seed=5) == randomization_test(base, noisy, seed=5)


def test_holm_adjusts_in_rank_order_and_keeps_missing_values() -> None:
    assert holm([0.01, 0.04, 0.03, None]) == [pytest.approx(0.03), pytest.approx(0.06), pytest.approx(0.06), None]
    assert holm([0.5, 0.9]) == [pytest.approx(1.0), pytest.approx(1.0)]


@pytest.mark.slow
def test_p_values_agree_with_ranx_fisher_within_monte_carlo_error() -> None:
    ranx = pytest.importorskip("ranx")
    rng = random.Random(11)
    qrels, run_a, run_b = {}, {}, {}
    for q in range(60):
        docs = [f"d{i}" for i in range(25)]
        relevant = rng.sample(docs, 3)
        qrels[f"q{q}"] = {d: 1 for d in relevant}
        run_a[f"q{q}"] = {d: rng.random() for d in docs}
        run_b[f"q{q}"] = {d: rng.random() + (0.05 if d in relevant else 0.0) for d in docs}
    a, b = ranx.Run(run_a, name="a"), ranx.Run(run_b, name="b")
    metrics = ["ndcg@5", "recall@5", "precision@10"]
    n = 20_000
    report = ranx.compare(ranx.Qrels(qrels), [a, b], metrics=metrics, stat_test="fisher", n_permutations=n,
                          random_seed=7, max_p=0.05)
    checked = 0
    for metric in metrics:
        ids = sorted(a.scores[metric])
        theirs = report.comparisons[("a", "b")][metric]["p_value"]
        ours = randomization_test([a.scores[metric][q] for q in ids], [b.scores[metric][q] for q in ids],
                                  permutations=n, seed=1)
        # Both are Monte Carlo estimates of the same p: 5 standard errors of their difference.
        error = 5 * (2 * max(theirs * (1 - theirs), 1 / n) / n) ** 0.5
        if metric == "precision@10":
            # P@10 takes 11 values, so many flips tie the observed mean exactly. ranx compares float means of
            # shuffled columns with `>=`, and rounding drops some exact ties; ragmorph counts them (tolerance
            # 1e-12), so its p can only be larger: the two tests differ by the ties, not by chance.
            assert ours >= theirs - error, (metric, ours, theirs)
        else:
            assert abs(ours - theirs) <= error + 1 / n, (metric, ours, theirs)
            checked += 0.001 < theirs < 0.999
    assert checked >= 2  # the effect is small enough that the p-values are informative


# --- comparisons of real runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    return generate(5, chunks=40, cases=8)


def test_a_lost_critical_case_fails_the_comparison_even_when_nothing_is_significant(world) -> None:
    case = next(c for c in world.cases if c.is_answerable and len(c.evidence) == 1 and len(c.evidence[0]) == 1)
    cases = [attrs.evolve(c, tags=(*c.tags, "critical")) if c.id == case.id else c for c in world.cases]
    baseline = _report({"bm25": BM25Retriever}, world.corpus, cases)
    assert case.evidence[0][0] in [h[0] for h in baseline["queries"]["bm25"][case.id]["ranking"]]
    forgets = type("ForgetsGold", (Forgets,), {"FORGOTTEN": frozenset(case.evidence[0])})
    candidate = _report({"candidate": forgets}, world.corpus, cases)
    data = compare_reports(baseline, candidate, cases)
    assert data["lost_critical"] == [case.id]
    assert data["summary"]["exit_code"] == 1 and data["summary"]["regressions"] == 0
    row = next(r for r in data["queries"] if r["case"] == case.id)
    assert row["critical"] and row["lost"]
    assert {g["group"] for change in row["evidence"].values() for g in change["lost"]} == {0}
    assert row["deltas"]["GroupR@5"] == {"baseline": 1.0, "candidate": 0.0, "delta": -1.0}
    # Without the tag the same loss is reported but does not gate; another tag can be named critical.
    assert compare_reports(baseline, candidate, world.cases)["summary"]["exit_code"] == 0
    other = compare_reports(baseline, candidate, cases, critical_tags=case.tags[:1])
    assert other["lost_critical"] == [case.id]
    text = render_comparison(data)
    assert f"LOST CRITICAL CASES: {case.id}" in text and "exit code 1" in text


def test_a_significant_regression_of_a_gated_metric_fails(world) -> None:
    big = generate(6, chunks=60, cases=20)
    baseline = _report({"bm25": BM25Retriever}, big.corpus, big.cases)
    candidate = _report({"hollow": Hollow}, big.corpus, big.cases)
    data = compare_reports(baseline, candidate, big.cases)
    gated = {t["metric"]: t for t in data["metrics"] if t["gate"]}
    assert set(gated) >= {"GroupR@5", "nDCG@5"}
    assert gated["GroupR@5"]["verdict"] == "regression" and gated["GroupR@5"]["p_adjusted"] < 0.05
    assert data["summary"]["exit_code"] == 1 and "GroupR@5" in data["summary"]["regressed_metrics"]
    # A metric outside the gate is reported with its raw p and decides nothing.
    assert next(t for t in data["metrics"] if t["metric"] == "R@1")["p_adjusted"] is None
    same = compare_reports(baseline, baseline, big.cases)
    assert same["summary"]["exit_code"] == 0 and same["summary"]["lost_queries"] == 0
    assert all(t["p_value"] == 1.0 for t in same["metrics"])


def test_the_junit_fails_exactly_the_metrics_that_decide_the_exit_code(tmp_path) -> None:
    big = generate(6, chunks=60, cases=20)
    baseline = _report({"bm25": BM25Retriever}, big.corpus, big.cases)
    candidate = _report({"hollow": Hollow}, big.corpus, big.cases)
    # Gate one metric only: the other regressions are significant on their raw p but decide nothing.
    data = compare_reports(baseline, candidate, big.cases, gate=["GroupR@5"])
    ungated = [t["metric"] for t in data["metrics"] if t["verdict"] == "regression" and not t["gate"]]
    assert ungated, "the fixture must have an ungated significant regression"
    write_comparison(data, junit=tmp_path / "c.xml")
    root = ET.parse(tmp_path / "c.xml").getroot()
    failed = [case.get("name") for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed == data["summary"]["regressed_metrics"] == ["GroupR@5"]
    assert int(root.get("failures")) == 1 and data["summary"]["exit_code"] == 1
    note = next(c for c in root.iter("testcase") if c.get("name") == ungated[0]).find("system-out").text
    assert "not gated" in note


def test_new_and_fixed_violations_are_paired_by_case_and_relation(world) -> None:
    buggy = _report({"old": IgnoresDeletes}, world.corpus, world.cases)
    fixed = _report({"new": ReferenceBM25}, world.corpus, world.cases)
    assert any(r["status"] == "fail" for r in buggy["results"])
    forward = compare_reports(buggy, fixed, world.cases)
    assert forward["violations"]["fixed"] and not forward["violations"]["new"]
    assert {v["relation"] for v in forward["violations"]["fixed"]} == {
        r["relation"] for r in buggy["results"] if r["status"] == "fail"
    }
    backward = compare_reports(fixed, buggy, world.cases)
    assert len(backward["violations"]["new"]) == len(forward["violations"]["fixed"])
    # A new hard violation loses the case; tagged critical, it fails the comparison.
    hit = backward["violations"]["new"][0]["case"]
    critical = [attrs.evolve(c, tags=(*c.tags, "critical")) if c.id == hit else c for c in world.cases]
    assert compare_reports(fixed, buggy, critical)["lost_critical"] == [hit]


def test_runs_over_different_corpora_or_cases_are_refused(world) -> None:
    baseline = _report({"bm25": BM25Retriever}, world.corpus, world.cases)
    smaller = Corpus([c for c in world.corpus if c.id != world.corpus.ids[-1]])
    cases = [c for c in world.cases if all(m in smaller for g in c.evidence for m in g)]
    other = _report({"bm25": BM25Retriever}, smaller, cases)
    with pytest.raises(InputError, match="same corpus snapshot"):
        compare_reports(baseline, other, cases)
    with pytest.raises(InputError, match="same corpus snapshot"):
        compare_reports(baseline, baseline, world.cases, corpus_fingerprint=smaller.fingerprint)
    fewer = _report({"bm25": BM25Retriever}, world.corpus, world.cases[:-1])
    with pytest.raises(InputError, match="same cases"):
        compare_reports(baseline, fewer, world.cases)
    old = {k: v for k, v in baseline.items() if k != "queries"}
    with pytest.raises(InputError, match="per-query data"):
        compare_reports(old, baseline, world.cases)


def test_every_format_renders_and_the_html_is_offline(world, tmp_path) -> None:
    case = next(c for c in world.cases if c.is_answerable)
    cases = [attrs.evolve(c, tags=(*c.tags, "critical")) if c.id == case.id else c for c in world.cases]
    baseline = _report({"bm25": BM25Retriever}, world.corpus, cases)
    candidate = _report({"c": type("F", (Forgets,), {"FORGOTTEN": frozenset(case.gold_ids)})}, world.corpus, cases)
    data = compare_reports(baseline, candidate, cases)
    paths = write_comparison(data, json_path=tmp_path / "c.json", html=tmp_path / "c.html", junit=tmp_path / "c.xml")
    assert [p.name for p in paths] == ["c.json", "c.html", "c.xml"]
    assert json.loads((tmp_path / "c.json").read_text())["schema"] == "ragmorph.compare/1"
    html = comparison_html(data)
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert html.count("<rect") == data["summary"]["queries"]  # one bar per paired query
    assert 'stroke="#000"' in html  # the critical query is outlined
    root = ET.parse(tmp_path / "c.xml").getroot()
    failures = [f.get("type") for f in root.iter("failure")]
    assert "lost_critical" in failures
    assert int(root.get("tests")) == len(data["metrics"]) + 1


def test_no_registered_secret_reaches_a_comparison_output(world, tmp_path) -> None:
    from ragmorph.secrets import MASK, register_secret

    secret = "cmp-s3cret-9f2a"
    register_secret(secret)
    buggy = _report({"old": IgnoresDeletes}, world.corpus, world.cases)
    fixed = _report({"new": ReferenceBM25}, world.corpus, world.cases)
    data = compare_reports(fixed, buggy, world.cases)
    assert data["violations"]["new"]
    data["violations"]["new"][0]["reason"] = f"denied: token {secret}"  # as a retriever error would echo it
    for row in data["queries"]:
        for violation in row["new_violations"]:
            violation["reason"] = f"denied: token {secret}"
    write_comparison(data, json_path=tmp_path / "c.json", html=tmp_path / "c.html", junit=tmp_path / "c.xml")
    outputs = {name: (tmp_path / name).read_text(encoding="utf-8") for name in ("c.json", "c.html", "c.xml")}
    outputs["terminal"] = render_comparison(data)
    for name, text in outputs.items():
        assert secret not in text, f"the secret leaked into {name}"
    assert MASK in outputs["c.json"] and MASK in outputs["terminal"]
