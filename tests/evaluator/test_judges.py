"""Judges: the contract (a number in [0, 1]), the label, lexical and embedding judges, and Ragas for real."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import AdapterError, UsageError
from ragmorph.judges import (
    EmbeddingJudge,
    Judge,
    LabelJudge,
    LexicalJudge,
    RagasContextMetric,
    RagasJudge,
    is_stochastic,
    judge_score,
)
from ragmorph.model import Case, Chunk, Corpus

CORPUS = Corpus(
    [
        Chunk("hr-12#3", "The revised leave policy begins on 1 September 2026."),
        Chunk("hr-14#1", "Parental leave is sixteen weeks."),
        Chunk("ops-1", "The canteen opens at noon."),
    ]
)
CASE = Case("q7", "When does the revised leave policy begin?", evidence=[["hr-12#3"], ["hr-14#1"]])


def test_label_judge_scores_gold_texts_one_and_others_zero() -> None:
    judge = LabelJudge(CASE, CORPUS)
    assert judge.score(CASE.query, CORPUS["hr-12#3"].text) == 1.0
    assert judge.score(CASE.query, CORPUS["ops-1"].text) == 0.0
    assert (judge.score_id("hr-14#1"), judge.score_id("ops-1")) == (1.0, 0.0)


def test_label_judge_names_gold_ids_missing_from_the_corpus() -> None:
    with pytest.raises(UsageError, match="missing ids \\['hr-14#1'\\]"):
        LabelJudge(CASE, CORPUS.without(["hr-14#1"]))


def test_lexical_judge_is_the_share_of_query_tokens_found() -> None:
    judge = LexicalJudge()
    assert judge.score("Leave policy", "the LEAVE rules") == 0.5
    assert judge.score("leave policy", "policy; leave!") == 1.0
    assert judge.score("?!", "anything") == 0.0


def test_embedding_judge_gives_one_for_identical_text_and_zero_for_no_shared_word() -> None:
    judge = EmbeddingJudge()
    assert judge.score("leave policy", "leave policy") == pytest.approx(1.0)
    assert judge.score("leave policy", "") == 0.0


@settings(max_examples=30, deadline=None)
@given(query=st.text(max_size=30), text=st.text(max_size=60))
def test_built_in_judges_keep_their_contract(query: str, text: str) -> None:
    for judge in (LexicalJudge(), EmbeddingJudge(), LabelJudge(CASE, CORPUS)):
        assert isinstance(judge, Judge)
        assert 0.0 <= judge_score(judge, query, text) <= 1.0
        assert not is_stochastic(judge)


class _Overconfident:
    def score(self, query: str, text: str) -> float:
        return 1.5


class _Noisy:
    stochastic = True

    def score(self, query: str, text: str) -> float:
        return float("nan")


def test_judge_score_rejects_values_outside_the_unit_interval() -> None:
    with pytest.raises(AdapterError, match="got score=1.5; clip or rescale"):
        judge_score(_Overconfident(), "q", "t")
    with pytest.raises(AdapterError, match="got score=nan"):
        judge_score(_Noisy(), "q", "t")
    assert is_stochastic(_Noisy())


@pytest.mark.integration
def test_ragas_judge_is_ragas_string_similarity_for_real() -> None:
    from rapidfuzz.distance import Levenshtein

    judge = RagasJudge.for_case(CASE, CORPUS)
    text = "The canteen opens at noon."
    expected = max(1 - Levenshtein.normalized_distance(text, CORPUS[i].text) for i in CASE.gold_ids)
    assert judge.score(CASE.query, text) == pytest.approx(expected)
    assert judge.score(CASE.query, CORPUS["hr-14#1"].text) == pytest.approx(1.0)
    with pytest.raises(UsageError, match="expected distance in"):
        RagasJudge(["x"], distance="cosine")


@pytest.mark.integration
def test_ragas_context_metrics_run_offline_on_ranked_contexts() -> None:
    gold, other = [CORPUS["hr-12#3"], CORPUS["hr-14#1"]], CORPUS["ops-1"]
    precision = RagasContextMetric("non_llm_context_precision")
    # Ragas' average precision over thresholded similarities: a relevant context at rank 2 of 2 gives 1/2.
    assert precision(CASE, [other, gold[0]], gold) == pytest.approx(0.5)
    assert precision(CASE, [gold[0], other], gold) == pytest.approx(1.0)
    assert RagasContextMetric("id_context_recall")(CASE, [other, gold[0]], gold) == pytest.approx(0.5)
    assert RagasContextMetric("non_llm_context_recall")(CASE, [], gold) is None
    with pytest.raises(UsageError, match="expected a metric name in"):
        RagasContextMetric("faithfulness")
