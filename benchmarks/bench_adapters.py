"""Benchmark: one-chunk add/remove deltas versus a full re-index, for BM25Retriever and DenseRetriever.

Run: python benchmarks/bench_adapters.py [--sizes 1000,100000] [--repeats 15]

Targets: a delta at 100k chunks costs <= 2x a delta at 1k (it does not grow with the corpus), and >= 20x less
than re-indexing 100k chunks. The dense re-index runs with a warm embedding cache (no text is embedded again),
the strictest baseline, since that is how the runner re-indexes perturbed corpora.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from ragmorph.adapters import BM25Retriever, CachedEmbedder, DenseRetriever, HashingEmbedder
from ragmorph.model import Chunk, Corpus


def synthetic_corpus(size: int, *, seed: int = 0, words_per_chunk: int = 30, vocabulary: int = 20000) -> Corpus:
    """Chunks of Zipf-distributed words from a seeded vocabulary (fast, deterministic, realistic df skew)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(vocabulary)])
    ranks = np.minimum(rng.zipf(1.2, size=(size, words_per_chunk)), vocabulary) - 1
    return Corpus(Chunk(f"d{i}", " ".join(words[row])) for i, row in enumerate(ranks))


def median_ms(action: Callable[[int], None], repeats: int) -> float:
    """Median wall time of `action(i)` over `repeats` runs, in milliseconds."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        action(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(name: str, build: Callable[[Corpus], object], corpus: Corpus, repeats: int) -> dict[str, float]:
    """Median add and remove time of one chunk on an index of `corpus`, plus one query for scale."""
    retriever = build(corpus)
    extra = [Chunk(f"new{i}", f"w1 w7 w{100 + i} fresh words number {i}") for i in range(repeats)]

    def add(i: int) -> None:
        retriever.add([extra[i]])  # type: ignore[attr-defined]

    def remove(i: int) -> None:
        retriever.remove([corpus.chunks[i * 7].id])  # type: ignore[attr-defined]

    added = median_ms(add, repeats)
    removed = median_ms(remove, repeats)
    query = median_ms(lambda i: retriever.retrieve("w1 w7 w42", k=10), 5)  # type: ignore[attr-defined]
    return {"add": added, "remove": removed, "query": query}


def main() -> None:
    """Print the table and the ratios against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    small, large = (int(s) for s in args.sizes.split(","))
    corpora = {size: synthetic_corpus(size) for size in (small, large)}
    embedder = CachedEmbedder(HashingEmbedder(256))
    builders: dict[str, Callable[[Corpus], object]] = {
        "BM25Retriever": BM25Retriever,
        "DenseRetriever": lambda corpus: DenseRetriever(corpus, embedder=embedder),
    }
    print(f"{'retriever':<16}{'op':<8}{f'delta@{small}':>14}{f'delta@{large}':>14}{f'reindex@{large}':>16}"
          f"{'large/small':>13}{'reindex/delta':>15}  targets: <=2x, >=20x")
    for name, build in builders.items():
        build(corpora[large])  # warm the embedding cache so the re-index below embeds nothing
        start = time.perf_counter()
        build(corpora[large].with_chunks([Chunk("one-more", "w1 w2 w3")]))
        reindex = (time.perf_counter() - start) * 1000
        figures = {size: measure(name, build, corpora[size], args.repeats) for size in (small, large)}
        for op in ("add", "remove"):
            a, b = figures[small][op], figures[large][op]
            growth, saving = b / a, reindex / b
            verdict = "ok" if growth <= 2 and saving >= 20 else "MISSED"
            print(f"{name:<16}{op:<8}{a:>12.3f}ms{b:>12.3f}ms{reindex:>14.1f}ms{growth:>12.2f}x{saving:>14.0f}x  {verdict}")
        print(f"{name:<16}{'query':<8}{figures[small]['query']:>12.3f}ms{figures[large]['query']:>12.3f}ms")


if __name__ == "__main__":
    main()
