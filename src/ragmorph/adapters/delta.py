"""applied_delta: the only way the runner edits an index, always reverted in `finally`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import AdapterError, InputError, UsageError, describe, retriever_errors
from ..model import Chunk, Corpus
from .capabilities import display_name

__all__ = ["applied_delta"]


def _retriever_call(action: Callable[[], Any], what: str) -> None:
    with retriever_errors(what):
        action()


def _quietly(action: Callable[[], Any]) -> None:
    try:
        action()
    except Exception:  # the operation may never have happened before a half-finished call failed
        pass


@contextmanager
def applied_delta(
    retriever: Any,
    *,
    add: Sequence[Chunk] = (),
    remove: Sequence[str] = (),
    corpus: Corpus | None = None,
) -> Iterator[Any]:
    """Apply `remove` then `add` to `retriever`, yield it, and revert in `finally` (even when the body fails).

    The edited index equals a fresh index of `corpus.without(remove).with_chunks(add)`. Retrievers with
    `checkpoint()`/`rollback()` (the built-ins) are restored exactly, tie order included, even after a
    half-finished add. Others are reverted by inverse operations, which needs the removed chunks: from `corpus`
    or the retriever's `corpus` attribute; a re-added chunk may then move to the end of their tie order.
    """
    if isinstance(remove, str):
        raise UsageError(f"expected a list of chunk ids to remove, got a single string remove={remove!r}")
    add, remove = tuple(add), tuple(remove)
    if not add and not remove:
        yield retriever
        return
    name = display_name(retriever)
    if not (callable(getattr(retriever, "add", None)) and callable(getattr(retriever, "remove", None))):
        raise UsageError(
            f"expected a retriever with add(chunks) and remove(ids) for a corpus delta, got {name}; "
            "give a factory instead so the runner can build a fresh index"
        )
    if callable(getattr(retriever, "checkpoint", None)) and callable(getattr(retriever, "rollback", None)):
        token = retriever.checkpoint()
        try:
            if remove:
                _retriever_call(lambda: retriever.remove(list(remove)), f"{name}.remove")
            if add:
                _retriever_call(lambda: retriever.add(list(add)), f"{name}.add")
            yield retriever
        finally:
            _retriever_call(lambda: retriever.rollback(token), f"{name}.rollback")
        return

    source = corpus if corpus is not None else getattr(retriever, "corpus", None)
    removed: list[Chunk] = []
    if remove:
        if not isinstance(source, Corpus):
            raise UsageError(
                f"expected the corpus to undo removals on {name} (pass corpus= or give the retriever a `corpus` "
                f"attribute), got corpus={describe(source)}"
            )
        unknown = [i for i in remove if i not in source]
        if unknown:
            raise InputError(f"expected ids present in the corpus to remove, got unknown ids {unknown[:5]}", field="id")
        removed = [source[i] for i in remove]
    removal, addition = "not started", "not started"
    try:
        if remove:
            removal = "started"
            _retriever_call(lambda: retriever.remove(list(remove)), f"{name}.remove")
            removal = "done"
        if add:
            addition = "started"
            _retriever_call(lambda: retriever.add(list(add)), f"{name}.add")
            addition = "done"
        yield retriever
    finally:
        try:
            if addition == "done":
                retriever.remove([c.id for c in add])
            elif addition == "started":
                for chunk in add:
                    _quietly(lambda: retriever.remove([chunk.id]))
            if removal == "done":
                retriever.add(removed)
            elif removal == "started":
                for chunk in removed:
                    _quietly(lambda: retriever.add([chunk]))
        except Exception as error:
            raise AdapterError(
                f"expected to revert the delta on {name}, got {type(error).__name__}: {error}; its index is now in "
                "an unknown state, rebuild it"
            ) from error
