"""LanceDBRetriever against the real lancedb: flat and ANN search, prefilter and postfilter, lifecycle."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ragmorph.adapters import HashingEmbedder, describe_capabilities, validate_hits
from ragmorph.adapters.lancedb import LanceDBRetriever, lancedb_factory, where_sql
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.integration_checks import assert_same_up_to_ties, tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _selective(rows: int, owned: int) -> Corpus:
    rng = np.random.default_rng(0)
    words = [f"w{n}" for n in range(200)]
    return Corpus([Chunk(f"c{n}", " ".join(rng.choice(words, 10)), tenant="a" if n < owned else "b")
                   for n in range(rows)])


def test_where_sql_quotes_literals() -> None:
    assert where_sql(None) is None and where_sql(Filters()) is None
    assert where_sql(Filters(tenant="o'hara", current_only=True, metadata={"k": "v"})) == (
        "(tenant = 'o''hara' OR tenant IS NULL) AND superseded_by IS NULL AND array_has(meta, '[\"k\", \"v\"]')"
    )


def test_scores_are_one_minus_lancedb_dot_distance() -> None:
    corpus = tenant_corpus()
    embedder = HashingEmbedder()
    with LanceDBRetriever(corpus, embedder=embedder) as retriever:
        hits = validate_hits(retriever.retrieve("parental leave", k=len(corpus)), k=len(corpus), query="q",
                             corpus=corpus)
    query = embedder.embed(["parental leave"])[0]
    for hit in hits:
        assert hit.score == pytest.approx(float(embedder.embed([corpus[hit.id].text])[0] @ query), abs=1e-5)


def test_the_temporary_directory_is_removed_on_close() -> None:
    retriever = lancedb_factory(tenant_corpus())
    directory = retriever.connection.uri
    assert os.path.isdir(directory)
    retriever.close()
    assert not os.path.exists(directory) and retriever.closed
    with pytest.raises(UsageError, match="closed"):
        retriever.retrieve("leave", k=1)


def test_an_ann_index_is_built_and_declared_approximate() -> None:
    corpus = tenant_corpus()
    with LanceDBRetriever(corpus, index="IVF_HNSW_FLAT", index_options={"num_partitions": 1}) as ann, \
            LanceDBRetriever(corpus) as flat:
        assert [i.index_type for i in ann.table.list_indices()] == ["IvfHnswFlat"]
        assert describe_capabilities(ann).filtered_by == "retriever" and ann.ragmorph_traits == ("approximate",)
        assert flat.ragmorph_traits == ()
        assert_same_up_to_ties(ann.retrieve("parental leave", k=len(corpus)),
                               flat.retrieve("parental leave", k=len(corpus)))
    with pytest.raises(UsageError, match="index"):
        LanceDBRetriever(corpus, index="BTREE")


def test_postfilter_returns_fewer_than_k_where_prefilter_returns_k() -> None:
    """LanceDB's documented post-filter: it filters the k nearest rows, so a 2% tenant comes back short."""
    corpus = _selective(1000, 20)
    embedder = HashingEmbedder(dim=64)
    filters = Filters(tenant="a")
    with LanceDBRetriever(corpus, embedder=embedder) as pre, \
            LanceDBRetriever(corpus, embedder=embedder, prefilter=False) as post:
        queries = [f"w{n} w{n + 1} w{n + 2}" for n in range(0, 60, 3)]
        assert all(len(pre.retrieve(q, k=10, filters=filters)) == 10 for q in queries)
        short = [len(post.retrieve(q, k=10, filters=filters)) for q in queries]
    assert sum(short) / len(short) < 2, short


def test_post_filter_lets_ragmorph_filter() -> None:
    corpus = tenant_corpus()
    with LanceDBRetriever(corpus, post_filter=True) as retriever:
        assert describe_capabilities(retriever).filtered_by == "ragmorph"
        hits = retriever.retrieve("leave", k=len(corpus), filters=Filters(tenant="globex"))
    assert {h.id for h in hits} == {c.id for c in corpus if c.visible_to("globex")}
