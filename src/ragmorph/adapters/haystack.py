"""Haystack 2 integration: the in-memory BM25 and embedding retrievers over an `InMemoryDocumentStore`.

Needs the extra ``ragmorph[haystack]`` (haystack-ai 2.x). Haystack is imported only when a retriever is built.

- Each retriever fills its own store (a fresh index name) with one `Document` per chunk: ``id`` is the chunk id,
  ``content`` its text, ``meta`` its fields with the encoding of `ragmorph.adapters._integration` (``tenant=""``
  shared, ``superseded_by=""`` current) and the user metadata nested under ``meta["metadata"]`` (Haystack reads
  dots in a filter field as nesting, so a key's ``%`` and ``.`` are percent-encoded). `close()` empties the store.
- The call is the component's ``run(query=..., top_k=k, filters=...)`` (``query_embedding=`` for the embedding
  retriever) with a Haystack 2 filter from `haystack_filters`: ``meta.tenant in [tenant, ""]``,
  ``meta.superseded_by == ""``, ``meta.metadata.<key> == value``; the store filters. ``post_filter=True`` lets
  ragmorph filter instead (declared, so filter relations do not apply).
- Scores are the library's, unscaled (``scale_score=False``): BM25L by default for `HaystackBM25Retriever`
  (a chunk sharing no word with the query can still score above 0, so it does not declare the ``lexical``
  trait), the dot product of the embedder's L2-normalised rows (the cosine) for `HaystackEmbeddingRetriever`.
- Haystack's BM25 refuses an empty query with a ValueError; that is passed on as the retriever's error.
- `add` / `remove` are ``write_documents`` / ``delete_documents``.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import UsageError
from ..model import Chunk, Corpus, Filters
from ._integration import CURRENT, SHARED, USER_METADATA_PREFIX, chunk_metadata, encode_value, escape_key
from ._store import DeltaStoreRetriever, check_embedder
from .embedders import Embedder

__all__ = [
    "HaystackBM25Retriever",
    "HaystackEmbeddingRetriever",
    "haystack_bm25_factory",
    "haystack_embedding_factory",
    "haystack_filters",
]


def _missing(error: ImportError) -> UsageError:
    return UsageError(
        f"expected haystack-ai (2.x) to be installed for the Haystack retrievers, got ImportError ({error}); "
        "install it with `pip install 'ragmorph[haystack]'`"
    )


def haystack_filters(filters: Filters | None) -> dict[str, Any] | None:
    """The Haystack 2 filter dict for `filters` (None when they exclude nothing)."""
    if filters is None or filters.is_empty:
        return None
    conditions: list[dict[str, Any]] = []
    if filters.tenant is not None:
        conditions.append({"field": "meta.tenant", "operator": "in", "value": [filters.tenant, SHARED]})
    if filters.current_only:
        conditions.append({"field": "meta.superseded_by", "operator": "==", "value": CURRENT})
    for key, value in filters.metadata.items():
        conditions.append({"field": f"meta.metadata.{_key(key)}", "operator": "==", "value": encode_value(value)})
    return {"operator": "AND", "conditions": conditions}


def _meta(chunk: Chunk) -> dict[str, Any]:
    flat = chunk_metadata(chunk)
    meta: dict[str, Any] = {key: value for key, value in flat.items() if not key.startswith(USER_METADATA_PREFIX)}
    del meta["id"]  # the Document id carries it
    meta["metadata"] = {_key(key): encode_value(value) for key, value in chunk.metadata.items()}
    return meta


def _key(key: str) -> str:
    # Haystack splits a filter field at every dot, so a dot inside a user key is escaped.
    return escape_key(key, ".")


def _empty_store(store: Any) -> None:
    """Drop every document of the store (its index name is this retriever's own)."""
    try:
        store.delete_all_documents()
    except Exception:  # noqa: BLE001 - the finalizer may run at interpreter exit, when anything can fail
        pass


class _HaystackRetriever(DeltaStoreRetriever):
    """A Haystack in-memory store holding `corpus` and one retriever component over it."""

    _embeds = False

    def __init__(self, corpus: Corpus, *, component: str, embedder: Embedder | None, post_filter: bool,
                 store_options: dict[str, Any]) -> None:
        try:
            from haystack.components.retrievers import in_memory
            from haystack.document_stores.in_memory import InMemoryDocumentStore
        except ImportError as error:
            raise _missing(error) from error
        super().__init__(corpus, post_filter=post_filter)
        self.embedder = check_embedder(embedder) if self._embeds else None
        self.store = InMemoryDocumentStore(index=f"ragmorph-{uuid.uuid4().hex}", **store_options)
        self.component = getattr(in_memory, component)(document_store=self.store, scale_score=False)
        self._open(_empty_store, self.store)
        self._fill(corpus)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._chunks)} chunks)"

    def _insert(self, chunks: list[Chunk]) -> None:
        from haystack import Document
        from haystack.document_stores.types import DuplicatePolicy

        embeddings = self.embedder.embed([c.text for c in chunks]).tolist() if self.embedder is not None else None
        documents = [
            Document(id=chunk.id, content=chunk.text, meta=_meta(chunk),
                     embedding=None if embeddings is None else embeddings[position])
            for position, chunk in enumerate(chunks)
        ]
        self.store.write_documents(documents, policy=DuplicatePolicy.FAIL)

    def _delete(self, ids: list[str]) -> None:
        self.store.delete_documents(ids)

    def _run(self, query: str, n: int, filters: dict[str, Any] | None) -> dict[str, Any]:
        return self.component.run(query=query, top_k=n, filters=filters)

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        documents = self._run(query, n, haystack_filters(filters))["documents"]
        return [(document.id, float(document.score)) for document in documents]


class HaystackBM25Retriever(_HaystackRetriever):
    """Haystack's `InMemoryBM25Retriever` over a store holding `corpus` (BM25L unless `bm25_algorithm` says)."""

    def __init__(self, corpus: Corpus, *, bm25_algorithm: str = "BM25L", post_filter: bool = False) -> None:
        super().__init__(corpus, component="InMemoryBM25Retriever", embedder=None, post_filter=post_filter,
                         store_options={"bm25_algorithm": bm25_algorithm})


class HaystackEmbeddingRetriever(_HaystackRetriever):
    """Haystack's `InMemoryEmbeddingRetriever` (dot product) over a store holding `corpus`'s embeddings."""

    _embeds = True

    def __init__(self, corpus: Corpus, *, embedder: Embedder | None = None, post_filter: bool = False) -> None:
        super().__init__(corpus, component="InMemoryEmbeddingRetriever", embedder=embedder,
                         post_filter=post_filter, store_options={"embedding_similarity_function": "dot_product"})

    def _run(self, query: str, n: int, filters: dict[str, Any] | None) -> dict[str, Any]:
        vector = self.embedder.embed([query])[0].tolist()  # type: ignore[union-attr]
        return self.component.run(query_embedding=vector, top_k=n, filters=filters)


def haystack_bm25_factory(corpus: Corpus) -> HaystackBM25Retriever:
    """Build Haystack's in-memory BM25 retriever (its default BM25L) over exactly `corpus`."""
    return HaystackBM25Retriever(corpus)


def haystack_embedding_factory(corpus: Corpus) -> HaystackEmbeddingRetriever:
    """Build Haystack's in-memory embedding retriever with the default `HashingEmbedder` over exactly `corpus`."""
    return HaystackEmbeddingRetriever(corpus)
