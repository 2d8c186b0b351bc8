"""Corpus minimisation: the smallest subset of chunk ids a violation still needs, checked 1-minimal.

Hypothesis shrinks the perturbation; this only cuts the corpus around it (delta debugging over ids, then a
post-pass that tries removing each remaining id once). Pure over a `works(kept ids) -> bool` predicate, so it is
tested on its own and the runner supplies the predicate (re-run the plan on a fresh index of the kept chunks).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

__all__ = ["drop_blocks", "minimal_subset"]

Item = TypeVar("Item")


def drop_blocks(items: list[Item], works: Callable[[list[Item]], bool], budget: dict[str, int]) -> list[Item]:
    """Delta debugging: drop ever smaller blocks of `items` while `works(kept)` still holds (within budget).

    `budget["left"]` is how many more calls of `works` the caller allows; `works` itself spends it.
    """
    block = max(1, len(items) // 2)
    while items and budget["left"] > 0:
        start, changed = 0, False
        while start < len(items) and budget["left"] > 0:
            trial = items[:start] + items[start + block :]
            if works(trial):
                items, changed = trial, True
            else:
                start += block
        if block == 1 and not changed:
            break
        block = max(1, block // 2) if not changed or block > 1 else 1
    return items


def minimal_subset(
    items: Sequence[str],
    works: Callable[[set[str]], bool],
    *,
    budget: int,
    first: Sequence[Collection[str]] = (),
) -> tuple[list[str], bool]:
    """The ids of `items` (in their order) that `works` still needs, and whether the result is known 1-minimal.

    `works(kept)` is called at most `budget` times. The subsets in `first` are tried first, in order (the first
    that works is the starting point); then blocks are dropped, then each remaining id is tried alone. The
    result is 1-minimal (removing any one id makes `works` fail) when the flag is True; False means the budget
    ran out first. Deterministic: the same predicate gives the same calls in the same order.
    """
    left = {"left": budget}

    def attempt(keep: Any) -> bool:
        if left["left"] <= 0:
            return False
        left["left"] -= 1
        return works(set(keep))

    current = list(items)
    for subset in first:
        if attempt(subset):
            current = [i for i in items if i in subset]
            break
    current = drop_blocks(current, attempt, left)
    # 1-minimality post-pass: removing any one remaining id must make the violation go away.
    one_minimal = True
    for chunk_id in list(current):
        if left["left"] <= 0:
            one_minimal = False
            break
        if attempt(set(current) - {chunk_id}):
            current.remove(chunk_id)
    if left["left"] <= 0:
        one_minimal = False
    return current, one_minimal
