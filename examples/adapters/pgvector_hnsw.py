"""PostgreSQL with pgvector (an HNSW index, SQL WHERE filters) as a ragmorph factory.

    pip install 'ragmorph[pgvector]'
    ragmorph run --retriever examples/adapters/pgvector_hnsw.py:factory --corpus ... --cases ...

Set RAGMORPH_PG_URI to test your own server (it needs the `vector` extension); otherwise the first build starts
the PostgreSQL 16 + pgvector bundled in the `pgserver` wheel in a temporary directory, stopped at exit. Each
build creates its own table and drops it on close(). `exact_factory` is the same table without an index: the
exact twin to compare HNSW against.
"""

from __future__ import annotations

import atexit
import functools
import os
import tempfile
from pathlib import Path

from ragmorph.adapters import CachedEmbedder, HashingEmbedder
from ragmorph.adapters.pgvector import PgVectorRetriever
from ragmorph.model import Corpus

EMBEDDER = CachedEmbedder(HashingEmbedder(dim=256))


@functools.cache
def server_uri() -> str:
    """RAGMORPH_PG_URI, or a bundled pgserver started on first use."""
    if os.environ.get("RAGMORPH_PG_URI"):
        return os.environ["RAGMORPH_PG_URI"]
    import pgserver

    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix="ragmorph-pg-")) / "data", cleanup_mode="delete")
    atexit.register(server.cleanup)
    return server.get_uri()


def factory(corpus: Corpus) -> PgVectorRetriever:
    """A table with an HNSW index (pgvector defaults: m=16, ef_construction=64, hnsw.ef_search=40)."""
    return PgVectorRetriever(corpus, conninfo=server_uri(), embedder=EMBEDDER, index="hnsw")


def exact_factory(corpus: Corpus) -> PgVectorRetriever:
    """The same table without an index: every query is an exact sequential scan."""
    return PgVectorRetriever(corpus, conninfo=server_uri(), embedder=EMBEDDER, index="exact")


factory.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
# The exact twin the approximate relations compare the index with (same table, no index).
factory.ragmorph_twin = exact_factory  # type: ignore[attr-defined]

if __name__ == "__main__":
    from _demo import show

    show(factory)
