"""The demo world is tuned so that ordinary lexical retrievers answer most of its questions."""

from __future__ import annotations

import re

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.metrics import evaluate
from ragmorph.model import Filters, Ranking
from ragmorph.worlds import demo_world, generate


def group_recall_at_5(retrieve, world) -> float:
    """Mean GroupR@5 over the answerable cases, each asked under its tenant filter."""
    values = []
    for case in world.cases:
        if not case.is_answerable:
            continue
        ranking = Ranking(retrieve(case.query, 5, Filters(tenant=case.tenant)))
        values.append(evaluate(ranking, case, ["GroupR@5"], corpus=world.corpus)["GroupR@5"])
    return sum(values) / len(values)


def test_builtin_bm25_answers_most_demo_questions() -> None:
    world = demo_world()
    bm25 = BM25Retriever(world.corpus)
    score = group_recall_at_5(lambda q, k, f: bm25.retrieve(q, k=k, filters=f), world)
    assert score >= 0.9, f"demo world GroupR@5 under BM25 fell to {score:.2f}; retune the demo seed or templates"


@pytest.mark.integration
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_bm25_answers_most_questions_of_generated_worlds(seed: int) -> None:
    from rank_bm25 import BM25Okapi
    from ragmorph.model import Hit

    world = generate(seed, chunks=120)
    tokens = [re.findall(r"\w+", c.text.lower()) for c in world.corpus]
    index = BM25Okapi(tokens)

    def retrieve(query: str, k: int, filters: Filters) -> list[Hit]:
        scores = index.get_scores(re.findall(r"\w+", query.lower()))
        order = sorted(range(len(tokens)), key=lambda i: (-scores[i], i))
        allowed = [i for i in order if filters.allows(world.corpus.chunks[i])]
        return [Hit(world.corpus.chunks[i].id, float(scores[i])) for i in allowed[:k]]

    assert group_recall_at_5(retrieve, world) >= 0.8
