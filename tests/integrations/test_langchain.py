"""LangChainRetriever over real LangChain retrievers: BM25 (langchain-community) and an in-memory vector store."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.langchain import LangChainRetriever, langchain_bm25_factory
from ragmorph.errors import InvalidResponse, UsageError
from ragmorph.model import Chunk, Corpus, Filters, Hit
from support.integration_checks import assert_filtered_prefix, tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever


class HashingEmbeddings(Embeddings):
    """LangChain's embedding interface over ragmorph's deterministic HashingEmbedder (no model download)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=64)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed([text])[0].tolist()


def _vector_retriever(corpus: Corpus) -> object:
    store = InMemoryVectorStore(embedding=HashingEmbeddings())
    store.add_documents(
        [Document(page_content=c.text, metadata={"id": c.id, "tenant": c.tenant, "superseded_by": c.superseded_by,
                                                 **c.metadata}) for c in corpus],
        ids=list(corpus.ids),
    )
    return store.as_retriever(search_kwargs={"k": 2})


def test_bm25_factory_scores_are_rank_bm25_scores_in_rank_order() -> None:
    corpus = tenant_corpus()
    adapter = langchain_bm25_factory(corpus)
    hits = validate_hits(adapter.retrieve("Parental leave policy:", k=5), k=5, query="q", corpus=corpus)
    library = adapter.retriever
    raw = library.vectorizer.get_scores("Parental leave policy:".split())
    assert [h.score for h in hits] == [pytest.approx(float(raw[corpus.position(h.id)])) for h in hits]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].id in {"hr-1#0", "hr-1#1", "hr-2#0"} and hits[0].score > 0


def test_bm25_factory_keeps_langchain_tokenisation_unless_told_otherwise() -> None:
    # Three chunks: with two, rank_bm25's idf of a term in one of them is log(1.5 / 1.5) = 0.
    corpus = Corpus([Chunk("a", "Password reset."), Chunk("b", "other words here"), Chunk("c", "more words")])
    default = langchain_bm25_factory(corpus)
    # LangChain splits on whitespace: "reset" does not match the token "reset." (documented library behaviour).
    assert default.retrieve("reset", k=1)[0].score == 0
    lowered = langchain_bm25_factory(corpus, preprocess_func=lambda t: t.lower().replace(".", " ").split())
    assert lowered.retrieve("RESET", k=1)[0].id == "a" and lowered.retrieve("RESET", k=1)[0].score > 0


def test_the_callers_retriever_keeps_its_k() -> None:
    corpus = tenant_corpus()
    library = BM25Retriever.from_documents(
        [Document(page_content=c.text, metadata={"id": c.id}) for c in corpus], k=3
    )
    adapter = LangChainRetriever(library)
    assert len(adapter.retrieve("leave", k=7)) == 7
    assert len(adapter.retrieve("leave", k=1)) == 1
    assert library.k == 3


def _in_memory_filter(filters: Filters) -> Callable[[Document], bool]:
    """What an application passes to InMemoryVectorStore: a Document predicate (None tenant = shared)."""

    def allowed(document: Document) -> bool:
        tenant = document.metadata.get("tenant")
        if filters.tenant is not None and tenant not in (None, filters.tenant):
            return False
        return not (filters.current_only and document.metadata.get("superseded_by"))

    return allowed


