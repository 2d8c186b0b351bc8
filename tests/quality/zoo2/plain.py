"""A correct BM25 written the way a user writes an adapter: index once in the factory, apply deltas to it.

This is the base of the second zoo. Unlike `support.reference_bm25.ReferenceBM25`, which recomputes everything
from the chunk list on every query, `PlainBM25` keeps the state a real integration keeps (postings, document
frequencies, token counts, a slot per chunk) and edits it in `add`/`remove`/`update`/`index`, so a bug in that
bookkeeping is a bug in the retriever, exactly as in production code. It declares no traits: a user who runs
`ragmorph run --retriever mymodule:PlainBM25` declares nothing.

Scoring is Lucene's BM25 (the same formula as `ragmorph.adapters.BM25Retriever`)::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score  = sum over query tokens t of idf(t) * tf / (tf + k1 * (1 - b + b * len / avgdl))

Only chunks sharing a token with the query are returned; filters (tenant visibility, `current_only`,
metadata equality) are applied before the cut to k; ties go to the chunk indexed first. `update` re-indexes a
chunk in its slot (it keeps its tie position); `add` of an id already held replaces it the same way (an upsert,
as most stores do); `remove` frees the slot; `index(corpus)` starts over.
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from ragmorph.model import Chunk, Filters, Hit

__all__ = ["PlainBM25", "PlainBM25IgnoresReadd", "PlainBM25TiesByIdDesc", "PlainNFKCBM25", "nfkc_tokenize", "tokenize"]

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Casefolded runs of word characters (what most users write first)."""
    return _WORD.findall(text.casefold())


