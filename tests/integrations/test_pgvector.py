"""PgVectorRetriever against a real PostgreSQL 16 with pgvector (the pgserver wheel), started by the tests."""

from __future__ import annotations

import gc

import numpy as np
import psycopg
import pytest

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.pgvector import PgVectorRetriever, pgvector_factory, where_sql
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.integration_checks import assert_same_up_to_ties, tenant_corpus
from support.servers import postgres_uri

pytestmark = pytest.mark.integration


def _tables() -> set[str]:
    with psycopg.connect(postgres_uri()) as connection:
        rows = connection.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'ragmorph_%'").fetchall()
    return {name for (name,) in rows}


def test_the_table_is_dropped_on_close_on_error_and_on_garbage_collection() -> None:
    retriever = PgVectorRetriever(tenant_corpus(), conninfo=postgres_uri())
    assert retriever.table in _tables()
    retriever.close()
    retriever.close()
    assert retriever.closed and retriever.table not in _tables()
    with pytest.raises(UsageError, match="closed"):
        retriever.retrieve("leave", k=1)
    with pytest.raises(RuntimeError, match="boom"):
        with PgVectorRetriever(tenant_corpus(), conninfo=postgres_uri()) as inside:
            raise RuntimeError("boom")
    assert inside.table not in _tables()
    dropped = PgVectorRetriever(tenant_corpus(), conninfo=postgres_uri())
    table = dropped.table
    del dropped
    gc.collect()
    assert table not in _tables()


def test_scores_are_inner_products_best_first_and_an_empty_text_scores_zero() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    with PgVectorRetriever(corpus, conninfo=postgres_uri(), embedder=embedder, index="exact") as retriever:
        hits = validate_hits(retriever.retrieve("parental leave policy", k=len(corpus)), k=len(corpus), query="q",
                             corpus=corpus)
    query = embedder.embed(["parental leave policy"])[0]
    for hit in hits:
        assert hit.score == pytest.approx(float(embedder.embed([corpus[hit.id].text])[0] @ query), abs=1e-5)
    assert next(h for h in hits if h.id == "empty#0").score == 0.0


def test_filters_are_sql_on_the_chunk_columns() -> None:
    assert where_sql(None) == ("", []) and where_sql(Filters()) == ("", [])
    clause, parameters = where_sql(Filters(tenant="acme", current_only=True, metadata={"lang": "en", "n": [1]}))
    assert clause == (
        "WHERE (tenant = %s OR tenant IS NULL) AND superseded_by IS NULL "
        "AND metadata -> %s = %s::jsonb AND (metadata -> %s)::text = (%s::jsonb)::text "
        "AND metadata -> %s = %s::jsonb AND (metadata -> %s)::text = (%s::jsonb)::text"
    )
    assert parameters == ["acme", "lang", '"en"', "lang", '"en"', "n", "[1]", "n", "[1]"]


def test_the_hnsw_index_is_what_postgresql_searches_when_told_to_use_it() -> None:
    corpus = tenant_corpus()
    forced = {"enable_seqscan": "off"}
    with PgVectorRetriever(corpus, conninfo=postgres_uri(), settings=forced) as hnsw, PgVectorRetriever(
        corpus, conninfo=postgres_uri(), index="exact"
    ) as exact:
        plan = hnsw.explain("leave", k=3, filters=Filters(tenant="acme"))
        assert "Index Scan" in plan and "Filter" in plan
        assert "Seq Scan" in exact.explain("leave", k=3)
        # Twelve rows are far fewer than ef_search (40): the graph search is exact here.
        for filters in (None, Filters(tenant="acme"), Filters(current_only=True)):
            # Whole rankings: a cut inside a tie group may keep different members of it.
            assert_same_up_to_ties(hnsw.retrieve("parental leave", k=len(corpus), filters=filters),
                                   exact.retrieve("parental leave", k=len(corpus), filters=filters))


def test_capabilities_and_traits_declare_the_index() -> None:
    uri = postgres_uri()
    assert pgvector_factory(uri).ragmorph_traits == ("approximate",)
    assert pgvector_factory(uri, index="exact").ragmorph_traits == ()
    with pgvector_factory(uri)(tenant_corpus()) as built:
        capabilities = describe_capabilities(pgvector_factory(uri), built=built)
    assert capabilities.supports_delta and capabilities.filtered_by == "retriever"
    assert describe_capabilities(pgvector_factory(uri, post_filter=True)).filtered_by == "ragmorph"
    with pytest.raises(UsageError, match="index"):
        PgVectorRetriever(tenant_corpus(), conninfo=uri, index="ivfflat")  # type: ignore[arg-type]


def test_post_filter_asks_ragmorph_to_filter_the_unfiltered_statement() -> None:
    corpus = tenant_corpus()
    with PgVectorRetriever(corpus, conninfo=postgres_uri(), index="exact", post_filter=True) as retriever:
        hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="globex"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("globex")}


def _selective_world(rows: int, share: float, seed: int = 0) -> tuple[Corpus, str]:
    """`rows` chunks over one vocabulary; tenant 'a' owns `share` of them, the rest belong to 'b'."""
    rng = np.random.default_rng(seed)
    words = [f"w{n}" for n in range(300)]
    owned = max(1, int(rows * share))
    chunks = [
        Chunk(f"c{n}", " ".join(rng.choice(words, size=12)), tenant="a" if n < owned else "b") for n in range(rows)
    ]
    return Corpus(chunks), " ".join(words[:6])


def test_hnsw_with_a_selective_filter_returns_fewer_than_k_where_exact_search_returns_k() -> None:
    """pgvector 0.6's documented limitation: the filter runs on ef_search (40) candidates, which can run dry."""
    corpus, query = _selective_world(2000, 0.02)
    embedder = HashingEmbedder(dim=64)  # at 256 dimensions PostgreSQL still prefers a sequential scan at 2,000 rows
    with PgVectorRetriever(corpus, conninfo=postgres_uri(), embedder=embedder) as hnsw, PgVectorRetriever(
        corpus, conninfo=postgres_uri(), embedder=embedder, index="exact"
    ) as exact:
        assert "Index Scan" in hnsw.explain(query, k=10, filters=Filters(tenant="a"))
        short = len(hnsw.retrieve(query, k=10, filters=Filters(tenant="a")))
        full = len(exact.retrieve(query, k=10, filters=Filters(tenant="a")))
    assert full == 10 and short < 10, (short, full)
