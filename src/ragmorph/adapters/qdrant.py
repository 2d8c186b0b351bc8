"""Qdrant integration: a dense retriever over a Qdrant collection with payload filters.

Needs the extra ``ragmorph[qdrant]`` (qdrant-client). Without a `client`, each retriever runs Qdrant's local
mode in process (``QdrantClient(":memory:")``, an exact search, no server); pass a ``QdrantClient(url=...)`` to
test a server. The collection ``ragmorph-<hex>`` is created per retriever and deleted on `close()`, on leaving
a ``with`` block, or when garbage collected.

- Points: Qdrant ids must be integers or UUIDs, so each chunk gets ``uuid5(chunk id)``; the payload carries the
  chunk id (``"id"``), its fields with the encoding of `ragmorph.adapters._integration` (``tenant=""`` for a
  shared chunk, ``superseded_by=""`` for a current one) and the user metadata nested under ``"meta"``.
- Vectors: the embedder's L2-normalised rows with ``Distance.DOT``, so the score is the cosine (0 for a text
  without tokens).
- Filters: a payload `Filter` built by `payload_filter` (``MatchAny`` on the tenant and ``""``, ``MatchValue``
  for currency and each metadata value, floats as JSON text), passed as ``query_filter``: Qdrant filters.
  ``post_filter=True`` lets ragmorph filter instead (declared, so filter relations do not apply).
- `add` / `remove` are ``upsert`` / ``delete``.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import UsageError
from ..model import Chunk, Corpus, Filters
from ._integration import CURRENT, SHARED, USER_METADATA_PREFIX, chunk_metadata, encode_value, escape_key
from ._store import DeltaStoreRetriever, check_embedder
from .embedders import Embedder

__all__ = ["QdrantRetriever", "payload_filter", "qdrant_factory"]


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError as error:
        raise UsageError(
            "expected qdrant-client to be installed for QdrantRetriever, got ImportError; "
            "install it with `pip install 'ragmorph[qdrant]'`"
        ) from error
    return models


def _point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragmorph:{chunk_id}"))


def _payload(chunk: Chunk) -> dict[str, Any]:
    flat = chunk_metadata(chunk)
    payload: dict[str, Any] = {key: value for key, value in flat.items() if not key.startswith(USER_METADATA_PREFIX)}
    payload["meta"] = {_key(key): encode_value(value) for key, value in chunk.metadata.items()}
    return payload


def _key(key: str) -> str:
    # Filter paths quote each user key (``meta."<key>"``); a quote inside would end it, so it is escaped.
    return escape_key(key, '"')


def payload_filter(filters: Filters | None) -> Any:
    """The Qdrant payload `Filter` for `filters` (None when they exclude nothing)."""
    if filters is None or filters.is_empty:
        return None
    models = _models()
    must: list[Any] = []
    if filters.tenant is not None:
        must.append(models.FieldCondition(key="tenant", match=models.MatchAny(any=[filters.tenant, SHARED])))
    if filters.current_only:
        must.append(models.FieldCondition(key="superseded_by", match=models.MatchValue(value=CURRENT)))
    for key, value in filters.metadata.items():
        path = f'meta."{_key(key)}"'
        must.append(models.FieldCondition(key=path, match=models.MatchValue(value=encode_value(value))))
    return models.Filter(must=must)


def _drop_collection(client: Any, name: str, owned: bool) -> None:
    """Delete the collection; close a client this retriever created. Anything already gone is fine."""
    try:
        client.delete_collection(name)
        if owned:
            client.close()
    except Exception:  # noqa: BLE001 - the finalizer may run at interpreter exit, when anything can fail
        pass


class QdrantRetriever(DeltaStoreRetriever):
    """A dense retriever over a temporary Qdrant collection holding `corpus`; a `DeltaRetriever`."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        embedder: Embedder | None = None,
        client: Any = None,
        post_filter: bool = False,
    ) -> None:
        models = _models()
        super().__init__(corpus, post_filter=post_filter)
        self.embedder = check_embedder(embedder)
        owned = client is None
        if owned:
            from qdrant_client import QdrantClient

            client = QdrantClient(":memory:")
        self.client = client
        self.name = f"ragmorph-{uuid.uuid4().hex}"
        self.client.create_collection(
            self.name, vectors_config=models.VectorParams(size=int(self.embedder.dim), distance=models.Distance.DOT)
        )
        self._open(_drop_collection, self.client, self.name, owned)
        self._fill(corpus)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._chunks)} chunks"
        return f"QdrantRetriever({self.name!r}, {state}, embedder={self.embedder!r})"

    def _insert(self, chunks: list[Chunk]) -> None:
        models = _models()
        vectors = self.embedder.embed([c.text for c in chunks])
        points = [
            models.PointStruct(id=_point_id(chunk.id), vector=vector.tolist(), payload=_payload(chunk))
            for chunk, vector in zip(chunks, vectors)
        ]
        self.client.upsert(self.name, points=points, wait=True)

    def _delete(self, ids: list[str]) -> None:
        models = _models()
        self.client.delete(self.name, points_selector=models.PointIdsList(points=[_point_id(i) for i in ids]), wait=True)

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        vector = self.embedder.embed([query])[0].tolist()
        found = self.client.query_points(
            self.name, query=vector, limit=n, query_filter=payload_filter(filters), with_payload=["id"]
        ).points
        return [(point.payload["id"], float(point.score)) for point in found]


def qdrant_factory(corpus: Corpus) -> QdrantRetriever:
    """Build a `QdrantRetriever` in local mode with the default `HashingEmbedder` over exactly `corpus`."""
    return QdrantRetriever(corpus)
