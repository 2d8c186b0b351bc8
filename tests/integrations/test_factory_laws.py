"""Laws every integration factory obeys, checked against the real libraries and servers.

- ranking ids map back to the corpus and pass response validation, whatever k;
- a factory indexes exactly the given corpus (asking for every chunk returns every chunk id, nothing else);
- filters never leak: every hit passes the filter, whatever k, and the filtered ranking is the unfiltered
  ranking's allowed chunks in order, cut to k (up to score ties). The native llama-index-retrievers-bm25
  filter breaks this law (test_llamaindex.py pins its leak), and so does LanceDB's post-filter, which may
  return fewer than k (test_lancedb.py); with ``post_filter=True`` ragmorph's filter holds it;
- a delta equals a rebuild: `remove` then `add` on an index ranks like an index built over the edited corpus.

The corpora here are far smaller than any ANN index's candidate pool (ef_search, nprobes), so the HNSW and IVF
variants search exactly and obey the laws of exact search; test_pgvector.py shows where that stops.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragmorph.adapters import validate_hits
from ragmorph.adapters.chroma import ChromaRetriever
from ragmorph.adapters.faiss import FaissFlatRetriever, FaissHNSWRetriever
from ragmorph.adapters.haystack import HaystackBM25Retriever, HaystackEmbeddingRetriever
from ragmorph.adapters.lancedb import LanceDBRetriever
from ragmorph.adapters.langchain import langchain_bm25_factory
from ragmorph.adapters.llamaindex import llamaindex_bm25_factory
from ragmorph.adapters.pgvector import PgVectorRetriever
from ragmorph.adapters.qdrant import QdrantRetriever
from ragmorph.model import Chunk, Corpus, Filters
from support.generators import chunks, corpora, texts
from support.integration_checks import assert_filtered_prefix, assert_same_up_to_ties, tenant_corpus
from support.servers import postgres_uri

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@contextmanager
def _plain(factory: Callable[[Corpus], Any], corpus: Corpus) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community announces its sunset on import
        yield factory(corpus)


@contextmanager
def _closing(factory: Callable[[Corpus], Any], corpus: Corpus) -> Iterator[Any]:
    retriever = factory(corpus)
    try:
        yield retriever
    finally:
        retriever.close()


def _pgvector(corpus: Corpus, **options: Any) -> PgVectorRetriever:
    return PgVectorRetriever(corpus, conninfo=postgres_uri(), **options)


BUILDERS = {
    "langchain_bm25": lambda corpus: _plain(langchain_bm25_factory, corpus),
    "llamaindex_bm25": lambda corpus: _plain(llamaindex_bm25_factory, corpus),
    "llamaindex_bm25_post_filter": lambda corpus: _plain(partial(llamaindex_bm25_factory, post_filter=True), corpus),
    "chroma": partial(_closing, ChromaRetriever),
    "pgvector_exact": partial(_closing, partial(_pgvector, index="exact")),
    # Told to use the index: on a table this small PostgreSQL would otherwise scan sequentially.
    "pgvector_hnsw": partial(_closing, partial(_pgvector, settings={"enable_seqscan": "off"})),
    "qdrant_local": partial(_closing, QdrantRetriever),
    "faiss_flat": partial(_closing, FaissFlatRetriever),
    "faiss_hnsw": partial(_closing, FaissHNSWRetriever),
    "haystack_bm25": partial(_closing, HaystackBM25Retriever),
    "haystack_embedding": partial(_closing, HaystackEmbeddingRetriever),
    "lancedb_flat": partial(_closing, LanceDBRetriever),
    "lancedb_ivf_hnsw": partial(_closing, partial(LanceDBRetriever, index="IVF_HNSW_FLAT",
                                                   index_options={"num_partitions": 1})),
    "lancedb_postfilter": partial(_closing, partial(LanceDBRetriever, prefilter=False)),
}
# Builders whose filtered ranking is the unfiltered one's allowed chunks (see the module docstring).
LEAK_FREE = sorted(set(BUILDERS) - {"llamaindex_bm25", "lancedb_postfilter"})
# Builders whose retrievers apply corpus edits as add/remove deltas (FAISS's HNSW graph cannot delete).
DELTAS = ["chroma", "faiss_flat", "haystack_bm25", "haystack_embedding", "lancedb_flat", "lancedb_ivf_hnsw",
          "pgvector_exact", "pgvector_hnsw", "qdrant_local"]
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def _storable(name: str, corpus: Corpus) -> bool:
    """PostgreSQL text cannot hold NUL: the pgvector adapter refuses such chunks (test_pgvector.py)."""
    return not name.startswith("pgvector") or "\\x00" not in repr([(c.text, dict(c.metadata)) for c in corpus])


def _answers_everything(name: str, query: str, corpus: Corpus) -> bool:
    """Whether asking for every chunk returns every chunk: Haystack's BM25 answers only a query sharing a
    (lower-cased, two-letter) word with the corpus, and then scores every document (BM25L)."""
    if name != "haystack_bm25":
        return True
    vocabulary = {token for chunk in corpus for token in _TOKEN.findall(chunk.text.lower())}
    return bool(set(_TOKEN.findall(query.lower())) & vocabulary)


QUERIES = ("parental leave policy", "password reset", "unicode café", "nothing matches zzz", "")

FILTERS = (
    Filters(tenant="acme"),
    Filters(tenant="globex"),
    Filters(current_only=True),
    Filters(tenant="acme", current_only=True),
    Filters(metadata={"lang": "en"}),
    Filters(metadata={"draft": False}),
    Filters(metadata={"tags": ["a", "b"]}),
    Filters(tenant="globex", metadata={"lang": "de"}),
)


@pytest.fixture(params=sorted(BUILDERS), scope="module")
def built(request: pytest.FixtureRequest) -> Iterator[tuple[str, Corpus, Any]]:
    corpus = tenant_corpus()
    with BUILDERS[request.param](corpus) as retriever:
        yield request.param, corpus, retriever


@pytest.fixture(params=LEAK_FREE, scope="module")
def leak_free(request: pytest.FixtureRequest) -> Iterator[tuple[Corpus, Any]]:
    corpus = tenant_corpus()
    with BUILDERS[request.param](corpus) as retriever:
        yield corpus, retriever


@pytest.mark.parametrize("query", QUERIES)
def test_ids_map_back_to_the_corpus_at_every_k(built: tuple[str, Corpus, Any], query: str) -> None:
    name, corpus, retriever = built
    if name == "haystack_bm25" and not query:
        with pytest.raises(ValueError, match="non-empty"):  # Haystack's BM25 refuses an empty query
            retriever.retrieve(query, k=1)
        return
    expected = len(corpus) if _answers_everything(name, query, corpus) else 0
    for k in range(1, len(corpus) + 3):
        hits = validate_hits(retriever.retrieve(query, k=k), k=k, query=query, corpus=corpus)
        assert len(hits) == min(k, expected)
        assert all(hit.text == corpus[hit.id].text for hit in hits)


def test_factory_indexes_exactly_the_given_corpus(built: tuple[str, Corpus, Any]) -> None:
    _, corpus, retriever = built
    hits = retriever.retrieve("leave", k=len(corpus) + 5)
    assert sorted(h.id for h in hits) == sorted(corpus.ids)


@pytest.mark.parametrize("filters", FILTERS, ids=repr)
@pytest.mark.parametrize("query", QUERIES[:4])
def test_filters_never_leak_and_keep_the_unfiltered_order(
    leak_free: tuple[Corpus, Any], query: str, filters: Filters
) -> None:
    corpus, retriever = leak_free
    unfiltered = retriever.retrieve(query, k=len(corpus))
    for k in range(1, len(corpus) + 2):
        filtered = retriever.retrieve(query, k=k, filters=filters)
        validate_hits(filtered, k=k, query=query, corpus=corpus)
        assert_filtered_prefix(filtered, unfiltered, corpus, filters, k)


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[Corpus, str, Filters, int]:
    corpus = draw(corpora(min_size=1, max_size=8))
    constraints = st.just({})
    with_metadata = [c for c in corpus if c.metadata]
    if with_metadata:
        chunk = draw(st.sampled_from(with_metadata))
        key = draw(st.sampled_from(sorted(chunk.metadata)))
        constraints = st.sampled_from([{}, {key: chunk.metadata[key]}])
    filters = draw(
        st.builds(
            Filters,
            tenant=st.sampled_from((None, "acme", "globex")),
            current_only=st.booleans(),
            metadata=constraints,
        )
    )
    return corpus, draw(texts(max_words=4)), filters, draw(st.integers(1, 10))


@pytest.mark.parametrize("name", LEAK_FREE)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=_worlds())
def test_generated_worlds_never_leak(name: str, world: tuple[Corpus, str, Filters, int]) -> None:
    corpus, query, filters, k = world
    if name == "haystack_bm25" and not query:
        return  # refused by Haystack (see test_ids_map_back_to_the_corpus_at_every_k)
    assume(_storable(name, corpus))
    with BUILDERS[name](corpus) as retriever:
        unfiltered = retriever.retrieve(query, k=len(corpus))
        if not getattr(retriever, "indexable", True):  # BM25 libraries cannot index a corpus without a token
            assert unfiltered == ()
        elif _answers_everything(name, query, corpus):
            assert sorted(h.id for h in unfiltered) == sorted(corpus.ids)
        filtered = validate_hits(retriever.retrieve(query, k=k, filters=filters), k=k, query=query, corpus=corpus)
        assert_filtered_prefix(filtered, unfiltered, corpus, filters, k)


@st.composite
def _deltas(draw: st.DrawFn) -> tuple[Corpus, list[str], list[Chunk], str]:
    corpus = draw(corpora(min_size=1, max_size=8))
    removed = draw(st.lists(st.sampled_from(corpus.ids), unique=True, max_size=len(corpus)))
    added = draw(st.lists(chunks(ids=st.builds(lambda n: f"new#{n}", st.integers(0, 50))), max_size=3,
                          unique_by=lambda c: c.id))
    return corpus, removed, added, draw(texts(max_words=4).filter(bool))


@pytest.mark.parametrize("name", DELTAS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delta=_deltas())
def test_a_delta_equals_a_rebuild(name: str, delta: tuple[Corpus, list[str], list[Chunk], str]) -> None:
    corpus, removed, added, query = delta
    edited = corpus.without(removed).with_chunks(added)
    assume(_storable(name, corpus) and _storable(name, edited))
    with BUILDERS[name](corpus) as patched, BUILDERS[name](edited) as rebuilt:
        patched.remove(removed)
        patched.add(added)
        assert sorted(patched.corpus.ids) == sorted(edited.ids)
        for filters in (None, Filters(tenant="acme", current_only=True)):
            k = max(1, len(edited))  # whole rankings: a cut inside a tie group may keep other members
            assert_same_up_to_ties(patched.retrieve(query, k=k, filters=filters),
                                   rebuilt.retrieve(query, k=k, filters=filters))


@pytest.mark.parametrize("name", LEAK_FREE)
def test_metadata_keys_with_path_characters_filter_exactly(name: str) -> None:
    odd = {'a.b"c%': 1, "x[0]": "y", "%2E": True}
    corpus = Corpus([Chunk("odd", "leave policy", metadata=odd), Chunk("plain", "leave", metadata={"a": 1}),
                     Chunk("near", "leave policy", metadata={"a.b": {"c%": 1}, "x": ["y"]})])
    with BUILDERS[name](corpus) as retriever:
        for key, value in odd.items():
            hits = retriever.retrieve("leave policy", k=3, filters=Filters(metadata={key: value}))
            assert [h.id for h in hits] == ["odd"], (key, hits)


@pytest.mark.parametrize("name", LEAK_FREE)
def test_metadata_values_filter_by_json_type(name: str) -> None:
    # true, 1, 1.0 and "1" are four JSON values; Python's == merges the first three, and so may a native filter.
    values = {"bool": True, "int": 1, "float": 1.0, "str": "1", "zero": 0, "false": False, "half": 0.5}
    corpus = Corpus([Chunk(name_, "leave policy", metadata={"pinned": value}) for name_, value in values.items()])
    with BUILDERS[name](corpus) as retriever:
        for expected, value in values.items():
            hits = retriever.retrieve("leave policy", k=len(values), filters=Filters(metadata={"pinned": value}))
            assert [h.id for h in hits] == [expected], (value, hits)
