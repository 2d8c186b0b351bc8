"""Evaluator mode: real metrics and judges pass, broken ones are caught and shrunk, the binomial test is exact."""

from __future__ import annotations

import functools
import random

import pytest

from ragmorph.errors import UsageError
from ragmorph.evaluator import (
    ContextCase,
    DropSoleSupport,
    InsertUnrelated,
    PromoteRelevant,
    binomial_tail,
    check_evaluator,
    context_cases,
)
from ragmorph.judges import LexicalJudge, RagasContextMetric
from ragmorph.model import Case, Chunk, Corpus, Ranking


@functools.lru_cache(maxsize=1)
def demo_contexts() -> tuple[ContextCase, ...]:
    """Top-10 BM25 contexts of the answerable demo-world cases: real rankings, gold at varied ranks."""
    from ragmorph.adapters import BM25Retriever
    from ragmorph.worlds import demo_world

    world = demo_world()
    retriever = BM25Retriever(world.corpus)
    cases = [case for case in world.cases if case.is_answerable]
    rankings = {case.id: Ranking(retriever.retrieve(case.query, k=10)) for case in cases}
    return context_cases(world.corpus, cases, rankings)


GOLD, OTHER = Chunk("g1", "The revised leave policy begins on 1 September 2026."), Chunk("x1", "The canteen opens at noon.")
SMALL = ContextCase(
    Case("q", "When does the revised leave policy begin?", evidence=[["g1"], ["g2"]]),
    [OTHER, Chunk("x2", "Parking is free."), GOLD, Chunk("g2", "Leave requests go to HR.")],
    [GOLD, Chunk("g2", "Leave requests go to HR.")],
)


@pytest.mark.parametrize(
    ("successes", "trials", "p", "expected"),
    [
        (10, 10, 0.5, 1 / 1024),
        (9, 10, 0.5, 11 / 1024),
        (8, 10, 0.5, 56 / 1024),
        (5, 5, 0.5, 1 / 32),
        (0, 7, 0.5, 1.0),
        (3, 4, 0.2, 4 * 0.2**3 * 0.8 + 0.2**4),
    ],
)
def test_binomial_tail_matches_known_values(successes: int, trials: int, p: float, expected: float) -> None:
    assert binomial_tail(successes, trials, p) == pytest.approx(expected, rel=1e-12)


@pytest.mark.integration
def test_binomial_tail_matches_scipy() -> None:
    from scipy.stats import binom

    for trials in (1, 5, 10, 30):
        for successes in range(trials + 1):
            for p in (0.1, 0.5, 0.9):
                assert binomial_tail(successes, trials, p) == pytest.approx(binom.sf(successes - 1, trials, p), rel=1e-9, abs=1e-15)


def test_binomial_tail_rejects_impossible_counts() -> None:
    with pytest.raises(UsageError, match="successes=11, trials=10"):
        binomial_tail(11, 10)


def test_perturbations_apply_to_the_context_list() -> None:
    contexts = SMALL.contexts
    # The retriever runner's own PromoteRelevant, applied to the context list read as a ranking.
    assert [h.id for h in PromoteRelevant(5, 0, 2).promoted(Ranking.of(c.id for c in contexts)).hits] == ["g1", "x2", "x1", "g2"]
    assert [c.id for c in InsertUnrelated(1, ("lorem", "ipsum")).apply_to(contexts)] == ["x1", "unrelated", "x2", "g1", "g2"]
    assert [c.id for c in DropSoleSupport(3).apply_to(contexts)] == ["x1", "x2", "g1"]


@pytest.mark.parametrize("metric", ["CP@5", "AP@5", "nDCG@5", "RR@5", "P@5", "R@5", "GroupR@5", "Hit@5"])
def test_the_real_metrics_pass_every_relation(metric: str) -> None:
    report = check_evaluator(metric, demo_contexts()[:6] + (SMALL,), max_examples=15, seed=1)
    assert report.passed, [r.reason for r in report.failures]
    assert {r.status for r in report.results} >= {"pass"}


