"""A deliberately brute-force, obviously-correct Okapi BM25 retriever: the oracle the bug zoo is built on.

Nothing is cached: every query recomputes document frequencies, idf and the average length from the chunks
currently held, with plain Python loops, so there is no index that could drift from the corpus.

Formula (the same as `ragmorph.adapters.BM25Retriever` and bm25s' "lucene" method: Lucene 8's Okapi BM25)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over the query tokens t (a token repeated m times counts m times) of
                  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * len(d) / avgdl))

(classic Okapi also multiplies each term by the constant k1 + 1, which changes no ranking; Lucene dropped it)

with N the number of chunks held (all of them: filters never change corpus statistics), df(t) the number of
chunks containing t, len(d) the token count of d and avgdl the mean token count. Tokens are casefolded runs
of word characters (`\\w+`). Only chunks with a positive score are returned; filters are applied *before*
the cut to k; ties are broken by position in the corpus (earlier first). `add` appends, `remove` drops, and
the next query sees exactly what a fresh build over the new corpus would see.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence

from ragmorph.model import Chunk, Corpus, Filters, Hit

__all__ = ["ReferenceBM25", "reference_tokenize"]

_WORD = re.compile(r"\w+")


def reference_tokenize(text: str) -> list[str]:
    """Casefolded runs of word characters (written independently of ragmorph's tokenizer, on purpose)."""
    return list(_cached_tokens(text))


@functools.lru_cache(maxsize=65536)
def _cached_tokens(text: str) -> tuple[str, ...]:
    # Tokens are a pure function of the text, so caching them keeps the oracle exact while the zoo runs fast.
    return tuple(_WORD.findall(text.casefold()))


class ReferenceBM25:
    """Okapi BM25 recomputed from scratch on every query; a factory (the class takes the corpus)."""

    # Declared so the runner also judges the relations that hold only for lexical retrievers (a chunk sharing no
    # word with the query scores 0) and for normalising ones (the query is seen only through its casefolded
    # \w+ words, so ASCII case, whitespace and punctuation between words change nothing).
    ragmorph_traits: tuple[str, ...] = ("lexical", "normalising")

    def __init__(
        self,
        corpus: Corpus | Sequence[Chunk],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        tokenizer: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.tokenizer = tokenizer or reference_tokenize
        self.chunks: list[Chunk] = list(corpus)

    def __repr__(self) -> str:
        return f"ReferenceBM25(chunks={len(self.chunks)}, k1={self.k1}, b={self.b})"

    def tokens_of(self, chunk: Chunk) -> list[str]:
        """The tokens BM25 indexes for `chunk` (its text only, never its metadata)."""
        return self.tokenizer(chunk.text)

    def query_tokens(self, query: str) -> list[str]:
        """The tokens BM25 looks up for `query` (the same tokenizer as the chunks)."""
        return self.tokenizer(query)

    def idf(self, term: str) -> float:
        """Lucene idf of `term` over every chunk held."""
        document_frequency = 0
        for chunk in self.chunks:
            if term in self.tokens_of(chunk):
                document_frequency += 1
        total = len(self.chunks)
        return math.log(1.0 + (total - document_frequency + 0.5) / (document_frequency + 0.5))

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every chunk held, in corpus order."""
        query_terms = self.query_tokens(query)
        lengths = [len(self.tokens_of(chunk)) for chunk in self.chunks]
        if not self.chunks:
            return []
        average_length = sum(lengths) / len(lengths)
        idfs = {term: self.idf(term) for term in dict.fromkeys(query_terms)}
        result = []
        for chunk, length in zip(self.chunks, lengths):
            tokens = self.tokens_of(chunk)
            score = 0.0
            for term in query_terms:
                frequency = tokens.count(term)
                if frequency == 0:
                    continue
                # An all-empty corpus has avgdl 0, but then no chunk contains a term and we never get here.
                norm = 1.0 - self.b + self.b * length / average_length
                score += idfs[term] * frequency / (frequency + self.k1 * norm)
            result.append(score)
        return result

    def ranked(self, query: str, filters: Filters | None = None) -> list[tuple[int, Chunk, float]]:
        """Every matching chunk allowed by `filters` as (position, chunk, score), best first, ties by position."""
        rows = [
            (position, chunk, score)
            for position, (chunk, score) in enumerate(zip(self.chunks, self.scores(query)))
            if score > 0.0 and (filters is None or filters.allows(chunk))
        ]
        rows.sort(key=lambda row: (-row[2], row[0]))
        return rows

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The top `k` matching chunks allowed by `filters`, best first."""
        return [Hit(chunk.id, score) for _, chunk, score in self.ranked(query, filters)[:k]]

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Append `chunks` (new ids) to the corpus held; an id it already holds is refused (ValueError), never
        held twice."""
        held = {chunk.id for chunk in self.chunks}
        again = [chunk.id for chunk in chunks if chunk.id in held]
        if again:
            raise ValueError(f"ids already indexed: {again}")
        self.chunks = self.chunks + list(chunks)

    def remove(self, ids: Sequence[str]) -> None:
        """Drop the chunks `ids` from the corpus held."""
        drop = set(ids)
        self.chunks = [chunk for chunk in self.chunks if chunk.id not in drop]
