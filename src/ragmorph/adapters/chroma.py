"""Chroma integration: a dense retriever over an in-process Chroma collection that it creates and deletes.

Needs the extra ``ragmorph[chroma]`` (chromadb). Chroma is imported only when a retriever is built.

- The collection gets a unique temporary name (``ragmorph-<hex>``) in the given client or a process-wide
  `chromadb.EphemeralClient()`, and is always deleted: by `close()`, by leaving a ``with`` block (also on an
  exception), and by a `weakref.finalize` safety net when the retriever is garbage collected or the process
  exits.
- Embeddings come from a ragmorph `Embedder` (default `HashingEmbedder()`) wrapped as a Chroma embedding
  function, so Chroma never downloads its default model. The space is inner product over the embedder's
  L2-normalised rows, so the score ``1 - distance`` is exactly their dot product, the cosine similarity (a
  text without tokens embeds to the zero row and scores 0). HNSW search runs with a large ``ef_search`` so
  small corpora are searched exactly.
- Chunk fields are stored as metadata with the encoding of `ragmorph.adapters._integration`: Chroma metadata
  cannot hold None, so a shared chunk stores ``tenant=""`` and a current chunk ``superseded_by=""``. Filters
  become a native ``where`` clause: ``{"tenant": {"$in": [tenant, ""]}}`` for a tenant,
  ``{"superseded_by": ""}`` for current-only, ``{"meta.<key>": value}`` per metadata constraint, and Chroma
  filters; its hits are returned as they come, so a filter bug in Chroma shows in ragmorph's relations.
- A filter expression (`Filters.where`) becomes Chroma operators (`where_expression`): ``$eq $ne $in $nin``
  on ``meta.<key>`` (a mixed-type ``$in`` split into one ``$in`` per stored type, as Chroma wants), ranges on
  the numeric and date companions ``num.<key>`` / ``date.<key>`` (see `_integration.range_companions`), and
  ``$not`` pushed inward (De Morgan, ``$eq``/``$ne``, ``$in``/``$nin``), since Chroma has no ``$not``. Chroma
  (1.5) admits a record lacking the key under ``$ne`` and ``$nin``: the declared semantics is
  ``MissingKey.NEGATION_MATCHES``. It cannot express ``$exists`` nor the negation of a range (which admits
  records lacking the key): those raise `UnsupportedFilter` naming the operator.
  ``post_filter=True`` asks ragmorph to filter unfiltered Chroma results instead (declared: filter relations
  then do not apply).
- `add` / `remove` apply a corpus delta as Chroma ``add`` / ``delete``.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters
from ..where import And, Compare, Expr, MissingKey, Not, Op, UnsupportedFilter
from ._integration import (
    CURRENT,
    SHARED,
    USER_METADATA_PREFIX,
    check_id_key,
    chunk_metadata,
    encode_value,
    range_bound,
    range_companions,
)
from ._store import DeltaStoreRetriever
from .embedders import Embedder, HashingEmbedder

__all__ = ["MISSING_KEY", "ChromaRetriever", "chroma_factory", "where_clause", "where_expression"]

# What Chroma's `$ne` and `$nin` do with a record lacking the key (measured on chromadb 1.5 by the integration
# tests): they admit it, as MongoDB does.
MISSING_KEY = MissingKey.NEGATION_MATCHES

# ef_search bounds how many candidates HNSW examines; above the collection size the search is exact.
_EF_SEARCH = 1000
_EF_CONSTRUCTION = 200


def _import_chromadb() -> Any:
    try:
        import chromadb
    except ImportError as error:
        raise UsageError(
            "expected chromadb to be installed for ChromaRetriever, got ImportError; "
            "install it with `pip install 'ragmorph[chroma]'`"
        ) from error
    return chromadb


def _embedding_function(embedder: Embedder) -> Any:
    """A Chroma `EmbeddingFunction` that calls a ragmorph `Embedder` (no model download)."""
    from chromadb.api.types import EmbeddingFunction

    class RagmorphEmbeddingFunction(EmbeddingFunction):  # type: ignore[misc, type-arg]
        """Chroma's view of a ragmorph embedder."""

        def __init__(self, inner: Embedder | None) -> None:
            self.inner = inner

        def __call__(self, input: Sequence[str]) -> list[Any]:  # noqa: A002 - Chroma's parameter name
            if self.inner is None:
                raise UsageError(
                    "expected the live ragmorph embedder of this temporary collection, got one rebuilt from its "
                    "stored config; query it through the ChromaRetriever that created it"
                )
            return list(self.inner.embed(list(input)))

        @staticmethod
        def name() -> str:
            return "ragmorph"

        def get_config(self) -> dict[str, Any]:
            return {"embedder": repr(self.inner)}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> RagmorphEmbeddingFunction:
            # Chroma rebuilds embedding functions when it lists collections; the embedder itself is not stored.
            return RagmorphEmbeddingFunction(None)

        def default_space(self) -> str:
            return "ip"

    return RagmorphEmbeddingFunction(embedder)


