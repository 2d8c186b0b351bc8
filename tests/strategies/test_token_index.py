"""The strategies' corpus scans: every answer read from the token index equals the scan it replaced, over generated
corpora and corpora derived from them (removals, additions, in-place updates); the index's key table numbers tokens
apart around its key widths; metadata counts and their most common pairs equal a plain count and sort."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import default_tokenize
from ragmorph.model import Case, Chunk, Corpus, Hit, Params, Ranking, World
from ragmorph.relations import Observation
from ragmorph.strategies import _core
from ragmorph.strategies._core import TokenIndex, matching_ids, query_tokens, token_index, vocabulary
from ragmorph.strategies.filtering import _metadata_counts, _most_common, _pair_key, _scalar_items, _shares_query_words
from ragmorph.strategies.odd_query import _unrelated_words


def _holders(index: TokenIndex, token: str) -> np.ndarray:
    """The corpus positions of the chunks holding `token`, ascending."""
    return np.flatnonzero(index.holding([(token,)]))

# Pieces whose tokens hide inside longer words, repeat, touch punctuation, casefold to others or to ASCII
# ("ß" -> "ss", Kelvin sign -> "k", long s -> "s"), and a separator-like NUL inside a text.
_PIECES = st.sampled_from(
    ["aa", "a", "aaa", "ss", "ß", "Straße", "strasse", "x_1", "1", "10", "é", "é", "Ǆ", "\u212a", "\u017f", "k", "s",
     "policy", "policies", "et", "sit", "amet", "\x00", "Q"]
)
_GLUE = st.sampled_from(["", " ", "-", ".", "_", "\u00a0", "\n", "\x00", "\x1f"])
_TEXT = st.lists(st.tuples(_PIECES, _GLUE), max_size=8).map(lambda parts: "".join(a + b for a, b in parts))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Blocks of 3 chunks, so a corpus of a few chunks spans several blocks (ASCII ones and others)."""
    monkeypatch.setattr(_core, "_BLOCK", 3)
    yield


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    """A corpus, or one derived from it by removals, additions and in-place updates."""
    texts = draw(st.lists(_TEXT, min_size=0, max_size=10))
    corpus = Corpus([Chunk(f"c{i}", text or "-") for i, text in enumerate(texts)])
    for step in range(draw(st.integers(0, 3))):
        edit = draw(st.sampled_from(["remove", "add", "update"]))
        ids = list(corpus.ids)
        if edit == "remove" and ids:
            corpus = corpus.without(draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)))
        elif edit == "update" and ids:
            corpus = corpus.replaced(Chunk(draw(st.sampled_from(ids)), draw(_TEXT) or "-"))
        else:
            added = [Chunk(f"n{step}.{i}", draw(_TEXT) or "-") for i in range(draw(st.integers(1, 2)))]
            corpus = corpus.with_chunks(added, at=draw(st.integers(0, len(ids))))
    return corpus


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), query=_TEXT)
def test_the_index_holds_each_chunks_tokens_and_nothing_else(corpus: Corpus, query: str) -> None:
    index = TokenIndex.of(corpus.chunks)
    held = [set(default_tokenize(chunk.text)) for chunk in corpus]
    assert set(index.numbers) == set().union(*held)
    for token in set(index.numbers) | set(query_tokens(query)):
        assert _holders(index, token).tolist() == [n for n, tokens in enumerate(held) if token in tokens]


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), data=st.data())
def test_holding_counts_the_groups_each_chunk_holds_a_token_of(corpus: Corpus, data: st.DataObject) -> None:
    # Up to 20 groups (the index counts 8 at a time), of the corpus's tokens and tokens no chunk holds.
    tokens = sorted(set().union(*(default_tokenize(chunk.text) for chunk in corpus))) + ["absent", "q"]
    groups = data.draw(st.lists(st.lists(st.sampled_from(tokens), max_size=3), max_size=20))
    held = [set(default_tokenize(chunk.text)) for chunk in corpus]
    expected = [sum(1 for group in groups if held_here.intersection(group)) for held_here in held]
    assert TokenIndex.of(corpus.chunks).holding(groups).tolist() == expected


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), query=_TEXT)
def test_matching_ids_rank_by_shared_query_tokens_as_a_scan_does(corpus: Corpus, query: str) -> None:
    wanted = set(query_tokens(query))
    rows = sorted((-len(wanted & set(default_tokenize(c.text))), n, c.id) for n, c in enumerate(corpus))
    world = World(corpus=corpus, case=Case(id="q", query=query), params=Params(5))
    assert matching_ids(world) == [chunk_id for unshared, _, chunk_id in rows if unshared]


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), query=_TEXT, data=st.data())
def test_matching_ids_with_a_limit_and_exclusions_are_the_prefix_of_the_whole_list(corpus: Corpus, query: str, data: st.DataObject) -> None:
    world = World(corpus=corpus, case=Case(id="q", query=query), params=Params(5))
    exclude = data.draw(st.lists(st.sampled_from([c.id for c in corpus] + ["gone"]), max_size=4))
    limit = data.draw(st.none() | st.integers(0, 6))
    whole = [chunk_id for chunk_id in matching_ids(world) if chunk_id not in exclude]
    assert matching_ids(world, exclude=exclude, limit=limit) == (whole if limit is None else whole[:limit])


