"""Capabilities.filtered_by: who applies a call's filters, declared with `ragmorph_filtered_by`."""

from __future__ import annotations

import pytest

from ragmorph.adapters import BM25Retriever, Capabilities, DenseRetriever, TenantFilter, describe_capabilities
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters, Hit

CORPUS = Corpus([Chunk("a", "alpha", tenant="acme"), Chunk("b", "alpha beta", tenant="globex")])


class Declared:
    """A retriever that declares its filtering is done by ragmorph-side code."""

    ragmorph_filtered_by = "ragmorph"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return []


def test_undeclared_retrievers_filter_themselves() -> None:
    capabilities = describe_capabilities(BM25Retriever)
    assert capabilities.filtered_by == "retriever" and capabilities.filtering_not_judged() is None
    assert describe_capabilities(BM25Retriever(CORPUS)).filtered_by == "retriever"


def test_a_declaration_on_the_retriever_or_the_built_product_is_read() -> None:
    assert describe_capabilities(Declared()).filtered_by == "ragmorph"
    built = Declared()
    assert describe_capabilities(lambda corpus: built, built=built).filtered_by == "ragmorph"


def test_a_declaration_on_a_factory_function_is_read() -> None:
    def factory(corpus: Corpus) -> DenseRetriever:
        return DenseRetriever(corpus)

    factory.ragmorph_filtered_by = "ragmorph"  # type: ignore[attr-defined]
    assert describe_capabilities(factory).filtered_by == "ragmorph"


def test_tenant_filter_is_ragmorphs_own_filter() -> None:
    stage = TenantFilter(BM25Retriever(CORPUS))
    capabilities = describe_capabilities(stage)
    assert capabilities.filtered_by == "ragmorph"
    assert capabilities.filtering_not_judged() == "filtering is done by ragmorph, not by the retriever"
    assert capabilities.to_dict()["filtered_by"] == "ragmorph"


def test_an_unknown_declaration_is_a_usage_error() -> None:
    wrong = Declared()
    wrong.ragmorph_filtered_by = "library"  # type: ignore[assignment]
    with pytest.raises(UsageError, match=r"ragmorph_filtered_by.*'ragmorph', 'retriever'.*'library'"):
        describe_capabilities(wrong)


def test_capabilities_default_is_the_retriever() -> None:
    assert Capabilities(has_factory=True, supports_delta=False, supports_batch=False, supports_async=False).filtered_by == (
        "retriever"
    )
