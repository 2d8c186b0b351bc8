"""Soundness: the whole suite raises no hard failure for correct retrievers on generated worlds and seeds."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.adapters import BM25Retriever, ContextPacker, DenseRetriever, FreshnessFilter, Pipeline
from ragmorph.runner import check
from quality.zoo2.plain import PlainBM25, PlainBM25IgnoresReadd, PlainBM25TiesByIdDesc, PlainNFKCBM25
from support.generators import worlds
from support.reference_bm25 import ReferenceBM25
from support.shapes import SHAPE_TRAITS, SHAPES

_NESTED = [h for h in HealthCheck if h.name in {"nested_given", "too_slow", "data_too_large", "filter_too_much"}]

# The built-ins and the brute-force reference, plus user-style adapters (tests/quality/zoo2/plain.py) that keep an
# index and edit it with add/remove/update/index deltas, break score ties another way (by descending id), and
# implement every filter themselves; one normalises Unicode (NFKC) in chunks and queries alike; one ignores an add
# of an id it holds (Chroma's way) where the others upsert or, the built-ins, refuse it. The packed pipeline ends
# its lists at a token budget, so a list shorter than k is not exhausted there (it declares so). The fresh one drops
# stale chunks in ragmorph's FreshnessFilter stage: its tenant and metadata filtering is still judged.
CORRECT = {
    "bm25": BM25Retriever,
    "dense": DenseRetriever,
    "reference_bm25": ReferenceBM25,
    "plain_bm25": PlainBM25,
    "plain_ties_by_id_desc": PlainBM25TiesByIdDesc,
    "plain_nfkc": PlainNFKCBM25,
    "plain_ignores_readd": PlainBM25IgnoresReadd,
    "packed_bm25": Pipeline([BM25Retriever, ContextPacker(token_budget=12)]),
    "fresh_bm25": Pipeline([BM25Retriever, FreshnessFilter()]),
}
# The lexical trait is what the hard distractor, depth and growth relations presume, normalising what the hard
# query relation presumes, unicode_normalising what the hard Unicode query relation presumes. The BM25s keep
# lexical and normalising (casefolded \w+ tokens); only the NFKC one keeps unicode_normalising; the dense one
# keeps neither. Every one of them edits exactly (exact_deltas): after add/remove/update/index it ranks like a
# fresh index of the edited corpus.
TRAITS = {
    "bm25": ["lexical", "normalising", "exact_deltas"],
    "dense": ["exact_deltas"],
    "reference_bm25": ["lexical", "normalising", "exact_deltas"],
    "plain_bm25": ["lexical", "normalising", "exact_deltas"],
    "plain_ties_by_id_desc": ["lexical", "normalising", "exact_deltas"],
    "plain_nfkc": ["lexical", "unicode_normalising", "exact_deltas"],
    "plain_ignores_readd": ["lexical", "normalising", "exact_deltas"],
    "packed_bm25": ["lexical", "normalising"],
    "fresh_bm25": ["lexical", "normalising"],
}


# Correct retrievers of every other shape teams ship (tests/support/shapes.py): exact dense, RRF hybrids with the
# filter inside each leg or on the fused list, normalised score fusion, a reranker over a fixed candidate pool, a
# paged client, an approximate index with an exact twin, a store with an operator filter language, and a store
# whose scores carry float noise; each with the traits its user would declare.
CORRECT.update(SHAPES)
TRAITS.update(SHAPE_TRAITS)


def _hard_problems(report) -> list[str]:
    return [
        f"{r.retriever}/{r.case}/{r.relation}: {r.status}: {r.reason}"
        + (f" [{r.violation['perturbation']['repr']}]" if r.violation else "")
        for r in report.results
        if (r.status == "fail" and r.severity == "hard") or r.status == "error"
    ]


@pytest.mark.slow
# 12 generated worlds keep the default run quick; RAGMORPH_SOUNDNESS_WORLDS=200 runs a release-grade sweep.
@settings(
    max_examples=int(os.environ.get("RAGMORPH_SOUNDNESS_WORLDS", "12")),
    deadline=None,
    database=None,
    suppress_health_check=_NESTED,
)
@given(world=worlds(min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_correct_retrievers_never_fail_a_hard_relation(world, seed) -> None:
    report = check(CORRECT, world.corpus, [world.case], max_examples=6, seed=seed, traits=TRAITS)
    problems = _hard_problems(report)
    assert not problems, "\n".join(problems)
    assert report.exit_code == 0
