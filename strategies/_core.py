"""Shared machinery of the strategy families: the family record, base perturbation, vocabularies, helpers.

Private: `ragmorph.strategies` re-exports what users need.
"""

from __future__ import annotations

import array
import datetime as _dt
import functools
import operator
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import attrs
import numpy as np
from faker import Faker
from hypothesis import strategies as st

from ragmorph.adapters import default_tokenize
from ragmorph.errors import UsageError
from ragmorph.model import Case, Chunk, Corpus, Filters, Params, World
from ragmorph.relations import Observation, Plan, Relation, Verdict

__all__ = [
    "CorpusMemo",
    "Derivation",
    "Family",
    "PerturbationBase",
    "TokenIndex",
    "Vocabulary",
    "between_filters",
    "corpus_tenants",
    "default_filters",
    "derivation",
    "fresh_id",
    "is_json_scalar",
    "ks_strategy",
    "matching_ids",
    "query_tokens",
    "shared_tokens",
    "shares_word",
    "text_lengths",
    "token_index",
    "vocabulary",
    "vocabulary_from",
]

class PerturbationBase:
    """Defaults every perturbation shares; subclasses are frozen attrs classes with a `k` field.

    A perturbation is plain data: `base`/`apply` give the world change, `plan` the calls that observe it (by
    default the base world on the base instance, then the follow-up world; override `plan` for other calls).
    """

    family: ClassVar[str] = ""
    k: int

    def base(self, world: World) -> World:
        """The base world this perturbation is compared against: `world` at this perturbation's k."""
        return attrs.evolve(world, params=attrs.evolve(world.params, k=self.k))

    def apply(self, world: World) -> World:
        """The follow-up world (pure; subclasses override)."""
        return self.base(world)

    def plan(self, world: World) -> Plan:
        """The calls that observe this perturbation on `world` (see `ragmorph.relations.Plan`)."""
        return Plan.pair(self.base(world), self.apply(world))

    def referenced_ids(self) -> tuple[str, ...]:
        """Chunk ids of the base corpus this perturbation names (kept when the corpus is minimised)."""
        return ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the type name and the fields (chunks as their native dicts)."""
        return {"type": type(self).__name__, "fields": {k: _encode(v) for k, v in attrs.asdict(self, recurse=False).items()}}


def _encode(value: Any) -> Any:
    if isinstance(value, Chunk):
        return {"__chunk__": value.to_dict()}
    if isinstance(value, Params):
        return {"__params__": {"k": value.k, "filters": value.filters.to_dict()}}
    if isinstance(value, Filters):
        return {"__filters__": value.to_dict()}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


def decode_value(value: Any) -> Any:
    """Inverse of the JSON encoding used by `PerturbationBase.to_dict` (lists come back as tuples)."""
    if isinstance(value, dict) and "__chunk__" in value:
        return Chunk(**value["__chunk__"])
    if isinstance(value, dict) and "__params__" in value:
        raw = value["__params__"]
        return Params(raw["k"], Filters(**raw["filters"]))
    if isinstance(value, dict) and "__filters__" in value:
        return Filters(**value["__filters__"])
    if isinstance(value, list):
        return tuple(decode_value(v) for v in value)
    return value


def _always_applicable(world: World) -> str | None:
    return None


@attrs.frozen
class Family:
    """One strategy family: how it draws perturbations for a world and the relations it checks.

    `applicable(world)` returns why the family cannot run on `world`, or None (the default: every world).
    `perturbation_types` are the perturbation classes `draw` produces (replay files name them).
    `default` False keeps an expensive family out of the default suite (a profile or `strategies=` names it).
    `grows_corpus` says its perturbations grow the corpus themselves (thousands of chunks, a `size` field and
    `resized(size)`): a violation then shrinks by bisection over the grown size, not by corpus minimisation.
    `max_examples` is the family's budget of examples per unit when the run's budget is adaptive (never above
    the run's `max_examples`): what its perturbations need, measured on the bug zoos (benchmarks/bench_calls.py).
    `explicit(world, *, ks, delta, filters)` gives perturbations tried before any drawn one under either budget,
    part of the unit's examples: one of each kind bugs most often show under, so few examples still cover them.
    They must lie in the space `draw` draws from (its soundness is what the relations were checked over).
    """

    name: str
    summary: str
    relations: tuple[Relation, ...]
    draw: Callable[..., st.SearchStrategy[Any]] = attrs.field(repr=False)
    perturbation_types: tuple[type, ...] = ()
    applicable: Callable[[World], str | None] = attrs.field(repr=False, default=_always_applicable)
    edits_corpus: bool = False
    max_examples: int | None = None
    explicit: Callable[..., tuple[Any, ...]] | None = attrs.field(repr=False, default=None)
    default: bool = True
    grows_corpus: bool = False

    def perturbations(self, world: World, *, ks: Sequence[int]) -> st.SearchStrategy[Any]:
        """The Hypothesis strategy of this family's perturbations for `world` (see `applicable` first)."""
        reason = self.applicable(world)
        if reason is not None:
            raise UsageError(f"expected a world the {self.name!r} family applies to, got one where {reason}")
        return self.draw(world, ks=tuple(sorted(set(ks))))


def is_json_scalar(value: Any) -> bool:
    """True for a JSON scalar (null, string, number, boolean): the metadata values equality filters are drawn on."""
    return value is None or isinstance(value, (str, int, float, bool))


def ks_strategy(ks: Sequence[int]) -> st.SearchStrategy[int]:
    """Cutoffs drawn from `ks`; shrinks toward the smallest."""
    return st.sampled_from(tuple(sorted(set(ks))))


def default_filters(case: Case) -> Filters:
    """The filters a case is asked with: its tenant's visibility when it has a tenant, none otherwise."""
    return Filters(tenant=case.tenant) if case.tenant is not None else Filters()


def between_filters(world: World, filters: bool) -> list[Filters]:
    """Filters of the calls made in between (repeat, state): the world's own, then, for retrievers that take
    filters, none, current only, and the tenant's current chunks when the case has a tenant."""
    choices = [world.params.filters]
    if filters:
        choices += [Filters(), Filters(current_only=True)]
        if world.case.tenant is not None:
            choices.append(Filters(tenant=world.case.tenant, current_only=True))
    return choices


def fresh_id(corpus: Corpus, stem: str, taken: set[str] | None = None) -> str:
    """An id starting with `stem` that no chunk of `corpus` (nor `taken`) uses."""
    taken = taken or set()
    candidate, number = stem, 1
    while candidate in corpus or candidate in taken:
        number += 1
        candidate = f"{stem}.{number}"
    return candidate


# Relations tokenise the texts of returned hits and changed chunks, over and over; scans of a whole corpus do not
# come through here (they read `token_index`): a cache holding every chunk's tokens cost 3 MB
# per 1,000 chunks. Thread-safe (--concurrency).
@functools.lru_cache(maxsize=1 << 12)
def query_tokens(text: str) -> tuple[str, ...]:
    """Casefolded word tokens, the way a word-level lexical retriever sees text (the built-in tokenizer)."""
    return tuple(default_tokenize(text))


# Scans of a whole corpus (the chunks sharing query words, the filler words no chunk holds) read one token index
# per corpus instead of tokenising every chunk per scan. Blocks of this many chunks are tokenised at once: the
# arrays of one block are all that is alive beside the index.
_BLOCK = 1024
# ASCII text is tokenised as bytes: upper-case letters become lower-case (ASCII casefolding) and every byte that is
# not a word character (\w: letters, digits, underscore) becomes a space, so the runs of other bytes are exactly
# the built-in tokenizer's tokens.
_ASCII_FOLD = bytes((c | 0x20 if 65 <= c <= 90 else c) if chr(c).isalnum() or c == 95 else 32 for c in range(128)) + bytes(128)
_SPACE = 32
# A token's key is its UTF-8 bytes zero-padded to _WIDE (two 64-bit words): exact, as no token holds a NUL byte.
# Longer tokens (rare) are numbered through a dict instead.
_WIDE = 16
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1] * 9, np.uint64)  # by token length
_HIGH_BYTES = np.array([0] * 9 + [(1 << (8 * n)) - 1 for n in range(1, 8)] + [(1 << 64) - 1], np.uint64)


