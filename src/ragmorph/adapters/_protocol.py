"""The retriever contract: a one-method protocol, optional capabilities, and hit normalisation."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MappingView, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol, Union, runtime_checkable

from ..errors import ContractRule, InvalidResponse
from ..model import Chunk, Corpus, Filters, Hit
from ..secrets import clip

__all__ = [
    "AsyncRetriever",
    "BatchRetriever",
    "Closable",
    "DeltaRetriever",
    "Factory",
    "RawHit",
    "Reindexable",
    "Retriever",
    "Revertible",
    "Updatable",
    "excerpt",
    "normalise_hits",
]

# What a retriever may return per hit: a Hit, an `(id, score)` pair, or a bare id.
RawHit = Union[Hit, tuple[str, float], str]


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers `retrieve(query, *, k, filters)` with hits best first."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Sequence[RawHit]:
        """Return at most `k` hits for `query`, best first, honouring `filters`."""
        ...


@runtime_checkable
class DeltaRetriever(Retriever, Protocol):
    """A corpus-owning retriever that can apply a perturbation as a delta instead of a re-index."""

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Index `chunks` (ids not yet present). An id already present may replace the old chunk, be refused
        (raise) or be ignored, but is never held twice."""
        ...

    def remove(self, ids: Sequence[str]) -> None:
        """Drop the chunks `ids` from the index."""
        ...


@runtime_checkable
class AsyncRetriever(Protocol):
    """A retriever with a coroutine `aretrieve`."""

    async def aretrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Sequence[RawHit]:
        """Async form of `retrieve`."""
        ...


@runtime_checkable
class BatchRetriever(Protocol):
    """A retriever that answers many queries in one call."""

    def retrieve_batch(
        self, queries: Sequence[str], *, k: int, filters: Filters | None = None
    ) -> Sequence[Sequence[RawHit]]:
        """One response per query, in query order."""
        ...


@runtime_checkable
class Revertible(Protocol):
    """A delta retriever that can restore its exact earlier state (tie order included) after add/remove.

    `applied_delta` prefers this over inverse operations: re-adding a removed chunk usually appends it, which
    moves it in the tie order, while a rollback puts it back where it was.
    """

    def checkpoint(self) -> Any:
        """An opaque token describing the current state."""
        ...

    def rollback(self, token: Any) -> None:
        """Undo every add/remove made since `checkpoint()` returned `token`, even a half-finished one."""
        ...


@runtime_checkable
class Updatable(Protocol):
    """A corpus-owning retriever that replaces the content of chunks it holds (same ids, new text or metadata)."""

    def update(self, chunks: Sequence[Chunk]) -> None:
        """Replace the indexed chunks with these ids by these chunks."""
        ...


@runtime_checkable
class Reindexable(Protocol):
    """A retriever whose existing instance can index a whole new corpus (replacing what it held)."""

    def index(self, corpus: Corpus) -> None:
        """Index exactly `corpus` on this instance."""
        ...


@runtime_checkable
class Closable(Protocol):
    """A retriever holding resources (a collection, a client); the runner closes the instances it built."""

    def close(self) -> None:
        """Release the instance's resources."""
        ...


# A factory builds a fresh retriever over exactly the given corpus.
Factory = Callable[[Corpus], Retriever]


def excerpt(value: Any, limit: int = 200) -> str:
    """A short printable excerpt of a retriever response, for error messages."""
    try:
        text = repr(value)
    except Exception as error:  # a hit whose repr raises, an int past repr's digit limit: the error must still read
        text = f"<{type(value).__name__} whose repr raised {type(error).__name__}>"
    return clip(text, limit)  # masked before the cut: a cut secret would no longer match its mask


