"""ChromaRetriever against the real in-process chromadb: collection lifecycle, where clauses, deltas."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path

import chromadb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.adapters import HashingEmbedder, applied_delta, validate_hits
from ragmorph.adapters.chroma import ChromaRetriever, chroma_factory, where_clause
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.generators import chunks, corpora, texts
from support.integration_checks import assert_same_up_to_ties, tenant_corpus

pytestmark = pytest.mark.integration


def _names(client: object) -> set[str]:
    return {c.name for c in client.list_collections()}  # type: ignore[attr-defined]


class ExplodingEmbedder(HashingEmbedder):
    """A real embedder that fails once it has embedded `budget` texts (to test cleanup on errors)."""

    def __init__(self, budget: int) -> None:
        super().__init__(dim=32)
        self.budget = budget

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.budget -= len(texts)
        if self.budget < 0:
            raise RuntimeError("embedding service unavailable")
        return super().embed(texts)


def test_collection_is_deleted_on_close_and_close_is_idempotent() -> None:
    retriever = chroma_factory(tenant_corpus())
    assert retriever.name in _names(retriever.client) and retriever.name.startswith("ragmorph-")
    retriever.close()
    retriever.close()
    assert retriever.closed and retriever.name not in _names(retriever.client)
    with pytest.raises(UsageError, match="closed"):
        retriever.retrieve("leave", k=1)


def test_collection_is_deleted_when_the_with_body_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with ChromaRetriever(tenant_corpus()) as retriever:
            name, client = retriever.name, retriever.client
            assert name in _names(client)
            raise RuntimeError("boom")
    assert name not in _names(client)


def test_collection_is_deleted_when_building_fails() -> None:
    client = chromadb.EphemeralClient()
    before = _names(client)
    with pytest.raises(RuntimeError, match="embedding service unavailable"):
        ChromaRetriever(tenant_corpus(), embedder=ExplodingEmbedder(budget=0), client=client)
    assert _names(client) == before


def test_collection_is_deleted_when_the_retriever_is_garbage_collected() -> None:
    retriever = ChromaRetriever(tenant_corpus())
    name, client = retriever.name, retriever.client
    del retriever
    gc.collect()
    assert name not in _names(client)


def test_collections_get_unique_names_in_one_client(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    with ChromaRetriever(tenant_corpus(), client=client) as first, ChromaRetriever(Corpus([]), client=client) as second:
        assert first.name != second.name and {first.name, second.name} <= _names(client)
        assert second.retrieve("leave", k=3) == ()
        assert len(first.retrieve("leave", k=3)) == 3
    assert not {first.name, second.name} & _names(client)


def test_scores_are_cosines_best_first_and_empty_text_scores_zero() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    with ChromaRetriever(corpus, embedder=embedder) as retriever:
        hits = validate_hits(retriever.retrieve("parental leave policy", k=len(corpus)), k=len(corpus), query="q",
                             corpus=corpus)
    query = embedder.embed(["parental leave policy"])[0]
    for hit in hits:
        expected = float(embedder.embed([corpus[hit.id].text])[0] @ query)
        assert hit.score == pytest.approx(expected, abs=1e-5)
    assert next(h for h in hits if h.id == "empty#0").score == pytest.approx(0.0, abs=1e-6)


def test_where_clause_encodes_tenant_currency_and_metadata() -> None:
    assert where_clause(None) is None and where_clause(Filters()) is None
    assert where_clause(Filters(tenant="acme")) == {"tenant": {"$in": ["acme", ""]}}
    assert where_clause(Filters(tenant="acme", current_only=True, metadata={"lang": "en", "draft": False})) == {
        "$and": [
            {"tenant": {"$in": ["acme", ""]}},
            {"superseded_by": {"$eq": ""}},
            {"meta.lang": {"$eq": "en"}},
            {"meta.draft": {"$eq": "json:false"}},
        ]
    }


def test_deltas_reject_repeated_and_unknown_ids() -> None:
    with chroma_factory(tenant_corpus()) as retriever:
        with pytest.raises(UsageError, match="repeated"):
            retriever.add([Chunk("hr-1#0", "again")])
        with pytest.raises(UsageError, match="unknown"):
            retriever.remove(["nope"])
        assert len(retriever.corpus) == len(tenant_corpus())


def test_applied_delta_reverts_the_collection() -> None:
    corpus = tenant_corpus()
    with chroma_factory(corpus) as retriever:
        # Whole rankings: re-adding a removed chunk may move it within its tie group, and a cut could show that.
        before = retriever.retrieve("parental leave", k=len(corpus))
        with applied_delta(retriever, add=[Chunk("new#0", "parental leave parental leave")], remove=["hr-1#1"]):
            during = retriever.retrieve("parental leave", k=5)
            assert during[0].id == "new#0" and "hr-1#1" not in {h.id for h in during}
        assert_same_up_to_ties(retriever.retrieve("parental leave", k=len(corpus)), before)
        assert sorted(retriever.corpus.ids) == sorted(corpus.ids)


@st.composite
def _deltas(draw: st.DrawFn) -> tuple[Corpus, list[str], list[Chunk], str]:
    corpus = draw(corpora(min_size=1, max_size=8))
    removed = draw(st.lists(st.sampled_from(corpus.ids), unique=True, max_size=len(corpus)))
    added = draw(st.lists(chunks(ids=st.builds(lambda n: f"new#{n}", st.integers(0, 50))), max_size=3,
                          unique_by=lambda c: c.id))
    return corpus, removed, added, draw(texts(max_words=4))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delta=_deltas())
def test_a_delta_equals_a_rebuild(delta: tuple[Corpus, list[str], list[Chunk], str]) -> None:
    corpus, removed, added, query = delta
    edited = corpus.without(removed).with_chunks(added)
    with chroma_factory(corpus) as patched, chroma_factory(edited) as rebuilt:
        patched.remove(removed)
        patched.add(added)
        for filters in (None, Filters(tenant="acme", current_only=True)):
            k = max(1, len(edited))
            assert_same_up_to_ties(patched.retrieve(query, k=k, filters=filters),
                                   rebuilt.retrieve(query, k=k, filters=filters))


def test_chroma_compares_a_float_with_integers_by_truncating_it_so_floats_are_stored_as_text() -> None:
    # Pins a bug of the installed chromadb that ChromaRetriever avoids by storing floats as JSON text: a native
    # `$eq: 0.9` admits the integer 0, and `$eq: 1.0` the integer 1. A user's own adapter passing floats to
    # `where` meets it; when this test fails, chromadb has fixed it.
    collection = chromadb.EphemeralClient().create_collection("float-compare")
    collection.add(ids=["zero", "half"], documents=["a", "b"], metadatas=[{"p": 0}, {"p": 0.5}],
                   embeddings=[[1.0, 0.0], [1.0, 0.0]])
    assert sorted(collection.get(where={"p": {"$eq": 0.5}})["ids"]) == ["half", "zero"]
    assert collection.get(where={"p": {"$eq": 0.9}})["ids"] == ["zero"]
    assert sorted(collection.get(where={"p": {"$gte": 0.5}})["ids"]) == ["half", "zero"]  # 0 >= 0.5, truncated
    corpus = Corpus([Chunk("zero", "leave", metadata={"p": 0}), Chunk("half", "leave", metadata={"p": 0.5})])
    with ChromaRetriever(corpus) as retriever:
        assert [h.id for h in retriever.retrieve("leave", k=2, filters=Filters(metadata={"p": 0.5}))] == ["half"]
        assert retriever.retrieve("leave", k=2, filters=Filters(metadata={"p": 0.9})) == ()