def test_vector_store_retriever_gets_k_and_the_stores_own_filter() -> None:
    corpus = tenant_corpus()
    library = _vector_retriever(corpus)
    adapter = LangChainRetriever(library, k_attr="search_kwargs.k", filter_mapper=_in_memory_filter)
    hits = adapter.retrieve("parental leave", k=6)
    assert len(hits) == 6 and all(h.score is None for h in hits)
    assert library.search_kwargs == {"k": 2}
    assert describe_capabilities(adapter).filtered_by == "retriever"
    # The retriever returns no scores; the store's own scores tell ties apart from reorderings.
    scored = library.vectorstore.similarity_search_with_score("parental leave", k=len(corpus))
    score = {document.metadata["id"]: value for document, value in scored}
    with_scores = lambda hits: [Hit(h.id, score[h.id]) for h in hits]  # noqa: E731
    everything = with_scores(adapter.retrieve("parental leave", k=len(corpus)))
    filters = Filters(tenant="globex", current_only=True)
    for k in range(1, len(corpus) + 1):
        filtered = with_scores(adapter.retrieve("parental leave", k=k, filters=filters))
        assert_filtered_prefix(filtered, everything, corpus, filters, k)


def test_a_retriever_without_a_filter_mapper_takes_no_filters_unless_ragmorph_is_asked() -> None:
    corpus = tenant_corpus()
    plain = LangChainRetriever(_vector_retriever(corpus), k_attr="search_kwargs.k")
    assert not describe_capabilities(plain).supports_filters
    with pytest.raises(UsageError, match="filter_mapper"):
        plain.retrieve("leave", k=3, filters=Filters(tenant="acme"))
    post = LangChainRetriever(_vector_retriever(corpus), k_attr="search_kwargs.k", post_filter=True)
    assert describe_capabilities(post).filtered_by == "ragmorph"
    hits = post.retrieve("leave", k=len(corpus), filters=Filters(tenant="acme"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("acme")}
    with pytest.raises(UsageError, match="both"):
        LangChainRetriever(_vector_retriever(corpus), filter_mapper=_in_memory_filter, post_filter=True)
    with pytest.raises(UsageError, match="filter setting 'nope'"):
        LangChainRetriever(_vector_retriever(corpus), filter_mapper=_in_memory_filter, filter_attr="nope")


def test_bm25_factory_post_filters_and_declares_it() -> None:
    assert describe_capabilities(langchain_bm25_factory).filtered_by == "ragmorph"
    assert describe_capabilities(langchain_bm25_factory(tenant_corpus())).filtered_by == "ragmorph"


def test_score_key_reads_scores_from_document_metadata() -> None:
    library = BM25Retriever.from_documents(
        [
            Document(page_content="alpha beta", metadata={"id": "a", "relevance": 0.9}),
            Document(page_content="gamma", metadata={"id": "b", "relevance": 0.1}),
            Document(page_content="delta", metadata={"id": "c"}),
        ]
    )
    hits = LangChainRetriever(library, score_key="relevance").retrieve("alpha", k=3)
    assert hits[0].id == "a"
    assert {h.id: h.score for h in hits} == {"a": 0.9, "b": 0.1, "c": None}


def test_documents_without_ids_are_invalid_responses() -> None:
    library = BM25Retriever.from_documents([Document(page_content=t) for t in ("alpha", "beta", "gamma")])
    with pytest.raises(InvalidResponse, match=r"metadata\['id'\]") as caught:
        LangChainRetriever(library).retrieve("alpha", k=1)
    assert caught.value.query == "alpha" and "alpha" in (caught.value.excerpt or "")


def test_document_id_is_the_fallback_id() -> None:
    library = BM25Retriever.from_documents(
        [Document(page_content=text, id=chunk_id) for text, chunk_id in (("alpha", "x#1"), ("b", "y"), ("c", "z"))]
    )
    assert LangChainRetriever(library).retrieve("alpha", k=1)[0].id == "x#1"


def test_a_retriever_without_k_is_cut_to_k() -> None:
    library = _vector_retriever(tenant_corpus())
    adapter = LangChainRetriever(library, k_attr="no_such_attribute")
    assert adapter.k_attr is None
    assert len(adapter.retrieve("leave", k=1)) == 1


def test_only_base_retrievers_are_accepted() -> None:
    with pytest.raises(UsageError, match="BaseRetriever"):
        LangChainRetriever(lambda query: [])
    with pytest.raises(UsageError, match="BaseRetriever"):
        LangChainRetriever(tenant_corpus())  # what the CLI would pass if this class were given as a factory


@pytest.mark.parametrize(
    "corpus", [Corpus([]), Corpus([Chunk("a", ""), Chunk("b", "   ")])], ids=["empty", "no-tokens"]
)
def test_corpora_rank_bm25_cannot_index_give_no_hits(corpus: Corpus) -> None:
    adapter = langchain_bm25_factory(corpus)
    assert adapter.retrieve("anything", k=3) == ()
    assert adapter.retrieve("anything", k=3, filters=Filters(tenant="acme")) == ()


def test_scores_are_plain_floats() -> None:
    hits = langchain_bm25_factory(tenant_corpus()).retrieve("leave", k=3)
    assert all(type(h.score) is float and np.isfinite(h.score) for h in hits)


# --- EnsembleRetriever: weighted reciprocal rank fusion over legs, each asked for `depth` under the filter ---

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_classic.retrievers import EnsembleRetriever

from ragmorph import check  # noqa: E402
from ragmorph.adapters.langchain import LangChainEnsembleRetriever  # noqa: E402
from ragmorph.errors import ExitCode  # noqa: E402
from ragmorph.io import read_cases, read_corpus  # noqa: E402

EXAMPLE_DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


def _ensemble(corpus: Corpus, **options: object) -> EnsembleRetriever:
    documents = [Document(page_content=c.text, metadata={"id": c.id}, id=c.id) for c in corpus]
    keyword = BM25Retriever.from_documents(documents)
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(documents)
    return EnsembleRetriever(retrievers=[keyword, store.as_retriever()], weights=[0.7, 0.3], **options)


def _store_filter(corpus: Corpus) -> Callable[[Filters], Callable[[Document], bool]]:
    return lambda filters: (lambda document: filters.allows(corpus[document.metadata["id"]]))


def test_ensemble_ranks_as_the_library_fuses_and_reports_the_fused_score() -> None:
    corpus = tenant_corpus()
    ensemble = _ensemble(corpus, id_key="id")
    adapter = LangChainEnsembleRetriever(ensemble, depth=len(corpus), corpus=corpus)
    hits = validate_hits(adapter.retrieve("parental leave policy", k=len(corpus)), k=len(corpus), query="q",
                         corpus=corpus)
    # The library itself, each leg told to return `depth` documents as the adapter does.
    ensemble.retrievers[0].k = len(corpus)
    ensemble.retrievers[1].search_kwargs["k"] = len(corpus)
    assert [h.id for h in hits] == [d.metadata["id"] for d in ensemble.invoke("parental leave policy")]
    legs = [[d.metadata["id"] for d in leg.invoke("parental leave policy")] for leg in ensemble.retrievers]
    for hit in hits:
        expected = sum(w / (leg.index(hit.id) + 1 + 60) for leg, w in zip(legs, (0.7, 0.3)) if hit.id in leg)
        assert hit.score == pytest.approx(expected, rel=1e-12)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_ensemble_asks_every_leg_for_depth_whatever_k() -> None:
    corpus = tenant_corpus()
    adapter = LangChainEnsembleRetriever(_ensemble(corpus, id_key="id"), depth=len(corpus), corpus=corpus)
    deep = adapter.retrieve("leave", k=len(corpus))
    for k in (1, 2, 5):
        # Legs cut at k instead of depth would fuse other ranks: the fused top k must be the deep list's prefix.
        assert [h.id for h in adapter.retrieve("leave", k=k)] == [h.id for h in deep[:k]]


def test_ensemble_filters_inside_every_leg() -> None:
    corpus = tenant_corpus()
    mapped: list[Filters] = []

    def store_filter(filters: Filters) -> Callable[[Document], bool]:
        mapped.append(filters)
        return _store_filter(corpus)(filters)

    ensemble = _ensemble(corpus, id_key="id")
    legs = [
        LangChainRetriever(ensemble.retrievers[0], k_attr="k", corpus=corpus, post_filter=True),
        LangChainRetriever(ensemble.retrievers[1], k_attr="search_kwargs.k", filter_mapper=store_filter),
    ]
    adapter = LangChainEnsembleRetriever(ensemble, legs=legs, depth=len(corpus))
    assert adapter.supports_filters and adapter.ragmorph_filtered_by == "retriever"
    filters = Filters(tenant="globex", current_only=True)
    hits = adapter.retrieve("parental leave policy", k=len(corpus), filters=filters)
    assert mapped == [filters]
    assert hits and all(filters.allows(corpus[h.id]) for h in hits)
    assert {h.id for h in hits} == {c.id for c in corpus if filters.allows(c)}


def test_ensemble_without_id_key_merges_equal_texts_as_langchain_does() -> None:
    corpus = Corpus([Chunk("a", "parental leave policy"), Chunk("b", "parental leave policy"), Chunk("c", "other")])
    merged = LangChainEnsembleRetriever(_ensemble(corpus), corpus=corpus).retrieve("parental leave", k=3)
    assert [h.id for h in merged] in (["a", "c"], ["b", "c"])
    kept = LangChainEnsembleRetriever(_ensemble(corpus, id_key="id"), corpus=corpus).retrieve("parental leave", k=3)
    assert sorted(h.id for h in kept) == ["a", "b", "c"]


def test_ensemble_refuses_what_it_cannot_drive() -> None:
    corpus = tenant_corpus()
    with pytest.raises(UsageError, match="EnsembleRetriever"):
        LangChainEnsembleRetriever(BM25Retriever.from_documents([Document(page_content="x", metadata={"id": "x"})]))
    with pytest.raises(UsageError, match="depth"):
        LangChainEnsembleRetriever(_ensemble(corpus), depth=0)
    with pytest.raises(UsageError, match="one LangChainRetriever per ensemble leg"):
        LangChainEnsembleRetriever(_ensemble(corpus), legs=[])


def _example_world() -> tuple[Corpus, list]:
    return read_corpus(EXAMPLE_DATA / "corpus.jsonl"), read_cases(EXAMPLE_DATA / "cases.jsonl")


class _UnfilteredLeg(LangChainRetriever):
    """The planted bug of a hand-built hybrid: the keyword leg never sees the filter (its library has none)."""

    def documents(self, query: str, *, n: int, filters: Filters | None = None) -> list[tuple[str, object]]:
        return super().documents(query, n=n)


def _example_ensemble(
    corpus: Corpus, leg: type[LangChainRetriever] = LangChainRetriever
) -> LangChainEnsembleRetriever:
    ensemble = _ensemble(corpus, id_key="id")
    legs = [
        leg(ensemble.retrievers[0], k_attr="k", corpus=corpus, post_filter=True),
        LangChainRetriever(ensemble.retrievers[1], k_attr="search_kwargs.k", filter_mapper=_store_filter(corpus)),
    ]
    return LangChainEnsembleRetriever(ensemble, legs=legs, depth=50)


def test_a_correct_ensemble_passes_the_tenancy_and_filter_families_and_a_leg_ignoring_filters_is_caught() -> None:
    corpus, cases = _example_world()
    families = ["tenancy", "filters", "cutoff", "reorder"]
    correct = check({"ensemble": _example_ensemble}, corpus, cases, strategies=families, max_examples=10)
    assert correct.exit_code == int(ExitCode.OK), [r.violation for r in correct.results if r.status == "fail"]
    buggy = check({"ensemble": lambda c: _example_ensemble(c, _UnfilteredLeg)}, corpus, cases, strategies=families,
                  max_examples=10)
    failed = {r.relation for r in buggy.results if r.status == "fail" and r.severity == "hard"}
    assert buggy.exit_code == int(ExitCode.VIOLATIONS) and "filters.admitted_only" in failed, failed
