"""FAISS integration: exact (`IndexFlatIP`) and HNSW (`IndexHNSWFlat`) inner-product indexes.

Needs the extra ``ragmorph[faiss]`` (faiss-cpu). FAISS is imported only when a retriever is built.

- Vectors are the embedder's L2-normalised rows, so the inner product is the cosine (0 for a text without
  tokens). FAISS pads a result shorter than k with the label -1; those slots are not hits.
- Filters: FAISS stores no metadata. An application keeps the metadata beside the index and restricts the
  search to the allowed ids with an ``IDSelectorBatch`` in the search parameters; this adapter does the same,
  computing the allowed ids from the chunk fields with ragmorph's `Filters.allows`. FAISS applies the selector
  inside its search (for HNSW while walking the graph), so what the index returns under a selective filter is
  FAISS's own behaviour, but which chunks a filter admits is ragmorph's code: the adapter declares
  ``ragmorph_filtered_by = "selector"``, the relations judging the admitted set report not_applicable and those
  judging the restricted search (its under-return, the ranking among admitted chunks) judge FAISS.
  ``post_filter=True`` lets ragmorph filter unrestricted results instead (declared: filter relations then do
  not apply).
- `FaissFlatRetriever` searches exhaustively and applies deltas (``add_with_ids`` / ``remove_ids`` on an
  ``IndexIDMap2``). `FaissHNSWRetriever` is approximate (declares the trait ``approximate``) and has no
  deltas, because an HNSW graph in FAISS cannot delete: its factory builds a new index for an edited corpus.
  `ef_search` (FAISS's default is 16, raised to k when k is larger) and `m`, `ef_construction` are FAISS's own.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from ..errors import UsageError
from ..model import Chunk, Corpus, Filters
from ._store import DeltaStoreRetriever, StoreRetriever, check_embedder, check_positive
from .embedders import Embedder

__all__ = ["FaissFlatRetriever", "FaissHNSWRetriever", "faiss_flat_factory", "faiss_hnsw_factory"]


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError as error:
        raise UsageError(
            "expected faiss-cpu to be installed for the FAISS retrievers, got ImportError; "
            "install it with `pip install 'ragmorph[faiss]'`"
        ) from error
    return faiss


class _FaissRetriever(StoreRetriever):
    """The search both FAISS indexes share: labels for chunk ids, an IDSelector for filters."""

    # ragmorph computes the admitted ids (FAISS has no metadata); FAISS searches among them.
    ragmorph_filtered_by = "selector"

    def __init__(self, corpus: Corpus, *, embedder: Embedder | None, post_filter: bool) -> None:
        self._faiss = _import_faiss()
        super().__init__(corpus, post_filter=post_filter)
        if self.ragmorph_filtered_by == "retriever":
            self.ragmorph_filtered_by = "selector"
        self.embedder = check_embedder(embedder)
        self._labels: dict[str, int] = {}
        self._ids: dict[int, str] = {}
        self._next_label = 0
        self.index = self._new_index(int(self.embedder.dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._chunks)} chunks, embedder={self.embedder!r})"

    @abstractmethod
    def _new_index(self, dim: int) -> Any:
        """An empty FAISS index of width `dim`."""

    def _search_parameters(self, selector: Any) -> Any:
        return self._faiss.SearchParameters(sel=selector)

    def _insert(self, chunks: list[Chunk]) -> None:
        vectors = np.ascontiguousarray(self.embedder.embed([c.text for c in chunks]), dtype=np.float32)
        labels = np.arange(self._next_label, self._next_label + len(chunks), dtype=np.int64)
        self._add_vectors(vectors, labels)
        for chunk, label in zip(chunks, labels.tolist()):
            self._labels[chunk.id] = label
            self._ids[label] = chunk.id
        self._next_label += len(chunks)

    def _add_vectors(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        self.index.add_with_ids(vectors, labels)

    def _search(self, query: str, n: int, filters: Filters | None) -> list[tuple[str, float]]:
        vector = np.ascontiguousarray(self.embedder.embed([query]), dtype=np.float32)
        if filters is not None:
            allowed = np.array(
                [self._labels[i] for i, chunk in self._chunks.items() if filters.allows(chunk)], dtype=np.int64
            )
            if allowed.size == 0:
                return []
            parameters = self._search_parameters(self._faiss.IDSelectorBatch(allowed))
        else:
            parameters = self._search_parameters(None)
        scores, labels = self.index.search(vector, min(n, self.index.ntotal), params=parameters)
        return [(self._ids[int(label)], float(score)) for score, label in zip(scores[0], labels[0]) if label >= 0]


class FaissFlatRetriever(_FaissRetriever, DeltaStoreRetriever):
    """Exhaustive inner-product search in FAISS (`IndexIDMap2` over `IndexFlatIP`); a `DeltaRetriever`."""

    def __init__(self, corpus: Corpus, *, embedder: Embedder | None = None, post_filter: bool = False) -> None:
        super().__init__(corpus, embedder=embedder, post_filter=post_filter)
        self._fill(corpus)

    def _new_index(self, dim: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dim))

    def _delete(self, ids: list[str]) -> None:
        labels = np.array([self._labels.pop(i) for i in ids], dtype=np.int64)
        self.index.remove_ids(labels)
        for label in labels.tolist():
            del self._ids[label]


class FaissHNSWRetriever(_FaissRetriever):
    """Approximate inner-product search over a FAISS HNSW graph (`IndexHNSWFlat`); rebuilt, never patched."""

    ragmorph_traits = ("approximate",)

    def __init__(
        self,
        corpus: Corpus,
        *,
        embedder: Embedder | None = None,
        m: int = 32,
        ef_construction: int = 40,
        ef_search: int = 16,
        post_filter: bool = False,
    ) -> None:
        self.m = check_positive("m", m)
        self.ef_construction = check_positive("ef_construction", ef_construction)
        self.ef_search = check_positive("ef_search", ef_search)
        super().__init__(corpus, embedder=embedder, post_filter=post_filter)
        self._fill(corpus)

    def __repr__(self) -> str:
        return f"FaissHNSWRetriever({len(self._chunks)} chunks, m={self.m}, ef_search={self.ef_search})"

    def _new_index(self, dim: int) -> Any:
        index = self._faiss.IndexHNSWFlat(dim, self.m, self._faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        return index

    def _add_vectors(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        # IndexHNSWFlat numbers vectors by insertion order, which is exactly how labels are assigned.
        self.index.add(vectors)

    def _search_parameters(self, selector: Any) -> Any:
        return self._faiss.SearchParametersHNSW(sel=selector, efSearch=self.ef_search)


def faiss_flat_factory(corpus: Corpus) -> FaissFlatRetriever:
    """Build an exact `FaissFlatRetriever` with the default `HashingEmbedder` over exactly `corpus`."""
    return FaissFlatRetriever(corpus)


def faiss_hnsw_factory(corpus: Corpus) -> FaissHNSWRetriever:
    """Build a `FaissHNSWRetriever` with FAISS's defaults (M=32, efSearch=16) over exactly `corpus`."""
    return FaissHNSWRetriever(corpus)


faiss_hnsw_factory.ragmorph_traits = FaissHNSWRetriever.ragmorph_traits  # type: ignore[attr-defined]
# The exact twin over the same vectors (the same default embedder), for the approximate relations.
faiss_hnsw_factory.ragmorph_twin = faiss_flat_factory  # type: ignore[attr-defined]
