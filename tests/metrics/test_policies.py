"""Worked examples for every measure and every named edge-case policy."""

from __future__ import annotations

import math
import pickle
import random

import pytest

from ragmorph.errors import UsageError
from ragmorph.metrics import GOLD_MEASURES, MEASURES, POLICIES, evaluate, evaluate_batch, is_empty_ok, parse_metric
from ragmorph.model import Case, Chunk, Corpus, Hit, Ranking
from support.backends import BACKENDS

GOLD_AB = Case(id="q", query="q", evidence=[["a"], ["b"]])


def _values(ids: list[str], case: Case, names: str, **kwargs: object) -> dict:
    return dict(evaluate(Ranking.of(ids), case, names, **kwargs))


# --- Ragas context precision, quoted from the Ragas docs formula -------------------------------------------


@pytest.mark.parametrize(
    ("relevance", "expected"),
    [
        ([1, 0, 1, 0, 0], (1 / 1 + 2 / 3) / 2),  # 0.8333...
        ([0, 1, 0, 1, 0], (1 / 2 + 2 / 4) / 2),  # 0.5
        ([1, 0], 1.0),  # Ragas docs: an irrelevant chunk after the relevant one keeps the score
        ([0, 1], 0.5),  # ...and placed first it lowers it
        ([0, 0, 1, 1, 0], (1 / 3 + 2 / 4) / 2),  # 0.41666...
        ([0, 0, 0], 0.0),
    ],
)
def test_context_precision_matches_ragas_examples(relevance: list[int], expected: float) -> None:
    ids = [f"{'rel' if flag else 'irr'}{n}" for n, flag in enumerate(relevance)]
    case = Case(id="q", query="q", evidence=[[doc] for doc in ids if doc.startswith("rel")] or [["elsewhere"]])
    assert _values(ids, case, "CP@5")["CP@5"] == pytest.approx(expected, abs=1e-12)


def test_ragas_examples_exact_values() -> None:
    case = Case(id="q", query="q", evidence=[["r1"], ["r3"]])
    assert _values(["r1", "x", "r3", "y", "z"], case, "CP@5")["CP@5"] == pytest.approx(0.8333333333333333)
    case = Case(id="q", query="q", evidence=[["r2"], ["r4"]])
    assert _values(["x", "r2", "y", "r4", "z"], case, "CP@5")["CP@5"] == pytest.approx(0.5)


def test_context_precision_can_fall_when_a_relevant_hit_enters_the_top_k() -> None:
    # Why the relation "moving a relevant hit up never lowers CP@k" only holds inside the top k.
    case = Case(id="q", query="q", evidence=[["r1"], ["r2"]])
    before = _values(["r1", "x", "y", "z", "w", "r2"], case, "CP@5,AP@5")
    after = _values(["r1", "x", "y", "z", "r2", "w"], case, "CP@5,AP@5")
    assert before["CP@5"] == 1.0
    assert after["CP@5"] == pytest.approx((1 + 2 / 5) / 2)
    assert after["AP@5"] > before["AP@5"]


# --- worked values -----------------------------------------------------------------------------------------


