"""Shared machinery of the built-in index retrievers: slot storage with tombstones, rollback and top-k.

Chunks live in append-only *slots*; removing a chunk tombstones its slot, so a one-chunk delta costs only the
work of that chunk, and the order of live slots always equals the order of the edited corpus
(`corpus.without(removed).with_chunks(added)`), which is what ties are broken by.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..errors import InputError, describe
from ..model import Chunk, Corpus, Filters

__all__ = ["GrowableArray", "SlotIndex", "top_slots"]


class GrowableArray:
    """A 1-d or 2-d numpy buffer with amortised O(1) append along the first axis."""

    def __init__(self, dtype: type | np.dtype, width: int | None = None, capacity: int = 16) -> None:
        shape = (capacity,) if width is None else (capacity, width)
        self._data = np.zeros(shape, dtype=dtype)
        self.size = 0

    @classmethod
    def holding(cls, values: np.ndarray) -> GrowableArray:
        """A buffer whose elements are `values`, taken as they are (a view of a larger array too: the first append
        moves them to a buffer of their own, and a write after a truncate stays inside their own range)."""
        made = cls.__new__(cls)
        made._data = values
        made.size = len(values)
        return made

    def _reserve(self, extra: int) -> None:
        needed = self.size + extra
        if needed > len(self._data):
            grown = np.zeros((max(needed, 2 * len(self._data)),) + self._data.shape[1:], dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    def append(self, value: object) -> None:
        """Append one element (a scalar, or a row for 2-d buffers)."""
        self._reserve(1)
        self._data[self.size] = value
        self.size += 1

    def extend(self, values: np.ndarray) -> None:
        """Append many elements at once."""
        values = np.asarray(values, dtype=self._data.dtype)
        self._reserve(len(values))
        self._data[self.size : self.size + len(values)] = values
        self.size += len(values)

    def truncate(self, size: int) -> None:
        """Forget every element from position `size` on."""
        self.size = min(self.size, size)

    @property
    def view(self) -> np.ndarray:
        """The filled part (a view; do not keep it across appends)."""
        return self._data[: self.size]


def top_slots(
    scores: np.ndarray, candidates: np.ndarray, k: int, accept: Callable[[int], bool] | None = None
) -> list[int]:
    """The best `k` candidate slots by descending score, ties broken by slot order (= corpus order).

    `candidates` must be ascending slot numbers. A stable sort on negated scores keeps ascending slot order
    among equal scores; `accept` (a filter) is applied before truncation, so it never costs a result.
    """
    if len(candidates) == 0:
        return []
    if accept is None and len(candidates) > k:
        candidate_scores = scores[candidates]
        # Keep every candidate tied with the k-th best so the stable sort still sees the whole tie group.
        kth = np.partition(candidate_scores, len(candidates) - k)[len(candidates) - k]
        candidates = candidates[candidate_scores >= kth]
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    if accept is None:
        return [int(slot) for slot in order[:k]]
    chosen: list[int] = []
    for slot in order:
        if accept(int(slot)):
            chosen.append(int(slot))
            if len(chosen) == k:
                break
    return chosen


class SlotIndex(abc.ABC):
    """Base class of the built-in retrievers: owns the chunks, tombstones, checkpoints and the lock.

    Subclasses implement the four hooks that keep their own structures in step with the slots.
    """

    def __init__(self, corpus: Corpus) -> None:
        if not isinstance(corpus, Corpus):
            raise InputError(
                f"expected a ragmorph Corpus, got corpus={describe(corpus)}; build one with Corpus(chunks) or "
                "ragmorph.io.read_corpus(path)",
                field="corpus",
                value=corpus,
            )
        self._lock = threading.RLock()
        self._chunks: list[Chunk] = []
        self._alive = GrowableArray(np.bool_)
        self._slot_of: dict[str, int] = {}
        self._tombstoned: list[int] = []
        self._corpus_cache: Corpus | None = corpus

    def __getstate__(self) -> dict[str, object]:
        # Locks cannot be pickled; runner units may be sent to worker processes.
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # Hooks -------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def _on_add(self, slots: range, chunks: Sequence[Chunk]) -> None:
        """Index freshly appended slots (they are alive)."""

    @abc.abstractmethod
    def _on_remove(self, slot: int, chunk: Chunk) -> None:
        """A live slot stops counting (tombstoned or truncated)."""

    @abc.abstractmethod
    def _on_revive(self, slot: int, chunk: Chunk) -> None:
        """A tombstoned slot counts again (rollback)."""

    @abc.abstractmethod
    def _on_truncate(self, slot: int, chunk: Chunk) -> None:
        """Forget the last slot entirely (rollback, newest first)."""

    # Public surface ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._slot_of

    @property
    def corpus(self) -> Corpus:
        """The corpus this index currently holds (after deltas), in tie-break order."""
        with self._lock:
            if self._corpus_cache is None:
                alive = self._alive.view
                self._corpus_cache = Corpus(c for slot, c in enumerate(self._chunks) if alive[slot])
            return self._corpus_cache

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Index `chunks` after the current ones; ids already present are an InputError (nothing is changed)."""
        new = tuple(chunks)
        seen: set[str] = set()
        for chunk in new:
            if not isinstance(chunk, Chunk):
                raise InputError(f"expected Chunk objects to add, got {describe(chunk)}", field="chunks", value=chunk)
            if chunk.id in self._slot_of or chunk.id in seen:
                raise InputError(
                    f"expected new chunk ids, got id={chunk.id!r} which is already indexed; remove it first",
                    field="id",
                    value=chunk.id,
                )
            seen.add(chunk.id)
        self._append(new)

    def _append(self, new: Sequence[Chunk]) -> None:
        with self._lock:
            first = len(self._chunks)
            self._chunks.extend(new)
            self._alive.extend(np.ones(len(new), dtype=np.bool_))
            for offset, chunk in enumerate(new):
                self._slot_of[chunk.id] = first + offset
            self._corpus_cache = None
            self._on_add(range(first, first + len(new)), new)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop the chunks `ids` (tombstones); unknown or repeated ids are an InputError (nothing is changed)."""
        if isinstance(ids, str):
            raise InputError(f"expected a list of ids, got a single string ids={ids!r}; wrap it in a list", field="ids")
        drop = list(ids)
        unknown = [i for i in drop if i not in self._slot_of]
        if unknown or len(set(drop)) != len(drop):
            raise InputError(
                f"expected distinct ids present in the index, got unknown={unknown[:5]} from ids={drop[:5]}",
                field="ids",
                value=drop,
            )
        with self._lock:
            for chunk_id in drop:
                slot = self._slot_of.pop(chunk_id)
                self._alive.view[slot] = False
                self._tombstoned.append(slot)
                self._corpus_cache = None
                self._on_remove(slot, self._chunks[slot])

    def checkpoint(self) -> tuple[int, int]:
        """A token for `rollback`: the slot count and tombstone log length now."""
        with self._lock:
            return (len(self._chunks), len(self._tombstoned))

    def rollback(self, token: tuple[int, int]) -> None:
        """Restore the state at `checkpoint()`: truncate newer slots, revive newer tombstones (O(delta))."""
        slots, tombstones = token
        with self._lock:
            self._corpus_cache = None
            for slot in range(len(self._chunks) - 1, slots - 1, -1):
                chunk = self._chunks[slot]
                if self._alive.view[slot]:
                    del self._slot_of[chunk.id]
                    self._on_remove(slot, chunk)
                self._on_truncate(slot, chunk)
                self._chunks.pop()
            self._alive.truncate(slots)
            for slot in reversed(self._tombstoned[tombstones:]):
                if slot < slots:
                    chunk = self._chunks[slot]
                    self._alive.view[slot] = True
                    self._slot_of[chunk.id] = slot
                    self._on_revive(slot, chunk)
            del self._tombstoned[tombstones:]

    def _accept(self, filters: Filters | None) -> Callable[[int], bool] | None:
        if filters is None or filters.is_empty:
            return None
        chunks = self._chunks
        return lambda slot: filters.allows(chunks[slot])

    def _live_slots(self) -> np.ndarray:
        return np.flatnonzero(self._alive.view)
