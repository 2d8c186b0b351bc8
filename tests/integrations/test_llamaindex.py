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


# --- QueryFusionRetriever: the library's fusion over legs each asked for `depth` nodes under the filter ---

from pathlib import Path  # noqa: E402

from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402

from ragmorph.adapters.llamaindex import LlamaIndexFusionRetriever  # noqa: E402
from ragmorph.errors import ExitCode  # noqa: E402
from ragmorph.io import read_cases, read_corpus  # noqa: E402
from ragmorph.runner import check  # noqa: E402

EXAMPLE_DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


def _library_legs(corpus: Corpus, depth: int) -> tuple[Any, Any]:
    nodes = llamaindex_bm25_factory(corpus).nodes  # every chunk field in the metadata encoding metadata_filters reads
    keyword = BM25Retriever(nodes=nodes, similarity_top_k=min(depth, len(nodes)))
    vector = VectorStoreIndex(nodes, embed_model=HashingEmbedding()).as_retriever(similarity_top_k=depth)
    return keyword, vector


def _fusion(corpus: Corpus, *, depth: int = 50, mode: str = "reciprocal_rerank",
            keyword_leg: type[LlamaIndexRetriever] = LlamaIndexRetriever) -> LlamaIndexFusionRetriever:
    keyword, vector = _library_legs(corpus, depth)
    legs = [
        keyword_leg(keyword, corpus=corpus, post_filter=True, max_k=len(corpus)),
        LlamaIndexRetriever(vector),  # the vector store filters natively (MetadataFilters)
    ]
    return LlamaIndexFusionRetriever(legs, mode=mode, depth=depth)


@pytest.mark.parametrize("mode", ["reciprocal_rerank", "relative_score", "dist_based_score", "simple"])
def test_fusion_ranks_and_scores_as_the_library_does(mode: str) -> None:
    corpus = tenant_corpus()
    depth = len(corpus)
    adapter = _fusion(corpus, depth=depth, mode=mode)
    hits = validate_hits(adapter.retrieve("parental leave policy", k=5), k=5, query="q", corpus=corpus)
    library = QueryFusionRetriever(list(_library_legs(corpus, depth)), llm=MockLLM(), mode=mode, similarity_top_k=5,
                                   num_queries=1, use_async=False)
    expected = [(n.node.metadata["id"], n.score) for n in library.retrieve("parental leave policy")]
    assert [(h.id, h.score) for h in hits] == expected


def test_fusion_filters_inside_every_leg_and_keeps_its_depth_whatever_k() -> None:
    corpus = tenant_corpus()
    adapter = _fusion(corpus)
    assert adapter.supports_filters and adapter.ragmorph_filtered_by == "retriever"
    filters = Filters(tenant="globex", current_only=True)
    hits = adapter.retrieve("parental leave policy", k=len(corpus), filters=filters)
    assert {h.id for h in hits} == {c.id for c in corpus if filters.allows(c)}
    deep = adapter.retrieve("leave", k=len(corpus))
    for k in (1, 2, 5):
        assert [h.id for h in adapter.retrieve("leave", k=k)] == [h.id for h in deep[:k]]


def test_fusion_refuses_what_it_cannot_drive() -> None:
    corpus = tenant_corpus()
    keyword, _ = _library_legs(corpus, 5)
    leg = LlamaIndexRetriever(keyword, corpus=corpus, post_filter=True)
    with pytest.raises(UsageError, match="LlamaIndexRetriever"):
        LlamaIndexFusionRetriever([keyword])
    with pytest.raises(UsageError, match="mode"):
        LlamaIndexFusionRetriever([leg], mode="rrf")
    with pytest.raises(UsageError, match="weights"):
        LlamaIndexFusionRetriever([leg], weights=[0.5, 0.5])
    with pytest.raises(UsageError, match="depth"):
        LlamaIndexFusionRetriever([leg], depth=0)


class _UnfilteredLeg(LlamaIndexRetriever):
    """The planted bug of a hand-built hybrid: the keyword leg never sees the filter."""

    def scored_nodes(self, query: str, *, n: int, filters: Filters | None = None) -> list[tuple[str, Any]]:
        return super().scored_nodes(query, n=n)


def test_a_correct_fusion_passes_the_filter_families_and_a_leg_ignoring_filters_is_caught() -> None:
    corpus, cases = read_corpus(EXAMPLE_DATA / "corpus.jsonl"), read_cases(EXAMPLE_DATA / "cases.jsonl")
    families = ["tenancy", "filters", "cutoff", "reorder"]
    correct = check({"fusion": _fusion}, corpus, cases, strategies=families, max_examples=10)
    assert correct.exit_code == int(ExitCode.OK), [r.violation for r in correct.results if r.status == "fail"]
    buggy = check({"fusion": lambda c: _fusion(c, keyword_leg=_UnfilteredLeg)}, corpus, cases, strategies=families,
                  max_examples=10)
    failed = {r.relation for r in buggy.results if r.status == "fail" and r.severity == "hard"}
    assert buggy.exit_code == int(ExitCode.VIOLATIONS) and "filters.admitted_only" in failed, failed
