"""The shared skeleton of the corpus-owning store integrations (pgvector, Qdrant, FAISS, Haystack, LanceDB).

A subclass owns one library resource (a table, a collection, an index) that holds exactly the chunks it was
given, and implements three calls in the library's own terms: `_insert(chunks)`, `_delete(ids)` and
`_search(query, n, filters)` (the library's best n, filtered by the library when `filters` is given). This
class keeps the live chunks, checks delta ids, routes filters (to the library, or with ``post_filter=True`` to
ragmorph's over-fetching filter, declared as ``ragmorph_filtered_by = "ragmorph"``) and deletes the resource
exactly once: on `close()`, on leaving a ``with`` block, or from a `weakref.finalize` safety net.
`DeltaStoreRetriever` adds the public `add`/`remove` for libraries that can delete (an HNSW graph in FAISS
cannot, so that adapter is rebuilt by its factory instead).
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters, Hit
from ._integration import fetch_filtered, filtered_by
from .embedders import Embedder, HashingEmbedder

__all__ = ["DeltaStoreRetriever", "StoreRetriever", "check_embedder", "check_positive"]


def check_embedder(embedder: Embedder | None) -> Embedder:
    """The given embedder, or a `HashingEmbedder()`; anything without `embed` and `dim` is a usage error."""
    chosen = embedder if embedder is not None else HashingEmbedder()
    if not callable(getattr(chosen, "embed", None)) or not isinstance(getattr(chosen, "dim", None), int):
        raise UsageError(f"expected an Embedder with embed(texts) and an int dim, got embedder={describe(chosen)}")
    return chosen


def check_positive(name: str, value: Any) -> int:
    """`value` when it is a positive int, else a usage error naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"expected a positive integer {name}, got {name}={describe(value)}")
    return value


class StoreRetriever(ABC):
    """Base of the store integrations: live chunks, delta checks, filter routing, one-time cleanup."""

    def __init__(self, corpus: Corpus, *, post_filter: bool = False) -> None:
        if not isinstance(corpus, Corpus):
            raise UsageError(f"expected a ragmorph Corpus, got corpus={describe(corpus)}")
        self.ragmorph_filtered_by = filtered_by(post_filter, native=True)
        self._lock = threading.RLock()
        self._chunks: dict[str, Chunk] = {}
        self._finalizer: weakref.finalize | None = None

    def _open(self, cleanup: Callable[..., None], *args: Any) -> None:
        """Register `cleanup(*args)` (which must not refer to self) to run exactly once."""
        self._finalizer = weakref.finalize(self, cleanup, *args)

    def _fill(self, corpus: Corpus) -> None:
        """Index the initial corpus; on failure the resource is released before the error propagates."""
        try:
            self._add_chunks(corpus.chunks)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> StoreRetriever:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once the library resource has been released."""
        return self._finalizer is not None and not self._finalizer.alive

    def close(self) -> None:
        """Release the library resource (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()

    def _check_open(self) -> None:
        if self.closed:
            raise UsageError(f"expected an open {type(self).__name__}, got a closed one; build a new one")

    @property
    def corpus(self) -> Corpus:
        """The chunks currently indexed, in insertion order."""
        return Corpus(self._chunks.values())

    def _add_chunks(self, chunks: Sequence[Chunk]) -> None:
        self._check_open()
        chunks = list(chunks)
        with self._lock:
            clashing = [c.id for c in chunks if c.id in self._chunks]
            if clashing or len({c.id for c in chunks}) != len(chunks):
                raise UsageError(f"expected chunk ids not indexed yet, got repeated ids {clashing[:5] or 'within the batch'}")
            if chunks:
                self._insert(chunks)
            self._chunks.update((c.id, c) for c in chunks)

    def _remove_chunks(self, ids: Sequence[str]) -> None:
        self._check_open()
        ids = list(ids)
        with self._lock:
            unknown = [i for i in ids if i not in self._chunks]
            if unknown:
                raise UsageError(f"expected indexed chunk ids to remove, got unknown ids {unknown[:5]}")
            if ids:
                self._delete(ids)
            for chunk_id in ids:
                del self._chunks[chunk_id]

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The library's top k for `query`, filtered by the library (or by ragmorph when asked to)."""
        self._check_open()
        native = None if filters is None or filters.is_empty else filters
        with self._lock:
            if not self._chunks:
                return ()
            if native is not None and self.ragmorph_filtered_by == "ragmorph":
                chunks = self._chunks

                def allowed(found: tuple[str, float]) -> bool:
                    chunk = chunks.get(found[0])
                    return chunk is None or native.allows(chunk)  # unknown ids stay for validation to report

                found = fetch_filtered(lambda n: self._search(query, n, None), k=k, keep=allowed)
            else:
                found = self._search(query, k, native)
            return tuple(Hit(i, s, getattr(self._chunks.get(i), "text", None)) for i, s in found)

    # The library calls, in the library's terms.
    @abstractmethod
    def _insert(self, chunks: list[Chunk]) -> None:
        """Add `chunks` to the library resource."""

    def _delete(self, ids: list[str]) -> None:
        """Delete `ids` from the library resource (only `DeltaStoreRetriever`s are asked to)."""
        raise UsageError(f"{type(self).__name__} cannot delete chunks; build a new one over the edited corpus")

    @abstractmethod
    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        """The library's best n `(chunk id, score)` for `query`, filtered by the library when `filters` is given."""


class DeltaStoreRetriever(StoreRetriever):
    """A store integration whose library can delete: corpus edits are applied as `add`/`remove` deltas."""

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Index `chunks` in the library (their ids must not be indexed yet)."""
        self._add_chunks(chunks)

    def remove(self, ids: Sequence[str]) -> None:
        """Delete the chunks `ids` from the library (they must be indexed)."""
        self._remove_chunks(ids)

    @abstractmethod
    def _delete(self, ids: list[str]) -> None:
        """Delete `ids` from the library resource."""