def test_worked_example_of_every_gold_measure() -> None:
    case = Case(id="q", query="q", evidence=[["a"], ["b", "c"], ["d"]])
    values = _values(["x", "a", "y", "c"], case, "P@4,P_ret@4,R@4,GroupR@4,CP@4,AP@4,RR@4,nDCG@4,Hit@4,F1@4")
    gold = 4  # a, b, c, d
    assert values["P@4"] == 2 / 4
    assert values["P_ret@4"] == 2 / 4
    assert values["R@4"] == 2 / gold
    assert values["GroupR@4"] == 2 / 3
    assert values["CP@4"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert values["AP@4"] == pytest.approx((1 / 2 + 2 / 4) / gold)
    assert values["RR@4"] == 1 / 2
    ideal = sum(1 / math.log2(i + 2) for i in range(4))
    assert values["nDCG@4"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert values["Hit@4"] == 1.0
    assert values["F1@4"] == pytest.approx(2 * 0.5 * 0.5 / (0.5 + 0.5))


def test_nothing_relevant_gives_zeros_not_none() -> None:
    values = _values(["x", "y"], GOLD_AB, "P@2,R@2,GroupR@2,CP@2,AP@2,RR@2,nDCG@2,Hit@2,F1@2")
    assert values == dict.fromkeys(values, 0.0)


# --- policy fewer_than_k --------------------------------------------------------------------------------------


def test_fewer_than_k_precision_divides_by_k_and_p_ret_by_what_came_back() -> None:
    assert "fewer_than_k" in POLICIES
    values = _values(["a", "x"], GOLD_AB, "P@10,P_ret@10,R@10")
    assert values == {"P@10": 1 / 10, "P_ret@10": 1 / 2, "R@10": 1 / 2}


def test_fewer_than_k_on_an_empty_ranking() -> None:
    values = _values([], GOLD_AB, "P@5,P_ret@5,R@5,RR@5,nDCG@5,CP@5")
    assert values == {"P@5": 0.0, "P_ret@5": None, "R@5": 0.0, "RR@5": 0.0, "nDCG@5": 0.0, "CP@5": 0.0}


# --- policy no_gold -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        Case(id="q", query="q"),
        Case(id="q", query="q", answerable=False),
        Case(id="q", query="q", claims=["a claim but no chunk ids"], answerable=True),
    ],
    ids=["no-evidence", "marked-unanswerable", "claims-only"],
)
def test_no_gold_makes_every_gold_measure_none(case: Case) -> None:
    names = ",".join(f"{measure}@3" for measure in sorted(GOLD_MEASURES))
    values = _values(["a", "b"], case, names)
    assert values == dict.fromkeys(values, None)
    assert len(values) == len(GOLD_MEASURES)


# --- policy duplicates ----------------------------------------------------------------------------------------


def test_a_repeated_id_keeps_its_first_rank_and_occupies_its_slot() -> None:
    values = _values(["a", "a", "b"], GOLD_AB, "P@2,P_ret@2,R@2,P@3,R@3,AP@3,Dup@2,Dup@3")
    assert values["P@2"] == 1 / 2  # the repeat at rank 2 is not relevant again
    assert values["P_ret@2"] == 1 / 2  # ...but it fills a returned slot
    assert values["R@2"] == 1 / 2
    assert values["P@3"] == 2 / 3  # and it pushed b to rank 3
    assert values["R@3"] == 1.0
    assert values["AP@3"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert values["Dup@2"] == 1.0 and values["Dup@3"] == 1.0


def test_duplicates_never_push_recall_above_one() -> None:
    values = _values(["a", "a", "a", "b", "b"], GOLD_AB, "R@5,P@5,nDCG@5,Hit@5")
    assert values == {"R@5": 1.0, "P@5": 2 / 5, "nDCG@5": pytest.approx(1 / (1 + 1 / math.log2(3)) * (1 + 1 / math.log2(5))), "Hit@5": 1.0}


def test_dup_counts_identical_texts_from_hits_or_corpus() -> None:
    corpus = Corpus([Chunk("a", "same"), Chunk("b", "same"), Chunk("c", "other")])
    ranking = Ranking([Hit("a"), Hit("c"), Hit("b"), Hit("z", text="other"), Hit("w")])
    values = evaluate(ranking, GOLD_AB, "Dup@5,Dup@2", corpus=corpus)
    assert values["Dup@5"] == 2.0  # b repeats a's text, z repeats c's text; w's text is unknown
    assert values["Dup@2"] == 0.0
    # Without a corpus only hit texts are known: z's "other" has nothing earlier to repeat.
    assert evaluate(ranking, GOLD_AB, "Dup@5")["Dup@5"] == 0.0


# --- policy unanswerable / EmptyOK ----------------------------------------------------------------------------


def test_empty_ok_only_for_unanswerable_cases() -> None:
    unanswerable = Case(id="q", query="q")
    assert _values([], unanswerable, "EmptyOK") == {"EmptyOK": 1.0}
    assert _values(["a"], unanswerable, "EmptyOK") == {"EmptyOK": 0.0}
    assert _values([], GOLD_AB, "EmptyOK") == {"EmptyOK": None}
    assert is_empty_ok(Ranking(), unanswerable) is True
    assert is_empty_ok(["a"], unanswerable) is False
    assert is_empty_ok(Ranking(), GOLD_AB) is None


# --- governance counts and policy unknown_ids -----------------------------------------------------------------

CORPUS = Corpus(
    [
        Chunk("shared", "s"),
        Chunk("acme1", "a", tenant="acme"),
        Chunk("globex1", "g", tenant="globex"),
        Chunk("old", "o", superseded_by="new"),
        Chunk("new", "n"),
        Chunk("orphan", "p", superseded_by="gone"),
    ]
)


def test_unauthorized_counts_chunks_the_case_tenant_may_not_see() -> None:
    ids = ["shared", "acme1", "globex1", "globex1", "unknown"]
    acme = Case(id="q", query="q", tenant="acme", evidence=[["shared"]])
    nobody = Case(id="q", query="q", evidence=[["shared"]])
    assert _values(ids, acme, "Unauthorized@5", corpus=CORPUS) == {"Unauthorized@5": 1.0}
    assert _values(ids, nobody, "Unauthorized@5", corpus=CORPUS) == {"Unauthorized@5": 2.0}
    assert _values(ids, acme, "Unauthorized@2", corpus=CORPUS) == {"Unauthorized@2": 0.0}


def test_stale_needs_the_successor_present_superseded_does_not() -> None:
    case = Case(id="q", query="q")
    values = _values(["old", "orphan", "new", "unknown"], case, "Stale@4,Superseded@4,Stale@1", corpus=CORPUS)
    assert values == {"Stale@4": 1.0, "Superseded@4": 2.0, "Stale@1": 1.0}
    assert "unknown_ids" in POLICIES


def test_governance_counts_are_defined_for_unanswerable_cases_and_empty_rankings() -> None:
    case = Case(id="q", query="q")
    values = _values([], case, "Unauthorized@3,Stale@3,Superseded@3,Dup@3", corpus=CORPUS)
    assert values == dict.fromkeys(values, 0.0)


def test_governance_without_a_corpus_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="corpus="):
        evaluate(Ranking.of(["a"]), GOLD_AB, "Stale@3")


