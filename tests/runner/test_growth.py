"""Bisection over a grown size: the smallest failing size within the resolution, a held size beside it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragmorph.runner._growth import smallest_failing_size


@given(threshold=st.integers(13, 5000))
def test_a_monotone_failure_is_found_within_the_resolution(threshold: int) -> None:
    asked: list[int] = []

    def fails(size: int) -> bool:
        asked.append(size)
        return size >= threshold

    found = smallest_failing_size(12, 5000, fails, budget=20)
    assert found.fails >= threshold and found.fails - threshold <= 5000 // 64
    assert found.held is None or found.held < threshold
    assert found.probes == len(asked) <= 7


def test_the_budget_bounds_the_probes_and_the_answer_still_fails() -> None:
    found = smallest_failing_size(0, 1024, lambda size: size % 3 != 1, budget=3, resolution=1024)
    assert found.probes == 3 and found.fails % 3 != 1


def test_a_failure_at_the_smallest_size_is_reported_with_nothing_held() -> None:
    found = smallest_failing_size(10, 100, lambda size: True)
    assert found.held is None and found.fails - 10 <= 1
