"""Runner overhead on a 10,000-chunk world with the built-in BM25 retriever.

Prints the time spent inside retriever calls (and index builds, deltas and teardowns) against everything else the
runner does (drawing perturbations, applying them, cache keys, judging, reporting), measured in the same run.
Target: the runner's own share stays under 10%. Freeing a 10,000-chunk index takes ~4 ms; the retriever's
`__del__` frees it inside its own timer (and the line "index teardown" shows how much that was), since the
runner can only drop its reference.

    python benchmarks/bench_runner.py [chunks] [cases]
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Case, Chunk, Corpus, Filters
from ragmorph.runner import check

_SPENT = {"retriever": 0.0, "calls": 0, "teardown": 0.0}


class TimedBM25(BM25Retriever):
    """BM25Retriever whose construction, calls and deltas are timed (time inside the retriever)."""

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        start = time.perf_counter()
        super().__init__(corpus, **kwargs)
        _SPENT["retriever"] += time.perf_counter() - start

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        start = time.perf_counter()
        try:
            return super().retrieve(query, k=k, filters=filters)
        finally:
            _SPENT["retriever"] += time.perf_counter() - start
            _SPENT["calls"] += 1

    def __del__(self) -> None:
        start = time.perf_counter()
        self.__dict__.clear()
        spent = time.perf_counter() - start
        _SPENT["retriever"] += spent
        _SPENT["teardown"] += spent

    def add(self, chunks: Any) -> None:
        start = time.perf_counter()
        super().add(chunks)
        _SPENT["retriever"] += time.perf_counter() - start

    def remove(self, ids: Any) -> None:
        start = time.perf_counter()
        super().remove(ids)
        _SPENT["retriever"] += time.perf_counter() - start

    def checkpoint(self) -> Any:
        start = time.perf_counter()
        try:
            return super().checkpoint()
        finally:
            _SPENT["retriever"] += time.perf_counter() - start

    def rollback(self, token: Any) -> None:
        start = time.perf_counter()
        super().rollback(token)
        _SPENT["retriever"] += time.perf_counter() - start


def world(size: int, cases: int) -> tuple[Corpus, list[Case]]:
    """A seeded synthetic world: `size` chunks of 30 words over 3 tenants, `cases` cases with one gold each.

    Words follow Zipf's law over a 5,000-word vocabulary, as in natural text, so frequent words have long
    posting lists the way real corpora do.
    """
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(5000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    chunks = [
        Chunk(f"c{i}", " ".join(rng.choices(vocab, weights, k=30)), tenant=("acme", "globex", None)[i % 3])
        for i in range(size)
    ]
    picked = rng.sample(range(size), cases)
    queries = [
        Case(f"q{n}", " ".join(chunks[i].text.split()[:4]), tenant=chunks[i].tenant, evidence=[[chunks[i].id]])
        for n, i in enumerate(picked)
    ]
    return Corpus(chunks), queries


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    corpus, cases = world(size, count)
    _ = corpus.fingerprint
    start = time.perf_counter()
    report = check({"bm25": TimedBM25}, corpus, cases, max_examples=25, traits={"bm25": ["lexical", "normalising"]})
    total = time.perf_counter() - start
    inside = _SPENT["retriever"]
    rest = total - inside
    print(f"world: {size} chunks, {count} cases, {len(report.results)} results, exit code {report.exit_code}")
    print(f"retriever calls: {_SPENT['calls']}, index teardown (counted inside the retriever): {_SPENT['teardown']:.2f} s")
    print(f"{'total':>22}: {total:8.2f} s")
    print(f"{'inside the retriever':>22}: {inside:8.2f} s  ({100 * inside / total:5.1f}%)")
    print(f"{'runner overhead':>22}: {rest:8.2f} s  ({100 * rest / total:5.1f}%)  target < 10%")


if __name__ == "__main__":
    main()
