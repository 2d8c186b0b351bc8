"""The retrieval world as immutable attrs data: chunks, corpus, cases, parameters, hits and rankings."""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import math
import operator
import threading
import weakref
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from .errors import CorpusChanged, InputError, describe
from .where import And, Compare, Expr, MissingKey, Not, Or, admits
from .where import from_json as where_from_json
from .where import to_json as where_to_json

__all__ = [
    "Case",
    "Chunk",
    "Corpus",
    "Filters",
    "FrozenMap",
    "Hit",
    "Params",
    "Ranking",
    "Span",
    "World",
    "check_evidence",
    "json_equal",
    "validate_cases",
]


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values by JSON type: true, 1 and 1.0 are three different values (Python's == merges them).

    Stores compare metadata so (a JSON boolean is not a number; Chroma, Qdrant and SQL keep integers and floats
    apart), so a metadata filter `{"pinned": true}` never admits a chunk storing `pinned: 1`.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(json_equal, a, b))
    return bool(a == b)


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable mapping used for chunk metadata and filter constraints."""

    __slots__ = ("_data", "_canonical", "_hash")

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        self._data: dict[str, Any] = dict(data)
        self._canonical: str | None = None
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def items(self) -> ItemsView[str, Any]:
        """The (key, value) pairs, read at C speed (the Mapping default reads each value through __getitem__)."""
        return self._data.items()

    def _canonical_json(self) -> str:
        if self._canonical is None:
            # Values may be lists or dicts (JSON metadata): their canonical JSON form, which tells 1, 1.0 and true
            # apart as JSON (and a store) does, where Python's == takes them for one value.
            self._canonical = json.dumps(self._data, sort_keys=True, default=str)
        return self._canonical

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._canonical_json())
        return self._hash

    def __eq__(self, other: object) -> bool:
        # Equal values and equal JSON forms: metadata changed from 1 to true (or 1.0) is a change, and equal maps
        # hash alike (values equal under == alone, such as 1 and True, have different JSON forms and hashes).
        if self is other:
            return True
        if isinstance(other, Mapping) and not isinstance(other, FrozenMap):
            other = FrozenMap(other)
        if isinstance(other, FrozenMap):
            return self._data == other._data and self._canonical_json() == other._canonical_json()
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


# Shared by every chunk and filter without metadata: read-only, so one object serves all (a chunk built without
# metadata then allocates no map of its own, one object less for the cyclic GC to track per chunk).
_NO_METADATA = FrozenMap()


def _no_metadata() -> FrozenMap:
    return _NO_METADATA


def _to_frozen_map(value: Mapping[str, Any] | None) -> FrozenMap:
    if value is None:
        return _NO_METADATA
    if isinstance(value, FrozenMap):
        return value
    if not isinstance(value, Mapping):
        raise InputError(f"expected a mapping, got {describe(value)}", field="metadata", value=value)
    for key in value:
        if not isinstance(key, str):
            raise InputError(f"expected string keys, got key {describe(key)}", field="metadata", value=key)
    return FrozenMap(value) if value else _NO_METADATA


def _nonempty_str(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"expected a non-empty string, got {attribute.name}={describe(value)}",
            field=attribute.name,
            value=value,
        )


def _str(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str):
        raise InputError(
            f"expected a string, got {attribute.name}={describe(value)}", field=attribute.name, value=value
        )


def _optional_nonempty_str(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None:
        _nonempty_str(instance, attribute, value)


def _optional_int(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InputError(
            f"expected an integer or null, got {attribute.name}={describe(value)}",
            field=attribute.name,
            value=value,
        )


def _to_date(value: Any) -> _dt.date | None:
    if value is None or (isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise InputError(
        f"expected an ISO date like '2026-09-01' or null, got effective_from={describe(value)}",
        field="effective_from",
        value=value,
    )


def _to_str_tuple(name: str) -> Any:
    def convert(value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise InputError(f"expected a list of strings, got {name}={describe(value)}", field=name, value=value)
        items = tuple(value)
        for item in items:
            if not isinstance(item, str):
                raise InputError(
                    f"expected a list of strings, got an item {describe(item)} in {name}", field=name, value=item
                )
        return items

    return convert


def _not_own_successor(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value == instance.id:
        raise InputError(
            f"expected superseded_by to name another chunk, got the chunk's own id {value!r}; a chunk cannot "
            "replace itself (use null for a current chunk)",
            field="superseded_by",
            value=value,
        )


@attrs.frozen
class Chunk:
    """One retrievable passage; `tenant=None` means shared, visible to every tenant."""

    id: str = attrs.field(validator=_nonempty_str)
    text: str = attrs.field(validator=_str)
    source: str | None = attrs.field(default=None, validator=_optional_nonempty_str)
    tenant: str | None = attrs.field(default=None, validator=_optional_nonempty_str)
    version: int | None = attrs.field(default=None, validator=_optional_int)
    effective_from: _dt.date | None = attrs.field(default=None, converter=_to_date)
    superseded_by: str | None = attrs.field(default=None, validator=[_optional_nonempty_str, _not_own_successor])
    metadata: FrozenMap = attrs.field(factory=_no_metadata, converter=_to_frozen_map)

    def visible_to(self, tenant: str | None) -> bool:
        """True when a caller of `tenant` may see this chunk (shared chunks are visible to all)."""
        return self.tenant is None or self.tenant == tenant

    def to_dict(self) -> dict[str, Any]:
        """The native JSON form of this chunk (as written to corpus.jsonl)."""
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "tenant": self.tenant,
            "version": self.version,
            "effective_from": self.effective_from.isoformat() if self.effective_from else None,
            "superseded_by": self.superseded_by,
            "metadata": dict(self.metadata),
        }


def _to_chunk_tuple(value: Iterable[Chunk]) -> tuple[Chunk, ...]:
    chunks = tuple(value)
    for position, chunk in enumerate(chunks):
        if not isinstance(chunk, Chunk):
            raise InputError(
                f"expected Chunk objects, got {describe(chunk)} at position {position}", field="chunks", value=chunk
            )
    return chunks


def _check_supersession(chunks: tuple[Chunk, ...], index: Mapping[str, int]) -> None:
    """Raise InputError for a cycle of superseded_by links among present chunks (a -> b -> a).

    A successor that is not in the corpus is allowed: the chunk was replaced by a version this corpus does not
    hold (the supersede strategy builds exactly such worlds); it is superseded but not stale.
    """
    done: set[int] = set()
    for start in range(len(chunks)):
        path: dict[int, None] = {}
        position: int | None = start
        while position is not None and position not in done:
            if position in path:
                cycle = [chunks[p].id for p in list(path)[list(path).index(position):]]
                raise InputError(
                    f"expected superseded_by links without cycles, got {' -> '.join(map(repr, cycle))} -> "
                    f"{cycle[0]!r}; at least one of these chunks must be current (superseded_by null)",
                    field="superseded_by",
                    value=cycle[0],
                )
            path[position] = None
            successor = chunks[position].superseded_by
            position = index.get(successor) if successor is not None else None
        done.update(path)


_ID = operator.attrgetter("id")


def _build(parent: Corpus, recipe: tuple[Any, ...]) -> tuple[Chunk, ...]:
    """The chunk tuple `recipe` makes of `parent`'s chunks: ("drop", ids), ("insert", at, new chunks) or
    ("replace", position, chunk)."""
    # The parent's own tuple, not `parent.chunks`: user code may have swapped the parent's chunks (object.__setattr__,
    # undone by restore_if_changed after its call) when this runs, and this corpus would keep that edit for its life.
    chunks = parent._origin_chunks()
    kind = recipe[0]
    if kind == "insert":
        _, at, new = recipe
        return chunks + new if at is None else chunks[:at] + new + chunks[at:]
    if kind == "replace":
        _, position, chunk = recipe
        return chunks[:position] + (chunk,) + chunks[position + 1 :]
    _, drop = recipe
    if len(drop) * 64 >= len(chunks):
        return tuple(c for c in chunks if c.id not in drop)
    # Few removals: cut around their positions with C-level tuple slicing instead of a Python loop. A derived
    # parent has no id index yet: find the ids in its own chunks (a C-level pass) rather than build one (a dict of
    # every id, kept for the corpus's life), nor look the chunks up (that reads what user code may have swapped in).
    if parent._index:
        positions: Iterable[int] = sorted(map(parent.position, drop))
    else:
        positions = itertools.compress(itertools.count(), map(drop.__contains__, map(_ID, chunks)))
    kept: list[Chunk] = []
    previous = 0
    for position in positions:
        kept.extend(chunks[previous:position])
        previous = position + 1
    kept.extend(chunks[previous:])
    return tuple(kept)


# How many delta-derived corpora may stack before lookups fall back to a full index of their own.
_MAX_OVERLAY_DEPTH = 8

# Publishes a derived corpus's chunk tuple once built, so that threads (--concurrency) all read the same object.
_BUILD_LOCK = threading.Lock()

# Every id of a few corpora, as sets: whole responses are checked against them (`Corpus.missing`). By identity (a
# corpus's own hash reads every chunk), never keeping a corpus alive (like strategies' CorpusMemo); the oldest
# goes first. No lock: threads racing here at worst build one set twice.
_ID_SETS: dict[int, tuple[weakref.ref[Corpus], frozenset[str]]] = {}
_ID_SET_SLOTS = 4


def _id_set(corpus: Corpus) -> frozenset[str]:
    """Every id of `corpus` (which holds its own id index), built once while it lives."""
    found = _ID_SETS.get(id(corpus))
    if found is not None and found[0]() is corpus:
        return found[1]
    every = frozenset(corpus._positions())
    if len(_ID_SETS) >= _ID_SET_SLOTS:
        _ID_SETS.pop(next(iter(_ID_SETS), None), None)
    _ID_SETS[id(corpus)] = (weakref.ref(corpus), every)
    return every


@attrs.frozen(eq=False)
class Corpus:
    """An ordered, immutable collection of chunks with O(1) lookup by id and a content fingerprint.

    Corpora derived by `with_chunks`, `without` and `replaced` skip re-validating chunks that are already
    valid and answer lookups through their parent plus the delta, so a one-chunk perturbation of a large
    corpus costs O(delta) for lookups instead of re-indexing every id. Their chunk tuple is built on first
    read: a retriever that takes the delta never needs the 100k-element tuple of an edited corpus.
    """

    _chunks: tuple[Chunk, ...] | None = attrs.field(converter=_to_chunk_tuple)
    _index: list[dict[str, int]] = attrs.field(init=False, repr=False)
    _overlay: tuple[Corpus, dict[str, Chunk], frozenset[str], int] | None = attrs.field(init=False, repr=False)
    _fingerprint: list[str] = attrs.field(init=False, repr=False)
    _origin: tuple[Chunk, ...] | None = attrs.field(init=False, repr=False)
    # How to build the chunk tuple from a parent until it is read: (parent, recipe, length, depth); else None.
    _pending: tuple[Corpus, tuple[Any, ...], int, int] | None = attrs.field(init=False, repr=False)
    # The corpus whose very chunk objects a `reordered` corpus holds (the first one of a chain of reorderings).
    _permuted: Corpus | None = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        chunks = self._chunks
        assert chunks is not None
        index: dict[str, int] = {}
        for position, chunk in enumerate(chunks):
            if chunk.id in index:
                raise InputError(
                    f"expected unique chunk ids, got id={chunk.id!r} at positions {index[chunk.id]} and {position}",
                    field="id",
                    value=chunk.id,
                )
            index[chunk.id] = position
        _check_supersession(chunks, index)
        object.__setattr__(self, "_index", [index])
        object.__setattr__(self, "_overlay", None)
        object.__setattr__(self, "_fingerprint", [])
        object.__setattr__(self, "_origin", chunks)
        object.__setattr__(self, "_pending", None)
        object.__setattr__(self, "_permuted", None)

    @classmethod
    def _derived(
        cls,
        chunks: tuple[Chunk, ...] | None,
        parent: Corpus | None = None,
        added: dict[str, Chunk] | None = None,
        removed: frozenset[str] = frozenset(),
        recipe: tuple[Any, ...] | None = None,
        length: int = 0,
    ) -> Corpus:
        """Build from chunks the caller guarantees are valid and id-unique; the index is built on demand.

        `chunks` None: the tuple is `recipe` applied to `parent`'s chunks (`length` of them), built on first read.
        """
        corpus = object.__new__(cls)
        pending = None
        if chunks is None:
            assert parent is not None and recipe is not None
            depth = parent._pending[3] + 1 if parent._pending is not None else 1
            if depth > _MAX_OVERLAY_DEPTH:
                # Bounded chains: building never recurses deeper than this through unbuilt parents.
                chunks = _build(parent, recipe)
            else:
                pending = (parent, recipe, length, depth)
        object.__setattr__(corpus, "_chunks", chunks)
        object.__setattr__(corpus, "_index", [])
        overlay = None
        if parent is not None:
            depth = parent._overlay[3] + 1 if parent._overlay is not None else 1
            if depth <= _MAX_OVERLAY_DEPTH:
                overlay = (parent, added or {}, removed, depth)
        object.__setattr__(corpus, "_overlay", overlay)
        object.__setattr__(corpus, "_fingerprint", [])
        object.__setattr__(corpus, "_origin", chunks)
        object.__setattr__(corpus, "_pending", pending)
        object.__setattr__(corpus, "_permuted", None)
        return corpus

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks, in corpus order (a derived corpus builds its tuple on the first read)."""
        chunks = self._chunks
        return self._origin_chunks() if chunks is None else chunks

    @chunks.setter
    def chunks(self, value: tuple[Chunk, ...]) -> None:
        # Reached only through object.__setattr__ (attrs' frozen __setattr__ refuses plain assignment): an edit
        # made behind the frozen class's back, which restore_if_changed undoes.
        self._origin_chunks()
        object.__setattr__(self, "_chunks", value)

    def _origin_chunks(self) -> tuple[Chunk, ...]:
        """The corpus's own chunk tuple, built from the parent and published once (thread-safe)."""
        origin = self._origin
        if origin is not None:
            return origin
        # Another thread may publish the tuple between the two reads: it sets `_origin` before clearing `_pending`,
        # so a cleared `_pending` means the tuple is there to read under the lock.
        pending = self._pending
        built = _build(pending[0], pending[1]) if pending is not None else None
        with _BUILD_LOCK:
            if self._origin is None:
                assert built is not None
                # `_chunks` first: once `_origin` is set, a `_chunks` that is not it is an edit (restore_if_changed).
                object.__setattr__(self, "_chunks", built)
                object.__setattr__(self, "_origin", built)
                object.__setattr__(self, "_pending", None)  # the parent is no longer needed to build it
        assert self._origin is not None
        return self._origin

    def restore_if_changed(self) -> bool:
        """Undo a replacement of `chunks` made behind the frozen class's back; True when there was one.

        A Corpus is frozen, but `object.__setattr__` still swaps its chunk tuple. The guard around user code
        calls this after every call: the edit becomes an error naming the retriever, and the corpus is whole
        again for every later call, unit and retriever.
        """
        origin = self._origin  # read first: None while the tuple is unbuilt, or being published by another thread
        if origin is None or self._chunks is origin:
            return False
        object.__setattr__(self, "_chunks", origin)
        return True

    def _positions(self) -> dict[str, int]:
        if not self._index:
            # Of the corpus's own chunks: built while user code has swapped them, it would outlive the edit.
            self._index.append({chunk.id: position for position, chunk in enumerate(self._origin_chunks())})
        return self._index[0]

    def get(self, chunk_id: str) -> Chunk | None:
        """The chunk with `chunk_id`, or None."""
        if not self._index and self._overlay is not None:
            parent, added, removed, _ = self._overlay
            if chunk_id in added:
                return added[chunk_id]
            return None if chunk_id in removed else parent.get(chunk_id)
        position = self._positions().get(chunk_id)
        if position is None:
            return None
        # A frozen corpus can still be edited with object.__setattr__; its index then points past or beside its
        # chunks. Say so instead of failing with an IndexError (or worse, answering with another chunk).
        if position >= len(self.chunks) or self.chunks[position].id != chunk_id:
            raise CorpusChanged(
                f"a corpus whose chunks no longer match its index (chunk {chunk_id!r}); it was edited in place"
            )
        return self.chunks[position]

    def missing(self, ids: Iterable[str]) -> set[str]:
        """The ids among `ids` that this corpus does not hold, by set algebra: O(len(ids)), through the delta
        bookkeeping of a derived corpus (no index of every id is built for it), for checking whole responses."""
        # A set is read, never changed: a copy only where an overlay's ids meet it (a 100k-id response costs a
        # copy per overlay otherwise).
        wanted = ids if isinstance(ids, (set, frozenset)) else set(ids)
        corpus = self
        absent: set[str] = set()
        while not corpus._index and corpus._overlay is not None and wanted:
            parent, added, removed, _ = corpus._overlay
            if not wanted.isdisjoint(added):
                wanted = wanted.difference(added)
            gone = wanted & removed
            if gone:
                absent |= gone
                wanted = wanted - gone
            corpus = parent
        if len(wanted) * 4 < len(corpus):
            return absent | wanted.difference(corpus._positions())
        # A response of a good part of the corpus (depth asks k = corpus + 1): checked against a set of every id,
        # built once per corpus (a pass like one such check): a set's lookups cost a quarter of a dict's at 100k ids.
        return absent | (wanted - _id_set(corpus))

    def __len__(self) -> int:
        chunks = self._chunks
        if chunks is not None:
            return len(chunks)
        pending = self._pending
        return pending[2] if pending is not None else len(self.chunks)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks)

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.get(chunk_id) is not None

    def __getitem__(self, chunk_id: str) -> Chunk:
        chunk = self.get(chunk_id)
        if chunk is None:
            raise KeyError(chunk_id)
        return chunk

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Corpus):
            # Lengths first: tuples compare item by item even when their lengths differ.
            if self is other:
                return True
            if len(self) != len(other):
                return False
            known = self._equal_by_recipes(other)
            if known is None:
                known = other._equal_by_recipes(self)
            return self.chunks == other.chunks if known is None else known
        return NotImplemented

    def _equal_by_recipes(self, other: Corpus) -> bool | None:
        """Whether this corpus, of as many chunks as `other`, holds the same chunks, read from the recipes of the
        unbuilt corpora leading from `other` to it; None when they cannot tell (then compare the chunks)."""
        if other._chunks is not other._origin:
            return None  # user code swapped `other`'s chunks (object.__setattr__): the recipes describe its own ones
        steps = []
        current = self
        while current is not other:
            pending = current._pending
            if pending is None:
                return None
            steps.append(pending[1])
            current = pending[0]
        base = other._chunks
        if base is not None and all(step[0] == "replace" for step in steps):
            # In-place replacements keep every position: equal when each replaced position holds an equal chunk.
            final = {step[1]: step[2] for step in reversed(steps)}
            return all(base[position] == chunk for position, chunk in final.items())
        for step in steps:
            # An id this corpus gained that `other` lacks, or lost that `other` holds: not the same chunks.
            if step[0] == "insert" and any(c.id in self and c.id not in other for c in step[2]):
                return False
            if step[0] == "drop" and any(i not in self and i in other for i in step[1]):
                return False
        return None

    def __hash__(self) -> int:
        return hash(self.chunks)

    def __repr__(self) -> str:
        shown = ", ".join(repr(c.id) for c in self.chunks[:5])
        more = f", ... {len(self.chunks) - 5} more" if len(self.chunks) > 5 else ""
        return f"Corpus([{shown}{more}])"

    def position(self, chunk_id: str) -> int:
        """The 0-based position of `chunk_id` in corpus order."""
        return self._positions()[chunk_id]

    def positions_of(self, ids: Iterable[str]) -> list[int]:
        """The 0-based position of each of `ids` in corpus order, -1 for an id this corpus does not hold (at C
        speed: relations read whole 100k-hit rankings)."""
        return list(map(self._positions().get, ids, itertools.repeat(-1)))

    @property
    def ids(self) -> tuple[str, ...]:
        """Chunk ids in corpus order."""
        return tuple(c.id for c in self.chunks)

    def id_keys(self) -> KeysView[str]:
        """The chunk ids as a set-like view: set algebra between two big corpora without building tuples."""
        return self._positions().keys()

    @property
    def fingerprint(self) -> str:
        """A stable SHA-256 hex digest of every chunk's fields, in order (changes with any id, text or order)."""
        if not self._fingerprint:
            digest = hashlib.sha256()
            for chunk in self._origin_chunks():  # the corpus's own chunks, as the index (remembered for its life)
                record = json.dumps(chunk.to_dict(), sort_keys=True, ensure_ascii=True, default=str)
                # Length-prefix each record so that no two different corpora hash the same byte stream.
                digest.update(f"{len(record)}:".encode())
                digest.update(record.encode())
            self._fingerprint.append(digest.hexdigest())
        return self._fingerprint[0]

    def is_stale(self, chunk: Chunk) -> bool:
        """True when `chunk` is superseded by a successor that is present in this corpus."""
        return chunk.superseded_by is not None and chunk.superseded_by in self

    def without(self, ids: Iterable[str]) -> Corpus:
        """A corpus with the chunks `ids` removed (unknown ids are an error)."""
        drop = frozenset(ids)
        unknown = [i for i in drop if i not in self]
        if unknown:
            raise InputError(f"expected ids present in the corpus, got unknown ids {sorted(unknown)}", field="id")
        if not drop:
            return self
        return Corpus._derived(None, self, removed=drop, recipe=("drop", drop), length=len(self) - len(drop))

    def with_chunks(self, chunks: Iterable[Chunk], *, at: int | None = None) -> Corpus:
        """A corpus with `chunks` inserted at position `at` (default: appended); duplicate ids are an error."""
        new = _to_chunk_tuple(chunks)
        added: dict[str, Chunk] = {}
        for chunk in new:
            if chunk.id in added or chunk.id in self:
                raise InputError(
                    f"expected unique chunk ids, got id={chunk.id!r} already in the corpus", field="id", value=chunk.id
                )
            added[chunk.id] = chunk
        return Corpus._derived(None, self, added=added, recipe=("insert", at, new), length=len(self) + len(new))

    def replaced(self, chunk: Chunk) -> Corpus:
        """A corpus where the chunk with `chunk.id` is replaced by `chunk`, keeping its position."""
        if not isinstance(chunk, Chunk):
            raise InputError(f"expected a Chunk, got {describe(chunk)}", field="chunks", value=chunk)
        position = self.position(chunk.id)
        return Corpus._derived(
            None, self, added={chunk.id: chunk}, recipe=("replace", position, chunk), length=len(self)
        )

    def reordered(self, order: Sequence[int]) -> Corpus:
        """A corpus whose chunks are `self.chunks[i] for i in order` (a permutation)."""
        # A permutation: as many integer positions as chunks, each one once (marked in an array: 100k chunks are
        # asked). Read as they are, not converted: "1" or 1.5 is not a position.
        chunks = self.chunks
        size = len(chunks)
        positions = np.asarray(order) if len(order) == size else None
        integers = positions is not None and positions.ndim == 1 and (positions.dtype.kind in "iu" or not size)
        seen = np.zeros(size, bool)
        if integers and size and positions.min() >= 0 and positions.max() < size:
            seen[positions] = True
        if not integers or not seen.all():
            raise InputError(f"expected a permutation of 0..{size - 1}, got {list(order)[:10]}")
        # itemgetter of many positions builds the tuple at C speed (one position gives the item alone).
        corpus = Corpus._derived(operator.itemgetter(*order)(chunks) if size > 1 else tuple(chunks))
        object.__setattr__(corpus, "_permuted", self if self._permuted is None else self._permuted)
        return corpus

    def is_permutation_of(self, other: Corpus) -> bool:
        """Whether this corpus is known, without reading its chunks, to hold the very chunk objects of `other` in
        some order: True when it was built by `other.reordered(...)` (or by reordering such a corpus); False
        when that is not known (compare the chunks then)."""
        return self._permuted is other

    def restricted(self, ids: Iterable[str]) -> Corpus:
        """A corpus keeping only `ids`, in corpus order (unknown ids are ignored)."""
        keep = set(ids)
        return Corpus._derived(tuple(c for c in self.chunks if c.id in keep))


