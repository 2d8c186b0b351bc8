"""Derived corpora (without / with_chunks / replaced, built on first read) keep every Corpus law: under threads
at every interleaving of the lazy build, when user code swaps a parent's chunks (object.__setattr__) before the
build, and over generated chains of every derivation (reordered and restricted ones too, past the overlay depth),
read or not, pickled before or after the build, edited and restored."""

from __future__ import annotations

import pickle
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus


def _base(n: int = 12) -> Corpus:
    return Corpus(Chunk(f"c{i}", f"text {i}") for i in range(n))


def _read_paused(corpus: Corpus, pause_at: int, other_done: threading.Event, lines: list[int]) -> Callable[[], Any]:
    """A thread body reading `corpus.chunks` that stops at the `pause_at`-th line it runs of the corpus's lazy build
    (Corpus._origin_chunks) until another thread has read it too (or 0.2 s passed, when that thread waits on it)."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines[0] += 1
            if lines[0] == pause_at:
                other_done.wait(0.2)
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_name == "_origin_chunks" and frame.f_locals.get("self") is corpus:
            return local
        return None

    def body() -> Any:
        sys.settrace(tracer)
        try:
            return corpus.chunks
        finally:
            sys.settrace(None)

    return body


@pytest.mark.parametrize("derive", ["without", "with_chunks", "replaced", "chain"])
def test_two_threads_reading_a_lazy_corpus_get_one_tuple_at_every_interleaving(derive: str) -> None:
    # One thread stops at each line of the build in turn while another reads the same corpus to the end: both get
    # the one published tuple, and none fails (a thread that found the tuple unbuilt, then its recipe already
    # cleared by the other, used to fail an assertion).
    make = {
        "without": lambda base: base.without(["c3"]),
        "with_chunks": lambda base: base.with_chunks([Chunk("n", "new")], at=2),
        "replaced": lambda base: base.replaced(Chunk("c4", "changed")),
        "chain": lambda base: base.without(["c1"]).with_chunks([Chunk("n", "new")]).replaced(Chunk("c2", "x")),
    }[derive]
    expected = make(_base()).chunks
    pause_at = 1
    while True:
        derived = make(_base())
        done, lines, results, errors = threading.Event(), [0], {}, []

        def run(body: Callable[[], Any] = _read_paused(derived, pause_at, done, lines)) -> None:
            try:
                results["paused"] = body()
            except BaseException as error:  # noqa: BLE001 - the failure is what the test reports
                errors.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 5
        while thread.is_alive() and lines[0] < pause_at and time.monotonic() < deadline:
            time.sleep(0.0005)
        results["other"] = derived.chunks
        done.set()
        thread.join(60)
        assert not thread.is_alive()
        assert not errors, f"stopped at line {pause_at} of the build: {errors[0]!r}"
        assert results["paused"] is results["other"] is derived.chunks
        assert derived.chunks == expected and not derived.restore_if_changed()
        if lines[0] < pause_at:
            break  # the paused thread ran fewer lines than this: every line was tried
        pause_at += 1


def _derivations(base: Corpus) -> dict[str, tuple[Corpus, list[str]]]:
    """Corpora derived from `base` (not built yet), and the ids each must hold, in order."""
    ids = list(base.ids)
    return {
        "without": (base.without(["c1", "c5"]), [i for i in ids if i not in ("c1", "c5")]),
        "with_chunks": (base.with_chunks([Chunk("n", "new")], at=3), [*ids[:3], "n", *ids[3:]]),
        "replaced": (base.replaced(Chunk("c2", "changed")), ids),
        "three_levels": (
            base.replaced(Chunk("c2", "changed")).without(["c0"]).with_chunks([Chunk("n", "new")]),
            [*ids[1:], "n"],
        ),
    }


@pytest.mark.parametrize("kind", ["without", "with_chunks", "replaced", "three_levels"])
def test_a_corpus_built_while_its_parent_is_edited_holds_what_it_was_derived_from(kind: str) -> None:
    # A retriever swaps the chunks of the corpus it was given (the guard restores them after the call); a corpus
    # derived from it before, built during the edit (this call, or another thread's), must not keep the edit: no
    # restore_if_changed would ever undo it.
    base = _base()
    derived, ids = _derivations(base)[kind]
    originals = {c.id: c for c in base.chunks}
    object.__setattr__(base, "chunks", (Chunk("evil", "edited"),))
    built = derived.chunks
    assert base.restore_if_changed()
    assert [c.id for c in built] == ids == [c.id for c in derived.chunks] and not derived.restore_if_changed()
    assert all(c == originals[c.id] for c in derived.chunks if c.id in originals and not (kind != "without" and c.id == "c2"))
    assert derived == Corpus(list(_derivations(_base())[kind][0]))


@pytest.mark.parametrize("edit", ["copies", "fewer"])
def test_a_few_removals_from_a_large_unindexed_parent_are_cut_from_its_own_chunks_during_an_edit(edit: str) -> None:
    # Few removals from a large corpus are cut around their positions; a parent without an id index of its own
    # (derived, lookups through the delta) found them by looking the chunks up, which read the swapped-in chunks:
    # copies of them matched nothing in the parent's own tuple (the "removed" chunks stayed, for good), and fewer
    # chunks failed the lookup (CorpusChanged raised in whichever call first read the corpus).
    import attrs

    base = _base(200)
    derived = base.with_chunks([Chunk("n", "new")]).without(["c1", "c150"])
    expected = [c.id for c in base.chunks if c.id not in ("c1", "c150")] + ["n"]
    swapped = tuple(attrs.evolve(c, text="edited") for c in base.chunks) if edit == "copies" else base.chunks[:1]
    object.__setattr__(base, "chunks", swapped)
    try:
        built = [c.id for c in derived.chunks]
    finally:
        assert base.restore_if_changed()
    assert built == expected == [c.id for c in derived.chunks] and len(derived) == len(expected)
    assert not derived.restore_if_changed() and derived == Corpus(list(derived))


@pytest.mark.parametrize("built", [False, True])
@pytest.mark.parametrize("make", [lambda base: base, lambda base: base.without(["c1"]), lambda base: base.reordered([1, 0, 2, 3])])
def test_chunks_swapped_for_none_are_seen_and_restored(make: Any, built: bool) -> None:
    # The guard restores every corpus a call could see and reports the edit: None is an edit like any other (an
    # unbuilt corpus's tuple is None too, but that is not what it holds).
    corpus, twin = make(_base(4)), make(_base(4))
    if built:
        corpus.chunks
    object.__setattr__(corpus, "chunks", None)
    assert corpus.restore_if_changed() and not corpus.restore_if_changed()
    assert corpus.chunks == twin.chunks and corpus == twin


@pytest.mark.parametrize("make", [lambda base: base.reordered([4, 3, 2, 1, 0]), lambda base: base.restricted({"c1", "c3"})])
def test_what_a_corpus_remembers_is_of_its_own_chunks_even_when_first_asked_during_an_edit(make: Any) -> None:
    # The id index and the fingerprint are built on first use and kept; first asked while user code has swapped the
    # chunks, they described the edit for the corpus's life (a chunk it holds then read as absent).
    corpus, twin = make(_base(5)), make(_base(5))
    object.__setattr__(corpus, "chunks", (Chunk("evil", "edited"),))
    assert corpus.get("evil") is None
    fingerprint = corpus.fingerprint
    assert corpus.restore_if_changed()
    assert fingerprint == corpus.fingerprint == twin.fingerprint
    assert [corpus.get(c.id) for c in twin] == list(twin.chunks) and corpus.missing(["c1", "evil"]) == {"evil"}


def test_equality_with_an_edited_corpus_compares_what_it_holds_now() -> None:
    # The recipes tell how a derived corpus differs from its parent's own chunks; a parent whose chunks were swapped
    # behind the frozen class's back holds others, so equality must compare the chunks.
    base = _base(4)
    replaced = base.replaced(Chunk("c0", "changed"))
    object.__setattr__(base, "chunks", (Chunk("c0", "changed"), Chunk("x", "1"), Chunk("y", "2"), Chunk("z", "3")))
    try:
        assert (replaced == base) == (replaced.chunks == base.chunks) == (base == replaced)
    finally:
        base.restore_if_changed()
    assert replaced != base and replaced == Corpus(list(replaced))


# One step of a chain: (operation, a number choosing ids/positions, read the tuple after it, pickle after it).
_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["without", "without2", "insert", "append", "replace", "same", "reorder", "restrict"]),
        st.integers(0, 50),
        st.booleans(),
        st.booleans(),
    ),
    max_size=24,
)


def _apply(op: str, n: int, corpus: Corpus, plain: list[Chunk], fresh: int) -> tuple[Corpus, list[Chunk]] | None:
    """The step on the corpus and on a plain list (None when it does not apply)."""
    if op.startswith("without") and len(plain) > 2:
        drop = {plain[n % len(plain)].id} | ({plain[(n * 7 + 1) % len(plain)].id} if op == "without2" else set())
        return corpus.without(drop), [c for c in plain if c.id not in drop]
    if op == "insert":
        at = n % (len(plain) + 1)
        new = Chunk(f"new{fresh}", f"added {n}")
        return corpus.with_chunks([new], at=at), [*plain[:at], new, *plain[at:]]
    if op == "append":
        new = [Chunk(f"new{fresh}", "appended"), Chunk(f"more{fresh}", "appended")]
        return corpus.with_chunks(new), [*plain, *new]
    if op in ("replace", "same") and plain:
        old = plain[n % len(plain)]
        new = old if op == "same" else Chunk(old.id, f"replaced {n}", tenant="t" if n % 2 else None)
        return corpus.replaced(new), [new if c.id == old.id else c for c in plain]
    if op == "reorder" and len(plain) > 1:
        order = [*range(1, len(plain)), 0] if n % 2 else list(reversed(range(len(plain))))
        return corpus.reordered(order), [plain[i] for i in order]
    if op == "restrict" and len(plain) > 2:
        keep = {c.id for position, c in enumerate(plain) if (position + n) % 3}
        return corpus.restricted(keep), [c for c in plain if c.id in keep]
    return None


@settings(max_examples=120, deadline=None)
@given(size=st.one_of(st.integers(1, 8), st.integers(65, 140)), steps=_STEPS, data=st.data())  # large: cut by positions
def test_derived_corpora_of_any_depth_and_mix_keep_every_corpus_law(size: int, steps: list[Any], data: st.DataObject) -> None:
    base = _base(size)
    corpus, plain = base, list(base.chunks)
    chain: list[tuple[Corpus, list[Chunk]]] = [(base, plain)]
    for fresh, (op, n, read, pickled) in enumerate(steps):
        step = _apply(op, n, corpus, plain, fresh)
        if step is None:
            continue
        corpus, plain = step
        assert len(corpus) == len(plain)
        if pickled:
            # A --jobs worker gets corpora pickled before or after their tuple is built.
            copied = pickle.loads(pickle.dumps(corpus))
            assert list(copied) == plain and not copied.restore_if_changed() and copied == corpus
        if read:
            assert corpus.chunks == tuple(plain)
        chain.append((corpus, plain))
    # Edits behind the frozen class's back, on some corpora of the chain (before or after their build), are seen
    # and undone; the other corpora, built meanwhile, are not affected.
    edited = data.draw(st.sets(st.integers(0, len(chain) - 1), max_size=3))
    for number in sorted(edited):
        object.__setattr__(chain[number][0], "chunks", (Chunk("evil", "edited"),))
    for number, (derived, held) in enumerate(chain):
        if number not in edited:
            assert derived.chunks == tuple(held)
    for number in sorted(edited):
        assert chain[number][0].restore_if_changed() and not chain[number][0].restore_if_changed()
    ids = [c.id for c in base.chunks] + [f"new{i}" for i in range(len(steps))] + ["none"]
    for derived, held in chain:
        held_ids = [c.id for c in held]
        assert derived.chunks == tuple(held) and list(derived) == held and len(derived) == len(held)
        assert derived.ids == tuple(held_ids) and set(derived.id_keys()) == set(held_ids)
        assert [derived.get(i) for i in ids] == [next((c for c in held if c.id == i), None) for i in ids]
        assert [i in derived for i in ids] == [i in held_ids for i in ids]
        assert derived.missing(ids) == set(ids) - set(held_ids)
        # A few ids (looked up in the id index) and every id (checked against the corpus's id set) alike.
        assert derived.missing([*ids[:2], "none"]) == {*ids[:2], "none"} - set(held_ids)
        assert [derived.position(i) for i in held_ids] == list(range(len(held)))
        assert derived.fingerprint == Corpus(held).fingerprint and hash(derived) == hash(Corpus(held))
        for other, other_held in chain:
            assert (derived == other) == (held == other_held) == (other == derived)
        copied = pickle.loads(pickle.dumps(derived))
        assert copied.chunks == tuple(held) and copied == derived and not copied.restore_if_changed()


@pytest.mark.parametrize("read_every", [0, 1, 2, 3, 8, 9, 10, 17])
def test_a_chain_of_derived_corpora_keeps_a_bounded_number_of_ancestors_alive(read_every: int) -> None:
    # A corpus keeps its parent for lookups (up to the overlay depth) and, until its tuple is built, to build it
    # (up to as many unbuilt corpora in a row): however long the chain and whichever tuples were read, a few.
    import weakref

    corpus = _base(30)
    alive, most = [], 0
    for step in range(200):
        if step % 3 == 0:
            corpus = corpus.with_chunks([Chunk(f"n{step}", "new")], at=step % 7)
        elif step % 3 == 1:
            corpus = corpus.replaced(Chunk(f"c{step % 30}", f"changed {step}"))
        else:
            corpus = corpus.without([f"n{step - 2}"])
        if read_every and step % read_every == 0:
            corpus.chunks
        alive.append(weakref.ref(corpus))
        most = max(most, sum(ref() is not None for ref in alive))
    assert 8 <= most <= 2 * 8 + 2
