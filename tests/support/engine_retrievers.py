"""Small retrievers with planted bugs and instrumentation for the runner tests (engineer E's helpers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Case, Chunk, Corpus, Filters

__all__ = [
    "CALL_LOG",
    "INSTANCES",
    "CountingBM25",
    "ExplodingBM25",
    "FrozenHeapBM25",
    "IgnoresTenantFilter",
    "NaNAfterRemove",
    "OnceFlipped",
    "WearsOut",
    "OneTooMany",
    "SlowBM25",
    "StaleDeleteBM25",
    "TrackingBM25",
    "small_world",
]

CALL_LOG: list[tuple[Any, ...]] = []
INSTANCES: list[Any] = []


class CountingBM25(BM25Retriever):
    """Correct BM25 that logs every call with the ids it currently holds (to spot repeated identical calls)."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Log, then answer like BM25Retriever."""
        CALL_LOG.append((tuple(sorted(self.held_ids())), query, k, filters))
        return super().retrieve(query, k=k, filters=filters)

    def held_ids(self) -> set[str]:
        """Ids currently indexed."""
        return {(c.id, c.text, c.tenant) for c in self.corpus}


class FrozenHeapBM25(BM25Retriever):
    """Correct BM25 that raises unless the garbage collector's permanent generation holds objects when it is
    called (the runner freezes the heap a run starts with, in every process that runs units)."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer like BM25Retriever while the heap is frozen, else raise."""
        import gc

        if gc.get_freeze_count() == 0:
            raise RuntimeError("expected the run's starting heap frozen during retriever calls, got none frozen")
        return super().retrieve(query, k=k, filters=filters)


class TrackingBM25(BM25Retriever):
    """Correct BM25 without checkpoints (so reverts use inverse add/remove) that records its instances."""

    checkpoint = None  # type: ignore[assignment]
    rollback = None  # type: ignore[assignment]

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus, **kwargs)
        self.live = set(corpus.ids)
        INSTANCES.append(self)

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Add and track."""
        super().add(chunks)
        self.live |= {c.id for c in chunks}

    def remove(self, ids: Sequence[str]) -> None:
        """Remove and track."""
        super().remove(ids)
        self.live -= set(ids)


class ExplodingBM25(TrackingBM25):
    """Raises whenever an injected distractor is in its index: a retriever error, never a verdict."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Fail on edited indexes."""
        if any(i.startswith("distractor") for i in self.live):
            raise RuntimeError("index corrupted by add()")
        return super().retrieve(query, k=k, filters=filters)


class StaleDeleteBM25(BM25Retriever):
    """remove() is a no-op: deleted chunks keep being returned."""

    def remove(self, ids: Sequence[str]) -> None:
        """Forget to remove (the bug)."""


class IgnoresTenantFilter(BM25Retriever):
    """Drops the tenant filter: other tenants' chunks leak."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer as if no tenant filter were given."""
        if filters is not None and filters.tenant is not None:
            filters = attrs.evolve(filters, tenant=None)
        return super().retrieve(query, k=k, filters=None if filters is None or filters.is_empty else filters)


class OneTooMany(BM25Retriever):
    """Returns k + 1 hits (an off-by-one slice): the response breaks the retriever contract."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer with one hit too many."""
        return super().retrieve(query, k=k + 1, filters=filters)


class NaNAfterRemove(BM25Retriever):
    """Valid until a chunk is removed; from then on every score is NaN (a stale norm divides 0 by 0)."""

    checkpoint = None  # type: ignore[assignment]
    rollback = None  # type: ignore[assignment]

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus, **kwargs)
        self.removed = 0

    def remove(self, ids: Sequence[str]) -> None:
        """Remove, and remember that the norms are now stale."""
        super().remove(ids)
        self.removed += len(ids)

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Add (a revert re-adds what was removed, which refreshes the norms)."""
        super().add(chunks)
        self.removed = max(0, self.removed - len(chunks))

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """NaN scores while a removal is in effect."""
        hits = super().retrieve(query, k=k, filters=filters)
        return [(hit.id, float("nan")) for hit in hits] if self.removed else hits


class OnceFlipped(BM25Retriever):
    """The second time any instance in the process is asked the same call, its scores come back zeroed: state
    shared between instances, which no fresh index rebuilds (the third time is normal again)."""

    seen: dict[tuple[Any, ...], int] = {}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer like BM25Retriever, except the second time."""
        key = (query, k, filters)
        OnceFlipped.seen[key] = OnceFlipped.seen.get(key, 0) + 1
        hits = super().retrieve(query, k=k, filters=filters)
        return [(h.id, 0.0) for h in hits] if OnceFlipped.seen[key] == 2 else hits


class WearsOut(BM25Retriever):
    """From its 6th call on, an instance returns one hit fewer (a degrading connection pool): a violation only
    a history of calls on the same instance reproduces."""

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus, **kwargs)
        self.made = 0

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer like BM25Retriever, then worse."""
        self.made += 1
        hits = super().retrieve(query, k=k, filters=filters)
        return hits[:-1] if self.made > 5 else hits


class SlowBM25(BM25Retriever):
    """Sleeps longer than any sensible per-call timeout."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """Answer late."""
        import time

        time.sleep(0.3)
        return super().retrieve(query, k=k, filters=filters)


_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def small_world(size: int = 30) -> tuple[Corpus, tuple[Case, ...]]:
    """A corpus of `size` filler chunks across two tenants plus a gold chunk, and two cases."""
    chunks = [
        Chunk(f"c{i}", " ".join(_WORDS[(i * 7 + j) % len(_WORDS)] for j in range(5)), tenant=("acme", "globex", None)[i % 3])
        for i in range(size)
    ]
    chunks.append(Chunk("gold", "the revised leave policy begins in september", tenant="acme"))
    chunks.append(Chunk("other", "leave policy of globex begins in march", tenant="globex"))
    chunks.append(Chunk("it", "reset your password in the portal"))
    cases = (
        Case("q1", "When does the revised leave policy begin?", tenant="acme", evidence=[["gold"]]),
        Case("q2", "How do I reset my password?", evidence=[["it"]]),
    )
    return Corpus(chunks), cases
