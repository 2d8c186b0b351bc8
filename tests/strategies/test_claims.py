"""Claims family: the hard relation holds for correct retrievers on generated worlds, catches a stale index,
and the ClaimR non-increase is soft because a correct retriever can break it."""

from __future__ import annotations

import pytest

from ragmorph.adapters import BM25Retriever, DenseRetriever
from ragmorph.metrics import evaluate
from ragmorph.model import Case, Chunk, Corpus, Filters, Params, World
from ragmorph.relations import Observation
from ragmorph.runner import check
from ragmorph.strategies import FAMILIES, relation
from ragmorph.strategies.claims import RemoveClaimSupport, supporters
from ragmorph.worlds import generate
from support.reference_bm25 import ReferenceBM25
from support.zoo import IgnoresDeletes

CORRECT = {"bm25": BM25Retriever, "dense": DenseRetriever, "reference_bm25": ReferenceBM25}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_correct_retrievers_never_fail_the_claims_family_on_generated_worlds(seed: int) -> None:
    world = generate(seed, chunks=40, cases=8)
    report = check(CORRECT, world.corpus, world.cases, strategies=["claims"], max_examples=6, seed=seed)
    rows = [r for r in report.results if r.relation == "claims.removed_claim_unsupported"]
    problems = [f"{r.retriever}/{r.case}: {r.status} {r.reason}" for r in report.results if r.status in ("fail", "error") and r.severity == "hard"]
    assert not problems, "\n".join(problems)
    # The family really ran: generated claims are stated verbatim by their evidence chunks.
    assert sum(r.status == "pass" for r in rows) >= len(CORRECT) * 3


def test_a_claim_whose_supporters_a_stale_index_keeps_is_reported() -> None:
    world = generate(2, chunks=30, cases=6)
    report = check({"ignores_deletes": IgnoresDeletes}, world.corpus, world.cases, strategies=["claims"], max_examples=10)
    failed = [r for r in report.results if r.relation == "claims.removed_claim_unsupported" and r.status == "fail"]
    assert failed, [(r.case, r.status, r.reason) for r in report.results]
    violation = failed[0].violation
    assert "still supported" in violation["detail"]
    assert violation["perturbation"]["type"] == "RemoveClaimSupport"


def test_the_family_is_not_applicable_without_claims_or_support_and_says_why() -> None:
    corpus = Corpus([Chunk("a", "The cafeteria opens at nine.")])
    applicable = FAMILIES["claims"].applicable
    assert "no claims" in applicable(World(corpus, Case("q", "when?"), Params(3)))
    unsupported = Case("q", "when?", claims=["The gym closes at ten."])
    assert "no claim of the case is supported" in applicable(World(corpus, unsupported, Params(3)))
    supported = Case("q", "when?", claims=["cafeteria opens at nine"])
    assert applicable(World(corpus, supported, Params(3))) is None
    assert supporters(corpus, "cafeteria opens at nine") == ("a",)


def test_claim_recall_non_increase_is_soft_because_a_correct_retriever_breaks_it() -> None:
    # The sole supporter of claim 0 ranks first; removing it lets a chunk supporting claims 1 and 2 into the
    # top 1. Nothing is wrong with the retriever, so the relation may only be a rate.
    corpus = Corpus(
        [
            Chunk("x", "alpha beta gamma delta: the office opens at 8"),
            Chunk("y", "alpha beta gamma: parking costs 12 euros; lunch costs 9 euros"),
            Chunk("z", "unrelated text about the weather"),
        ]
    )
    case = Case("q", "alpha beta gamma delta", claims=["office opens at 8", "parking costs 12 euros", "lunch costs 9 euros"])
    world = World(corpus, case, Params(1, Filters()))
    perturbation = RemoveClaimSupport(k=1, claim=0, ids=supporters(corpus, case.claims[0]))
    follow_world = perturbation.apply(world)
    retriever = DenseRetriever(corpus)
    base = Observation(world, _ranking(retriever, world))
    follow = Observation(follow_world, _ranking(DenseRetriever(follow_world.corpus), follow_world))
    assert [h.id for h in base.ranking.hits] == ["x"] and [h.id for h in follow.ranking.hits] == ["y"]
    soft = relation("claims.claim_recall_non_increasing")
    verdict = soft.check(base, follow)
    assert not verdict.holds and (verdict.before, verdict.after) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert soft.severity.value == "soft"
    # The hard relation holds on the same pair: claim 0 itself is gone.
    assert relation("claims.removed_claim_unsupported").check(base, follow).holds
    name = "ClaimR(judge=tokens)@1"
    assert evaluate(follow.ranking, case, "ClaimR@1", corpus=follow_world.corpus)[name] == pytest.approx(2 / 3)


def _ranking(retriever, world: World):
    from ragmorph.model import Ranking

    return Ranking(tuple(retriever.retrieve(world.case.query, k=world.params.k, filters=world.params.filters)))
