"""Exact cosine-similarity retrieval in numpy over any Embedder, with add/remove deltas.

Scores are computed with `np.einsum` row by row rather than with a BLAS matrix-vector product: BLAS results for
a row depend on the matrix shape and the row's position (blocking), so a delta index and a fresh index of the
same corpus could disagree in the last bit and swap near-ties. einsum reduces each row on its own, so the
scores after any add/remove equal those of a fresh index bit for bit.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters, Hit
from ._index import GrowableArray, SlotIndex, top_slots
from .bm25 import _check_k
from .embedders import CachedEmbedder, Embedder, HashingEmbedder

__all__ = ["DenseRetriever", "shared_cache"]

_CACHES: weakref.WeakKeyDictionary[object, CachedEmbedder] = weakref.WeakKeyDictionary()
_DEFAULT_EMBEDDER = HashingEmbedder()


def shared_cache(embedder: Embedder) -> CachedEmbedder:
    """The one CachedEmbedder for `embedder` in this process (itself when already cached).

    Every DenseRetriever over the same embedder shares it, so building the index of a perturbed corpus embeds
    only the chunks whose text is new.
    """
    if isinstance(embedder, CachedEmbedder):
        return embedder
    if not callable(getattr(embedder, "embed", None)) or not isinstance(getattr(embedder, "dim", None), int):
        raise UsageError(f"expected an Embedder with embed(texts) and an int dim, got embedder={describe(embedder)}")
    cached = _CACHES.get(embedder)
    if cached is None:
        cached = _CACHES[embedder] = CachedEmbedder(embedder)
    return cached


class DenseRetriever(SlotIndex):
    """Exact cosine top-k over chunk embeddings: a factory supporting add/remove, filters as a mask.

    Every live chunk has a score, so up to k chunks are always returned; ties are broken by corpus position.
    """

    def __init__(self, corpus: Corpus, *, embedder: Embedder | None = None) -> None:
        super().__init__(corpus)
        self.embedder = shared_cache(embedder if embedder is not None else _DEFAULT_EMBEDDER)
        self._vectors = GrowableArray(np.float32, width=self.embedder.dim)
        self._append(corpus.chunks)
        self._corpus_cache = corpus

    def __repr__(self) -> str:
        return f"DenseRetriever(<{len(self)} chunks>, embedder={self.embedder.inner!r})"

    def _on_add(self, slots: range, chunks: Sequence[Chunk]) -> None:
        self._vectors.extend(self.embedder.embed([c.text for c in chunks]))

    def _on_remove(self, slot: int, chunk: Chunk) -> None:
        pass  # the tombstone in the alive mask is all a removal needs

    def _on_revive(self, slot: int, chunk: Chunk) -> None:
        pass

    def _on_truncate(self, slot: int, chunk: Chunk) -> None:
        self._vectors.truncate(slot)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The `k` live chunks most similar to `query` allowed by `filters`, best first."""
        _check_k(k)
        query_vector = self.embedder.embed([query])[0]
        with self._lock:
            scores = np.einsum("ij,j->i", self._vectors.view, query_vector)
            chosen = top_slots(scores, self._live_slots(), k, self._accept(filters))
            return [Hit(self._chunks[slot].id, float(scores[slot])) for slot in chosen]
