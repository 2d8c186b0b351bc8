"""The corpus minimiser on its own: 1-minimal results, the budget is a hard limit, the same calls every time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragmorph.runner._minimise import minimal_subset

IDS = [f"c{n}" for n in range(12)]


def _needs(*needed: str):
    calls: list[frozenset[str]] = []

    def works(kept: set[str]) -> bool:
        calls.append(frozenset(kept))
        return set(needed) <= kept

    return works, calls


def test_the_result_is_exactly_what_a_monotone_violation_needs_and_one_minimal() -> None:
    works, _ = _needs("c3", "c9")
    kept, one_minimal = minimal_subset(IDS, works, budget=100)
    assert kept == ["c3", "c9"] and one_minimal
    for chunk_id in kept:
        assert not works(set(kept) - {chunk_id})


@given(needed=st.sets(st.sampled_from(IDS)), order=st.permutations(IDS))
def test_any_needed_set_is_found_in_the_given_order(needed: set[str], order: list[str]) -> None:
    works, _ = _needs(*needed)
    kept, one_minimal = minimal_subset(order, works, budget=200)
    assert kept == [i for i in order if i in needed] and one_minimal


def test_a_non_monotone_violation_still_ends_one_minimal() -> None:
    # Needs c1, and either c4 or both c6 and c7: the result cannot lose any single id.
    def works(kept: set[str]) -> bool:
        return "c1" in kept and ("c4" in kept or {"c6", "c7"} <= kept)

    kept, one_minimal = minimal_subset(IDS, works, budget=100)
    assert one_minimal and works(set(kept))
    assert all(not works(set(kept) - {i}) for i in kept)


def test_the_budget_caps_the_calls_and_an_exhausted_budget_is_never_called_one_minimal() -> None:
    works, calls = _needs("c3", "c9")
    kept, one_minimal = minimal_subset(IDS, works, budget=4)
    assert len(calls) == 4 and not one_minimal
    assert {"c3", "c9"} <= set(kept)
    nothing, calls_none = _needs("c0")
    assert minimal_subset(IDS, nothing, budget=0) == (IDS, False) and not calls_none


def test_subsets_given_first_are_tried_first_and_a_working_one_is_the_start() -> None:
    works, calls = _needs("c2")
    kept, one_minimal = minimal_subset(IDS, works, budget=50, first=(set(), {"c2", "c5"}))
    assert calls[0] == frozenset() and calls[1] == frozenset({"c2", "c5"})
    assert kept == ["c2"] and one_minimal and all(c <= {"c2", "c5"} for c in calls[2:])


def test_the_same_predicate_gives_the_same_calls_in_the_same_order() -> None:
    first, first_calls = _needs("c1", "c7", "c8")
    second, second_calls = _needs("c1", "c7", "c8")
    assert minimal_subset(IDS, first, budget=60) == minimal_subset(IDS, second, budget=60)
    assert first_calls == second_calls