Span = tuple[int, int]
"""A half-open character range `[start, end)` of a chunk's text."""


def _span_of(value: Any, field: str) -> Span:
    """`value` as a span: a list or tuple of two integers `[start, end]` with 0 <= start < end."""
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Sequence)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    ):
        raise InputError(
            f"expected a span [start, end] of two integer character offsets, got span={describe(value)}",
            field=field,
            value=value,
        )
    start, end = value
    if start < 0 or start >= end:
        raise InputError(
            f"expected a span [start, end] with 0 <= start < end (half-open character offsets), got "
            f"span=[{start}, {end}]" + ("; write the smaller offset first" if start > end else ""),
            field=field,
            value=list(value),
        )
    return (start, end)


def _evidence_member(member: Any, number: int, position: int) -> tuple[str, Span | None]:
    """One entry of an evidence group: a chunk id, or `{"chunk": id, "span": [start, end]}`."""
    where = f"evidence[{number}][{position}]"
    if isinstance(member, Mapping):
        unknown = sorted(str(key) for key in member if key not in ("chunk", "span"))
        if unknown or "chunk" not in member:
            raise InputError(
                f"expected an evidence entry {{\"chunk\": id, \"span\": [start, end]}}, got "
                + (f"unknown key(s) {unknown}" if unknown else "no \"chunk\" key"),
                field=where,
                value=dict(member),
            )
        chunk_id = member["chunk"]
        if not isinstance(chunk_id, str) or not chunk_id:
            raise InputError(
                f"expected a chunk id (non-empty string), got chunk={describe(chunk_id)}",
                field=f"{where}.chunk",
                value=chunk_id,
            )
        span = member.get("span")
        return chunk_id, None if span is None else _span_of(span, f"{where}.span")
    if not isinstance(member, str) or not member:
        raise InputError(
            f"expected chunk ids (non-empty strings) or {{\"chunk\": id, \"span\": [start, end]}} in evidence "
            f"group {number}, got {describe(member)}",
            field=f"evidence[{number}]",
            value=member,
        )
    return member, None


