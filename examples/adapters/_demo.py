"""Shared `__main__` helper of the adapter examples: build over the example corpus and print the top hits.

Usage: python examples/adapters/<example>.py [corpus.jsonl] [query]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from ragmorph.adapters import normalise_hits
from ragmorph.io import read_corpus
from ragmorph.model import Corpus

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"


def load_corpus() -> Corpus:
    """The corpus named on the command line, else examples/data/corpus.jsonl."""
    return read_corpus(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_CORPUS)


def show(build: Callable[[Corpus], Any], corpus: Corpus | None = None, k: int = 3) -> None:
    """Build a retriever over the corpus and print its top `k` hits for the query (default: the first chunk's words)."""
    corpus = corpus if corpus is not None else load_corpus()
    query = sys.argv[2] if len(sys.argv) > 2 else " ".join(corpus.chunks[0].text.split()[:5])
    retriever = build(corpus)
    print(f"query: {query!r} over {len(corpus)} chunks with {retriever!r}")
    for rank, hit in enumerate(normalise_hits(retriever.retrieve(query, k=k), query=query), start=1):
        score = "-" if hit.score is None else f"{hit.score:.4f}"
        print(f"{rank}. {hit.id}  score={score}  {corpus[hit.id].text[:60]!r}")
