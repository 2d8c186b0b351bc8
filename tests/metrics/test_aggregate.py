"""Macro and micro averages, counts, tags and the ragmorph.metrics/1 JSON shape."""

from __future__ import annotations

import json

import pytest

from ragmorph.errors import UsageError
from ragmorph.metrics import SCHEMA, aggregate, evaluate, evaluate_batch
from ragmorph.model import Case, Chunk, Corpus, Ranking


def _scores() -> dict:
    cases = [
        Case(id="q1", query="q", evidence=[["a"], ["b"]], tags=["hr"]),
        Case(id="q2", query="q", evidence=[["c"], ["d"], ["e"], ["f"]], tags=["hr", "date"]),
        Case(id="q3", query="q", tags=["date"]),  # unanswerable
    ]
    rankings = [Ranking.of(["a", "x"]), Ranking.of(["c", "d", "e", "y", "y"]), Ranking.of([])]
    return {case.id: evaluate(r, case, "P@2,R@4,AP@4,F1@2,P_ret@4,EmptyOK") for case, r in zip(cases, rankings)}


def test_macro_is_the_mean_where_defined_and_micro_pools_parts() -> None:
    summary = aggregate(_scores())
    r4 = summary.metrics["R@4"]
    assert r4.queries == 2  # the unanswerable q3 has no recall
    assert r4.macro == pytest.approx((1 / 2 + 3 / 4) / 2)
    assert r4.micro == pytest.approx((1 + 3) / (2 + 4))
    p_ret = summary.metrics["P_ret@4"]
    assert p_ret.micro == pytest.approx((1 + 3) / (2 + 4))  # slots: q1 returned 2, q2 filled 4 (repeat included)
    f1 = summary.metrics["F1@2"]
    micro_p, micro_r = (1 + 2) / (2 + 2), (1 + 2) / (2 + 4)
    assert f1.micro == pytest.approx(2 * micro_p * micro_r / (micro_p + micro_r))
    assert summary.metrics["AP@4"].micro is None  # no natural pooled form
    assert summary.metrics["EmptyOK"].to_dict() == {"macro": 1.0, "micro": 1.0, "queries": 1, "errored": 0}


def test_counts_and_tags() -> None:
    summary = aggregate(_scores())
    assert dict(summary.counts) == {"queries": 3, "errored_queries": 0, "gold_ids": 6, "returned_ids": 6}
    assert list(summary.by_tag) == ["date", "hr"]
    hr = summary.by_tag["hr"]
    assert dict(hr.counts) == {"queries": 2, "errored_queries": 0, "gold_ids": 6, "returned_ids": 6}
    assert hr.metrics["R@4"].queries == 2
    date = summary.by_tag["date"]
    assert date.metrics["R@4"].macro == pytest.approx(3 / 4)
    assert date.metrics["EmptyOK"].macro == 1.0


def test_explicit_tags_override_case_tags() -> None:
    summary = aggregate(_scores(), tags={"q1": ["x"]})
    assert list(summary.by_tag) == ["x"]
    assert summary.by_tag["x"].counts["queries"] == 1


def test_plain_dicts_give_macro_only_and_unknown_counts() -> None:
    summary = aggregate({"q1": {"P@2": 0.5, "custom": 3.0}, "q2": {"P@2": None, "custom": 1.0}})
    assert summary.metrics["P@2"].to_dict() == {"macro": 0.5, "micro": None, "queries": 1, "errored": 0}
    assert summary.metrics["custom"].macro == 2.0
    assert dict(summary.counts) == {"queries": 2, "errored_queries": 0, "gold_ids": None, "returned_ids": None}


def test_empty_input_and_bad_input() -> None:
    summary = aggregate({})
    assert summary.to_dict() == {
        "schema": SCHEMA,
        "metrics": {},
        "counts": {"queries": 0, "errored_queries": 0, "gold_ids": 0, "returned_ids": 0},
        "by_tag": {},
    }
    with pytest.raises(UsageError, match="query 'q'"):
        aggregate({"q": 0.5})  # type: ignore[dict-item]
    with pytest.raises(UsageError):
        aggregate([1, 2])  # type: ignore[arg-type]


def test_to_dict_is_strict_json_with_the_contract_shape() -> None:
    document = aggregate(_scores()).to_dict()
    text = json.dumps(document, allow_nan=False)
    assert json.loads(text) == document
    assert document["schema"] == "ragmorph.metrics/1"
    assert set(document) == {"schema", "metrics", "counts", "by_tag"}
    for value in document["metrics"].values():
        assert set(value) == {"macro", "micro", "queries", "errored"}
    assert set(document["by_tag"]["hr"]) == {"metrics", "counts"}


def test_batch_results_aggregate_like_single_evaluations() -> None:
    run = {"q1": {"a": 3.0, "x": 2.0}, "q2": {"c": 5.0, "y": 4.0, "d": 1.0}}
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1, "d": 1, "e": 1}}
    names = "P@2,R@3,F1@2,Hit@1,nDCG@3"
    batch = aggregate(evaluate_batch(run, qrels, names), tags={"q1": ["t"]})
    cases = {
        "q1": (Case(id="q1", query="q", evidence=[["a"], ["b"]], tags=["t"]), ["a", "x"]),
        "q2": (Case(id="q2", query="q", evidence=[["c"], ["d"], ["e"]]), ["c", "y", "d"]),
    }
    single = aggregate({qid: evaluate(Ranking.of(ids), case, names) for qid, (case, ids) in cases.items()})
    assert _nested_close(batch.to_dict(), single.to_dict())


def _nested_close(left: object, right: object) -> bool:
    if isinstance(left, dict) and isinstance(right, dict):
        assert left.keys() == right.keys()
        return all(_nested_close(left[key], right[key]) for key in left)
    if isinstance(left, float) and isinstance(right, float):
        assert left == pytest.approx(right, abs=1e-12)
        return True
    assert left == right
    return True


def test_governance_micro_is_a_rate_over_returned_hits() -> None:
    corpus = Corpus([Chunk("a", "a", tenant="acme"), Chunk("b", "b"), Chunk("c", "c", tenant="globex")])
    case = Case(id="q", query="q", tenant="acme")
    scores = {
        "q1": evaluate(Ranking.of(["a", "c"]), case, "Unauthorized@5", corpus=corpus),
        "q2": evaluate(Ranking.of(["b", "c", "a", "a"]), Case(id="q2", query="q"), "Unauthorized@5", corpus=corpus),
    }
    summary = aggregate(scores).metrics["Unauthorized@5"]
    assert summary.macro == pytest.approx((1 + 2) / 2)  # mean count per query
    assert summary.micro == pytest.approx((1 + 2) / (2 + 3))  # share of distinct returned hits
