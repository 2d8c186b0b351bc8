"""pgvector integration: chunks in a PostgreSQL table, searched with SQL as an application does.

Needs the extra ``ragmorph[pgvector]`` (psycopg) and a PostgreSQL server with the ``vector`` extension; the
``pgserver`` wheel (in the extra) bundles one that starts offline in a temporary directory:
``pgserver.get_server(path, cleanup_mode="stop").get_uri()``.

- Each retriever creates its own table ``ragmorph_<hex>`` (id, text, the chunk fields as columns, user
  metadata as ``jsonb``, the embedding as ``vector(dim)``) and drops it on `close()`, on leaving a ``with``
  block, or when garbage collected.
- A search is one statement: ``SELECT id, -(embedding <#> q) FROM t WHERE <filters> ORDER BY embedding <#> q
  LIMIT k``. Filters are SQL: ``(tenant = %s OR tenant IS NULL)``, ``superseded_by IS NULL``, and
  ``metadata -> key = value::jsonb`` with equal text per constraint (so 1.0 is not 1); PostgreSQL applies
  them, so with an HNSW index the planner's choices (index scan, then filter) are what ragmorph tests. ``post_filter=True`` runs the statement
  without the WHERE clause and lets ragmorph filter instead (declared, so filter relations do not apply).
- A filter expression (`Filters.where`) is SQL over the ``jsonb`` column (`expression_sql`): equality as above,
  ``$in`` an ``OR`` of equalities, ``$ne``/``$nin``/``$not`` SQL ``NOT``, ``$exists`` ``jsonb_exists``, a number
  range compares ``numeric`` values of JSON numbers and a date range ``date`` values of ``YYYY-MM-DD`` strings
  (``pg_input_is_valid``, PostgreSQL 16), any other present value being false. A missing key makes each
  comparison SQL ``NULL`` and SQL's three-valued logic does the rest: the declared semantics is
  ``MissingKey.UNKNOWN`` (``$ne`` does not admit a row lacking the key, as ``metadata->>'k' <> 'v'`` would not).
- Scores are inner products (``<#>`` is their negation) of the embedder's L2-normalised rows: the cosine, and 0
  for a text without tokens (pgvector's cosine distance would be NaN there).
- ``index="hnsw"`` builds ``USING hnsw (embedding vector_ip_ops)`` (with `m`, `ef_construction`);
  ``index="exact"`` builds none, so every search is an exact sequential scan. `settings` are ``SET`` on the
  connection, e.g. ``{"hnsw.ef_search": "40"}`` (pgvector's default) or ``{"enable_seqscan": "off"}`` to make
  the planner use the index on a table small enough for a sequential scan.
- `add` / `remove` are ``INSERT`` (COPY) / ``DELETE``. PostgreSQL text cannot hold the NUL character, so a
  chunk containing one is refused with a UsageError naming it.
"""

from __future__ import annotations

import datetime as _dt
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters
from ..where import And, Compare, Expr, MissingKey, Not, Op
from ._store import DeltaStoreRetriever, check_embedder, check_positive
from .embedders import Embedder

__all__ = ["MISSING_KEY", "PgVectorRetriever", "expression_sql", "pgvector_factory", "where_sql"]

# A comparison on a missing jsonb key is NULL, and SQL's three-valued logic keeps it unknown under NOT.
MISSING_KEY = MissingKey.UNKNOWN

Index = Literal["hnsw", "exact"]
_INDEXES = ("hnsw", "exact")


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as error:
        raise UsageError(
            "expected psycopg to be installed for PgVectorRetriever, got ImportError; "
            "install it with `pip install 'ragmorph[pgvector]'`"
        ) from error
    return psycopg


def _vector_literal(row: np.ndarray) -> str:
    # pgvector's text input format; repr of a Python float round-trips the float32 value exactly.
    return "[" + ",".join(repr(float(x)) for x in row) + "]"


def where_sql(filters: Filters | None) -> tuple[str, list[Any]]:
    """The SQL ``WHERE`` clause (``""`` when nothing is excluded) and its parameters for `filters`."""
    if filters is None or filters.is_empty:
        return "", []
    clauses: list[str] = []
    parameters: list[Any] = []
    if filters.tenant is not None:
        clauses.append("(tenant = %s OR tenant IS NULL)")
        parameters.append(filters.tenant)
    if filters.current_only:
        clauses.append("superseded_by IS NULL")
    for key, value in filters.metadata.items():
        clauses.append(_equal_sql(key, value, parameters)[1:-1])  # the top-level AND needs no parentheses
    if filters.where is not None:
        clauses.append(expression_sql(filters.where, parameters))
    return "WHERE " + " AND ".join(clauses), parameters


