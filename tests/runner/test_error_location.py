"""A retriever error says where it was raised: the innermost frame, in the user's code or the library's."""

from __future__ import annotations

import numpy as np

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Corpus, Filters, Hit
from ragmorph.runner import check
from ragmorph.worlds import demo_world


def _normalise(vector: np.ndarray) -> np.ndarray:
    if not vector.any():
        raise ValueError("NaN values found")  # as InMemoryVectorStore says of a zero query vector
    return vector / np.linalg.norm(vector)


class RaisesDeepInside:
    """A retriever whose helper raises on an odd query, several frames below `retrieve`."""

    def __init__(self, corpus: Corpus) -> None:
        self.inner = BM25Retriever(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """BM25, after a normalisation that refuses a query without letters."""
        _normalise(np.array([float(c.isalpha()) for c in query] or [0.0]))
        return list(self.inner.retrieve(query, k=k, filters=filters))


def test_a_retriever_error_names_the_frame_that_raised_it() -> None:
    world = demo_world()
    report = check({"deep": RaisesDeepInside}, world.corpus, world.cases[:2], strategies=["odd_query"])
    errors = [r.reason or "" for r in report.results if r.status == "error"]
    assert errors, [(r.relation, r.status) for r in report.results]
    assert all("ValueError: NaN values found (raised at " in e and "test_error_location.py:" in e
               and " in _normalise)" in e for e in errors), errors
    assert report.exit_code == 3