# --- Relevance with a judge -----------------------------------------------------------------------------------


def test_relevance_is_the_mean_judge_score_over_distinct_top_k_hits() -> None:
    calls: list[tuple[str, str]] = []

    def judge(query: str, text: str) -> float:
        calls.append((query, text))
        return 1.0 if "cat" in text else 0.25

    corpus = Corpus([Chunk("a", "a cat"), Chunk("b", "a dog")])
    ranking = Ranking([Hit("a"), Hit("b"), Hit("a"), Hit("x", text="cat food")])
    values = evaluate(ranking, GOLD_AB, "Relevance@2,Relevance@4", corpus=corpus, judge=judge)
    assert values["Relevance@2"] == pytest.approx((1.0 + 0.25) / 2)
    assert values["Relevance@4"] == pytest.approx((1.0 + 0.25 + 1.0) / 3)
    assert len(calls) == 3  # each distinct id judged once across cutoffs
    assert all(query == "q" for query, _ in calls)
    assert evaluate(Ranking(), GOLD_AB, "Relevance@3", judge=judge)["Relevance@3"] is None


def test_relevance_without_a_judge_or_text_or_in_range_score_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="judge="):
        evaluate(Ranking.of(["a"]), GOLD_AB, "Relevance@3")
    with pytest.raises(UsageError, match="text"):
        evaluate(Ranking.of(["a"]), GOLD_AB, "Relevance@3", judge=lambda q, t: 1.0)
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        evaluate(Ranking([Hit("a", text="t")]), GOLD_AB, "Relevance@3", judge=lambda q, t: 7)


# --- policy ties (batch path) ---------------------------------------------------------------------------------


@BACKENDS
def test_batch_breaks_score_ties_by_doc_id_descending_like_trec_eval(backend: str) -> None:
    assert "ties" in POLICIES
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    result = evaluate_batch(run, {"q": {"c": 1}}, "RR@3", backend=backend)
    assert result["RR@3"].tolist() == [1.0]  # c, b, a
    result = evaluate_batch(run, {"q": {"a": 1}}, "RR@3", backend=backend)
    assert result["RR@3"].tolist() == [1 / 3]


def test_batch_query_order_and_missing_queries() -> None:
    run = {"q2": {"a": 1.0}, "q1": {"b": 2.0}}
    qrels = {"q1": {"b": 1}, "q3": {"c": 1}, "q2": {"z": 0}}
    result = evaluate_batch(run, qrels, "R@5,P_ret@5")
    assert result.query_ids == ("q2", "q1", "q3")
    r = result["R@5"].tolist()
    assert math.isnan(r[0]) and r[1:] == [1.0, 0.0]  # q2 has no relevant doc; q3 was never retrieved
    assert math.isnan(result["P_ret@5"][2])  # nothing came back for q3


