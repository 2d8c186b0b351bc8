"""The strategies' C-speed corpus scans against the plain code they replaced, over any text (review of 4f7c586,
4aa6a03, 468c8f9): the token index holds each chunk's tokens in order, as the tokenizer gives them, for arbitrary
Unicode and printable-ASCII texts in blocks mixing both; claims judge every chunk the judge would accept; filter
choices equal the plain full sort for metadata values of any type."""

from __future__ import annotations

import enum
import random
import string
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import default_tokenize
from ragmorph.model import Case, Chunk, Corpus, Filters, Params, World
from ragmorph.strategies import _core
from ragmorph.strategies import claims as claims_module
from ragmorph.strategies import filtering
from ragmorph.strategies._core import TokenIndex
from ragmorph.strategies.claims import _candidates, supporters
from ragmorph.support import DEFAULT_SUPPORT

# Casefold special cases ("ß" -> "ss", "İ" -> "i̇", "ﬁ" -> "fi", Kelvin sign, long s, dotless i), digits, the
# underscore, NUL, separators that are whitespace to str.split but not to the tokenizer.
_SPECIAL = "ßİﬁıſ\u212aKkS aIi1_9\t\n\x00\x0b\x1c\u00a0\u2028.-é\u0301中"
_TEXTS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=string.printable, max_size=60),
    st.text(alphabet=_SPECIAL, max_size=60),
    # Tokens around and past the index's 16-byte keys.
    st.lists(st.sampled_from(["a" * 16, "a" * 17, "é" * 8, "é" * 9, "中" * 6, "x" * 40]), max_size=4).map(" ".join),
)


@pytest.fixture(autouse=True)
def fresh_memos() -> Iterator[None]:
    """Claims remember supporters per corpus and claim; each example starts without them."""
    claims_module._SUPPORTERS._entries.clear()
    yield


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_TEXTS, max_size=9), block=st.integers(1, 4))
def test_the_index_holds_each_chunks_tokens_in_order_for_any_text(texts: list[str], block: int) -> None:
    chunks = [Chunk(f"c{i}", text) for i, text in enumerate(texts)]
    saved, _core._BLOCK = _core._BLOCK, block
    try:
        index = TokenIndex.of(chunks)
    finally:
        _core._BLOCK = saved
    _assert_holds_each_chunks_tokens_in_order(index, chunks)


def _assert_holds_each_chunks_tokens_in_order(index: TokenIndex, chunks: list[Chunk]) -> None:
    """`index` numbers tokens apart and holds each of `chunks`' tokens, in order, as the tokenizer gives them."""
    token_of = {number: token for token, number in index.numbers.items()}
    assert len(token_of) == len(index.numbers)  # no two tokens share a number
    tokens, ends = [token_of[n] for n in index.tokens.tolist()], [0, *index.ends.tolist()]
    assert [tokens[ends[i] : ends[i + 1]] for i in range(len(chunks))] == [default_tokenize(c.text) for c in chunks]
    assert index.ascii.tolist() == [c.text.isascii() for c in chunks]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1025, 2600))
def test_the_index_holds_each_chunks_tokens_in_order_at_its_block_size(seed: int, size: int) -> None:
    # Blocks of 1,024 chunks over thousands of distinct tokens of 1 to 20 bytes (one key word, two, or longer than
    # a key) that repeat across blocks: the key table grows, keys leave their first slot, most tokens are found
    # by their first probe. Some texts are empty or not ASCII (their block is tokenised by the tokenizer).
    rng = random.Random(seed)
    pool = ["".join(rng.choices("abcxyzQW_019", k=rng.randint(1, 20))) for _ in range(4000)]
    texts = []
    for _ in range(size):
        words = rng.choices(pool, k=rng.randint(0, 30)) + (["Straße"] if rng.random() < 0.001 else [])
        texts.append(rng.choice([" ", ", ", "-", "\n"]).join(words))
    chunks = [Chunk(f"c{i}", text) for i, text in enumerate(texts)]
    _assert_holds_each_chunks_tokens_in_order(TokenIndex.of(chunks), chunks)


