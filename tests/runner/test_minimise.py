"""The corpus minimiser on its own: 1-minimal results, the budget is a hard limit, the same calls every time."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from ragmorph.runner._minimise import Shrunk, minimal_subset

IDS = [f"c{n}" for n in range(12)]


def _needs(*needed: str):
    calls: list[frozenset[str]] = []

    def works(kept: set[str]) -> bool:
        calls.append(frozenset(kept))
        return set(needed) <= kept

    return works, calls


def test_the_result_is_exactly_what_a_monotone_violation_needs_and_one_minimal() -> None:
    works, _ = _needs("c3", "c9")
    shrunk = minimal_subset(IDS, works, budget=100)
    kept, one_minimal = shrunk.kept, shrunk.one_minimal
    assert kept == ["c3", "c9"] and one_minimal
    for chunk_id in kept:
        assert not works(set(kept) - {chunk_id})


@given(needed=st.sets(st.sampled_from(IDS)), order=st.permutations(IDS))
def test_any_needed_set_is_found_in_the_given_order(needed: set[str], order: list[str]) -> None:
    works, _ = _needs(*needed)
    shrunk = minimal_subset(order, works, budget=200)
    kept, one_minimal = shrunk.kept, shrunk.one_minimal
    assert kept == [i for i in order if i in needed] and one_minimal


def test_a_non_monotone_violation_still_ends_one_minimal() -> None:
    # Needs c1, and either c4 or both c6 and c7: the result cannot lose any single id.
    def works(kept: set[str]) -> bool:
        return "c1" in kept and ("c4" in kept or {"c6", "c7"} <= kept)

    shrunk = minimal_subset(IDS, works, budget=100)
    kept, one_minimal = shrunk.kept, shrunk.one_minimal
    assert one_minimal and works(set(kept))
    assert all(not works(set(kept) - {i}) for i in kept)


def test_the_budget_caps_the_calls_and_an_exhausted_budget_is_never_called_one_minimal() -> None:
    works, calls = _needs("c3", "c9")
    shrunk = minimal_subset(IDS, works, budget=4)
    kept, one_minimal = shrunk.kept, shrunk.one_minimal
    assert len(calls) == 4 and not one_minimal
    assert {"c3", "c9"} <= set(kept)
    nothing, calls_none = _needs("c0")
    assert minimal_subset(IDS, nothing, budget=0) == Shrunk(IDS, False, 0, 0) and not calls_none


def test_subsets_given_first_are_tried_first_and_a_working_one_is_the_start() -> None:
    works, calls = _needs("c2")
    shrunk = minimal_subset(IDS, works, budget=50, first=(set(), {"c2", "c5"}))
    kept, one_minimal = shrunk.kept, shrunk.one_minimal
    assert calls[0] == frozenset() and calls[1] == frozenset({"c2", "c5"})
    assert kept == ["c2"] and one_minimal and all(c <= {"c2", "c5"} for c in calls[2:])


def test_the_growing_order_is_asked_for_only_when_no_first_subset_works() -> None:
    asked: list[int] = []

    def order() -> list[str]:
        asked.append(1)
        return list(reversed(IDS))

    works, _ = _needs("c2")
    assert minimal_subset(IDS, works, budget=50, first=(set(), {"c2", "c5"}), grow_order=order).kept == ["c2"]
    assert not asked, "a first subset worked: the order to grow in (a retriever call) was never needed"
    works, calls = _needs("c9", "c11")
    shrunk = minimal_subset(IDS, works, budget=50, first=(set(), {"c2"}), grow_order=order)
    assert asked == [1] and shrunk.kept == ["c11", "c9"] and shrunk.one_minimal
    # Grown in the given order: after the two first subsets, the first ids tried are the order's first.
    assert calls[2] == frozenset({"c2", "c11"})


def test_the_same_predicate_gives_the_same_calls_in_the_same_order() -> None:
    first, first_calls = _needs("c1", "c7", "c8")
    second, second_calls = _needs("c1", "c7", "c8")
    assert minimal_subset(IDS, first, budget=60) == minimal_subset(IDS, second, budget=60)
    assert first_calls == second_calls


def _chaotic(floor: int, calls: list[frozenset[str]] | None = None):
    """A violation like an approximate index's: it needs at least `floor` chunks, and whether a given subset shows
    it is a coin flip (one in three, fixed per subset), as rebuilding an HNSW graph over other chunks is."""

    def works(kept: set[str]) -> bool:
        if calls is not None:
            calls.append(frozenset(kept))
        digest = hashlib.sha256(",".join(sorted(kept)).encode()).digest()
        return len(kept) >= floor and digest[0] % 3 == 0

    return works


MANY = [f"c{n}" for n in range(300)]


@given(needed=st.sets(st.sampled_from(IDS)), floor=st.integers(0, 6))
def test_no_subset_is_ever_asked_twice(needed: set[str], floor: int) -> None:
    calls: list[frozenset[str]] = []

    def works(kept: set[str]) -> bool:
        calls.append(frozenset(kept))
        return set(needed) <= kept or len(kept) >= 12 - floor

    minimal_subset(IDS, works, budget=200, first=(set(), set(needed)), finish=10)
    assert len(calls) == len(set(calls)) and frozenset(IDS) not in calls


def test_a_non_monotone_violation_over_many_chunks_grows_to_a_small_one_minimal_case_within_budget() -> None:
    # Cutting 300 chunks down half by half spends most of the budget on halves that hide it (117 calls, 12 of
    # them repeats, before growth); growing from nothing finds a working start of a few chunks in a handful of
    # calls, and the single-id passes end 1-minimal.
    calls: list[frozenset[str]] = []
    shrunk = minimal_subset(MANY, _chaotic(8, calls), budget=120)
    assert shrunk.one_minimal and 8 <= len(shrunk.kept) <= 12, shrunk
    assert shrunk.calls == len(calls) <= 40
    assert all(not _chaotic(8)(set(shrunk.kept) - {i}) for i in shrunk.kept)


def test_growth_starts_from_the_given_subsets_and_adds_the_other_ids_in_order() -> None:
    calls: list[frozenset[str]] = []

    def works(kept: set[str]) -> bool:
        calls.append(frozenset(kept))
        return len(kept) >= 5

    shrunk = minimal_subset(IDS, works, budget=50, first=(set(), {"c9"}))
    assert calls[:4] == [frozenset(), frozenset({"c9"}), frozenset({"c9", "c0"}), frozenset({"c9", "c0", "c1"})]
    assert calls[4] == frozenset({"c9", "c0", "c1", "c2", "c3"}) and len(shrunk.kept) == 5 and shrunk.one_minimal


def test_finish_extends_the_budget_only_to_try_removing_each_of_a_few_remaining_ids() -> None:
    works, calls = _needs("c3", "c9")
    cut = minimal_subset(IDS, works, budget=8)
    assert not cut.one_minimal and cut.calls == 8 and len(cut.kept) > 2
    works, calls = _needs("c3", "c9")
    finished = minimal_subset(IDS, works, budget=8, finish=len(IDS))
    assert finished.one_minimal and finished.kept == ["c3", "c9"] and finished.budget == 8 + len(IDS)
    assert finished.calls == len(calls) <= finished.budget
    works, calls = _needs("c3", "c9")
    refused = minimal_subset(IDS, works, budget=8, finish=len(cut.kept) - 1)
    assert refused == cut and len(calls) == 8