def where_clause(filters: Filters | None) -> dict[str, Any] | None:
    """The Chroma ``where`` clause for `filters` (None when they exclude nothing)."""
    if filters is None or filters.is_empty:
        return None
    clauses: list[dict[str, Any]] = []
    if filters.tenant is not None:
        clauses.append({"tenant": {"$in": [filters.tenant, SHARED]}})
    if filters.current_only:
        clauses.append({"superseded_by": {"$eq": CURRENT}})
    for key, value in filters.metadata.items():
        clauses.append({USER_METADATA_PREFIX + key: {"$eq": encode_value(value)}})
    if filters.where is not None:
        clauses.append(where_expression(filters.where))
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _joined(operator: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    # Chroma refuses an $and or $or of fewer than two clauses.
    return parts[0] if len(parts) == 1 else {operator: parts}


def where_expression(expr: Expr, *, negate: bool = False) -> dict[str, Any]:
    """The Chroma ``where`` clause of a filter expression (its negation with `negate`); raises
    `UnsupportedFilter` for what Chroma cannot express (``$exists``, the negation of a range)."""
    if isinstance(expr, Not):
        return where_expression(expr.clause, negate=not negate)
    if isinstance(expr, Compare):
        return _compare(expr, negate)
    conjunction = isinstance(expr, And) != negate
    return _joined("$and" if conjunction else "$or", [where_expression(c, negate=negate) for c in expr.clauses])


def _compare(expr: Compare, negate: bool) -> dict[str, Any]:
    if expr.op is Op.EXISTS:
        raise UnsupportedFilter(
            f"Chroma's where has no operator for whether a key is present, got $exists on {expr.field!r}"
        )
    if expr.op.is_range:
        if negate:
            raise UnsupportedFilter(
                f"Chroma cannot express $not of {expr.op.value} on {expr.field!r}: it admits records lacking the key "
                "or holding another type, and a where clause cannot select those"
            )
        prefix, bound = range_bound(expr.field, expr.value)
        return {prefix + expr.field: {expr.op.value: bound}}
    positive = (expr.op in (Op.EQ, Op.IN)) != negate
    values = expr.value if expr.op.is_list else (expr.value,)
    # A date matches exactly the ISO string naming it, so equality compares the stored string.
    encoded = [encode_value(v.isoformat() if isinstance(v, _dt.date) else v) for v in values]
    by_type: dict[type, list[Any]] = {}
    for value in dict.fromkeys(encoded, None):
        by_type.setdefault(type(value), []).append(value)
    key = USER_METADATA_PREFIX + expr.field
    parts = [
        {key: {("$eq" if positive else "$ne"): group[0]}} if len(group) == 1 else {key: {("$in" if positive else "$nin"): group}}
        for group in by_type.values()
    ]
    return _joined("$or" if positive else "$and", parts)


def _metadata(chunk: Chunk, id_key: str) -> dict[str, Any]:
    """The chunk's fields and user metadata (`chunk_metadata`), with the range companions as flat keys."""
    metadata: dict[str, Any] = chunk_metadata(chunk, id_key=id_key)
    for prefix, values in range_companions(chunk).items():
        metadata.update((f"{prefix}.{key}", value) for key, value in values.items())
    return metadata


def _drop_collection(client: Any, name: str) -> None:
    """Delete the collection `name`; a collection that is already gone is fine (close is idempotent)."""
    try:
        client.delete_collection(name)
    except Exception:  # noqa: BLE001 - the finalizer may run at interpreter exit, when anything can fail
        pass


class ChromaRetriever(DeltaStoreRetriever):
    """A dense retriever over a temporary Chroma collection holding `corpus`; a `DeltaRetriever`."""

    # The missing-key semantics of the filter expressions it passes to Chroma (see `MISSING_KEY`).
    ragmorph_missing_key = MISSING_KEY

    def __init__(
        self,
        corpus: Corpus,
        *,
        embedder: Embedder | None = None,
        client: Any = None,
        id_key: str = "id",
        collection_prefix: str = "ragmorph",
        post_filter: bool = False,
    ) -> None:
        chromadb = _import_chromadb()
        super().__init__(corpus, post_filter=post_filter)
        self.embedder = embedder if embedder is not None else HashingEmbedder()
        if not callable(getattr(self.embedder, "embed", None)):
            raise UsageError(f"expected an Embedder with embed(texts), got embedder={describe(self.embedder)}")
        self.id_key = check_id_key(id_key)
        self.client = client if client is not None else chromadb.EphemeralClient()
        self.name = f"{collection_prefix}-{uuid.uuid4().hex}"
        self.collection = self.client.create_collection(
            self.name,
            embedding_function=_embedding_function(self.embedder),
            configuration={"hnsw": {"space": "ip", "ef_search": _EF_SEARCH, "ef_construction": _EF_CONSTRUCTION}},
        )
        # Registered before anything else can fail, so the collection is deleted whatever happens next.
        self._open(_drop_collection, self.client, self.name)
        self._fill(corpus)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._chunks)} chunks"
        return f"ChromaRetriever({self.name!r}, {state}, embedder={self.embedder!r})"

    def _insert(self, chunks: list[Chunk]) -> None:
        batch = max(1, int(self.client.get_max_batch_size()))
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            self.collection.add(
                ids=[c.id for c in part],
                documents=[c.text for c in part],
                metadatas=[_metadata(c, self.id_key) for c in part],
            )

    def _delete(self, ids: list[str]) -> None:
        self.collection.delete(ids=ids)

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        # Chroma's `where` filters (inner product: distance = 1 - score).
        found = self.collection.query(
            query_texts=[query], n_results=min(n, len(self._chunks)), where=where_clause(filters), include=["distances"]
        )
        return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in zip(found["ids"][0], found["distances"][0])]


def chroma_factory(corpus: Corpus) -> ChromaRetriever:
    """Build a `ChromaRetriever` with the default `HashingEmbedder` over exactly `corpus`."""
    return ChromaRetriever(corpus)
