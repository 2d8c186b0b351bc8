"""The shared integration helpers: chunk fields as flat metadata, filters over that metadata, over-fetching."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragmorph.adapters._integration import (
    USER_METADATA_PREFIX,
    check_id_key,
    chunk_metadata,
    encode_value,
    fetch_filtered,
    filter_predicate,
    metadata_allows,
    with_setting,
)
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters
from support.generators import chunks, corpora
from support.integration_checks import tenant_corpus


def test_chunk_metadata_is_flat_and_none_free() -> None:
    chunk = tenant_corpus()["hr-1#0"]
    assert chunk_metadata(chunk) == {
        "id": "hr-1#0",
        "source": "hr-1",
        "tenant": "acme",
        "effective_from": "",
        "superseded_by": "hr-1#1",
        "version": 1,
        "meta.lang": "en",
    }
    shared = chunk_metadata(Chunk("x", "text", metadata={"flag": True, "none": None, "list": [2, 1]}), id_key="cid")
    assert shared == {
        "cid": "x",
        "source": "",
        "tenant": "",
        "effective_from": "",
        "superseded_by": "",
        "meta.flag": "json:true",
        "meta.none": "json:null",
        "meta.list": "json:[2, 1]",
    }


@pytest.mark.parametrize(
    ("value", "encoded"),
    [("a", "a"), (3, 3), (2.5, "json:2.5"), (1.0, "json:1.0"), (True, "json:true"), (2**70, f"json:{2**70}"), ("json:x", 'json:"json:x"')],
)
def test_encode_value_keeps_strings_and_integers_and_json_encodes_the_rest(value: object, encoded: object) -> None:
    assert encode_value(value) == encoded
    assert type(encode_value(value)) is type(encoded)


def test_encoding_is_one_to_one_so_a_string_never_matches_a_boolean() -> None:
    # Found by the property test below: "true" and True were both stored as "true", so a filter on one admitted the other.
    assert encode_value("true") != encode_value(True)
    assert encode_value("null") != encode_value(None)
    assert encode_value("[2, 1]") != encode_value([2, 1])
    chunk = Chunk("x", "text", metadata={"lang": True})
    assert not metadata_allows(Filters(metadata={"lang": "true"}), chunk_metadata(chunk))
    assert metadata_allows(Filters(metadata={"lang": True}), chunk_metadata(chunk))


@pytest.mark.parametrize("bad", ["", "tenant", "superseded_by", "meta.id", 3])
def test_id_key_may_not_shadow_a_chunk_field(bad: object) -> None:
    with pytest.raises(UsageError, match="id_key"):
        check_id_key(bad)


def _same_in_json(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@settings(max_examples=30, deadline=None)
@given(corpus=corpora(min_size=1, max_size=6), data=st.data())
def test_metadata_allows_agrees_with_filters_allows(corpus: Corpus, data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(corpus.chunks))
    constraint = {}
    if source.metadata:
        key = data.draw(st.sampled_from(sorted(source.metadata)))
        constraint = {key: source.metadata[key]}
    filters = Filters(
        tenant=data.draw(st.sampled_from((None, "acme", "globex"))),
        current_only=data.draw(st.booleans()),
        metadata=constraint,
    )
    for chunk in corpus:
        for key, expected in constraint.items():
            # Python says 1 == 1.0 == True; the JSON encoding keeps them apart (a documented difference).
            assume(key not in chunk.metadata or (chunk.metadata[key] == expected) == _same_in_json(
                chunk.metadata[key], expected
            ))
        assert metadata_allows(filters, chunk_metadata(chunk)) == filters.allows(chunk)


@given(chunk=chunks())
def test_documents_built_outside_ragmorph_filter_by_plain_keys(chunk: Chunk) -> None:
    plain = {"id": chunk.id, "tenant": chunk.tenant, "superseded_by": chunk.superseded_by, **chunk.metadata}
    for filters in (Filters(tenant="acme"), Filters(current_only=True), Filters(metadata=dict(chunk.metadata))):
        # Plain keys hold the raw values, so user keys named like chunk fields would collide; skip those.
        assume(not {"id", "tenant", "superseded_by"} & set(chunk.metadata))
        assert metadata_allows(filters, plain) == filters.allows(chunk)
    assert USER_METADATA_PREFIX == "meta."


def test_filter_predicate_keeps_unknown_ids_for_validation_to_report() -> None:
    corpus = tenant_corpus()
    keep = filter_predicate(Filters(tenant="acme"), corpus)
    assert keep is not None
    assert keep("hr-1#0", {}) and not keep("hr-2#0", {}) and keep("not-in-corpus", {})
    assert filter_predicate(Filters(), corpus) is None and filter_predicate(None, None) is None


def test_fetch_filtered_over_fetches_until_k_survive_or_the_source_runs_out() -> None:
    ranking = list(range(100))
    asked: list[int] = []

    def fetch(n: int) -> list[int]:
        asked.append(n)
        return ranking[:n]

    assert fetch_filtered(fetch, k=3, keep=lambda x: x % 10 == 9) == [9, 19, 29]
    assert asked == [9, 36]
    asked.clear()
    assert fetch_filtered(fetch, k=5, keep=lambda x: x > 97) == [98, 99]
    assert asked[-1] >= 100
    assert fetch_filtered(fetch, k=4, keep=None) == [0, 1, 2, 3]


def test_fetch_filtered_stops_when_a_source_ignoring_n_returns_nothing_new() -> None:
    asked: list[int] = []

    def ignores_n(n: int) -> list[int]:
        asked.append(n)
        return list(range(50))  # a retriever that always answers 50 hits, whatever it is asked

    assert fetch_filtered(ignores_n, k=2, keep=lambda x: x > 100) == []
    assert asked == [6, 24]


class _Plain:
    def __init__(self) -> None:
        self.k = 4
        self.search_kwargs = {"k": 4, "filter": None}


def test_with_setting_copies_instead_of_modifying() -> None:
    original = _Plain()
    changed = with_setting(original, "k", 9)
    assert (changed.k, original.k) == (9, 4)
    nested = with_setting(original, "search_kwargs.k", 7)
    assert nested.search_kwargs == {"k": 7, "filter": None} and original.search_kwargs["k"] == 4
    with pytest.raises(UsageError, match="dict attribute"):
        with_setting(original, "k.x", 1)