_CLAIM_WORDS = ["leave", "days", "may", "policy", "x1y", "g", "a_b", "ss", "strasse", "file", "k", "the", "2026",
                "1,000", "3.5", "2026-09-01", "1 may 2026", "Sept.", "1st"]
_ASCII = st.one_of(
    st.text(alphabet=string.printable, max_size=50),
    st.lists(
        st.tuples(st.sampled_from(_CLAIM_WORDS + [w.upper() for w in _CLAIM_WORDS]), st.sampled_from([" ", "", "-", "_", "1", ".", "\t", "/"])),
        max_size=10,
    ).map(lambda parts: "".join(a + b for a, b in parts)),
)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.one_of(_ASCII, _TEXTS), max_size=9),
    claims=st.lists(st.one_of(_ASCII, _TEXTS), min_size=1, max_size=3),
    block=st.integers(1, 4),
)
def test_claims_judge_every_chunk_the_judge_would_accept_for_any_text(texts: list[str], claims: list[str], block: int) -> None:
    corpus = Corpus([Chunk(f"c{i}", text) for i, text in enumerate(texts)])
    saved, _core._BLOCK = _core._BLOCK, block  # blocks of ASCII texts alone, and blocks mixing them with others
    try:
        candidates = set(_candidates(corpus, claims))
        found = {claim: supporters(corpus, claim) for claim in claims}
    finally:
        _core._BLOCK = saved
    for claim in claims:
        accepted = [n for n, chunk in enumerate(corpus.chunks) if DEFAULT_SUPPORT.supports(claim, chunk.text)]
        assert candidates.issuperset(accepted)
        assert found[claim] == tuple(corpus.chunks[n].id for n in accepted)


class _Level(enum.IntEnum):
    ONE = 1


class _Label(str):
    """A str subclass: a scalar to the filters, but not of an exact JSON type."""


_VALUES = st.sampled_from(
    [1, True, 1.0, 0, False, 0.0, "1", "a", None, float("nan"), float("inf"), 2, [1], {"x": [1]}, Decimal(1),
     np.float64(1.0), _Level.ONE, _Label("a"), 10**20]
)


def _plain_choices(world: World) -> list[Filters]:
    """filter_choices as f5de7d0 computed it: every scalar pair counted chunk by chunk, all of them sorted."""
    corpus, case = world.corpus, world.case
    gold = [corpus[i] for i in case.gold_ids if i in corpus]
    counts = Counter(pair for chunk in corpus.chunks for pair in filtering._scalar_items(chunk.metadata))
    common = sorted(counts, key=lambda pair: (-counts[pair], filtering._pair_key(pair)))
    preferred = [pair for chunk in gold for pair in filtering._scalar_items(chunk.metadata)]
    pairs = list(dict.fromkeys(preferred + common))[: filtering._METADATA_CHOICES]
    choices = [Filters(current_only=True)] + [Filters(metadata={key: value}) for key, value in pairs]
    if gold and len(gold[0].metadata) >= 2:
        selective = sorted(filtering._scalar_items(gold[0].metadata), key=lambda pair: (counts[pair], filtering._pair_key(pair)))
        both = dict(selective[:2])
        if len(both) == 2:
            choices.append(Filters(metadata=both))
    if case.tenant is not None:
        choices = choices + [attrs.evolve(f, tenant=case.tenant) for f in choices]
    return list(dict.fromkeys(choices))


@settings(max_examples=200, deadline=None)
@given(
    metadata=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _VALUES, max_size=4), max_size=12),
    gold=st.lists(st.integers(0, 11), max_size=2, unique=True),
    tenant=st.sampled_from([None, "acme"]),
)
def test_filter_choices_equal_the_plain_full_sort_for_values_of_any_type(
    metadata: list[dict[str, Any]], gold: list[int], tenant: str | None
) -> None:
    corpus = Corpus([Chunk(f"c{i}", "text", metadata=m) for i, m in enumerate(metadata)])
    evidence = [[f"c{n}"] for n in gold if n < len(metadata)] or None
    world = World(corpus=corpus, case=Case(id="q", query="text", evidence=evidence, tenant=tenant), params=Params(3))
    # repr: nan equals nothing, not even itself, so the filters are compared as written.
    assert repr(filtering.filter_choices(world)) == repr(_plain_choices(world))
