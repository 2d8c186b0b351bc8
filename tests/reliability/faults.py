"""Faulty retrievers for the reliability tests: each misbehaves in one way a user's code can.

Every fault is a factory (called with the corpus) so the CLI can load it as `reliability.faults:NAME` and a
replay file can name it. Each wraps the built-in BM25, so apart from its fault the retriever is correct.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ragmorph import Corpus, Filters
from ragmorph.adapters import BM25Retriever


class Faulty:
    """BM25 with `fault(hits, corpus)` applied to every response (the fault may raise, hang or reshape)."""

    def __init__(self, corpus: Corpus, fault: Callable[[list[Any], Corpus], Any]) -> None:
        self.corpus = corpus
        self.inner = BM25Retriever(corpus)
        self.fault = fault

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """The fault applied to BM25's hits."""
        return self.fault(list(self.inner.retrieve(query, k=k, filters=filters)), self.corpus)


class _CustomBaseException(BaseException):
    """A BaseException that is neither SystemExit nor KeyboardInterrupt."""


def _raise(error: BaseException) -> Callable[[list[Any], Corpus], Any]:
    def fault(hits: list[Any], corpus: Corpus) -> Any:
        raise error

    return fault


def _hang(hits: list[Any], corpus: Corpus) -> Any:
    time.sleep(2.0)
    return hits


def _replace_chunks(hits: list[Any], corpus: Corpus) -> Any:
    object.__setattr__(corpus, "chunks", corpus.chunks[:1])
    return hits


def _generator_exits(hits: list[Any], corpus: Corpus) -> Any:
    def lazy() -> Any:
        yield from hits[:1]
        sys.exit(0)

    return lazy()


FAULTS: dict[str, Callable[[list[Any], Corpus], Any]] = {
    "raises": _raise(RuntimeError("index unavailable")),
    "exits_zero": _raise(SystemExit(0)),
    "exits_one": _raise(SystemExit(1)),
    "base_exception": _raise(_CustomBaseException("not an Exception")),
    "generator_exits": _generator_exits,
    "hangs": _hang,
    "returns_set": lambda hits, corpus: {hit.id for hit in hits},
    "returns_dict": lambda hits, corpus: {hit.id: hit.score for hit in hits},
    "bool_scores": lambda hits, corpus: [(hit.id, True) for hit in hits],
    "string_scores": lambda hits, corpus: [(hit.id, str(hit.score)) for hit in hits],
    "returns_none": lambda hits, corpus: None,
    "nan_scores": lambda hits, corpus: [(hit.id, float("nan")) for hit in hits],
    "unknown_ids": lambda hits, corpus: [f"ghost-{n}" for n, _ in enumerate(hits)] or ["ghost-0"],
    "huge_output": lambda hits, corpus: [f"{chunk.id}" for chunk in corpus] + [f"x{n}" for n in range(200_000)],
    "mutates_corpus": _replace_chunks,
}


def _factory(name: str) -> Callable[[Corpus], Faulty]:
    def factory(corpus: Corpus) -> Faulty:
        return Faulty(corpus, FAULTS[name])

    factory.__name__ = name
    return factory


for _name in FAULTS:
    globals()[_name] = _factory(_name)


class PartialOutage(BM25Retriever):
    """Correct BM25, except that queries about resetting raise (one shard is down)."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """BM25's answer, or RuntimeError for a query containing 'reset'."""
        if "reset" in query.lower():
            raise RuntimeError("shard down")
        return super().retrieve(query, k=k, filters=filters)


def mutates_corpus_when_built(corpus: Corpus) -> BM25Retriever:
    """A factory that edits the corpus it was given, then indexes it."""
    built = BM25Retriever(corpus)
    object.__setattr__(corpus, "chunks", corpus.chunks[:1])
    return built


def returns_nothing(corpus: Corpus) -> None:
    """A factory that forgets to return the retriever it built."""
    BM25Retriever(corpus)


def interrupted(corpus: Corpus) -> Faulty:
    """A retriever whose call is interrupted by the user (Ctrl-C)."""
    return Faulty(corpus, _raise(KeyboardInterrupt()))