@settings(max_examples=60, deadline=None)
@given(corpus=corpora(), words=st.lists(st.sampled_from(vocabulary().filler[:40]), max_size=6))
def test_unrelated_words_are_the_filler_words_no_chunk_holds_as_a_scan_finds(corpus: Corpus, words: list[str]) -> None:
    # Filler words placed in the corpus are held; the rest must come back, in the vocabulary's order.
    corpus = corpus.with_chunks([Chunk("filler", " ".join(words) or "-")])
    held = set().union(*(default_tokenize(c.text) for c in corpus))
    expected = [w for w in vocabulary().filler if not held.intersection(query_tokens(w))][:200]
    assert _unrelated_words(corpus) == expected


def test_one_index_per_corpus() -> None:
    corpus = Corpus([Chunk("a", "one two"), Chunk("b", "two three")])
    assert token_index(corpus) is token_index(corpus)
    assert _holders(token_index(corpus.without(["a"])), "one").tolist() == []


# Decimal(1) equals 1 but is no JSON scalar (left out); numpy's float64 is a float (counted).
_VALUES = st.sampled_from([1, True, 1.0, "1", None, 0, False, "a", [1], {"x": 1}, Decimal(1), np.float64(1.0)])


@settings(max_examples=150, deadline=None)
@given(metadata=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), _VALUES, max_size=3), max_size=8))
def test_metadata_counts_equal_a_chunk_by_chunk_count(metadata: list[dict[str, object]]) -> None:
    corpus = Corpus([Chunk(f"c{i}", "text", metadata=m) for i, m in enumerate(metadata)])
    expected: Counter[tuple[str, object]] = Counter()
    for chunk in corpus:
        for pair in _scalar_items(chunk.metadata):
            expected[pair] += 1
    counts = _metadata_counts(corpus)
    # The same counts under the same pairs: which of 1, True and 1.0 (equal keys) names a pair is the first met.
    def named(found: Counter[tuple[str, object]]) -> list[tuple[str, str, str, int]]:
        return sorted((*_pair_key(pair), n) for pair, n in found.items())

    assert named(counts) == named(expected)
    common = sorted(expected, key=lambda pair: (-expected[pair], _pair_key(pair)))
    for n in range(len(common) + 2):
        assert _most_common(counts, n) == common[:n]


