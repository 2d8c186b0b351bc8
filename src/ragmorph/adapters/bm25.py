"""Okapi BM25 over a ragmorph corpus, with deltas exactly equal to a re-index; and a bm25s-backed factory.

Score of chunk d for query q (a query term repeated m times counts m times, as in Lucene and bm25s; terms are
summed in order of first appearance)::

    score(d, q) = sum over t in q of  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))          (Lucene's idf: never negative)

This is Lucene's BM25 (and bm25s' "lucene" method): classic Okapi multiplies every term by the constant
(k1 + 1), which changes no ranking, so Lucene >= 8 dropped it and so do we; scores then agree with bm25s.

N, df, |d| (in tokens) and avgdl = total tokens / N are computed at query time from integer counts over the
*current* chunks, so after any add/remove the rankings and the scores are bit-for-bit those of a fresh index of
the edited corpus. Only chunks sharing at least one term with the query are returned (score > 0): returning
zero-score chunks would append one huge, arbitrary tie to every ranking. Ties are broken by corpus position.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters, Hit
from ._index import GrowableArray, SlotIndex, top_slots
from ._text import default_tokenize

__all__ = ["BM25Retriever", "BM25sRetriever", "Tokenizer"]

Tokenizer = Callable[[str], Sequence[str]]


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise UsageError(f"expected a positive integer k, got k={describe(k)}")
    return k


class _Posting:
    """Slots containing one term and the term's frequency in each, in ascending slot order."""

    __slots__ = ("slots", "tfs")

    def __init__(self, slots: np.ndarray, tfs: np.ndarray) -> None:
        self.slots = GrowableArray.holding(slots)
        self.tfs = GrowableArray.holding(tfs)


# Every term any index of this process has seen, numbered in order of first sight (a term's number is the same in
# every index, so a text's counts are computed once and shared).
_NUMBERS: dict[str, int] = {}
_NUMBERING = threading.Lock()


class _Counted:
    """A text's term counts (read only): parallel arrays of term numbers (see _NUMBERS) and frequencies, first seen
    first, and the text's length in tokens. About 0.7 kB for a 45-term chunk."""

    __slots__ = ("length", "terms", "tfs")

    def __init__(self, tokens: Sequence[str]) -> None:
        counts = Counter(tokens)
        self.length = sum(counts.values())
        with _NUMBERING:
            for term in counts:
                if term not in _NUMBERS:
                    _NUMBERS[term] = len(_NUMBERS)
            self.terms = np.fromiter(map(_NUMBERS.__getitem__, counts), dtype=np.int32, count=len(counts))
        self.tfs = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))


@functools.lru_cache(maxsize=1 << 15)
def _default_counted(text: str) -> _Counted:
    """The default tokenizer's counts of `text`, remembered: counting was most of a build's time, and the runner
    builds many indexes of nearly the same chunks (one per perturbed corpus). Bounded: about 25 MB when full."""
    return _Counted(default_tokenize(text))