def _one_hit(raw: Any, rank: int, query: str, response: Any) -> Hit:
    if isinstance(raw, Hit):
        return raw
    if isinstance(raw, str):
        if not raw:
            raise InvalidResponse(f"hit at rank {rank} has an empty id", query=query, excerpt=excerpt(response))
        return Hit(_plain(raw))
    if isinstance(raw, (tuple, list)) and len(raw) == 2 and isinstance(raw[0], str):
        chunk_id, score = raw
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            score = _numeric_score(score, rank, query, response)
        if not chunk_id:
            raise InvalidResponse(f"hit at rank {rank} has an empty id", query=query, excerpt=excerpt(response))
        try:
            value = None if score is None else float(score)
        except OverflowError:  # an int such as 10**400: no float holds it
            raise InvalidResponse(
                f"expected a finite score, got an integer of {score.bit_length()} bits at rank {rank}, beyond any float",
                query=query, excerpt=excerpt(response), rule=ContractRule.NON_FINITE_SCORE,
            ) from None
        return Hit(_plain(chunk_id), value)
    raise InvalidResponse(
        f"expected a Hit, an (id, score) pair or an id string at rank {rank}, got {type(raw).__name__}",
        query=query,
        excerpt=excerpt(response),
    )


def _plain(chunk_id: str) -> str:
    """The id as an exact str: a str subclass may override hashing or equality, which ids are compared by."""
    return chunk_id if type(chunk_id) is str else str.__getitem__(chunk_id, slice(None))


def _numeric_score(score: Any, rank: int, query: str, response: Any) -> float:
    """A score that is a number without being a float (numpy scalars, Decimal), as float; anything else raises.

    Booleans and strings are refused although float() accepts them: `(id, True)` read as 1.0 or `(id, "0.5")`
    as 0.5 would score a response the retriever never meant to give.
    """
    is_boolean = isinstance(score, bool) or getattr(getattr(score, "dtype", None), "kind", None) == "b"
    if not is_boolean and not isinstance(score, (str, bytes, bytearray)):
        try:
            return float(score)
        except OverflowError:  # Fraction(10**400): a number, but no float holds it
            raise InvalidResponse(
                f"expected a finite score, got {type(score).__name__} beyond any float at rank {rank}",
                query=query, excerpt=excerpt(response), rule=ContractRule.NON_FINITE_SCORE,
            ) from None
        except (TypeError, ValueError):
            pass
    raise InvalidResponse(
        f"expected a numeric score at rank {rank}, got {score!r} ({type(score).__name__})",
        query=query,
        excerpt=excerpt(response),
    )


def _unordered(response: Any) -> str | None:
    """Why `response` cannot be a ranking, for the containers that iterate but hold no rank order."""
    if isinstance(response, Mapping):
        return (
            f"expected a sequence of hits best first, got a {type(response).__name__} (its scores would be "
            "dropped); return a list of (id, score) pairs, e.g. sorted(d.items(), key=lambda p: -p[1])"
        )
    if isinstance(response, AbstractSet) and not isinstance(response, MappingView):
        return (
            f"expected a sequence of hits best first, got a {type(response).__name__}, which has no order (it "
            "iterates in hash order, which changes between runs); return a list"
        )
    return None


def normalise_hits(response: Any, *, query: str) -> tuple[Hit, ...]:
    """Turn a retriever response (Hits, `(id, score)` pairs or bare ids) into a tuple of Hits.

    Only the shape is checked here; the contract checks (k, duplicates, unknown ids, scores) live in
    `ragmorph.adapters.validate_hits`.
    """
    if isinstance(response, (str, bytes)) or not isinstance(response, Iterable):
        raise InvalidResponse(
            f"expected a sequence of hits, got {type(response).__name__}", query=query, excerpt=excerpt(response)
        )
    unordered = _unordered(response)
    if unordered is not None:
        raise InvalidResponse(unordered, query=query, excerpt=excerpt(response))
    if isinstance(response, (list, tuple)) and set(map(type, response)) <= {Hit}:
        return tuple(response)  # Hits already (the built-in retrievers): one C-level pass, not a call per hit
    return tuple(_one_hit(raw, rank, query, response) for rank, raw in enumerate(response, start=1))
