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
- A filter expression (`Filters.where`) becomes nested payload filters (`expression_filter`): ``$and`` is
  ``must``, ``$or`` ``should``, ``$not`` ``must_not``; ``$eq`` a ``MatchValue``, ``$in`` a ``MatchAny`` per stored
  type, ``$ne``/``$nin`` their ``must_not``, ``$exists`` the ``must_not`` of ``IsEmptyCondition`` (a stored null is
  the text ``json:null``, so only a missing key is empty), and ranges a ``Range`` over the numeric and date
  companions (payload ``num`` and ``date``, see `_integration.range_companions`). ``must_not`` admits a point
  lacking the key: the declared semantics is ``MissingKey.NEGATION_MATCHES``. (Qdrant's own ``MatchExcept``
  drops such points, and nulls too, so it is not used for ``$nin``.)
- `add` / `remove` are ``upsert`` / ``delete``.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from typing import Any

from ..errors import UsageError
from ..model import Chunk, Corpus, Filters
from ..where import And, Compare, Expr, MissingKey, Not, Op, Or
from ._integration import (
    CURRENT,
    SHARED,
    USER_METADATA_PREFIX,
    chunk_metadata,
    encode_value,
    escape_key,
    range_bound,
    range_companions,
)
from ._store import DeltaStoreRetriever, check_embedder
from .embedders import Embedder

__all__ = ["MISSING_KEY", "QdrantRetriever", "expression_filter", "payload_filter", "qdrant_factory"]

# `must_not` admits a point lacking the key (measured on qdrant-client 1.20 local mode by the integration tests).
MISSING_KEY = MissingKey.NEGATION_MATCHES


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
    for group, values in range_companions(chunk).items():
        payload[group] = {_key(key): value for key, value in values.items()}
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
    if filters.where is not None:
        must.append(expression_filter(filters.where))
    return models.Filter(must=must)


def expression_filter(expr: Expr) -> Any:
    """The Qdrant condition (a nested `Filter` or a `FieldCondition`) of a filter expression."""
    models = _models()
    if isinstance(expr, Not):
        return models.Filter(must_not=[expression_filter(expr.clause)])
    if isinstance(expr, And):
        return models.Filter(must=[expression_filter(c) for c in expr.clauses])
    if isinstance(expr, Or):
        return models.Filter(should=[expression_filter(c) for c in expr.clauses])
    return _compare(expr, models)


def _compare(expr: Compare, models: Any) -> Any:
    path = f'meta."{_key(expr.field)}"'
    if expr.op is Op.EXISTS:
        return models.Filter(must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key=path))])
    if expr.op.is_range:
        prefix, bound = range_bound(expr.field, expr.value)
        companion = f'{prefix.rstrip(".")}."{_key(expr.field)}"'
        return models.FieldCondition(key=companion, range=models.Range(**{expr.op.value.lstrip("$"): bound}))
    values = expr.value if expr.op.is_list else (expr.value,)
    # A date matches exactly the ISO string naming it, so equality compares the stored string.
    encoded = [encode_value(v.isoformat() if isinstance(v, _dt.date) else v) for v in values]
    by_type: dict[type, list[Any]] = {}
    for value in dict.fromkeys(encoded, None):
        by_type.setdefault(type(value), []).append(value)
    matches = [
        models.FieldCondition(key=path, match=models.MatchValue(value=group[0]) if len(group) == 1 else models.MatchAny(any=group))
        for group in by_type.values()
    ]
    match = matches[0] if len(matches) == 1 else models.Filter(should=matches)
    return match if expr.op in (Op.EQ, Op.IN) else models.Filter(must_not=[match])


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

    # The missing-key semantics of the filter expressions it passes to Qdrant (see `MISSING_KEY`).
    ragmorph_missing_key = MISSING_KEY

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