def _parse_evidence(value: Any) -> tuple[tuple[tuple[str, ...], ...], dict[str, Span]]:
    """Evidence groups as chunk ids, and the supporting span of each chunk cited with one."""
    if value is None:
        return (), {}
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(
            f"expected a list of evidence groups (lists of chunk ids), got evidence={describe(value)}",
            field="evidence",
            value=value,
        )
    value = list(value)
    if len(value) > 1 and all(isinstance(group, (str, Mapping)) for group in value):
        # ["a", "b"] reads either as "a and b are both required" or as "either one is enough"; guessing wrong
        # changes every recall figure without a word, so the two spellings must be explicit.
        raise InputError(
            f"expected evidence groups (lists of chunk ids), got a flat list of ids {value[:4]!r}; write "
            f"{[[member] for member in value[:3]]!r} when every id is required, or {[value[:3]]!r} when any one "
            "of them is enough",
            field="evidence",
            value=value,
        )
    groups = []
    spans: dict[str, Span] = {}
    plain: set[str] = set()
    for number, group in enumerate(value):
        if isinstance(group, (str, Mapping)):
            # A bare id (or one span entry) is the common shorthand for a one-member group.
            group = (group,)
        if not isinstance(group, Iterable):
            raise InputError(
                f"expected evidence group {number} to be a list of chunk ids, got {describe(group)}",
                field=f"evidence[{number}]",
                value=group,
            )
        members: list[str] = []
        for position, entry in enumerate(group):
            member, span = _evidence_member(entry, number, position)
            # One supporting span per chunk and case: final-context recall asks whether *the* span survived.
            if (span is None and member in spans) or (span is not None and (member in plain or spans.get(member, span) != span)):
                raise InputError(
                    f"expected chunk {member!r} to carry the same span wherever the case cites it, got "
                    f"{list(spans[member]) if member in spans else 'no span'} and "
                    f"{list(span) if span is not None else 'no span'}",
                    field=f"evidence[{number}][{position}]",
                    value=member,
                )
            if span is None:
                plain.add(member)
            else:
                spans[member] = span
            if member not in members:
                members.append(member)
        if not members:
            raise InputError(
                f"expected at least one chunk id in evidence group {number}, got an empty group",
                field=f"evidence[{number}]",
                value=[],
            )
        groups.append(tuple(members))
    return tuple(groups), spans