def _equal_sql(key: str, value: Any, parameters: list[Any]) -> str:
    encoded = json.dumps(value, sort_keys=True, default=str)
    # jsonb `=` compares numbers by value (1 = 1.0); their text keeps the scale, so 1.0 stays apart from 1.
    parameters.extend([key, encoded, key, encoded])
    return "(metadata -> %s = %s::jsonb AND (metadata -> %s)::text = (%s::jsonb)::text)"


_SQL_RANGE = {Op.GT: ">", Op.GTE: ">=", Op.LT: "<", Op.LTE: "<="}


def expression_sql(expr: Expr, parameters: list[Any]) -> str:
    """The SQL condition of a filter expression over the ``metadata`` jsonb column; appends its parameters."""
    if isinstance(expr, Not):
        return f"(NOT {expression_sql(expr.clause, parameters)})"
    if not isinstance(expr, Compare):
        joiner = " AND " if isinstance(expr, And) else " OR "
        return "(" + joiner.join(expression_sql(c, parameters) for c in expr.clauses) + ")"
    key, op = expr.field, expr.op
    if op is Op.EXISTS:
        parameters.append(key)
        return "jsonb_exists(metadata, %s)"
    if op.is_range:
        # NULL for a missing key, false for a present value of another type, else the typed comparison.
        if isinstance(expr.value, _dt.date):
            parameters.extend([key, key, key, key, key, expr.value.isoformat()])
            return (
                "(CASE WHEN NOT jsonb_exists(metadata, %s) THEN NULL WHEN jsonb_typeof(metadata -> %s) = 'string' "
                "AND (metadata ->> %s) ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' AND pg_input_is_valid(metadata ->> %s, 'date') "
                f"THEN (metadata ->> %s)::date {_SQL_RANGE[op]} %s::date ELSE false END)"
            )
        parameters.extend([key, key, key, json.dumps(expr.value)])
        return (
            "(CASE WHEN NOT jsonb_exists(metadata, %s) THEN NULL WHEN jsonb_typeof(metadata -> %s) = 'number' "
            f"THEN (metadata -> %s)::numeric {_SQL_RANGE[op]} %s::numeric ELSE false END)"
        )
    values = expr.value if op.is_list else (expr.value,)
    # A date matches exactly the ISO string naming it.
    equalities = [_equal_sql(key, v.isoformat() if isinstance(v, _dt.date) else v, parameters) for v in values]
    matched = equalities[0] if len(equalities) == 1 else "(" + " OR ".join(equalities) + ")"
    return matched if op in (Op.EQ, Op.IN) else f"(NOT {matched})"


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(item) for item in value)
    return False


def _check_storable(chunk: Chunk) -> None:
    """PostgreSQL text and jsonb cannot hold the NUL character: say which chunk field has one."""
    fields = {"id": chunk.id, "text": chunk.text, "source": chunk.source, "tenant": chunk.tenant,
              "superseded_by": chunk.superseded_by, "metadata": chunk.metadata}
    for name, value in fields.items():
        if _has_nul(value):
            raise UsageError(
                f"expected chunk fields without NUL characters (PostgreSQL text cannot store them), got one in "
                f"chunk id={chunk.id!r} field {name}; strip \\x00 from the corpus"
            )


def _drop_table(connection: Any, table: str) -> None:
    """Drop `table` and close the connection; an already closed connection or a stopped server is fine."""
    try:
        if not connection.closed:
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')
    except Exception:  # noqa: BLE001 - the finalizer may run at interpreter exit, when anything can fail
        pass
    finally:
        try:
            connection.close()
        except Exception:  # noqa: BLE001 - same
            pass