_POPCOUNT = np.array([bin(n).count("1") for n in range(256)], np.intp)


@attrs.frozen(eq=False)
class TokenIndex:
    """Every chunk's tokens under the built-in tokenizer (`query_tokens`), as numbers: the corpus vocabulary and, for
    any token, the positions of the chunks holding it, without tokenising a chunk again.

    About 4 bytes per token of the corpus (20 MB for 100k chunks of 50 words) plus the vocabulary.
    """

    numbers: dict[str, int]  # every token of the corpus -> its number
    tokens: np.ndarray = attrs.field(repr=False)  # C ints: every chunk's token numbers in order, chunk after chunk
    ends: np.ndarray = attrs.field(repr=False)  # chunk i's tokens end before ends[i]
    ascii: np.ndarray = attrs.field(repr=False)  # whether chunk i's text is ASCII

    def holding(self, groups: Sequence[Iterable[str]]) -> np.ndarray:
        """For each chunk (by corpus position), how many of `groups` (each a few tokens) it holds a token of: one
        pass over the corpus's tokens per 8 groups."""
        found = np.zeros(len(self.ends), np.intp)
        numbered = [sorted({self.numbers[token] for token in group if token in self.numbers}) for group in groups]
        numbered = [numbers for numbers in numbered if numbers]
        if not numbered:
            return found
        starts = np.concatenate(([0], self.ends[:-1]))
        empty = starts == self.ends  # reduceat gives an empty chunk the next token's bits: it holds none
        reduced = int(np.searchsorted(starts, len(self.tokens)))  # chunks after the last token are all empty
        for first in range(0, len(numbered), 8):
            bits = np.zeros(len(self.numbers), np.uint8)  # token number -> the bits of the groups holding it
            for bit, numbers in enumerate(numbered[first : first + 8]):
                bits[numbers] |= np.uint8(1 << bit)
            held = np.zeros(len(self.ends), np.uint8)
            held[:reduced] = np.bitwise_or.reduceat(bits[self.tokens], starts[:reduced])
            held[empty] = 0
            found += _POPCOUNT[held]
        return found

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> TokenIndex:
        """The index of `chunks` (one pass; ASCII text as bytes with numpy, the tokenizer itself for any other)."""
        keys = _TokenKeys()
        tokens = array.array("i")  # grown in place block by block: no second copy while the blocks are joined
        ends, ascii, count = [], [], 0
        for start in range(0, len(chunks), _BLOCK):
            texts = [chunk.text for chunk in chunks[start : start + _BLOCK]]
            joined = " ".join(texts)
            if joined.isascii():
                ascii.append(np.ones(len(texts), bool))
                raw = joined.encode("ascii").translate(_ASCII_FOLD)
                lengths = np.fromiter(map(len, texts), np.intp, len(texts)) + 1
                bounds = np.cumsum(lengths)  # byte offsets where each chunk ends (each text plus one space)
            else:
                ascii.append(np.fromiter(map(str.isascii, texts), bool, len(texts)))
                per_text = [default_tokenize(text) for text in texts]
                raw = " ".join(token for held in per_text for token in held).encode("utf-8")
                bounds = None
                lengths = np.fromiter(map(len, per_text), np.intp, len(per_text))
            starts, numbers = keys.number(raw)
            block_ends = np.searchsorted(starts, bounds) if bounds is not None else np.cumsum(lengths)
            ends.append(block_ends + count)
            count += len(numbers)
            tokens.frombytes(numbers.view(np.uint8))  # a view: tobytes was one more copy
        numbered = np.frombuffer(tokens, np.intc) if tokens else np.zeros(0, np.intc)
        if not ends:
            return cls(keys.vocabulary(), numbered, np.zeros(0, np.intp), np.zeros(0, bool))
        return cls(keys.vocabulary(), numbered, np.concatenate(ends), np.concatenate(ascii))


