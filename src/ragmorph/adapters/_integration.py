"""Helpers shared by the third-party integrations: chunk fields as flat metadata, filter modes, over-fetching.

Chunk fields are stored in a library's document metadata under these keys (the id key is configurable):

- ``"id"``: the chunk id; ``"source"``, ``"effective_from"`` (ISO date): ``""`` when unset;
- ``"tenant"``: the owning tenant, ``""`` for a shared chunk (chunk tenants are never empty, so ``""`` is
  unambiguous and, unlike ``None``, storable in Chroma and filterable in LlamaIndex);
- ``"superseded_by"``: the successor's id, ``""`` for a current chunk;
- ``"version"``: the version number, left out when unset;
- ``"meta.<key>"``: each user metadata value; strings and numbers as they are, anything else (booleans, null,
  lists, objects) as ``"json:"`` + canonical JSON text (a string that itself starts with ``"json:"`` is stored
  that way too), so the encoding is one-to-one and equality filters compare the same encoding on both sides.
- range companions (`range_companions`), for the stores that translate a filter expression (`ragmorph.where`):
  ``"num.<key>"`` holds a number (integer or float, never a boolean) as a number, because ``"meta.<key>"`` holds
  a float as text, which no store's range operator compares; ``"date.<key>"`` holds an ISO date string
  (``YYYY-MM-DD``) as its proleptic Gregorian ordinal, because Chroma and Qdrant compare only numbers in ranges.

Filters go to the library's own filter mechanism (a metadata filter, a ``where`` clause, a SQL ``WHERE``), as
the user's application passes them: a leak or a short list from the library is then the library's, and
ragmorph's relations see it. Only when the user asks for it (``post_filter=True``), or for a library that
cannot filter at all, does ragmorph filter instead: it asks for more hits than k and drops the filtered-out
ones (`fetch_filtered`), and the adapter declares ``ragmorph_filtered_by = "ragmorph"`` so that the relations
judging filtering report that they do not apply instead of passing on ragmorph's own filter.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import InvalidResponse, UsageError, describe
from ..model import Chunk, Corpus, Filters, json_equal
from ..where import admits, iso_date
from ._protocol import excerpt

__all__ = [
    "CHUNK_FIELD_KEYS",
    "CURRENT",
    "DATE_PREFIX",
    "NUMBER_PREFIX",
    "SHARED",
    "USER_METADATA_PREFIX",
    "chunk_metadata",
    "check_id_key",
    "decode_value",
    "encode_value",
    "escape_key",
    "fetch_filtered",
    "fetch_identified",
    "filter_predicate",
    "filtered_by",
    "no_filters_error",
    "fusion_filtering",
    "metadata_allows",
    "positive_depth",
    "range_bound",
    "range_companions",
    "require_chunk_id",
    "with_setting",
]

SHARED = ""
CURRENT = ""
USER_METADATA_PREFIX = "meta."
NUMBER_PREFIX = "num."
DATE_PREFIX = "date."
CHUNK_FIELD_KEYS: tuple[str, ...] = ("source", "tenant", "version", "effective_from", "superseded_by")

# Chroma stores 64-bit integers; larger ones are kept exact as JSON text instead of overflowing.
_INT64 = 2**63

# Over-fetch factor for the first filtered request, and the growth factor when too few hits survive.
_FIRST_FETCH = 3
_GROWTH = 4
_MAX_FETCH = 1_000_000

T = TypeVar("T")

# Turns ragmorph's Filters into the library's filter value (a MetadataFilters, a where dict, a callable...).
FilterMapper = Callable[[Filters], Any]


def filtered_by(post_filter: Any, *, native: bool) -> str | None:
    """Who filters for an adapter: ``"ragmorph"`` when `post_filter` asks for it, ``"retriever"`` for a native
    filter, None when the adapter cannot filter at all (calls with filters are then refused)."""
    if not isinstance(post_filter, bool):
        raise UsageError(f"expected post_filter to be True or False, got post_filter={describe(post_filter)}")
    if post_filter:
        return "ragmorph"
    return "retriever" if native else None


def no_filters_error(adapter: str, filters: Filters, hint: str) -> UsageError:
    """The error for a call with filters to an adapter that has no way to apply them."""
    return UsageError(
        f"expected no filters for {adapter}, which has no native filter configured, got filters={filters!r}; "
        f"{hint}, or pass post_filter=True to let ragmorph filter (filter relations then do not apply)"
    )


def check_id_key(id_key: Any) -> str:
    """Validate the metadata key that carries chunk ids (it may not shadow another chunk field)."""
    if not isinstance(id_key, str) or not id_key:
        raise UsageError(f"expected a non-empty string id_key, got id_key={describe(id_key)}")
    if id_key in CHUNK_FIELD_KEYS or id_key.startswith((USER_METADATA_PREFIX, NUMBER_PREFIX, DATE_PREFIX)):
        raise UsageError(
            f"expected an id_key that does not collide with the chunk-field keys {list(CHUNK_FIELD_KEYS)} "
            f"or the {USER_METADATA_PREFIX!r}, {NUMBER_PREFIX!r} and {DATE_PREFIX!r} prefixes, got id_key={id_key!r}; "
            "use e.g. 'id' or 'chunk_id'"
        )
    return id_key


# Marks JSON text in an encoded value. Without it the string "true" and the boolean True would both be stored as
# "true", and an equality filter on one would admit documents holding the other.
JSON_MARKER = "json:"


def encode_value(value: Any) -> str | int:
    """A user metadata value as a scalar every vector store accepts, one-to-one: strings as they are (unless they
    start with JSON_MARKER), int64 integers as they are, anything else (floats included) as JSON_MARKER +
    canonical JSON text."""
    if isinstance(value, str) and not value.startswith(JSON_MARKER):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64:
        return value
    # Floats are text because stores compare numbers across types: Chroma, Qdrant and Haystack match 1.0 against
    # the integer 1, and chromadb 1.5 matches `$eq: 0.5` against the integer 0. JSON holds them apart.
    return JSON_MARKER + json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def decode_value(stored: Any) -> Any:
    """The user metadata value `encode_value` stored (the inverse of `encode_value`)."""
    if isinstance(stored, str) and stored.startswith(JSON_MARKER):
        return json.loads(stored[len(JSON_MARKER) :])
    return stored


# The largest integer every float between it and its negation holds exactly.
_EXACT_FLOAT_INT = 2**53


def range_companions(chunk: Chunk) -> dict[str, dict[str, int | float]]:
    """The range companions of `chunk`'s metadata: ``{"num": {key: number}, "date": {key: ordinal}}``.

    Numbers are stored as floats: chromadb 1.5 compares a float bound with an integer by truncating the bound
    (`$gte: 1.5` admits 1). An integer a float cannot hold exactly (beyond 2**53) has no companion, so a range
    never matches it.
    """
    numbers: dict[str, int | float] = {}
    dates: dict[str, int | float] = {}
    for key, value in chunk.metadata.items():
        if type(value) is float or (type(value) is int and -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT):
            numbers[key] = float(value)
        date = iso_date(value)
        if date is not None:
            dates[key] = date.toordinal()
    return {"num": numbers, "date": dates}


def range_bound(field: str, bound: Any) -> tuple[str, int | float]:
    """The companion key prefix and the value a range bound compares with (`range_companions`)."""
    if isinstance(bound, _dt.date):
        return DATE_PREFIX, bound.toordinal()
    return NUMBER_PREFIX, bound


def escape_key(key: str, special: str) -> str:
    """`key` with ``%`` and each character of `special` percent-encoded (reversible, so keys never collide).

    For libraries whose filter paths give some characters a meaning: Haystack splits a field at ``.``,
    Qdrant ends a quoted path segment at ``"``.
    """
    escaped = key.replace("%", "%25")
    for character in special:
        escaped = escaped.replace(character, f"%{ord(character):02X}")
    return escaped


def chunk_metadata(chunk: Chunk, *, id_key: str = "id") -> dict[str, str | int]:
    """The flat, None-free metadata dict that carries `chunk`'s fields into a library document."""
    fields: dict[str, str | int] = {
        id_key: chunk.id,
        "source": chunk.source or "",
        "tenant": chunk.tenant or SHARED,
        "effective_from": chunk.effective_from.isoformat() if chunk.effective_from else "",
        "superseded_by": chunk.superseded_by or CURRENT,
    }
    if chunk.version is not None:
        fields["version"] = chunk.version
    for key, value in chunk.metadata.items():
        fields[USER_METADATA_PREFIX + key] = encode_value(value)
    return fields