class PgVectorRetriever(DeltaStoreRetriever):
    """A dense retriever over a temporary pgvector table holding `corpus`; a `DeltaRetriever`."""

    # The missing-key semantics of the filter expressions it gives PostgreSQL (see `MISSING_KEY`).
    ragmorph_missing_key = MISSING_KEY

    def __init__(
        self,
        corpus: Corpus,
        *,
        conninfo: str,
        embedder: Embedder | None = None,
        index: Index = "hnsw",
        m: int = 16,
        ef_construction: int = 64,
        settings: Mapping[str, str] | None = None,
        post_filter: bool = False,
    ) -> None:
        psycopg = _import_psycopg()
        super().__init__(corpus, post_filter=post_filter)
        if index not in _INDEXES:
            raise UsageError(f"expected index to be one of {list(_INDEXES)}, got index={describe(index)}")
        if not isinstance(conninfo, str) or not conninfo:
            raise UsageError(f"expected a PostgreSQL connection string, got conninfo={describe(conninfo)}")
        self.embedder = check_embedder(embedder)
        self.index = index
        self.settings = dict(settings or {})
        self.table = f"ragmorph_{uuid.uuid4().hex}"
        # Autocommit: every statement is its own transaction, as a simple application runs them.
        self._connection = psycopg.connect(conninfo, autocommit=True)
        self._open(_drop_table, self._connection, self.table)
        self._index_options = (check_positive("m", m), check_positive("ef_construction", ef_construction))
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        self._fill(corpus)
        # Built over the loaded rows, as pgvector recommends (much faster than growing it row by row).
        try:
            self._create_index()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._chunks)} chunks"
        return f"PgVectorRetriever({self.table!r}, index={self.index!r}, {state}, embedder={self.embedder!r})"

    def _create(self) -> None:
        execute = self._connection.execute
        execute("CREATE EXTENSION IF NOT EXISTS vector")
        for name, value in self.settings.items():
            execute("SELECT set_config(%s, %s, false)", (name, str(value)))
        execute(
            f'CREATE TABLE "{self.table}" (id text PRIMARY KEY, text text NOT NULL, source text, tenant text, '
            f"version integer, effective_from date, superseded_by text, metadata jsonb NOT NULL, "
            f"embedding vector({int(self.embedder.dim)}) NOT NULL)"
        )

    def _create_index(self) -> None:
        if self.index == "hnsw":
            m, ef_construction = self._index_options
            self._connection.execute(
                f'CREATE INDEX ON "{self.table}" USING hnsw (embedding vector_ip_ops) '
                f"WITH (m = {m}, ef_construction = {ef_construction})"
            )
            self._connection.execute(f'ANALYZE "{self.table}"')

    def _insert(self, chunks: list[Chunk]) -> None:
        for chunk in chunks:
            _check_storable(chunk)
        vectors = self.embedder.embed([c.text for c in chunks])
        columns = "id, text, source, tenant, version, effective_from, superseded_by, metadata, embedding"
        with self._connection.cursor() as cursor, cursor.copy(f'COPY "{self.table}" ({columns}) FROM STDIN') as copy:
            for chunk, vector in zip(chunks, vectors):
                copy.write_row(
                    (
                        chunk.id, chunk.text, chunk.source, chunk.tenant, chunk.version, chunk.effective_from,
                        chunk.superseded_by, json.dumps(dict(chunk.metadata), sort_keys=True, default=str),
                        _vector_literal(vector),
                    )
                )
        # Fresh statistics, as autovacuum would give a long-lived table, so the planner sees the real row count.
        self._connection.execute(f'ANALYZE "{self.table}"')

    def _delete(self, ids: list[str]) -> None:
        self._connection.execute(f'DELETE FROM "{self.table}" WHERE id = ANY(%s)', (ids,))

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        vector = _vector_literal(self.embedder.embed([query])[0])
        where, parameters = where_sql(filters)
        rows = self._connection.execute(
            f'SELECT id, -(embedding <#> %s::vector) FROM "{self.table}" {where} '
            f"ORDER BY embedding <#> %s::vector LIMIT %s",
            (vector, *parameters, vector, n),
        ).fetchall()
        return [(chunk_id, float(score)) for chunk_id, score in rows]

    def explain(self, query: str, *, k: int, filters: Filters | None = None) -> str:
        """PostgreSQL's plan for the search statement (shows whether the HNSW index is used)."""
        vector = _vector_literal(self.embedder.embed([query])[0])
        where, parameters = where_sql(filters)
        rows = self._connection.execute(
            f'EXPLAIN SELECT id FROM "{self.table}" {where} ORDER BY embedding <#> %s::vector LIMIT %s',
            (*parameters, vector, k),
        ).fetchall()
        return "\n".join(row[0] for row in rows)


def pgvector_factory(conninfo: str, **options: Any) -> Callable[[Corpus], PgVectorRetriever]:
    """A factory building a `PgVectorRetriever` on the server at `conninfo` (options: index, settings, ...).

    For ``index="hnsw"`` (the default) the factory declares the trait ``approximate`` and an exact twin
    (``ragmorph_twin``): the same options with ``index="exact"``.
    """
    index = options.get("index", "hnsw")

    def factory(corpus: Corpus) -> PgVectorRetriever:
        return PgVectorRetriever(corpus, conninfo=conninfo, **options)

    factory.__qualname__ = f"pgvector_factory[{index}]"
    # Declared to the runner: an HNSW index searches approximately, and its exact twin is the same table
    # without an index (same embedder, filters and settings), which the approximate relations compare it with.
    factory.ragmorph_traits = ("approximate",) if index == "hnsw" else ()  # type: ignore[attr-defined]
    if index == "hnsw":
        factory.ragmorph_twin = pgvector_factory(conninfo, **{**options, "index": "exact"})  # type: ignore[attr-defined]
    factory.ragmorph_filtered_by = "ragmorph" if options.get("post_filter") else "retriever"  # type: ignore[attr-defined]
    factory.ragmorph_missing_key = MISSING_KEY  # type: ignore[attr-defined]
    return factory