class _TokenKeys:
    """Tokens -> numbers for a whole buffer of tokens at once: an open-addressing hash table of token keys, probed
    with numpy for every token of the buffer together (a dict lookup per token was half of an index's cost)."""

    def __init__(self) -> None:
        self._bits = 10
        self._slots = np.full(1 << self._bits, -1, np.intp)  # slot -> number, -1 when free
        self._count = 0  # numbers given so far
        # Number -> its key (0, 0 for a long token, never in a slot), in arrays with room for more numbers (doubled
        # when full): copying all keys whenever a probe round numbered new ones cost 15 ms of a 100k-chunk index.
        self._first = np.zeros(16, np.uint64)
        self._second = np.zeros(16, np.uint64)
        self._short = np.zeros(16, np.uint64)  # number -> its first word when its second is 0, else 0
        self._long: dict[bytes, int] = {}  # a token longer than _WIDE bytes -> its number

    def number(self, raw: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(start offsets, numbers) of the tokens of `raw`: runs of bytes other than the space."""
        size = len(raw)
        buffer = np.frombuffer(raw + bytes(_WIDE), np.uint8)
        word = np.zeros(size + 2, bool)  # a non-word byte on either side, so every run has a start and a stop
        np.not_equal(buffer[:size], _SPACE, out=word[1:-1])
        edges = np.flatnonzero(word[1:] != word[:-1])
        starts = edges[0::2]
        lengths = edges[1::2] - starts
        # Every offset's next 8 bytes as one little-endian word (the padding keeps the last reads in the buffer),
        # copied once: np.take copies a strided view on every call.
        words = np.ascontiguousarray(np.ndarray((size + 9,), np.dtype("<u8"), buffer, strides=(1,)))
        first = np.take(words, starts) & np.take(_LOW_BYTES, lengths, mode="clip")  # a longer token's key is not used
        long = np.flatnonzero(lengths > _WIDE)
        numbered = [self._long_number(raw[i : i + n]) for i, n in zip(starts[long].tolist(), lengths[long].tolist())]
        self._reserve(self._count + len(starts) - len(long))
        # Nearly every token is numbered already and sits in its first slot: one probe each, and the tokens of one
        # word (most) skip the second. A free slot's -1 reads the keys' last entry: no token meeting a free slot has
        # a numbered key (the slots from a numbered key's first to its own are all taken), nor 0 (an unused entry).
        numbers = np.take(self._slots, self._slot(first, None))
        missed = np.take(self._short, numbers) != first
        wide = np.flatnonzero((lengths > 8) & (lengths <= _WIDE))  # keys of two words
        second = np.zeros(len(starts), np.uint64)
        second[wide] = np.take(words, starts[wide] + 8) & _HIGH_BYTES[lengths[wide]]
        held = np.take(self._slots, self._slot(first[wide], second[wide]))
        missed[wide] = (np.take(self._first, held) != first[wide]) | (np.take(self._second, held) != second[wide])
        numbers[wide] = held
        numbers[long] = numbered
        missed[long] = False
        at = np.flatnonzero(missed)
        if len(at):
            # The others probe on, and the new keys are numbered, as if every token did: a numbered key never
            # meets a free slot, so the new keys claim the same slots in the same order.
            numbers[at] = self._find(first[at], second[at])
        return starts, numbers.astype(np.intc)

    def _long_number(self, token: bytes) -> int:
        number = self._long.get(token)
        if number is None:
            empty = np.zeros(1, np.uint64)
            number = self._long[token] = int(self._add(empty, empty)[0])
        return number

    def _add(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """Number the new keys (first, second) in order: their numbers."""
        start, stop = self._count, self._count + len(first)
        if stop > len(self._first):
            room = max(stop, 2 * len(self._first)) - start
            self._first, self._second, self._short = (
                np.pad(keys[:start], (0, room)) for keys in (self._first, self._second, self._short)
            )
        self._first[start:stop], self._second[start:stop] = first, second
        self._short[start:stop] = np.where(second == 0, first, 0)
        self._count = stop
        return np.arange(start, stop)

    def _slot(self, first: np.ndarray, second: np.ndarray | None) -> np.ndarray:
        # A second of None is all zeros, which leave the first word as it is.
        mixed = first if second is None else first ^ (second * np.uint64(0xC2B2AE3D27D4EB4F))
        return ((mixed * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - self._bits)).view(np.intp)

    def _find(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """The numbers of the keys (first, second), numbering each key not seen before (linear probing); the table
        has room for them (`_reserve`)."""
        found = np.empty(len(first), np.intp)
        pending = np.arange(len(first))
        slot = self._slot(first, second)
        mask = (1 << self._bits) - 1
        while len(pending):
            held = self._slots[slot]
            free = np.flatnonzero(held < 0)
            if len(free):
                # Keys probing a free slot claim it; one claimant per slot wins and is numbered, the others (the
                # same key again, or another key) read the winner like any taken slot.
                self._slots[slot[free]] = -2 - free
                won = free[self._slots[slot[free]] == -2 - free]
                self._slots[slot[won]] = self._add(first[won], second[won])
                held = self._slots[slot]
            match = (self._first[held] == first) & (self._second[held] == second)
            found[pending] = held  # right for the matched keys; the others are written again once they match
            rest = np.flatnonzero(~match)
            pending, first, second, slot = pending[rest], first[rest], second[rest], (slot[rest] + 1) & mask
        return found

    def _reserve(self, count: int) -> None:
        """Grow the table to at least twice `count` slots (short probes), placing every numbered key again."""
        if 2 * count <= len(self._slots):
            return
        while (1 << self._bits) < 2 * count:
            self._bits += 1
        self._slots = np.full(1 << self._bits, -1, np.intp)
        first, second = self._first[: self._count], self._second[: self._count]
        keyed = np.flatnonzero(first != 0)  # long tokens have no key
        slot, mask = self._slot(first[keyed], second[keyed]), (1 << self._bits) - 1
        while len(keyed):
            free = self._slots[slot] < 0
            self._slots[slot[free]] = keyed[free]
            placed = self._slots[slot] == keyed
            keyed, slot = keyed[~placed], (slot[~placed] + 1) & mask

    def vocabulary(self) -> dict[str, int]:
        """Every token numbered so far -> its number."""
        first, second = self._first[: self._count], self._second[: self._count]
        keys = np.stack((first, second), axis=1).astype("<u8").view(f"S{_WIDE}").ravel().tolist()
        # Decoded at once: no token holds a newline. A long token's number has the empty key, dropped here.
        vocabulary = dict(zip(b"\n".join(keys).decode("utf-8").split("\n"), range(len(keys))))
        vocabulary.pop("", None)
        vocabulary.update((token.decode("utf-8"), number) for token, number in self._long.items())
        return vocabulary


def token_index(corpus: Corpus) -> TokenIndex:
    """The token index of `corpus`, built once per corpus (remembered without keeping the corpus alive)."""
    return _TOKEN_INDEXES.get((corpus,), None, lambda: TokenIndex.of(corpus.chunks))


def text_lengths(corpus: Corpus) -> np.ndarray:
    """Each chunk's text length in characters, by corpus position, once per corpus (read-only): equal texts have
    equal lengths, so a search for a text compares only the chunks of its length."""
    return _TEXT_LENGTHS.get((corpus,), None, lambda: _text_lengths(corpus))


def _text_lengths(corpus: Corpus) -> np.ndarray:
    lengths = np.fromiter(map(len, map(_TEXT, corpus.chunks)), np.intp, len(corpus))
    lengths.flags.writeable = False
    return lengths


_TEXT = operator.attrgetter("text")


def corpus_tenants(corpus: Corpus) -> frozenset[str | None]:
    """Every tenant owning chunks of `corpus` (None for shared chunks), once per corpus: each case asks."""
    return _TENANTS.get((corpus,), None, lambda: frozenset(map(_TENANT, corpus.chunks)))


_TENANT = operator.attrgetter("tenant")


def matching_ids(world: World, *, exclude: Sequence[str] = (), limit: int | None = None) -> list[str]:
    """Ids of the chunks sharing a query token, most shared tokens first (ties by corpus position), `exclude` left
    out, the first `limit` of them (all when None)."""
    ranked = _MATCHING.get((world.corpus,), world.case.query, lambda: _matching(world.corpus, world.case.query))
    if limit is not None and limit <= 0:
        return []
    left_out = set(exclude)
    chunks = world.corpus.chunks
    # Only as many ids as asked are read: a common query word is held by half of a 100k-chunk corpus, and callers
    # want the first 1 to 30.
    found = []
    for position in ranked:
        chunk_id = chunks[position].id
        if chunk_id not in left_out:
            found.append(chunk_id)
            if len(found) == limit:
                break
    return found


def shared_tokens(corpus: Corpus, query: str) -> np.ndarray:
    """For each chunk of `corpus` (by corpus position), how many distinct tokens of `query` it holds (remembered
    per corpus and query: read-only)."""
    return _SHARED.get((corpus,), query, lambda: _shared(corpus, query))


def _shared(corpus: Corpus, query: str) -> np.ndarray:
    shared = token_index(corpus).holding([(token,) for token in dict.fromkeys(query_tokens(query))])
    shared.flags.writeable = False
    return shared


def _matching(corpus: Corpus, query: str) -> list[int]:
    # Depth, state and lifecycle each ask for the same corpus and query: one answer (the memo) serves all three.
    shared = shared_tokens(corpus, query)
    holding = np.flatnonzero(shared)
    return holding[np.lexsort((holding, -shared[holding]))].tolist()  # most shared first, ties by position


# Words sharing this many leading characters count as the same word: a stemmer maps "policies" and "policy"
# to one term, and stems are at least this long; shorter words must match whole.
_STEM_PREFIX = 4


def shares_word(word: str, tokens: Sequence[str]) -> bool:
    """True when `word` could match one of `tokens` under casefolding, word splitting or suffix stemming."""
    for part in query_tokens(word):
        for token in tokens:
            prefix = min(_STEM_PREFIX, len(part), len(token))
            if part == token or (prefix >= _STEM_PREFIX and part[:prefix] == token[:prefix]):
                return True
            # A short whole word must not hide inside a longer one either ("rat" in "ratione").
            if min(len(part), len(token)) < _STEM_PREFIX and (part.startswith(token) or token.startswith(part)):
                return True
    return False


@attrs.frozen
class Vocabulary:
    """Seeded word lists built once with Faker; Hypothesis picks from them so shrinking moves to early entries."""

    filler: tuple[str, ...]
    regions: tuple[str, ...]
    products: tuple[str, ...]
    dates: tuple[_dt.date, ...]
    boilerplate: tuple[str, ...]

    def filler_for(self, query: str) -> tuple[str, ...]:
        """Filler words that share no word (nor stem) with `query`: text made of them is unrelated by construction."""
        tokens = query_tokens(query)
        return tuple(word for word in self.filler if not shares_word(word, tokens))


_SEED = 20260901


@functools.lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The one seeded vocabulary (built on first use, identical in every process)."""
    # Only the providers read: by default Faker scans the package of every provider for its locales on
    # construction (77 ms of a run's start, and of every --jobs worker's); the seeded draws are the same.
    return vocabulary_from(
        Faker("la", providers=["faker.providers.lorem"]),
        Faker("en_US", providers=["faker.providers.lorem", "faker.providers.address", "faker.providers.date_time"]),
    )


def vocabulary_from(latin: Faker, english: Faker) -> Vocabulary:
    """The vocabulary drawn from a Latin and an English Faker, both seeded here."""
    latin.seed_instance(_SEED)
    english.seed_instance(_SEED)
    # Nothing draws from the two Faker instances after this function: every list below is fixed by _SEED.
    # Latin lorem words: real-looking text that no English question is about. Sorted shortest first so that
    # shrinking (toward index 0) reaches short words.
    filler = tuple(sorted(set(latin.get_words_list()), key=lambda w: (len(w), w)))
    regions = tuple(dict.fromkeys(english.state() for _ in range(60)))
    products = tuple(dict.fromkeys(f"{english.word().title()} {english.word().title()}" for _ in range(60)))
    dates = tuple(sorted({english.date_between(_dt.date(2019, 1, 1), _dt.date(2030, 12, 31)) for _ in range(60)}))
    boilerplate = tuple(" ".join(latin.words(40)) for _ in range(8))
    return Vocabulary(filler=filler, regions=regions, products=products, dates=dates, boilerplate=boilerplate)



def ruled_out(precondition: Callable[[World, World], str | None], base: Observation, follow: Observation) -> Verdict | None:
    """The not_applicable verdict when `precondition` (a `Relation.precondition`) rules the observed pair out, else
    None: relation checks start with it, so the check and the runner's before-the-call test give one answer."""
    why = precondition(base.world, follow.world)
    return None if why is None else Verdict.not_applicable(why)


def check_never(
    ids: set[str], follow: Observation, what: str
) -> Verdict:
    """Verdict that none of `ids` appears in the follow-up ranking."""
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        if hit.id in ids:
            return Verdict.broken(f"{what} {hit.id!r} returned at rank {rank}", culprits=(hit.id,))
    return Verdict.ok(f"no {what} returned")


def perturbation_label(perturbation: Any) -> str:
    """`TypeName` or `TypeName:kind` (for perturbations with a `kind` or `mode` field) used by `applies_to`."""
    name = type(perturbation).__name__
    for field in ("kind", "mode"):
        value = getattr(perturbation, field, None)
        if isinstance(value, str) and field in attrs.fields_dict(type(perturbation)):
            return f"{name}:{value}"
    return name


def relation_applies(relation: Relation, perturbation: Any) -> bool:
    """True when `relation` judges perturbations like `perturbation` (by type name, or `type:kind`)."""
    if not relation.applies_to:
        return True
    label = perturbation_label(perturbation)
    return label in relation.applies_to or label.split(":")[0] in relation.applies_to


def chunk_of(base: Observation, follow: Observation, chunk_id: str) -> Chunk | None:
    """The chunk `chunk_id` as the follow-up corpus holds it, else as the base corpus did (a removed chunk that a
    buggy index still returns), else None."""
    found = follow.world.corpus.get(chunk_id)
    return found if found is not None else base.world.corpus.get(chunk_id)


@attrs.frozen
class Derivation:
    """How `after` was derived from `before` by `with_chunks`/`without`/`replaced`: net ids added and removed,
    and whether it is a pure delta (kept chunks unchanged and in order; added chunks, in corpus order)."""

    added: frozenset[str]
    removed: frozenset[str]
    pure: bool
    added_chunks: tuple[Chunk, ...] = ()


def derivation(before: Corpus, after: Corpus) -> Derivation | None:
    """The derivation of `after` from `before` read from the corpora's delta bookkeeping, without touching
    every id; None when `after` was not derived from `before` that way (then compare the corpora instead)."""
    chain = []
    current = after
    while current is not before:
        overlay = getattr(current, "_overlay", None)
        if overlay is None or len(chain) > 16:
            return None
        chain.append(overlay)
        current = overlay[0]
    added: dict[str, Chunk] = {}
    removed: set[str] = set()
    pure, adding_steps = True, 0
    for parent, plus, minus, _ in reversed(chain):
        for chunk_id in minus:
            if chunk_id in added:
                del added[chunk_id]
            else:
                removed.add(chunk_id)
        adding_steps += bool(plus)
        for chunk_id, chunk in plus.items():
            if chunk_id in removed or chunk_id in parent:
                # A replaced or re-added id: same id set, possibly other content; not a pure delta.
                removed.discard(chunk_id)
                pure = False
            else:
                added[chunk_id] = chunk
    # One insertion keeps its chunks contiguous and in the given order; several may interleave.
    pure = pure and adding_steps <= 1
    return Derivation(frozenset(added), frozenset(removed), pure, tuple(added.values()) if pure else ())


_T = TypeVar("_T")
_ABSENT: Any = object()


class CorpusMemo:
    """Answers remembered per corpus (by identity) and key, for scans that several families or relations repeat.

    Entries hold weak references: a memo never keeps an old corpus, its id index and its chunk tuple alive (with
    strong ones, 16 remembered pairs of 100k-chunk corpora held hundreds of MB). An entry whose corpus died no
    longer matches, even if a new object reuses its id. Thread-safe (--concurrency); the oldest entry goes first.
    """

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self._entries: dict[tuple[Any, ...], tuple[tuple[weakref.ref[Corpus], ...], Any]] = {}
        self._lock = threading.Lock()

    def lookup(self, corpora: tuple[Corpus, ...], key: Hashable) -> Any:
        """The remembered answer for `corpora` and `key`, or `CorpusMemo.ABSENT`."""
        with self._lock:
            found = self._entries.get((tuple(map(id, corpora)), key))
        if found is None or any(ref() is not corpus for ref, corpus in zip(found[0], corpora)):
            return _ABSENT
        return found[1]

    def store(self, corpora: tuple[Corpus, ...], key: Hashable, value: _T) -> _T:
        """Remember `value` for `corpora` and `key`; returns it."""
        with self._lock:
            if len(self._entries) >= self._slots:
                self._entries.pop(next(iter(self._entries)))
            self._entries[(tuple(map(id, corpora)), key)] = (tuple(weakref.ref(corpus) for corpus in corpora), value)
        return value

    def get(self, corpora: tuple[Corpus, ...], key: Hashable, compute: Callable[[], _T]) -> _T:
        """The remembered answer, else `compute()` remembered (two threads may both compute it: it is pure)."""
        found = self.lookup(corpora, key)
        return self.store(corpora, key, compute()) if found is _ABSENT else found

    ABSENT: ClassVar[Any] = _ABSENT


_MATCHING = CorpusMemo(16)
_SHARED = CorpusMemo(16)
_TENANTS = CorpusMemo(4)
# Each index of a 100k-chunk corpus is ~25 MB; a run asks for a few corpora (the base one, a minimised one).
_TOKEN_INDEXES = CorpusMemo(4)
_TEXT_LENGTHS = CorpusMemo(4)
_DIFFS = CorpusMemo(16)


def corpus_diff(before: Corpus, after: Corpus) -> tuple[frozenset[str], frozenset[str]]:
    """(ids added, ids removed) from `before` to `after`; memoised because every relation of a probe asks."""
    return _DIFFS.get((before, after), None, lambda: _diff(before, after))


def _diff(before: Corpus, after: Corpus) -> tuple[frozenset[str], frozenset[str]]:
    derived = derivation(before, after)
    if derived is not None:
        return derived.added, derived.removed
    return frozenset(after.id_keys() - before.id_keys()), frozenset(before.id_keys() - after.id_keys())