def test_batch_rejects_measures_it_cannot_compute() -> None:
    with pytest.raises(UsageError, match="GroupR@3"):
        evaluate_batch({"q": {"a": 1.0}}, {"q": {"a": 1}}, "GroupR@3")
    with pytest.raises(UsageError, match="NaN"):
        evaluate_batch({"q": {"a": float("nan")}}, {"q": {"a": 1}}, "P@3")
    with pytest.raises(UsageError, match="lists of doc ids"):
        evaluate_batch({"q": 3}, {"q": {"a": 1}}, "P@3")


def test_batch_graded_gains_follow_trec_eval_ndcg_cut() -> None:
    # Gains are the qrels levels; negative levels gain nothing (checked against pytrec_eval by hand: 0.17376...).
    result = evaluate_batch({"q": {"b": 2.0, "a": 1.0}}, {"q": {"a": 1, "b": -1, "c": 3}}, "nDCG@2")
    assert result["nDCG@2"][0] == pytest.approx((1 / math.log2(3)) / (3 + 1 / math.log2(3)))


# --- every registered measure is computable and documented -----------------------------------------------------


@pytest.mark.parametrize("measure", list(MEASURES))
def test_every_registered_measure_evaluates(measure: str) -> None:
    info = MEASURES[measure]
    name = f"{measure}@3" if info.needs_k else measure
    corpus = Corpus([Chunk("a", "alpha"), Chunk("b", "beta"), Chunk("x", "chi")])
    values = evaluate(Ranking.of(["x", "a"]), GOLD_AB, [name], corpus=corpus, judge=lambda q, t: 0.5)
    assert list(values) == [str(parse_metric(name))]
    assert info.formula and info.edge_cases and info.summary


def test_query_scores_survive_pickling_with_their_parts() -> None:
    scores = evaluate(Ranking.of(["a", "x"]), Case(id="q", query="q", evidence=[["a"]], tags=["t"]), "P@2,R@2")
    copy = pickle.loads(pickle.dumps(scores))
    assert copy == scores and copy.parts == scores.parts and copy.tags == ("t",) and copy.gold_ids == 1


def test_batch_on_empty_input() -> None:
    result = evaluate_batch({}, {}, "P@5,nDCG@5")
    assert result.query_ids == () and result["P@5"].shape == (0,) and result["nDCG@5"].shape == (0,)


@BACKENDS
def test_batch_splits_blocks_around_one_very_long_ranking(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    from ragmorph.metrics import _batch

    monkeypatch.setattr(_batch, "_BLOCK_CELLS", 64)
    monkeypatch.setattr(_batch, "_BLOCK_ROWS", 4)
    rng = random.Random(3)
    run = {f"q{n}": {f"d{i}": rng.random() for i in range(rng.choice((0, 1, 3, 5)))} for n in range(11)}
    run["long"] = {f"d{i}": rng.random() for i in range(300)}
    qrels = {qid: {"d0": 1, "d2": 2, "d250": 1} for qid in run}
    result = evaluate_batch(run, qrels, "R@300,AP@300,RR@300", backend=backend).per_query()
    for qid, scores in run.items():
        order = sorted(scores, key=lambda doc: scores[doc], reverse=True)
        case = Case(id=qid, query="q", evidence=[["d0"], ["d2"], ["d250"]])
        assert dict(result[qid]) == pytest.approx(dict(evaluate(Ranking.of(order), case, "R@300,AP@300,RR@300")))


@BACKENDS
def test_batch_accepts_any_mapping_or_sequence_not_only_dicts_and_lists(backend: str) -> None:
    from types import MappingProxyType

    run = {"q1": MappingProxyType({"a": 2.0, "b": 1.0}), "q2": {"c": 1.0}}
    qrels = {"q1": MappingProxyType({"b": 1}), "q2": {"c": 2}}
    assert evaluate_batch(run, qrels, "RR@2", backend=backend)["RR@2"].tolist() == [0.5, 1.0]
    listed = {"q1": ("a", "b"), "q2": ["c"]}
    assert evaluate_batch(listed, qrels, "RR@2")["RR@2"].tolist() == [0.5, 1.0]
    with pytest.raises(UsageError, match="q2"):
        evaluate_batch({"q1": {"a": 1.0}, "q2": ["a"]}, qrels, "RR@2")
    with pytest.raises(UsageError, match="qrels\\['q1'\\]"):
        evaluate_batch(run, {"q1": [("b", 1)]}, "RR@2")