def _to_evidence(value: Any) -> tuple[tuple[str, ...], ...]:
    groups, spans = _parse_evidence(value)
    if spans:
        raise InputError(
            "expected chunk ids in Case.evidence here; spans go through Case(...) or its `spans` field",
            field="evidence",
        )
    return groups


def _to_spans(value: Any) -> FrozenMap:
    if value is None:
        return FrozenMap()
    if isinstance(value, FrozenMap) and all(isinstance(span, tuple) for span in value.values()):
        return value
    if not isinstance(value, Mapping):
        raise InputError(f"expected a mapping chunk id -> [start, end], got spans={describe(value)}", field="spans", value=value)
    spans: dict[str, Span] = {}
    for chunk_id, span in value.items():
        if not isinstance(chunk_id, str) or not chunk_id:
            raise InputError(f"expected chunk ids as span keys, got {describe(chunk_id)}", field="spans", value=chunk_id)
        spans[chunk_id] = _span_of(span, f"spans[{chunk_id!r}]")
    return FrozenMap(spans)


def _optional_bool(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise InputError(
            f"expected true, false or null, got {attribute.name}={describe(value)}", field=attribute.name, value=value
        )


@attrs.frozen(init=False)
class Case:
    """One query with its required evidence groups; any one id of a group satisfies that group.

    An evidence entry is a chunk id or `{"chunk": id, "span": [start, end]}`: the half-open character range of
    the chunk's text that supports the case. `evidence` holds the ids, `spans` maps each chunk cited with a
    span to it (one span per chunk and case).
    """

    id: str = attrs.field(validator=_nonempty_str)
    query: str = attrs.field(validator=_str)
    tenant: str | None = attrs.field(default=None, validator=_optional_nonempty_str)
    evidence: tuple[tuple[str, ...], ...] = attrs.field(factory=tuple, converter=_to_evidence)
    claims: tuple[str, ...] = attrs.field(factory=tuple, converter=_to_str_tuple("claims"))
    answerable: bool | None = attrs.field(default=None, validator=_optional_bool)
    tags: tuple[str, ...] = attrs.field(factory=tuple, converter=_to_str_tuple("tags"))
    spans: FrozenMap = attrs.field(factory=FrozenMap, converter=_to_spans)

    def __init__(
        self,
        id: str,
        query: str,
        tenant: str | None = None,
        evidence: Any = (),
        claims: Any = (),
        answerable: bool | None = None,
        tags: Any = (),
        spans: Mapping[str, Any] | None = None,
    ) -> None:
        groups, cited = _parse_evidence(evidence)
        given = dict(_to_spans(spans))
        for chunk_id, span in cited.items():
            if given.get(chunk_id, span) != span:
                raise InputError(
                    f"expected one span for chunk {chunk_id!r}, got {list(span)} in evidence and "
                    f"{list(given[chunk_id])} in spans",
                    field="spans",
                    value=chunk_id,
                )
            given[chunk_id] = span
        self.__attrs_init__(id, query, tenant, groups, claims, answerable, tags, given)  # type: ignore[attr-defined]

    def __attrs_post_init__(self) -> None:
        cited = set(self.gold_ids)
        for chunk_id in self.spans:
            if chunk_id not in cited:
                raise InputError(
                    f"expected spans only for chunks the evidence cites, got a span for {chunk_id!r} in case "
                    f"{self.id!r}",
                    field="spans",
                    value=chunk_id,
                )
        if self.answerable is False and self.evidence:
            raise InputError(
                f"expected no evidence for a case marked answerable=false, got {len(self.evidence)} evidence "
                f"group(s) in case {self.id!r}; drop the evidence or the answerable flag",
                field="answerable",
                value=False,
            )

    @property
    def is_answerable(self) -> bool:
        """Whether the case expects evidence: `answerable` when given, else whether evidence is non-empty."""
        return bool(self.evidence) if self.answerable is None else self.answerable

    @property
    def gold_ids(self) -> tuple[str, ...]:
        """Every chunk id named by any evidence group, first occurrence order, each once."""
        seen: dict[str, None] = {}
        for group in self.evidence:
            for member in group:
                seen.setdefault(member, None)
        return tuple(seen)

    def _entry(self, member: str) -> str | dict[str, Any]:
        span = self.spans.get(member)
        return member if span is None else {"chunk": member, "span": list(span)}

    def to_dict(self) -> dict[str, Any]:
        """The native JSON form of this case (as written to cases.jsonl); a span entry is `{"chunk", "span"}`."""
        return {
            "id": self.id,
            "query": self.query,
            "tenant": self.tenant,
            "evidence": [[self._entry(member) for member in group] for group in self.evidence],
            "claims": list(self.claims),
            "answerable": self.answerable,
            "tags": list(self.tags),
        }


def validate_cases(corpus: Corpus, cases: Iterable[Case], *, file: str | None = None) -> None:
    """Raise InputError naming the case and id when a case cites a chunk id that is not in `corpus`.

    Line numbers are 1-based positions in `cases` (matching cases.jsonl lines when read from a file).
    """
    for line, case in enumerate(cases, start=1):
        check_evidence(case, corpus, file=file, line=line)


def check_evidence(
    case: Case, corpus: Corpus, *, file: str | None = None, line: int | None = None, field: str = "", all_cited: bool = True
) -> None:
    """Raise InputError (file, line, field) when `case` cites a chunk `corpus` lacks, or a span past its text.

    `all_cited=False` checks only the spans of cited chunks `corpus` holds (a replay's minimal corpus keeps only
    what its violation needs); `field` prefixes the reported field.
    """
    for number, group in enumerate(case.evidence):
        for position, member in enumerate(group):
            chunk = corpus.get(member)
            if chunk is None and not all_cited:
                continue
            if chunk is None:
                raise InputError(
                    f"case {case.id!r} cites chunk id {member!r}, which is not in the corpus"
                    " (check the id's spelling or add the chunk to corpus.jsonl)",
                    file=file,
                    line=line,
                    field=f"{field}evidence[{number}]",
                    value=member,
                )
            span = case.spans.get(member)
            if span is not None and span[1] > len(chunk.text):
                raise InputError(
                    f"expected the span of chunk {member!r} inside its text (0..{len(chunk.text)} characters), got "
                    f"span=[{span[0]}, {span[1]}] in case {case.id!r}",
                    file=file,
                    line=line,
                    field=f"{field}evidence[{number}][{position}].span",
                    value=list(span),
                )


def _positive_int(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(
            f"expected a positive integer, got {attribute.name}={describe(value)}", field=attribute.name, value=value
        )


def _to_where(value: Any) -> Expr | None:
    if value is None or isinstance(value, (Compare, And, Or, Not)):
        return value
    # The JSON form (cases, replay files, `Filters(**filters.to_dict())`); anything else is refused by the same
    # reader, whose errors name the place in the expression and what was expected there.
    return where_from_json(dict(value) if isinstance(value, Mapping) else value, field="where")


@attrs.frozen
class Filters:
    """Retrieval filters: tenant visibility, current-only (no superseded chunks), metadata equality and a filter
    expression over metadata (`where`, see `ragmorph.where`)."""

    tenant: str | None = attrs.field(default=None, validator=_optional_nonempty_str)
    current_only: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    metadata: FrozenMap = attrs.field(factory=_no_metadata, converter=_to_frozen_map)
    where: Expr | None = attrs.field(default=None, converter=_to_where)

    @property
    def is_empty(self) -> bool:
        """True when these filters exclude nothing."""
        return self.tenant is None and not self.current_only and not self.metadata and self.where is None

    def allows(self, chunk: Chunk, *, missing: MissingKey = MissingKey.NEGATION_MATCHES) -> bool:
        """True when `chunk` passes every filter.

        A tenant filter admits the tenant's own chunks and shared ones (tenant None); `current_only` drops
        any chunk with `superseded_by` set, whether or not its successor is present; a metadata constraint admits
        a chunk holding the key with a value equal by JSON type (`json_equal`: true, 1 and 1.0 differ); `where`
        admits what `ragmorph.where.admits` says under the `missing`-key semantics (the default: a negation
        admits a chunk lacking the key).
        """
        if self.tenant is not None and not chunk.visible_to(self.tenant):
            return False
        if self.current_only and chunk.superseded_by is not None:
            return False
        for key, expected in self.metadata.items():
            if key not in chunk.metadata or not json_equal(chunk.metadata[key], expected):
                return False
        return self.where is None or admits(self.where, chunk.metadata, missing=missing)

    def to_dict(self) -> dict[str, Any]:
        """JSON form of these filters; `where` appears only when set, so filters without one read as before."""
        form: dict[str, Any] = {"tenant": self.tenant, "current_only": self.current_only, "metadata": dict(self.metadata)}
        if self.where is not None:
            form["where"] = where_to_json(self.where)
        return form


@attrs.frozen
class Params:
    """Retrieval parameters: the cutoff k and the filters."""

    k: int = attrs.field(validator=_positive_int)
    filters: Filters = attrs.field(factory=Filters, validator=attrs.validators.instance_of(Filters))


def _finite_or_none(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number or None, got score={describe(value)}", field="score", value=value)


def _optional_span(value: Any) -> Span | None:
    return None if value is None else _span_of(value, "kept")


@attrs.frozen
class Hit:
    """One returned chunk: its id, the retriever's score (None when it gives none) and optional text.

    `kept` is the character range `[start, end)` of the chunk's text that reached the final context, for a stage
    that packs text (`ContextPacker`); None means the whole text (nothing was cut).
    """

    id: str = attrs.field(validator=_nonempty_str)
    score: float | None = attrs.field(default=None, validator=_finite_or_none)
    text: str | None = attrs.field(default=None)
    kept: Span | None = attrs.field(default=None, converter=_optional_span, kw_only=True)

    def keeps(self, span: Span | None, *, whole: bool = True) -> bool:
        """Whether the final context holds `span` of this chunk's text: all of it (`whole`), else any character.

        A hit without a `kept` range holds its whole text, so every span (and None, no span) survives.
        """
        if span is None or self.kept is None:
            return True
        start, end = self.kept
        if whole:
            return start <= span[0] and span[1] <= end
        return start < span[1] and span[0] < end

    @property
    def has_finite_score(self) -> bool:
        """True when the score is a finite number."""
        return self.score is not None and math.isfinite(self.score)


_HIT_TYPE = frozenset({Hit})


def _to_hit_tuple(value: Iterable[Hit]) -> tuple[Hit, ...]:
    hits = tuple(value)
    if set(map(type, hits)) <= _HIT_TYPE:
        return hits  # every item a Hit, checked at C speed (a response may hold the whole corpus)
    for position, hit in enumerate(hits):
        if not isinstance(hit, Hit):
            raise InputError(f"expected Hit objects, got {describe(hit)} at rank {position + 1}", field="hits")
    return hits


@attrs.frozen
class Ranking:
    """The hits a retriever returned, best first, exactly as returned (never re-sorted)."""

    hits: tuple[Hit, ...] = attrs.field(factory=tuple, converter=_to_hit_tuple)

    @classmethod
    def of(cls, ids: Iterable[str]) -> Ranking:
        """A ranking of bare ids with no scores (handy in tests and evaluator mode)."""
        return cls(Hit(i) for i in ids)

    @property
    def ids(self) -> tuple[str, ...]:
        """Returned ids in rank order (repeats kept)."""
        return tuple(h.id for h in self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def top(self, k: int) -> Ranking:
        """The first `k` hits."""
        return Ranking(self.hits[:k])


@attrs.frozen
class World:
    """What a retriever is tested on: a corpus, one query case, and the retrieval parameters."""

    corpus: Corpus = attrs.field(validator=attrs.validators.instance_of(Corpus))
    case: Case = attrs.field(validator=attrs.validators.instance_of(Case))
    params: Params = attrs.field(validator=attrs.validators.instance_of(Params))