def metadata_allows(filters: Filters, metadata: Mapping[str, Any]) -> bool:
    """Whether a document with this metadata passes `filters`, reading the encoding described above.

    Documents built outside ragmorph work too: a missing, empty or None tenant means shared, a missing,
    empty or None `superseded_by` means current, and a metadata constraint reads ``"meta.<key>"`` first and
    then the plain ``"<key>"``. A `where` expression is judged by the reference semantics (a negation admits a
    document lacking the key) over the decoded ``"meta.<key>"`` values, else the plain keys other than the chunk
    fields.
    """
    tenant = metadata.get("tenant") or None
    if filters.tenant is not None and tenant is not None and tenant != filters.tenant:
        return False
    if filters.current_only and metadata.get("superseded_by"):
        return False
    for key, expected in filters.metadata.items():
        encoded_key = USER_METADATA_PREFIX + key
        if encoded_key in metadata:
            if not json_equal(metadata[encoded_key], encode_value(expected)):
                return False
        elif key not in metadata or not json_equal(metadata[key], expected):
            return False
    if filters.where is not None:
        # The user metadata the document carries, decoded: "meta.<key>" where present, else plain keys (never the
        # chunk fields ragmorph stores beside them).
        user = {k: v for k, v in metadata.items() if not k.startswith(USER_METADATA_PREFIX) and k not in CHUNK_FIELD_KEYS}
        user.update(
            (k[len(USER_METADATA_PREFIX) :], decode_value(v)) for k, v in metadata.items() if k.startswith(USER_METADATA_PREFIX)
        )
        return admits(filters.where, user)
    return True


