"""Filter expressions on the real stores: Chroma, Qdrant (local mode) and PostgreSQL with pgvector admit exactly
what the reference `admits` admits under the missing-key semantics each declares, and refuse what they cannot
express by name."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from qdrant_client import models

from ragmorph.adapters.chroma import ChromaRetriever, where_clause, where_expression
from ragmorph.adapters.pgvector import PgVectorRetriever, where_sql
from ragmorph.adapters.qdrant import QdrantRetriever, expression_filter
from ragmorph.model import Chunk, Corpus, Filters
from ragmorph.where import And, Compare, MissingKey, Not, Op, Or, UnsupportedFilter, from_json
from support.servers import postgres_uri
from support.where_exprs import FIELDS, STORED, exprs, negated_range_or_exists

pytestmark = pytest.mark.integration

_ABSENT = object()


def _corpus() -> Corpus:
    """48 chunks whose keys a, b, c each take every stored value (1, 1.0, true, "1", dates, null...) or are absent."""
    values = (*STORED, _ABSENT)
    chunks = []
    for i in range(48):
        picked = (values[i % len(values)], values[(i * 5 + 3) % len(values)], values[(i * 7 + 1) % len(values)])
        metadata = {key: value for key, value in zip(FIELDS, picked) if value is not _ABSENT}
        chunks.append(Chunk(f"c{i}", f"policy note number {i} about leave", metadata=metadata))
    return Corpus(chunks)


CORPUS = _corpus()


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaRetriever]:
    with ChromaRetriever(CORPUS) as retriever:
        yield retriever


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantRetriever]:
    with QdrantRetriever(CORPUS) as retriever:
        yield retriever


@pytest.fixture(scope="module")
def pgvector() -> Iterator[PgVectorRetriever]:
    with PgVectorRetriever(CORPUS, conninfo=postgres_uri(), index="exact") as retriever:
        yield retriever


def _returned(retriever: Any, filters: Filters) -> set[str]:
    return {hit.id for hit in retriever.retrieve("policy leave", k=len(CORPUS), filters=filters)}


def _admitted(filters: Filters, missing: MissingKey) -> set[str]:
    return {chunk.id for chunk in CORPUS if filters.allows(chunk, missing=missing)}


def test_each_store_declares_the_missing_key_semantics_it_implements() -> None:
    assert ChromaRetriever.ragmorph_missing_key is MissingKey.NEGATION_MATCHES
    assert QdrantRetriever.ragmorph_missing_key is MissingKey.NEGATION_MATCHES
    assert PgVectorRetriever.ragmorph_missing_key is MissingKey.UNKNOWN


def test_ne_on_a_missing_key_differs_between_stores_as_declared(chroma: Any, qdrant: Any, pgvector: Any) -> None:
    filters = Filters(where={"a": {"$ne": "x"}})
    lacking = {chunk.id for chunk in CORPUS if "a" not in chunk.metadata}
    assert lacking and lacking <= _returned(chroma, filters) and lacking <= _returned(qdrant, filters)
    assert not lacking & _returned(pgvector, filters)


@settings(max_examples=80, deadline=None)
@given(expr=exprs())
def test_chroma_admits_what_the_reference_admits(chroma: ChromaRetriever, expr: Any) -> None:
    filters = Filters(where=expr)
    if negated_range_or_exists(expr):
        with pytest.raises(UnsupportedFilter, match="Chroma"):
            chroma.retrieve("policy leave", k=len(CORPUS), filters=filters)
        return
    assert _returned(chroma, filters) == _admitted(filters, ChromaRetriever.ragmorph_missing_key)


@settings(max_examples=80, deadline=None)
@given(expr=exprs())
def test_qdrant_admits_what_the_reference_admits(qdrant: QdrantRetriever, expr: Any) -> None:
    filters = Filters(where=expr)
    assert _returned(qdrant, filters) == _admitted(filters, QdrantRetriever.ragmorph_missing_key)


@settings(max_examples=80, deadline=None)
@given(expr=exprs())
def test_pgvector_admits_what_the_reference_admits(pgvector: PgVectorRetriever, expr: Any) -> None:
    filters = Filters(where=expr)
    assert _returned(pgvector, filters) == _admitted(filters, PgVectorRetriever.ragmorph_missing_key)


def test_expressions_combine_with_tenant_and_metadata_filters(chroma: Any, qdrant: Any, pgvector: Any) -> None:
    corpus = Corpus([
        Chunk("own", "leave policy", tenant="acme", metadata={"n": 2, "lang": "en"}),
        Chunk("shared", "leave policy", metadata={"n": 2.5, "lang": "en"}),
        Chunk("other", "leave policy", tenant="globex", metadata={"n": 3, "lang": "en"}),
        Chunk("small", "leave policy", tenant="acme", metadata={"n": 1, "lang": "en"}),
        Chunk("french", "leave policy", tenant="acme", metadata={"n": 5, "lang": "fr"}),
    ])
    filters = Filters(tenant="acme", metadata={"lang": "en"}, where={"n": {"$gt": 1}})
    with ChromaRetriever(corpus) as c, QdrantRetriever(corpus) as q, PgVectorRetriever(corpus, conninfo=postgres_uri(), index="exact") as p:
        for retriever in (c, q, p):
            assert {h.id for h in retriever.retrieve("leave", k=5, filters=filters)} == {"own", "shared"}


def test_float_and_date_ranges_use_the_companions_in_chroma_and_qdrant() -> None:
    expr = from_json({"$and": [{"price": {"$gte": 1.5}}, {"published": {"$lt": {"$date": "2026-01-01"}}}]})
    assert where_expression(expr) == {"$and": [{"num.price": {"$gte": 1.5}}, {"date.published": {"$lt": dt.date(2026, 1, 1).toordinal()}}]}
    condition = expression_filter(expr)
    assert [c.key for c in condition.must] == ['num."price"', 'date."published"']
    assert condition.must[0].range == models.Range(gte=1.5)


def test_chroma_splits_a_mixed_type_in_and_pushes_not_inward() -> None:
    # Chroma wants one type per $in and has no $not: the translation is the equivalent it can take.
    assert where_expression(Compare("a", Op.IN, (1, "x", 2, True))) == {
        "$or": [{"meta.a": {"$in": [1, 2]}}, {"meta.a": {"$in": ["x", "json:true"]}}]
    }
    assert where_expression(Not(Or([Compare("a", Op.EQ, 1.0), Compare("b", Op.IN, ("x",))]))) == {
        "$and": [{"meta.a": {"$ne": "json:1.0"}}, {"meta.b": {"$ne": "x"}}]
    }
    assert where_clause(Filters(where=And([Compare("a", Op.EQ, dt.date(2026, 1, 1))]))) == {"meta.a": {"$eq": "2026-01-01"}}
    with pytest.raises(UnsupportedFilter, match=r"\$exists"):
        where_expression(Compare("a", Op.EXISTS))
    with pytest.raises(UnsupportedFilter, match=r"\$not of \$gt"):
        where_expression(Not(Compare("a", Op.GT, 1)))


def test_pgvector_keeps_the_missing_key_unknown_in_sql() -> None:
    clause, parameters = where_sql(Filters(where={"a": {"$ne": "x"}}))
    assert clause == "WHERE (NOT (metadata -> %s = %s::jsonb AND (metadata -> %s)::text = (%s::jsonb)::text))"
    assert parameters == ["a", '"x"', "a", '"x"']


def test_qdrant_match_except_drops_points_lacking_the_key_so_nin_is_must_not(qdrant: QdrantRetriever) -> None:
    # A finding kept as a test: Qdrant's MatchExcept admits neither a point lacking the key nor a null, unlike
    # must_not, so `$nin` is translated as must_not of MatchAny.
    except_x = models.Filter(must=[models.FieldCondition(key='meta."a"', match=models.MatchExcept(**{"except": ["x"]}))])
    found = qdrant.client.query_points(qdrant.name, query=[0.0] * int(qdrant.embedder.dim), limit=len(CORPUS), query_filter=except_x, with_payload=["id"]).points
    via_except = {point.payload["id"] for point in found}
    lacking = {chunk.id for chunk in CORPUS if "a" not in chunk.metadata}
    assert lacking and not lacking & via_except
    assert lacking <= _returned(qdrant, Filters(where={"a": {"$nin": ["x"]}}))