class PlainBM25:
    """Okapi BM25 over an in-memory inverted index built in the constructor (a factory: it takes the corpus)."""

    def __init__(self, corpus: Iterable[Chunk], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._reset()
        self.add(list(corpus))

    # -- bookkeeping -------------------------------------------------------------------------------------
    def _reset(self) -> None:
        self.chunks: dict[str, Chunk] = {}
        self.slot: dict[str, int] = {}  # id -> insertion number, the tie-break
        self.tf: dict[str, Counter[str]] = {}
        self.length: dict[str, int] = {}
        self.df: Counter[str] = Counter()
        self.postings: defaultdict[str, set[str]] = defaultdict(set)
        self.total_length = 0
        self.next_slot = 0

    def _insert(self, chunk: Chunk, slot: int | None = None) -> None:
        tokens = self.tokens(chunk.text)
        counts = Counter(tokens)
        self.chunks[chunk.id] = chunk
        if slot is None:
            slot, self.next_slot = self.next_slot, self.next_slot + 1
        self.slot[chunk.id] = slot
        self.tf[chunk.id] = counts
        self.length[chunk.id] = len(tokens)
        self.total_length += len(tokens)
        for term in counts:
            self.df[term] += 1
            self.postings[term].add(chunk.id)

    def _delete(self, chunk_id: str) -> int | None:
        """Drop `chunk_id` from every structure; return its slot (None when it was not held)."""
        if chunk_id not in self.chunks:
            return None
        for term in self.tf[chunk_id]:
            self.df[term] -= 1
            if not self.df[term]:
                del self.df[term]
            self.postings[term].discard(chunk_id)
            if not self.postings[term]:
                del self.postings[term]
        self.total_length -= self.length.pop(chunk_id)
        del self.tf[chunk_id], self.chunks[chunk_id]
        return self.slot.pop(chunk_id)

    # -- the protocol ---------------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[str]:
        """Tokens of a chunk's text or of a query."""
        return tokenize(text)

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Index `chunks`; an id already held is replaced in place (upsert)."""
        for chunk in chunks:
            slot = self._delete(chunk.id)
            self._insert(chunk, slot)

    def update(self, chunks: Sequence[Chunk]) -> None:
        """Replace the text and metadata of chunks already held (same ids), keeping their tie position."""
        for chunk in chunks:
            slot = self._delete(chunk.id)
            self._insert(chunk, slot)

    def remove(self, ids: Sequence[str]) -> None:
        """Drop the chunks `ids`."""
        for chunk_id in ids:
            self._delete(chunk_id)

    def index(self, corpus: Iterable[Chunk]) -> None:
        """Re-index this instance over `corpus` (everything held before is dropped)."""
        self._reset()
        self.add(list(corpus))

    def admits(self, chunk: Chunk, filters: Filters | None) -> bool:
        """Whether `chunk` passes `filters` (tenant visibility, current_only, metadata equality)."""
        if filters is None:
            return True
        if filters.tenant is not None and chunk.tenant is not None and chunk.tenant != filters.tenant:
            return False
        if filters.current_only and chunk.superseded_by is not None:
            return False
        return all(key in chunk.metadata and chunk.metadata[key] == value for key, value in filters.metadata.items())

    def idf(self, term: str) -> float:
        """Lucene idf over the chunks held."""
        n, df = len(self.chunks), self.df.get(term, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(self, chunk_id: str, terms: Sequence[str]) -> float:
        """BM25 of one held chunk for the query tokens `terms`."""
        avgdl = self.total_length / len(self.chunks) if self.chunks else 0.0
        counts, length = self.tf[chunk_id], self.length[chunk_id]
        total = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                norm = 1.0 - self.b + self.b * length / avgdl
                total += self.idf(term) * tf / (tf + self.k1 * norm)
        return total

    def candidates(self, terms: Sequence[str]) -> set[str]:
        """Ids of the chunks containing at least one of `terms`."""
        found: set[str] = set()
        for term in dict.fromkeys(terms):
            found |= self.postings.get(term, set())
        return found

    def ranked(self, query: str, filters: Filters | None) -> list[tuple[str, float]]:
        """Every matching chunk admitted by `filters` as (id, score), best first, ties by slot."""
        terms = self.tokens(query)
        rows = [
            (chunk_id, self.score(chunk_id, terms))
            for chunk_id in self.candidates(terms)
            if self.admits(self.chunks[chunk_id], filters)
        ]
        rows.sort(key=lambda row: (-row[1], self.slot[row[0]]))
        return rows

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The top `k` chunks for `query` under `filters`."""
        return [Hit(chunk_id, score) for chunk_id, score in self.ranked(query, filters)[:k]]


class PlainBM25TiesByIdDesc(PlainBM25):
    """`PlainBM25` that breaks score ties by chunk id, last id first (another correct, fixed tie order)."""

    def ranked(self, query: str, filters: Filters | None) -> list[tuple[str, float]]:
        """Matching admitted chunks, best first, ties by descending id."""
        rows = super().ranked(query, filters)
        rows.sort(key=lambda row: row[0], reverse=True)
        rows.sort(key=lambda row: -row[1])  # stable: within a score, the id order above stays
        return rows


class PlainBM25IgnoresReadd(PlainBM25):
    """`PlainBM25` whose `add` of an id it already holds is ignored with a warning, as Chroma's is
    (chroma-core/chroma#1062): another correct answer to an add of an existing id than the upsert."""

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Index the chunks whose ids are new; warn about (and skip) the others."""
        held = [c.id for c in chunks if c.id in self.chunks]
        if held:
            warnings.warn(f"Add of existing embedding ID: {', '.join(held)}", stacklevel=2)
        for chunk in chunks:
            if chunk.id not in self.chunks:
                self._insert(chunk)


def nfkc_tokenize(text: str) -> list[str]:
    """Runs of word characters of the NFKC-normalised, casefolded text."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


class PlainNFKCBM25(PlainBM25):
    """`PlainBM25` over NFKC-casefolded text, chunks and queries alike: it keeps the `unicode_normalising` promise."""

    ragmorph_traits = ("lexical", "unicode_normalising")

    def tokens(self, text: str) -> list[str]:
        """NFKC-casefolded word tokens."""
        return nfkc_tokenize(text)
