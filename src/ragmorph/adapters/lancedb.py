"""LanceDB integration: a dense retriever over a LanceDB table, searched flat or through an ANN index.

Needs the extra ``ragmorph[lancedb]`` (lancedb). Without a `uri` each retriever connects to its own temporary
directory, deleted (with the table) on `close()`, on leaving a ``with`` block, or when garbage collected.

- Rows: ``id``, ``text``, ``tenant`` (NULL for a shared chunk), ``superseded_by`` (NULL for a current one),
  ``meta`` (the user metadata as a list of JSON ``[key, value]`` pairs, so one SQL test matches one pair), and
  ``vector`` (the embedder's L2-normalised row).
- Search: ``table.search(vector).distance_type("dot").where(sql, prefilter=...).limit(k)``; LanceDB's dot
  distance is ``1 - dot``, so the score is ``1 - _distance``, the cosine. Filters are SQL: ``(tenant = 'a' OR
  tenant IS NULL)``, ``superseded_by IS NULL``, ``array_has(meta, '["key", value]')``. ``prefilter=True``
  (the default here) filters before the vector search; ``prefilter=False`` is LanceDB's post-filter, which
  filters the k nearest rows and so may return fewer than k (documented LanceDB behaviour, and what ragmorph
  should report). ``post_filter=True`` instead lets ragmorph filter (declared, so filter relations do not
  apply).
- ``index=None`` searches every row exactly. ``index="IVF_HNSW_FLAT"`` (or another LanceDB index type: IVF_PQ,
  IVF_HNSW_SQ...) builds that ANN index after loading the corpus, with `index_options` passed to LanceDB's
  index config (e.g. ``{"num_partitions": 1}``); such a retriever declares the trait ``approximate``. Rows
  added later are searched flat beside the index, as LanceDB does until it is re-indexed.
- `add` / `remove` are ``table.add`` / ``table.delete("id IN (...)")``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters
from ._store import DeltaStoreRetriever, check_embedder
from .embedders import Embedder

__all__ = ["LanceDBRetriever", "lancedb_factory", "lancedb_ann_factory", "where_sql"]

# LanceDB's Python config class for each index type name it accepts.
_INDEX_CONFIGS = {
    "IVF_FLAT": "IvfFlat",
    "IVF_SQ": "IvfSq",
    "IVF_PQ": "IvfPq",
    "IVF_HNSW_FLAT": "IvfHnswFlat",
    "IVF_HNSW_SQ": "IvfHnswSq",
    "IVF_HNSW_PQ": "IvfHnswPq",
}


def _import_lancedb() -> Any:
    try:
        import lancedb
    except ImportError as error:
        raise UsageError(
            "expected lancedb to be installed for LanceDBRetriever, got ImportError; "
            "install it with `pip install 'ragmorph[lancedb]'`"
        ) from error
    return lancedb


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _pair(key: str, value: Any) -> str:
    return json.dumps([key, value], sort_keys=True, ensure_ascii=False, default=str)


def where_sql(filters: Filters | None) -> str | None:
    """The LanceDB SQL filter for `filters` (None when they exclude nothing)."""
    if filters is None or filters.is_empty:
        return None
    clauses: list[str] = []
    if filters.tenant is not None:
        clauses.append(f"(tenant = {_literal(filters.tenant)} OR tenant IS NULL)")
    if filters.current_only:
        clauses.append("superseded_by IS NULL")
    for key, value in filters.metadata.items():
        clauses.append(f"array_has(meta, {_literal(_pair(key, value))})")
    return " AND ".join(clauses)


def _remove_directory(connection: Any, name: str, directory: str | None) -> None:
    """Drop the table, and delete the temporary directory this retriever created."""
    try:
        connection.drop_table(name)
    except Exception:  # noqa: BLE001 - the finalizer may run at interpreter exit, when anything can fail
        pass
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class LanceDBRetriever(DeltaStoreRetriever):
    """A dense retriever over a LanceDB table holding `corpus`, flat or through an ANN index; a `DeltaRetriever`."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        embedder: Embedder | None = None,
        uri: str | None = None,
        index: str | None = None,
        index_options: Mapping[str, Any] | None = None,
        prefilter: bool = True,
        post_filter: bool = False,
    ) -> None:
        lancedb = _import_lancedb()
        import pyarrow as pa

        super().__init__(corpus, post_filter=post_filter)
        if index is not None and index not in _INDEX_CONFIGS:
            raise UsageError(f"expected index None or one of {sorted(_INDEX_CONFIGS)}, got index={describe(index)}")
        if not isinstance(prefilter, bool):
            raise UsageError(f"expected prefilter to be True or False, got prefilter={describe(prefilter)}")
        self.embedder = check_embedder(embedder)
        self.index = index
        self.prefilter = prefilter
        # Declared to the runner: an ANN index searches approximately.
        self.ragmorph_traits: tuple[str, ...] = ("approximate",) if index is not None else ()
        directory = tempfile.mkdtemp(prefix="ragmorph-lancedb-") if uri is None else None
        self.connection = lancedb.connect(uri or directory)
        self.name = f"ragmorph_{uuid.uuid4().hex}"
        self._schema = pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("text", pa.string()),
                pa.field("tenant", pa.string()),
                pa.field("superseded_by", pa.string()),
                pa.field("meta", pa.list_(pa.string())),
                pa.field("vector", pa.list_(pa.float32(), int(self.embedder.dim))),
            ]
        )
        self.table = self.connection.create_table(self.name, schema=self._schema)
        self._open(_remove_directory, self.connection, self.name, directory)
        self._fill(corpus)
        if index is not None and len(corpus):
            try:
                from lancedb import index as configs

                config = getattr(configs, _INDEX_CONFIGS[index])(distance_type="dot", **dict(index_options or {}))
                self.table.create_index("vector", config=config)
            except BaseException:
                self.close()
                raise

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._chunks)} chunks"
        mode = "prefilter" if self.prefilter else "postfilter"
        return f"LanceDBRetriever({self.name!r}, index={self.index!r}, {mode}, {state})"

    def _insert(self, chunks: list[Chunk]) -> None:
        import pyarrow as pa

        vectors = self.embedder.embed([c.text for c in chunks])
        rows = {
            "id": [c.id for c in chunks],
            "text": [c.text for c in chunks],
            "tenant": [c.tenant for c in chunks],
            "superseded_by": [c.superseded_by for c in chunks],
            "meta": [[_pair(key, value) for key, value in c.metadata.items()] for c in chunks],
            "vector": list(vectors),
        }
        self.table.add(pa.table(rows, schema=self._schema))

    def _delete(self, ids: list[str]) -> None:
        self.table.delete(f"id IN ({', '.join(_literal(i) for i in ids)})")

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        search = self.table.search(self.embedder.embed([query])[0]).distance_type("dot")
        where = where_sql(filters)
        if where is not None:
            search = search.where(where, prefilter=self.prefilter)
        rows = search.select(["id", "_distance"]).limit(n).to_list()
        return [(row["id"], 1.0 - float(row["_distance"])) for row in rows]


def lancedb_factory(corpus: Corpus) -> LanceDBRetriever:
    """Build a flat (exact), pre-filtering `LanceDBRetriever` with the default `HashingEmbedder` over `corpus`."""
    return LanceDBRetriever(corpus)


def lancedb_ann_factory(corpus: Corpus) -> LanceDBRetriever:
    """Build a `LanceDBRetriever` with an IVF_HNSW_FLAT index (one partition), pre-filtering, over `corpus`."""
    return LanceDBRetriever(corpus, index="IVF_HNSW_FLAT", index_options={"num_partitions": 1})


lancedb_ann_factory.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
# The exact twin over the same vectors: the flat table, for the approximate relations.
lancedb_ann_factory.ragmorph_twin = lancedb_factory  # type: ignore[attr-defined]