def test_a_rank_reversed_context_precision_is_caught_and_shrunk() -> None:
    from ragmorph.metrics import evaluate

    def reversed_cp(case: Case, contexts: tuple[Chunk, ...], references: tuple[Chunk, ...]) -> float | None:
        # The planted bug: contexts sorted ascending by score, so CP is computed from the bottom up.
        return evaluate(Ranking.of(c.id for c in reversed(contexts)), case, ["CP@5"])["CP@5"]

    reversed_cp.kind = "precision"  # type: ignore[attr-defined]
    report = check_evaluator(reversed_cp, [SMALL], max_examples=25, seed=0)
    failure = next(r for r in report.failures if r.relation == "evaluator.promote_relevant")
    # Shrinking reaches the shortest swap: the gold context one step up, past its irrelevant neighbour.
    assert failure.violation["perturbation"]["fields"] == {"k": 5, "upper": 1, "lower": 2}
    assert failure.violation["after"] < failure.violation["before"]
    assert failure.violation["calls_to_first_failure"] >= 2
    # One violation type for both modes: the typed record reads as its JSON form.
    from ragmorph.runner import MetricViolation, Violation

    assert isinstance(failure.violation, MetricViolation) and isinstance(failure.violation, Violation)
    assert failure.to_dict()["violation"]["base_contexts"] == [c.id for c in SMALL.contexts]


class LengthJudge:
    """A broken judge: longer text is 'more relevant' whatever it says."""

    def score(self, query: str, text: str) -> float:
        return min(1.0, len(text) / 120)


def test_a_judge_that_rewards_length_is_caught_with_a_short_unrelated_text() -> None:
    report = check_evaluator(LengthJudge(), [SMALL], k=3, max_examples=30, seed=0)
    (failure,) = report.failures
    assert failure.relation == "evaluator.unrelated_ahead"
    fields = failure.violation["perturbation"]["fields"]
    # Minimal: inserted at the top, with only as many words as it takes to out-score what it displaces.
    assert fields["position"] == 0
    assert len(" ".join(fields["words"])) < 120


def test_the_lexical_judge_passes() -> None:
    report = check_evaluator(LexicalJudge(), demo_contexts()[:6], max_examples=15, seed=2)
    assert report.passed and any(r.status == "pass" for r in report.results)


class NoisyLexicalJudge:
    """A stochastic but sound judge: lexical overlap plus small seeded noise (a stand-in for an LLM at T > 0)."""

    stochastic = True

    def __init__(self, noise: float) -> None:
        self.noise = noise
        self.rng = random.Random(7)

    def score(self, query: str, text: str) -> float:
        return min(1.0, max(0.0, LexicalJudge().score(query, text) + self.rng.uniform(-self.noise, self.noise)))


def test_a_noisy_sound_judge_passes_by_the_binomial_test() -> None:
    report = check_evaluator(NoisyLexicalJudge(0.01), demo_contexts()[:3], max_examples=5, seed=0, repeats=10, tolerance=0.02)
    assert report.passed
    assert report.settings["repeats"] == 10


def test_a_coin_flip_judge_fails_with_share_and_p_value() -> None:
    report = check_evaluator(NoisyLexicalJudge(1.0), demo_contexts()[:2], max_examples=5, seed=0, repeats=10)
    failure = report.failures[0]
    assert failure.share is not None and failure.share < 0.9
    assert failure.p_value == pytest.approx(binomial_tail(round(failure.share * 10), 10))
    assert "runs (share" in failure.reason


def test_too_few_repeats_for_the_binomial_test_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="raise repeats"):
        check_evaluator(NoisyLexicalJudge(0.1), [SMALL], repeats=3)


def test_report_json_counts_statuses() -> None:
    data = check_evaluator("R@3", [SMALL], k=3, max_examples=5).to_dict()
    assert data["schema"] == "ragmorph.evaluator/1"
    assert data["summary"]["pass"] + data["summary"]["fail"] + data["summary"]["not_applicable"] == len(data["results"]) == 3
    assert data["summary"]["exit_code"] == 0


def test_bad_inputs_name_what_was_expected() -> None:
    with pytest.raises(UsageError, match="expected ContextCase values"):
        check_evaluator("CP@5", [("q", [])])
    with pytest.raises(UsageError, match="kind='precision' or kind='recall'"):
        check_evaluator(lambda case, contexts, refs: 0.0, [SMALL])
    with pytest.raises(UsageError, match="governance metrics"):
        check_evaluator("Dup@5", [SMALL])
    with pytest.raises(UsageError, match="expected a ranking for every case"):
        context_cases(Corpus([GOLD]), [SMALL.case], {})


@pytest.mark.integration
@pytest.mark.parametrize("name", ["non_llm_context_precision", "non_llm_context_recall", "id_context_precision", "id_context_recall"])
def test_ragas_context_metrics_pass_for_real(name: str) -> None:
    report = check_evaluator(RagasContextMetric(name), demo_contexts()[:3] + (SMALL,), max_examples=8, seed=0)
    assert report.passed, [r.reason for r in report.failures]
    assert any(r.status == "pass" for r in report.results)
