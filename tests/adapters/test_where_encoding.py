"""The stored encoding of metadata for filter expressions: decoding, range companions, and `metadata_allows`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given

from ragmorph.adapters._integration import (
    chunk_metadata,
    check_id_key,
    decode_value,
    encode_value,
    metadata_allows,
    range_companions,
)
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Filters
from support.where_exprs import STORED, exprs, metadatas


@pytest.mark.parametrize("value", [*STORED, "json:x", 2**70, -(2**63), "é"])
def test_decode_value_inverts_encode_value(value: Any) -> None:
    decoded = decode_value(encode_value(value))
    assert type(decoded) is type(value) and decoded == value


def test_range_companions_hold_numbers_as_floats_and_iso_dates_as_ordinals() -> None:
    metadata = {"i": 3, "f": 2.5, "b": True, "big": 2**54 + 1, "d": "2026-01-01", "bad": "2026-02-30", "s": "x"}
    companions = range_companions(Chunk("c", "t", metadata=metadata))
    # Floats: chromadb truncates a float bound compared with an integer (test_where_stores.py finds it).
    assert companions["num"] == {"i": 3.0, "f": 2.5} and type(companions["num"]["i"]) is float
    assert companions["date"] == {"d": dt.date(2026, 1, 1).toordinal()}


@given(exprs(), metadatas())
def test_metadata_allows_reads_an_expression_over_the_stored_encoding(expr: Any, metadata: dict[str, Any]) -> None:
    chunk = Chunk("c", "t", tenant="acme", source="s", metadata=metadata)
    filters = Filters(where=expr)
    assert metadata_allows(filters, chunk_metadata(chunk)) == filters.allows(chunk)


def test_an_expression_never_reads_the_chunk_fields_stored_beside_the_metadata() -> None:
    document = {"id": "c", "tenant": "acme", "source": "hr", "lang": "en"}
    assert metadata_allows(Filters(where={"lang": "en"}), document)
    assert not metadata_allows(Filters(where={"source": "hr"}), document)


@pytest.mark.parametrize("key", ["num.x", "date.x", "meta.x"])
def test_id_key_may_not_collide_with_the_companion_prefixes(key: str) -> None:
    with pytest.raises(UsageError, match="prefixes"):
        check_id_key(key)
