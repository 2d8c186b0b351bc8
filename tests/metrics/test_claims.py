"""ClaimR@k and its support judges: the token rule's worked examples, the name carrying the method, the laws."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import UsageError
from ragmorph.judges import EmbeddingSupport, RagasSupport
from ragmorph.metrics import Metric, TokenSupport, aggregate, claim_facts, evaluate, parse_metric, standard_metrics
from ragmorph.model import Case, Chunk, Corpus, Hit, Ranking

LEAVE = Case(
    id="q7",
    query="When does the revised leave policy begin?",
    claims=["Starts 1 September 2026", "Annual leave is 25 days"],
)
CORPUS = Corpus(
    [
        Chunk("hr-12#3", "The revised leave policy starts on 2026-09-01 for every employee."),
        Chunk("hr-14#1", "Employees receive annual leave of 25 working days."),
        Chunk("hr-15#1", "Annual leave is 250 days for nobody; this chunk is a distractor."),
        Chunk("ops-1", "The cafeteria opens at nine."),
    ]
)


def test_the_metric_name_always_names_its_support_judge() -> None:
    assert str(Metric("ClaimR", 5)) == "ClaimR(judge=tokens)@5"
    assert parse_metric("ClaimR@5") == Metric("ClaimR", 5)
    assert parse_metric(" claimr ( judge = Embedding ) @ 3") == Metric("ClaimR", 3, judge="embedding")
    assert str(parse_metric("ClaimR(judge=ragas)@10")) == "ClaimR(judge=ragas)@10"
    assert "ClaimR(judge=tokens)@5" in map(str, standard_metrics([5], claims=True))
    assert not any(str(m).startswith("ClaimR") for m in standard_metrics([5]))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("P(judge=tokens)@5", "only ClaimR takes one"), ("ClaimR(judge=)@5", "valid:"), ("ClaimR", "cutoff")],
)
def test_a_judge_on_the_wrong_measure_or_a_malformed_one_is_a_usage_error(text: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        parse_metric(text)


@pytest.mark.parametrize(
    ("claim", "text", "supported"),
    [
        # Dates match as dates, whatever their spelling; a different day never matches.
        ("Starts 1 September 2026", "It starts on 2026-09-01.", True),
        ("Starts September 1, 2026", "it STARTS on 1st Sept 2026", True),
        ("Starts 1 September 2026", "It starts on 2026-09-02.", False),
        # Numbers match exactly: 25 is not 250, 3.5 is not 35, thousands separators do not matter.
        ("Annual leave is 25 days", "annual leave: 25 days", True),
        ("Annual leave is 25 days", "annual leave: 250 days", False),
        ("The fee is 3.5 percent", "the fee is 35 percent", False),
        ("The fee is 3,5 percent", "the fee is 3.5 percent", True),
        ("Limit of 1,000 euros", "a limit of 1000 euros", True),
        ("Leave in 2026", "Leave begins 1 May 2026", True),  # a year inside a written date still counts
        # Content words: 4 of 5 (80%) is enough, 3 of 5 is not; function words are not counted.
        ("remote work needs manager written approval", "remote work needs manager approval", True),
        ("remote work needs manager written approval", "remote work needs approval", False),
        ("The policy of the company", "policy company", True),
        # Unicode is normalised (NFKC, casefold): the ligature and full-width digits read as plain text.
        ("ﬁle within ３ days", "FILE within 3 days", True),
        ("", "anything at all", False),
        ("the of and", "the of and", False),
    ],
)
def test_token_support_rule(claim: str, text: str, supported: bool) -> None:
    assert TokenSupport().supports(claim, text) is supported


_RULE_CASES = [
    ("Starts 1 September 2026", "It starts on 2026-09-01."),
    ("Starts September 1, 2026", "it STARTS on 1st Sept 2026"),
    ("Annual leave is 25 days", "annual leave: 25 days"),
    ("The fee is 3,5 percent", "the fee is 3.5 percent"),
    ("Limit of 1,000 euros", "a limit of 1000 euros"),
    ("Leave in 2026", "Leave begins 1 May 2026"),
    ("ﬁle within ３ days", "FILE within 3 days"),
    ("fee 0.05 or 007", "fee 00.05 or 7 and 0,05"),
    ("", "anything at all"),
]
# Pieces that exercise each part of the rule: words (shared, stopwords, ligatures, case), numbers with separators
# and leading zeros, dates in all three spellings, invalid dates, and the text around them.
_PIECES = st.sampled_from(
    ["leave", "Leave", "starts", "the", "of", "ﬁle", "file", "days", "25", "250", "025", "1,000", "1000", "1.000",
     "3.5", "3,5", "35", "0", "00", "0.5", ".5", "2026", "2026-09-01", "2026-9-1", "2026-13-40", "1 September 2026",
     "September 1, 2026", "1st Sept 2026", "may", "May 2026", "３", "ß", "ss", "-", ",", ".", "x1y"]
)
_TEXTS = st.lists(_PIECES, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(claims=st.lists(_TEXTS, min_size=1, max_size=3), texts=st.lists(_TEXTS, max_size=6), threshold=st.sampled_from([0.5, 0.8, 1.0]))
def test_supporting_answers_exactly_what_supports_answers_text_by_text(claims: list[str], texts: list[str], threshold: float) -> None:
    judge = TokenSupport(threshold=threshold)
    expected = {claim: [n for n, text in enumerate(texts) if judge.supports(claim, text)] for claim in claims}
    assert judge.supporting(claims, iter(texts)) == expected


def test_supporting_finds_the_worked_examples() -> None:
    claims = [claim for claim, _ in _RULE_CASES]
    texts = [text for _, text in _RULE_CASES]
    found = TokenSupport().supporting(claims, texts)
    assert found == {claim: [n for n, t in enumerate(texts) if TokenSupport().supports(claim, t)] for claim in claims}
    assert found["Limit of 1,000 euros"] == [4] and found["fee 0.05 or 007"] == [7] and found[""] == []


def test_token_support_threshold_is_stated_and_validated() -> None:
    assert TokenSupport().threshold == 0.8
    assert TokenSupport(threshold=0.5).supports("remote work needs manager written approval", "remote work needs")
    for bad in (0, 1.5, True, "0.8"):
        with pytest.raises(UsageError, match="threshold"):
            TokenSupport(threshold=bad)  # type: ignore[arg-type]
    words, numbers, dates = claim_facts("Starts 1 September 2026 with 25 days")
    assert words == {"starts", "with", "days"} - {"with"} and numbers == {"25"} and len(dates) == 1


def test_claim_recall_counts_claims_supported_by_the_top_k_texts() -> None:
    ranking = Ranking.of(["ops-1", "hr-12#3", "hr-15#1", "hr-14#1"])
    values = evaluate(ranking, LEAVE, "ClaimR@1,ClaimR@2,ClaimR@3,ClaimR@4", corpus=CORPUS)
    assert dict(values) == {
        "ClaimR(judge=tokens)@1": 0.0,
        "ClaimR(judge=tokens)@2": 0.5,
        "ClaimR(judge=tokens)@3": 0.5,  # hr-15#1 says 250 days, not 25
        "ClaimR(judge=tokens)@4": 1.0,
    }
    assert values.parts["ClaimR(judge=tokens)@2"] == (1, 2)


def test_claim_recall_is_none_without_claims_and_defined_without_evidence() -> None:
    no_claims = Case(id="n", query="q", evidence=[["ops-1"]])
    assert evaluate(Ranking.of(["ops-1"]), no_claims, "ClaimR@1", corpus=CORPUS)["ClaimR(judge=tokens)@1"] is None
    # Claims need no gold ids: a case with weak or no evidence ids is still scored.
    assert LEAVE.gold_ids == ()
    assert evaluate(Ranking.of(["hr-14#1"]), LEAVE, "ClaimR@1", corpus=CORPUS)["ClaimR(judge=tokens)@1"] == 0.5
    assert evaluate(Ranking(), LEAVE, "ClaimR@3")["ClaimR(judge=tokens)@3"] == 0.0


def test_claim_recall_reads_hit_text_first_and_asks_for_text_it_cannot_find() -> None:
    ranking = Ranking([Hit("x", text="Annual leave is 25 days.")])
    assert evaluate(ranking, LEAVE, "ClaimR@1")["ClaimR(judge=tokens)@1"] == 0.5
    with pytest.raises(UsageError, match="expected text for hit 'ops-1'"):
        evaluate(Ranking.of(["ops-1"]), LEAVE, "ClaimR@1")


def test_a_method_without_its_judge_is_a_usage_error_naming_the_method() -> None:
    with pytest.raises(UsageError, match="method 'embedding'"):
        evaluate(Ranking.of(["hr-14#1"]), LEAVE, "ClaimR(judge=embedding)@1", corpus=CORPUS)
    with pytest.raises(UsageError, match="support judges"):
        evaluate(Ranking.of(["hr-14#1"]), LEAVE, "ClaimR@1", corpus=CORPUS, support=[object()])  # type: ignore[list-item]


def test_embedding_and_ragas_judges_are_options_with_their_own_names() -> None:
    ranking = Ranking.of(["hr-14#1", "hr-12#3"])
    names = "ClaimR@2,ClaimR(judge=embedding)@2,ClaimR(judge=ragas)@2"
    values = evaluate(ranking, LEAVE, names, corpus=CORPUS, support=[EmbeddingSupport(threshold=0.3), RagasSupport()])
    assert set(values) == {"ClaimR(judge=tokens)@2", "ClaimR(judge=embedding)@2", "ClaimR(judge=ragas)@2"}
    assert all(0.0 <= v <= 1.0 for v in values.values())
    assert values["ClaimR(judge=tokens)@2"] == 1.0
    # A claim quoted verbatim by its chunk is supported under every method.
    quoted = Case(id="q", query="q", claims=["The cafeteria opens at nine."])
    strict = evaluate(
        Ranking.of(["ops-1"]), quoted, "ClaimR@1,ClaimR(judge=embedding)@1,ClaimR(judge=ragas)@1", corpus=CORPUS,
        support=[EmbeddingSupport(), RagasSupport()],
    )
    assert set(strict.values()) == {1.0}


def test_aggregate_pools_claims_micro_and_keeps_the_name() -> None:
    per_query = {
        "a": evaluate(Ranking.of(["hr-12#3"]), LEAVE, "ClaimR@1", corpus=CORPUS),
        "b": evaluate(Ranking.of(["ops-1"]), Case(id="b", query="q", claims=["cafeteria opens nine"]), "ClaimR@1",
                      corpus=CORPUS),
        "c": evaluate(Ranking.of(["ops-1"]), Case(id="c", query="q", evidence=[["ops-1"]]), "ClaimR@1", corpus=CORPUS),
    }
    summary = aggregate(per_query).to_dict()["metrics"]["ClaimR(judge=tokens)@1"]
    assert summary == {"macro": pytest.approx(0.75), "micro": pytest.approx(2 / 3), "queries": 2, "errored": 0}


_IDS = st.sampled_from(CORPUS.ids)


@settings(max_examples=80)
@given(ids=st.lists(_IDS, max_size=6), k=st.integers(1, 5))
def test_claim_recall_never_falls_as_k_grows_and_ignores_repeats(ids: list[str], k: int) -> None:
    values = evaluate(Ranking.of(ids), LEAVE, [f"ClaimR@{k}", f"ClaimR@{k + 1}"], corpus=CORPUS)
    assert values[f"ClaimR(judge=tokens)@{k}"] <= values[f"ClaimR(judge=tokens)@{k + 1}"]
    repeated = ids[:1] + ids if ids else ids
    again = evaluate(Ranking.of(repeated), LEAVE, [f"ClaimR@{k + 1}"], corpus=CORPUS)
    assert again[f"ClaimR(judge=tokens)@{k + 1}"] <= values[f"ClaimR(judge=tokens)@{k + 1}"] + 1e-12
