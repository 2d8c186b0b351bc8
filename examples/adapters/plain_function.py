"""A plain Python search function as a ragmorph retriever (no library needed).

    ragmorph run --retriever examples/adapters/plain_function.py:factory --corpus ... --cases ...

`factory(corpus)` builds the index; the function takes `(query, k, filters)`, so ragmorph passes filters.
"""

from __future__ import annotations

from ragmorph.adapters import FunctionRetriever
from ragmorph.model import Corpus, Filters


def factory(corpus: Corpus) -> FunctionRetriever:
    """Word-overlap search over `corpus`; ties keep corpus order."""
    indexed = [(chunk, set(chunk.text.lower().split())) for chunk in corpus]

    def search(query: str, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        words = set(query.lower().split())
        scored = [
            (len(words & tokens), position, chunk.id)
            for position, (chunk, tokens) in enumerate(indexed)
            if words & tokens and (filters is None or filters.allows(chunk))
        ]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [(chunk_id, float(overlap)) for overlap, _, chunk_id in scored[:k]]

    return FunctionRetriever(search, name="word_overlap")


if __name__ == "__main__":
    from _demo import show

    show(factory)