# Tokens around the widths of the index's keys (8 and 16 bytes), sharing their first 8 or 16 bytes, and non-ASCII
# ones whose UTF-8 bytes reach those widths ("é" is 2 bytes, "中" 3).
_STEMS = ["abcdefgh", "abcdefghijklmnop", "é" * 4, "中" * 5, "x"]
_LONG_PIECES = st.builds(
    lambda stem, tail, upper: (stem + tail).upper() if upper else stem + tail,
    st.sampled_from(_STEMS),
    st.sampled_from(["", "a", "q", "7", "_", "abcdefgh", "abcdefghi", "é", "ABCDEFGHIJKLMNOPQ"]),
    st.booleans(),
)
_LONG_TEXT = st.lists(st.tuples(_LONG_PIECES, _GLUE), max_size=6).map(lambda parts: "".join(a + b for a, b in parts))


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(_LONG_TEXT, max_size=8), query=_LONG_TEXT)
def test_the_index_tells_tokens_apart_around_its_key_widths(texts: list[str], query: str) -> None:
    corpus = Corpus([Chunk(f"c{i}", text or "-") for i, text in enumerate(texts)])
    index = TokenIndex.of(corpus.chunks)
    held = [set(default_tokenize(chunk.text)) for chunk in corpus]
    assert set(index.numbers) == set().union(*held)
    assert len(set(index.numbers.values())) == len(index.numbers)
    for token in set(index.numbers) | set(query_tokens(query)):
        assert _holders(index, token).tolist() == [n for n, tokens in enumerate(held) if token in tokens]


@settings(max_examples=100, deadline=None)
@given(batches=st.lists(st.lists(st.text("abé_ 1", max_size=20)), min_size=1, max_size=4))
def test_token_numbers_are_equal_exactly_for_equal_tokens_across_batches_and_table_growth(batches: list[list[str]]) -> None:
    # Many distinct tokens per batch in a table that starts small: probes wrap around and the table grows.
    keys, numbered = _core._TokenKeys(), {}
    keys._bits, keys._slots = 1, np.full(2, -1, np.intp)  # two slots to start with
    for batch in batches:
        tokens = [token for text in batch for token in text.split()]
        starts, numbers = keys.number(" ".join(tokens).encode("utf-8"))
        assert len(starts) == len(numbers) == len(tokens)
        for token, number in zip(tokens, numbers.tolist()):
            assert numbered.setdefault(token, number) == number
    assert len(set(numbered.values())) == len(numbered)
    assert keys.vocabulary() == numbered


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(_LONG_PIECES, max_size=12), min_size=1, max_size=4))
def test_token_numbers_are_equal_exactly_for_equal_tokens_whose_keys_crowd_a_few_slots(batches: list[list[str]]) -> None:
    # Every key's first slot from its first word alone, among 7: tokens of one word and of two that start alike
    # probe each other's slots, and most keys sit away from their first slot.
    keys, numbered = _core._TokenKeys(), {}
    keys._slot = lambda first, second: (first % np.uint64(7)).astype(np.intp)  # type: ignore[method-assign]
    for tokens in batches:
        numbers = keys.number(" ".join(tokens).encode("utf-8"))[1]
        for token, number in zip(tokens, numbers.tolist()):
            assert numbered.setdefault(token, number) == number
    assert len(set(numbered.values())) == len(numbered)
    assert keys.vocabulary() == numbered


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), query=_TEXT, data=st.data())
def test_shares_query_words_judges_each_hit_as_tokenising_its_text_does(corpus: Corpus, query: str, data: st.DataObject) -> None:
    # The filters family's soft relation, against the scan it replaced: a hit's text tokenised again.
    ids = [chunk.id for chunk in corpus] + ["gone"]
    base_ids, follow_ids = (data.draw(st.lists(st.sampled_from(ids), max_size=6)) for _ in range(2))
    world = World(corpus=corpus, case=Case(id="q", query=query), params=Params(5))
    base = Observation(world, Ranking([Hit(i, 1.0) for i in dict.fromkeys(base_ids)]))
    follow = Observation(world, Ranking([Hit(i, 1.0) for i in dict.fromkeys(follow_ids)]))
    wanted = set(query_tokens(query))
    unshared = [h.id for h in [*base.ranking.hits, *follow.ranking.hits] if h.id in corpus and not wanted.intersection(query_tokens(corpus[h.id].text))]
    verdict = _shares_query_words(base, follow)
    if not base.ranking.hits and not follow.ranking.hits:
        assert not verdict.applicable
    elif unshared:
        assert not verdict.holds and repr(unshared[0]) in verdict.detail
    else:
        assert verdict.holds
