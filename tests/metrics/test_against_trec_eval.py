"""Our metrics agree with trec_eval (via pytrec_eval) to 1e-9 on 1,000 random ranking/qrels pairs."""

from __future__ import annotations

import random

import pytest

from ragmorph.metrics import evaluate, evaluate_batch
from ragmorph.model import Case, Ranking
from support.backends import BACKENDS
from support.metric_worlds import trec_order

pytrec_eval = pytest.importorskip("pytrec_eval")

pytestmark = pytest.mark.integration

CUTOFFS = (1, 3, 5, 10, 20)
PAIRS = 1_000


def _random_pairs(seed: int, *, tied: bool) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Runs of depth 0..30 over a pool of 40 docs, qrels with graded levels and at least one relevant doc."""
    rng = random.Random(seed)
    pool = [f"doc{i:02d}" for i in range(40)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for number in range(PAIRS):
        qid = f"q{number}"
        docs = rng.sample(pool, rng.randint(0, 30))
        if tied:
            # Few distinct values force ties, which trec_eval breaks by doc id, descending.
            run[qid] = {doc: float(rng.randint(0, 4)) for doc in docs}
        else:
            scores = rng.sample(range(10_000), len(docs))
            run[qid] = {doc: score / 7.0 for doc, score in zip(docs, scores)}
        judged = rng.sample(pool, rng.randint(1, 12))
        levels = {doc: rng.choice((0, 1, 1, 2, 3)) for doc in judged}
        levels[judged[0]] = max(levels[judged[0]], 1)
        qrels[qid] = levels
    return run, qrels


def _trec_measures() -> set[str]:
    names = {"recip_rank"}
    for k in CUTOFFS:
        names |= {f"P_{k}", f"recall_{k}", f"map_cut_{k}", f"ndcg_cut_{k}"}
    return names


def _reference(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """trec_eval's values keyed like ours; RR@k is recip_rank on the run truncated to its top k."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, _trec_measures())
    full = evaluator.evaluate(run)
    expected: dict[str, dict[str, float]] = {qid: {} for qid in run}
    for qid, values in full.items():
        for k in CUTOFFS:
            expected[qid][f"P@{k}"] = values[f"P_{k}"]
            expected[qid][f"R@{k}"] = values[f"recall_{k}"]
            expected[qid][f"AP@{k}"] = values[f"map_cut_{k}"]
            expected[qid][f"nDCG@{k}"] = values[f"ndcg_cut_{k}"]
    rr_evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    for k in CUTOFFS:
        truncated = {qid: {doc: run[qid][doc] for doc in trec_order(scores)[:k]} for qid, scores in run.items()}
        for qid, values in rr_evaluator.evaluate(truncated).items():
            expected[qid][f"RR@{k}"] = values["recip_rank"]
    return expected


def _ours_names() -> list[str]:
    return [f"{m}@{k}" for k in CUTOFFS for m in ("P", "R", "AP", "nDCG", "RR")]


@BACKENDS
@pytest.mark.parametrize("tied", [False, True], ids=["distinct-scores", "tied-scores"])
def test_batch_path_matches_trec_eval_with_graded_qrels(tied: bool, backend: str) -> None:
    run, qrels = _random_pairs(seed=20260901 + tied, tied=tied)
    expected = _reference(run, qrels)
    result = evaluate_batch(run, qrels, _ours_names(), backend=backend)
    assert result.query_ids == tuple(run)
    compared = 0
    for row, qid in enumerate(result.query_ids):
        if qid not in expected or not expected[qid]:
            continue  # trec_eval skips a query with an empty ranking
        for name in _ours_names():
            assert result[name][row] == pytest.approx(expected[qid][name], abs=1e-9), (qid, name)
            compared += 1
    assert compared >= 0.9 * PAIRS * len(_ours_names())


def test_single_path_matches_trec_eval_on_binary_qrels() -> None:
    run, graded = _random_pairs(seed=7, tied=False)
    qrels = {qid: {doc: int(level > 0) for doc, level in levels.items()} for qid, levels in graded.items()}
    expected = _reference(run, qrels)
    for qid, scores in run.items():
        if not expected[qid]:
            continue
        case = Case(id=qid, query="q", evidence=[[doc] for doc, level in qrels[qid].items() if level])
        ours = evaluate(Ranking.of(trec_order(scores)), case, _ours_names())
        for name in _ours_names():
            assert ours[name] == pytest.approx(expected[qid][name], abs=1e-9), (qid, name)
