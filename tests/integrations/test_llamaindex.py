"""LlamaIndex adapters over the real llama-index-core and llama-index-retrievers-bm25."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from llama_index.retrievers.bm25 import BM25Retriever

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.llamaindex import LlamaIndexBM25Retriever, LlamaIndexRetriever, llamaindex_bm25_factory
from ragmorph.errors import InvalidResponse, UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.integration_checks import tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


class HashingEmbedding(BaseEmbedding):
    """LlamaIndex's embedding interface over ragmorph's deterministic HashingEmbedder (no model download)."""

    def _vector(self, text: str) -> list[float]:
        return HashingEmbedder(dim=64).embed([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


def _vector_retriever(corpus: Corpus, *, top_k: int = 2) -> Any:
    nodes = [TextNode(id_=c.id, text=c.text, metadata={"id": c.id, "tenant": c.tenant or ""}) for c in corpus]
    return VectorStoreIndex(nodes, embed_model=HashingEmbedding()).as_retriever(similarity_top_k=top_k)


def test_indexed_text_is_the_chunk_text_without_metadata_lines() -> None:
    corpus = tenant_corpus()
    adapter = llamaindex_bm25_factory(corpus)
    for node, chunk in zip(adapter.nodes, corpus):
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == chunk.text
    # "acme" and "hr" occur only in metadata (tenant, source): had metadata been indexed, they would score.
    assert all(hit.score == 0 for hit in adapter.retrieve("acme hr", k=len(corpus)))


def test_the_adapter_passes_the_librarys_filter_leak_through() -> None:
    """llama-index-retrievers-bm25 only zeroes excluded nodes' scores: the adapter returns what the library does."""
    corpus = tenant_corpus()
    adapter = llamaindex_bm25_factory(corpus)
    only_acme = MetadataFilters(filters=[MetadataFilter(key="tenant", value=["acme", ""], operator=FilterOperator.IN)])
    library = BM25Retriever(nodes=adapter.nodes, similarity_top_k=len(corpus), filters=only_acme)
    from_library = [(n.node.metadata["id"], n.score) for n in library.retrieve("parental leave")]
    assert any(corpus[chunk_id].tenant == "globex" for chunk_id, _ in from_library), "library fixed: update docs"
    hits = adapter.retrieve("parental leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in from_library]
    assert describe_capabilities(adapter).filtered_by == "retriever"


def test_post_filter_asks_ragmorph_to_filter_and_says_so() -> None:
    corpus = tenant_corpus()
    adapter = llamaindex_bm25_factory(corpus, post_filter=True)
    hits = adapter.retrieve("parental leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert hits and all(corpus[h.id].visible_to("acme") for h in hits)
    assert describe_capabilities(adapter).filtered_by == "ragmorph"
    assert adapter.builds == 1  # one unfiltered build serves every filter set


def test_one_build_per_distinct_filter_set_is_cached() -> None:
    adapter = llamaindex_bm25_factory(tenant_corpus())
    for _ in range(3):
        adapter.retrieve("leave", k=2)
        adapter.retrieve("leave", k=5, filters=Filters(tenant="acme"))
        adapter.retrieve("leave", k=1, filters=Filters())  # no-op filters share the unfiltered build
    assert adapter.builds == 2


def test_scores_are_bm25s_scores_best_first() -> None:
    corpus = tenant_corpus()
    hits = validate_hits(llamaindex_bm25_factory(corpus).retrieve("password reset", k=4), k=4, query="q", corpus=corpus)
    assert hits[0].id in {"it-1#0", "it-1#1"} and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_filter_admitting_nothing_gives_no_hits() -> None:
    adapter = llamaindex_bm25_factory(Corpus([Chunk("a", "alpha", tenant="acme"), Chunk("b", "beta", tenant="acme")]))
    assert adapter.retrieve("alpha", k=3, filters=Filters(tenant="globex")) == ()
    assert adapter.retrieve("alpha", k=3, filters=Filters(metadata={"lang": "fr"})) == ()


@pytest.mark.parametrize(
    "corpus", [Corpus([]), Corpus([Chunk("a", "0"), Chunk("b", "the of")])], ids=["empty", "no-indexable-token"]
)
def test_corpora_bm25s_cannot_index_give_no_hits(corpus: Corpus) -> None:
    adapter = LlamaIndexBM25Retriever(corpus)
    assert not adapter.indexable
    assert adapter.retrieve("the 0", k=4) == () and adapter.retrieve("a", k=1, filters=Filters(tenant="x")) == ()


def test_options_reach_the_library() -> None:
    corpus = Corpus([Chunk("a", "running fast"), Chunk("b", "the runner"), Chunk("c", "slow walk")])
    stemmed = llamaindex_bm25_factory(corpus).retrieve("run", k=3)
    exact = llamaindex_bm25_factory(corpus, skip_stemming=True).retrieve("run", k=3)
    assert stemmed[0].score > 0 and stemmed[0].id == "a"  # "running" stems to "run"
    assert all(h.score == 0 for h in exact)


def test_generic_wrapper_sets_similarity_top_k_on_a_copy() -> None:
    corpus = tenant_corpus()
    library = _vector_retriever(corpus, top_k=2)
    adapter = LlamaIndexRetriever(library, corpus=corpus)
    hits = validate_hits(adapter.retrieve("parental leave", k=5), k=5, query="q", corpus=corpus)
    assert len(hits) == 5 and all(isinstance(h.score, float) for h in hits)
    assert library.similarity_top_k == 2
    filtered = adapter.retrieve("parental leave", k=len(corpus), filters=Filters(tenant="globex"))
    assert filtered and all(corpus[h.id].visible_to("globex") for h in filtered)


def test_generic_wrapper_hands_metadata_filters_to_the_vector_store() -> None:
    corpus = tenant_corpus()
    library = _vector_retriever(corpus)
    adapter = LlamaIndexRetriever(library)
    hits = adapter.retrieve("leave policy", k=len(corpus), filters=Filters(tenant="acme"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("acme")}
    assert library._filters is None  # the filters went to a per-call copy
    assert describe_capabilities(adapter).filtered_by == "retriever"


def test_generic_wrapper_takes_a_users_filter_mapper() -> None:
    corpus = tenant_corpus()
    seen: list[Filters] = []

    def only_globex_nodes(filters: Filters) -> MetadataFilters:
        seen.append(filters)
        return MetadataFilters(filters=[MetadataFilter(key="tenant", value="globex")])

    adapter = LlamaIndexRetriever(_vector_retriever(corpus), filter_mapper=only_globex_nodes)
    hits = adapter.retrieve("leave", k=len(corpus), filters=Filters(tenant="globex"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.tenant == "globex"} and seen == [Filters(tenant="globex")]


def test_a_retriever_without_filter_settings_takes_no_filters_unless_ragmorph_is_asked() -> None:
    corpus = tenant_corpus()
    library = BM25Retriever(nodes=llamaindex_bm25_factory(corpus).nodes, similarity_top_k=2)
    plain = LlamaIndexRetriever(library, corpus=corpus)
    assert not describe_capabilities(plain).supports_filters
    with pytest.raises(UsageError, match="post_filter=True"):
        plain.retrieve("leave", k=2, filters=Filters(tenant="acme"))
    assert len(plain.retrieve("leave", k=2, filters=Filters())) == 2
    ragmorph_filtered = LlamaIndexRetriever(library, corpus=corpus, post_filter=True, max_k=len(corpus))
    assert describe_capabilities(ragmorph_filtered).filtered_by == "ragmorph"
    hits = ragmorph_filtered.retrieve("leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert hits and all(corpus[h.id].visible_to("acme") for h in hits)
    with pytest.raises(UsageError, match="filter_mapper"):
        LlamaIndexRetriever(library, filter_mapper=lambda filters: None)


def test_nodes_without_ids_fall_back_to_node_id_and_bad_ids_are_invalid() -> None:
    nodes = [TextNode(id_="n1", text="alpha"), TextNode(id_="n2", text="beta")]
    library = BM25Retriever(nodes=nodes, similarity_top_k=1)
    assert LlamaIndexRetriever(library).retrieve("alpha", k=1)[0].id == "n1"
    broken = BM25Retriever(nodes=[TextNode(id_="n1", text="alpha", metadata={"id": 7})], similarity_top_k=1)
    with pytest.raises(InvalidResponse, match=r"metadata\['id'\]"):
        LlamaIndexRetriever(broken).retrieve("alpha", k=1)


def test_only_base_retrievers_are_accepted() -> None:
    with pytest.raises(UsageError, match="BaseRetriever"):
        LlamaIndexRetriever(tenant_corpus())
