"""applied_delta reverts in `finally`: after a failing body, a failing add, and for retrievers without rollback."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragmorph.adapters import BM25Retriever, DenseRetriever, applied_delta
from ragmorph.errors import AdapterError, RetrieverFailed, UsageError
from ragmorph.model import Chunk, Corpus, Filters, Hit

CORPUS = Corpus(
    [Chunk("a", "leave policy acme"), Chunk("b", "leave tax"), Chunk("c", "bonus date"), Chunk("d", "leave")]
)
NEW = (Chunk("x", "leave leave policy"), Chunk("y", "tax bonus"))
QUERIES = ("leave", "tax bonus", "policy date")


def rankings(retriever: object) -> list[object]:
    return [retriever.retrieve(q, k=10) for q in QUERIES]  # type: ignore[attr-defined]


class FailingAdd(BM25Retriever):
    """Indexes the first chunk of a batch, then fails: the index is left half-edited."""

    def add(self, chunks: Sequence[Chunk]) -> None:
        chunks = list(chunks)
        super().add(chunks[:1])
        raise OSError("disk full")


@pytest.mark.parametrize("factory", [BM25Retriever, DenseRetriever])
def test_body_failure_reverts_to_a_fresh_build(factory: type) -> None:
    retriever = factory(CORPUS)
    with pytest.raises(ZeroDivisionError):
        with applied_delta(retriever, add=NEW, remove=["a", "c"]):
            assert rankings(retriever) == rankings(factory(CORPUS.without(["a", "c"]).with_chunks(NEW)))
            1 / 0
    assert rankings(retriever) == rankings(factory(CORPUS))
    assert retriever.corpus == CORPUS


def test_failure_half_way_through_add_reverts() -> None:
    retriever = FailingAdd(CORPUS)
    with pytest.raises(RetrieverFailed, match="disk full") as caught:
        with applied_delta(retriever, add=NEW, remove=["b"]):
            pytest.fail("the body must not run when the delta could not be applied")
    assert isinstance(caught.value.__cause__, OSError)
    assert rankings(retriever) == rankings(BM25Retriever(CORPUS))


class DictRetriever:
    """A user delta retriever without checkpoint/rollback: substring match, ranked by corpus order."""

    def __init__(self, corpus: Corpus, fail_on: str | None = None) -> None:
        self.chunks = {c.id: c for c in corpus}
        self.fail_on = fail_on

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return [Hit(i) for i, c in self.chunks.items() if query in c.text][:k]

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            if chunk.id == self.fail_on:
                raise RuntimeError(f"cannot add {chunk.id}")
            self.chunks[chunk.id] = chunk

    def remove(self, ids: Sequence[str]) -> None:
        for chunk_id in ids:
            del self.chunks[chunk_id]


def test_inverse_operations_revert_a_retriever_without_rollback() -> None:
    retriever = DictRetriever(CORPUS)
    with pytest.raises(KeyError):
        with applied_delta(retriever, add=NEW, remove=["d"], corpus=CORPUS):
            assert "x" in retriever.chunks and "d" not in retriever.chunks
            raise KeyError("body")
    assert set(retriever.chunks) == set(CORPUS.ids)
    # A half-finished add (x went in, y failed) is undone too.
    failing = DictRetriever(CORPUS, fail_on="y")
    with pytest.raises(RetrieverFailed, match="cannot add y"):
        with applied_delta(failing, add=NEW, corpus=CORPUS):
            pass
    assert set(failing.chunks) == set(CORPUS.ids)


def test_removal_without_a_corpus_to_restore_from_is_refused_up_front() -> None:
    retriever = DictRetriever(CORPUS)
    with pytest.raises(UsageError, match="corpus"):
        with applied_delta(retriever, remove=["a"]):
            pass
    assert set(retriever.chunks) == set(CORPUS.ids)


def test_black_box_and_bad_arguments() -> None:
    class BlackBox:
        def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[str]:
            return []

    with pytest.raises(UsageError, match="factory"):
        with applied_delta(BlackBox(), add=NEW):
            pass
    with pytest.raises(UsageError, match="single string"):
        with applied_delta(BM25Retriever(CORPUS), remove="a"):  # type: ignore[arg-type]
            pass
    with applied_delta(BlackBox()) as same:  # an empty delta needs no capabilities
        assert isinstance(same, BlackBox)


def test_a_failing_revert_is_reported_not_hidden() -> None:
    class NoRemoveBack(DictRetriever):
        def remove(self, ids: Sequence[str]) -> None:
            if "x" in ids:
                raise RuntimeError("remove is broken")
            super().remove(ids)

    with pytest.raises(AdapterError, match="revert the delta"):
        with applied_delta(NoRemoveBack(CORPUS), add=NEW[:1], corpus=CORPUS):
            pass