class BM25Retriever(SlotIndex):
    """Okapi BM25 with numpy postings; a factory (the constructor takes the corpus) supporting add/remove.

    A one-chunk delta costs O(tokens of that chunk); removal tombstones the chunk, and queries skip tombstones.
    """

    # Promises to the runner (true for the default casefolding word tokenizer; a subclass with another
    # tokenizer should restate them): `lexical`, a chunk sharing no token with the query scores 0;
    # `normalising`, case, whitespace and ASCII punctuation edits of the query change nothing.
    ragmorph_traits: tuple[str, ...] = ("lexical", "normalising")

    def __init__(
        self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75, tokenizer: Tokenizer | None = None
    ) -> None:
        if isinstance(k1, bool) or not isinstance(k1, (int, float)) or not k1 >= 0 or not math.isfinite(k1):
            raise UsageError(f"expected k1 >= 0, got k1={describe(k1)}")
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 <= b <= 1:
            raise UsageError(f"expected 0 <= b <= 1, got b={describe(b)}")
        if tokenizer is not None and not callable(tokenizer):
            raise UsageError(f"expected a callable tokenizer(text) -> tokens, got tokenizer={describe(tokenizer)}")
        super().__init__(corpus)
        self.k1 = float(k1)
        self.b = float(b)
        self.tokenize: Tokenizer = tokenizer or default_tokenize
        # Postings and document frequencies by term number (see _NUMBERS). The first add into an empty index (the
        # build) keeps its postings as ranges of two sorted arrays, `_bulk`, and a term gets a _Posting of its own
        # only when a query, a delta or a rollback first needs it: a build makes no Python object per term.
        self._postings: dict[int, _Posting] = {}
        self._bulk: dict[int, tuple[int, int]] = {}
        self._bulk_owners = np.zeros(0, dtype=np.int32)
        self._bulk_tfs = np.zeros(0, dtype=np.int32)
        self._df: dict[int, int] = {}
        self._lengths = GrowableArray(np.int64)
        self._total_length = 0
        self._append(corpus.chunks)
        self._corpus_cache = corpus

    def __repr__(self) -> str:
        return f"BM25Retriever(<{len(self)} chunks>, k1={self.k1}, b={self.b})"

    def __getstate__(self) -> dict[str, object]:
        # Term numbers are this process's (_NUMBERS): a copy unpickled in another one (a --jobs or Ray worker)
        # finds its terms by name and numbers them there.
        with self._lock:  # a query may be turning a build range into a posting (`_posting`) meanwhile
            state = super().__getstate__()
            for name in ("_postings", "_bulk", "_df"):
                state[name] = dict(state[name])  # type: ignore[call-overload]
        used = state["_postings"].keys() | state["_bulk"].keys()  # type: ignore[attr-defined]
        with _NUMBERING:
            state["_terms"] = {number: term for term, number in _NUMBERS.items() if number in used}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        terms: dict[int, str] = state.pop("_terms")  # type: ignore[assignment]
        with _NUMBERING:
            local = {number: _NUMBERS.setdefault(term, len(_NUMBERS)) for number, term in terms.items()}
        for name in ("_postings", "_bulk", "_df"):
            state[name] = {local[number]: value for number, value in state[name].items()}  # type: ignore[attr-defined]
        super().__setstate__(state)

    def _counted(self, chunk: Chunk) -> _Counted:
        # Shared and read only: with the default tokenizer, every index holding this text gets the same record.
        if self.tokenize is default_tokenize:
            return _default_counted(chunk.text)
        return _Counted(self.tokenize(chunk.text))

    def _posting(self, number: int) -> _Posting | None:
        """The posting of term `number` (made from the build's ranges on first need), None when no slot has it."""
        posting = self._postings.get(number)
        if posting is None:
            span = self._bulk.pop(number, None)
            if span is None:
                return None
            start, end = span
            posting = self._postings[number] = _Posting(self._bulk_owners[start:end], self._bulk_tfs[start:end])
        return posting

    def _on_add(self, slots: range, chunks: Sequence[Chunk]) -> None:
        # Tokenise everything before touching the index so a failing tokenizer leaves it unchanged.
        counted = [self._counted(chunk) for chunk in chunks]
        if not counted:
            return
        lengths = np.fromiter((c.length for c in counted), dtype=np.int64, count=len(counted))
        # Every (slot, term) pair at once, grouped by term with each term's slots ascending (the postings, and so
        # every score, are those a chunk-by-chunk build gives): sorted by the unique key (term, pair position),
        # which is what a stable sort by term gives, at a fraction of its cost.
        terms = np.concatenate([c.terms for c in counted])
        tfs = np.concatenate([c.tfs for c in counted])
        owners = np.repeat(np.asarray(slots, dtype=np.int32), [len(c.terms) for c in counted])
        pairs = len(terms)
        keys = np.sort(terms.astype(np.int64) * pairs + np.arange(pairs, dtype=np.int64))
        order = keys % pairs
        terms, tfs, owners = keys // pairs, tfs[order], owners[order]
        starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1]))) if pairs else terms
        ends = np.append(starts[1:], pairs)
        self._lengths.extend(lengths)
        self._total_length += int(lengths.sum())
        numbers, counts = terms[starts].tolist(), (ends - starts).tolist()
        if not self._postings and not self._bulk:
            # Nothing indexed yet (the build): each term's posting is a range of the sorted arrays.
            self._bulk_owners, self._bulk_tfs = owners, tfs
            self._bulk = dict(zip(numbers, zip(starts.tolist(), ends.tolist())))
            self._df = dict(zip(numbers, counts))
            return
        for number, start, end, count in zip(numbers, starts.tolist(), ends.tolist(), counts):
            posting = self._posting(number)
            if posting is None:
                self._postings[number] = _Posting(owners[start:end], tfs[start:end])
            else:
                posting.slots.extend(owners[start:end])
                posting.tfs.extend(tfs[start:end])
            self._df[number] = self._df.get(number, 0) + count

    def _on_remove(self, slot: int, chunk: Chunk) -> None:
        for number in self._counted(chunk).terms.tolist():
            self._df[number] -= 1
            if not self._df[number]:
                del self._df[number]
        self._total_length -= int(self._lengths.view[slot])

    def _on_revive(self, slot: int, chunk: Chunk) -> None:
        for number in self._counted(chunk).terms.tolist():
            self._df[number] = self._df.get(number, 0) + 1
        self._total_length += int(self._lengths.view[slot])

    def _on_truncate(self, slot: int, chunk: Chunk) -> None:
        for number in self._counted(chunk).terms.tolist():
            posting = self._posting(number)
            assert posting is not None  # the slot being truncated holds the term
            # Rollback truncates newest slot first, so this slot's entry is the last of each of its postings.
            posting.slots.truncate(posting.slots.size - 1)
            posting.tfs.truncate(posting.tfs.size - 1)
            if not posting.slots.size:
                del self._postings[number]
        self._lengths.truncate(slot)

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """BM25 score of every slot for `query`, and the ascending live slots that match at least one term."""
        with self._lock:
            slot_count = len(self._chunks)
            scores = np.zeros(slot_count, dtype=np.float64)
            matched = np.zeros(slot_count, dtype=np.bool_)
            live = len(self._slot_of)
            if not live or not self._total_length:
                return scores, np.zeros(0, dtype=np.int64)
            average_length = self._total_length / live
            lengths = self._lengths.view
            for term, repeats in Counter(self.tokenize(query)).items():
                number = _NUMBERS.get(term)
                df = 0 if number is None else self._df.get(number, 0)
                if not df:
                    continue
                idf = math.log(1.0 + (live - df + 0.5) / (df + 0.5))
                posting = self._posting(number)  # type: ignore[arg-type]
                assert posting is not None  # df > 0: some slot holds the term
                slots = posting.slots.view
                tf = posting.tfs.view.astype(np.float64)
                norm = self.k1 * (1.0 - self.b + self.b * lengths[slots] / average_length)
                scores[slots] += repeats * (idf * tf / (tf + norm))
                matched[slots] = True
            return scores, np.flatnonzero(matched & self._alive.view)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The top `k` matching chunks allowed by `filters`, best first, ties by corpus position."""
        _check_k(k)
        with self._lock:
            scores, candidates = self.scores(query)
            chosen = top_slots(scores, candidates, k, self._accept(filters))
            return [Hit(self._chunks[slot].id, float(scores[slot])) for slot in chosen]


class BM25sRetriever:
    """BM25 by the `bm25s` package (numpy backend, Lucene variant): a fresh-index-only factory.

    It has no add/remove, so every corpus perturbation builds a new index. Filters are applied as a weight mask
    before truncation; like BM25Retriever it returns only chunks with a positive score. Needs `ragmorph[bm25s]`.
    """

    def __init__(
        self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75, tokenizer: Tokenizer | None = None
    ) -> None:
        try:
            import bm25s
        except ImportError as error:
            raise UsageError(
                "expected the package bm25s for BM25sRetriever, got ImportError; install `ragmorph[bm25s]`"
            ) from error
        if not isinstance(corpus, Corpus):
            raise UsageError(f"expected a ragmorph Corpus, got corpus={describe(corpus)}")
        self.corpus = corpus
        self.tokenize: Tokenizer = tokenizer or default_tokenize
        # backend="numpy" explicitly: with numba installed, bm25s would otherwise compile for seconds on first use.
        self._model = bm25s.BM25(k1=k1, b=b, method="lucene", backend="numpy")
        tokens = [list(self.tokenize(c.text)) for c in corpus]
        # bm25s cannot index a corpus without a single token (it divides by the average length), so nothing matches.
        self._empty = not any(tokens)
        if not self._empty:
            self._model.index(tokens, show_progress=False)

    def __repr__(self) -> str:
        return f"BM25sRetriever(<{len(self.corpus)} chunks>)"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The top `k` chunks with a positive bm25s score allowed by `filters`, best first."""
        _check_k(k)
        tokens = list(self.tokenize(query))
        if self._empty or not tokens:
            return []
        chunks = self.corpus.chunks
        mask = None
        if filters is not None and not filters.is_empty:
            mask = np.fromiter((filters.allows(c) for c in chunks), dtype=np.float32, count=len(chunks))
        ids, scores = self._model.retrieve(
            [tokens], k=min(k, len(chunks)), show_progress=False, n_threads=1, weight_mask=mask
        )
        hits = [
            Hit(chunks[int(position)].id, float(score)) for position, score in zip(ids[0], scores[0]) if score > 0
        ]
        return hits