def filter_predicate(
    filters: Filters | None, corpus: Corpus | Mapping[str, Chunk] | None
) -> Callable[[str, Mapping[str, Any]], bool] | None:
    """A `(chunk_id, metadata) -> keep` test for `filters`, or None when they exclude nothing.

    With a corpus (or an id -> Chunk mapping) the chunk's own fields decide (`Filters.allows`); an id missing
    from the corpus is kept so that response validation reports it instead of the filter hiding it. Without a corpus the document
    metadata decides (`metadata_allows`).
    """
    if filters is None or filters.is_empty:
        return None
    if corpus is not None:

        def allowed_in_corpus(chunk_id: str, metadata: Mapping[str, Any]) -> bool:
            chunk = corpus.get(chunk_id)
            return chunk is None or filters.allows(chunk)

        return allowed_in_corpus
    return lambda chunk_id, metadata: metadata_allows(filters, metadata)


def fetch_filtered(
    fetch: Callable[[int], Sequence[T]],
    *,
    k: int,
    keep: Callable[[T], bool] | None,
) -> list[T]:
    """Fetch k results, or over-fetch and drop the ones `keep` rejects until k survive or the source runs out.

    `fetch(n)` returns the library's best n results (fewer when it has no more). The source counts as
    exhausted when it returns fewer than asked or no more than the previous, smaller request did.
    """
    if keep is None:
        return list(fetch(k))
    wanted = k * _FIRST_FETCH
    previous = -1
    while True:
        got = list(fetch(wanted))
        kept = [item for item in got if keep(item)]
        if len(kept) >= k or len(got) < wanted or len(got) <= previous or wanted >= _MAX_FETCH:
            return kept[:k]
        previous = len(got)
        wanted *= _GROWTH


def require_chunk_id(
    metadata: Mapping[str, Any], fallback: Any, *, id_key: str, what: str, query: str, item: Any
) -> str:
    """The chunk id a library item carries in ``metadata[id_key]`` (else `fallback`, its own id), or raise.

    `what` names the item in the message (e.g. "LangChain Document"); the excerpt shows the item itself.
    """
    chunk_id = metadata.get(id_key) or fallback
    if not isinstance(chunk_id, str) or not chunk_id:
        raise InvalidResponse(
            f"expected each {what} to carry its chunk id in metadata[{id_key!r}] or its own id, got "
            f"{describe(chunk_id)}; build them with metadata={{{id_key!r}: chunk.id}}",
            query=query,
            excerpt=excerpt(item),
        )
    return chunk_id


def fetch_identified(
    fetch: Callable[[int], Sequence[tuple[str, Mapping[str, Any], T]]],
    *,
    k: int,
    filters: Filters | None,
    corpus: Corpus | Mapping[str, Chunk] | None,
) -> list[tuple[str, Mapping[str, Any], T]]:
    """`fetch_filtered` over `(chunk_id, metadata, item)` triples, judged by `filter_predicate(filters, corpus)`."""
    keep = filter_predicate(filters, corpus)
    return fetch_filtered(fetch, k=k, keep=None if keep is None else (lambda found: keep(found[0], found[1])))


def with_setting(obj: T, path: str, value: Any) -> T:
    """A shallow copy of `obj` with the attribute `path` (or ``"attr.key"`` inside a dict attribute) set.

    The caller's object is never modified: pydantic models are copied with `model_copy`, others with
    `copy.copy`, and a dict attribute is copied before its key is set.
    """
    attribute, _, key = path.partition(".")
    if key:
        current = getattr(obj, attribute)
        if not isinstance(current, Mapping):
            raise UsageError(f"expected {attribute!r} to be a dict attribute for {path!r}, got {describe(current)}")
        new_value: Any = {**current, key: value}
    else:
        new_value = value
    model_copy = getattr(obj, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={attribute: new_value})
    duplicate = copy.copy(obj)
    setattr(duplicate, attribute, new_value)
    return duplicate


def positive_depth(depth: Any) -> int:
    """`depth`, the candidates a fusion asks of each leg, checked to be a positive integer."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"expected depth to be a positive integer (candidates per leg), got depth={depth!r}")
    return depth


def fusion_filtering(legs: Sequence[Any]) -> tuple[bool, str]:
    """(supports_filters, filtered_by) of a fusion over `legs`: filters when every leg does; filter relations
    judge it when a leg filters natively, and with none ragmorph did all the filtering."""
    native = any(leg.ragmorph_filtered_by == "retriever" for leg in legs)
    return all(leg.supports_filters for leg in legs), "retriever" if native else "ragmorph"
