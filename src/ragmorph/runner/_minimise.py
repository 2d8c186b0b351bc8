"""Corpus minimisation: the smallest subset of chunk ids a violation still needs, checked 1-minimal.

Hypothesis shrinks the perturbation; this only cuts the corpus around it. Pure over a `works(kept ids) -> bool`
predicate, so it is tested on its own and the runner supplies the predicate (re-run the plan on a fresh index of
the kept chunks). Three phases, one budget of predicate calls, and no subset is ever asked twice:

1. the caller's likeliest subsets (`first`), in order;
2. when none works, growing ones: the union of `first` plus the first 1, 2, 4, ... of the other ids. Violations
   of approximate indexes need "enough" chunks rather than particular ones and are not monotone (dropping half
   of 300 chunks may hide a violation that 12 of them show), so cutting down from the whole corpus stalls
   while growing up from the likeliest chunks reaches a small working start in a few calls;
3. delta debugging over that start (drop ever smaller blocks) until a whole pass of single-id removals keeps
   nothing out: then the result is 1-minimal.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import attrs

__all__ = ["Shrunk", "drop_blocks", "minimal_subset"]

Item = TypeVar("Item")


def drop_blocks(
    items: list[Item], works: Callable[[list[Item]], bool], budget: dict[str, int], *, block: int | None = None
) -> tuple[list[Item], bool]:
    """Delta debugging: drop ever smaller blocks of `items` while `works(kept)` still holds (within budget).

    `budget["left"]` is how many more calls of `works` the caller allows; `works` itself spends it (a call it
    answers from memory need not). Blocks start at `block` ids (half of `items` by default). Returns the kept
    items and whether a full pass removing each one alone kept all of them, i.e. the result is 1-minimal for
    `works`.
    """
    block = max(1, len(items) // 2) if block is None else block
    while items:
        start, changed = 0, False
        while start < len(items):
            if budget["left"] <= 0:
                return items, False
            trial = items[:start] + items[start + block :]
            if works(trial):
                items, changed = trial, True
            else:
                start += block
        if block == 1 and not changed:
            return items, True
        block = max(1, block // 2)
    return items, True


@attrs.frozen
class Shrunk:
    """What `minimal_subset` found: the kept ids, whether they are 1-minimal, and the predicate calls it made."""

    kept: list[str]
    one_minimal: bool
    calls: int
    budget: int


def minimal_subset(
    items: Sequence[str],
    works: Callable[[set[str]], bool],
    *,
    budget: int,
    first: Sequence[Collection[str]] = (),
    finish: int = 0,
    grow_order: Callable[[], Sequence[str]] | None = None,
) -> Shrunk:
    """The ids of `items` (in their order) that `works` still needs, and whether the result is known 1-minimal.

    `works(kept)` is called at most `budget` times and never twice for the same set (`works(items)` is assumed
    true and never asked). The subsets in `first` are tried first, in order, then growing ones (the module
    docstring says why); the first that works is where blocks start being dropped. When the budget runs out
    with at most `finish` ids kept, up to `finish` more calls try removing them one at a time: a larger budget
    only where it can buy 1-minimality. `grow_order()` (default: `items`) is the order of `items` to grow in and
    to drop from when no subset of `first` works: asked only then, so an order that costs a retriever call is
    paid only when it is used. The result is 1-minimal (removing any one id makes `works` fail) when
    the flag is True; False means the budget ran out first. Deterministic: the same predicate gives the same
    calls in the same order.
    """
    whole = frozenset(items)
    answers: dict[frozenset[str], bool] = {whole: True}
    spent = {"left": budget}

    def attempt(keep: Collection[str]) -> bool:
        key = frozenset(keep)
        if key not in answers:
            if spent["left"] <= 0:
                return False
            spent["left"] -= 1
            answers[key] = works(set(key))
        return answers[key]

    order = {"items": list(items)}

    def growing() -> list[str]:
        if grow_order is not None:
            order["items"] = list(grow_order())
        return order["items"]

    start = _start(first, growing, attempt, spent)
    current = [i for i in order["items"] if i in start]
    current, one_minimal = drop_blocks(current, attempt, spent)
    granted = budget
    if not one_minimal and len(current) <= finish:
        spent["left"] += finish
        granted += finish
        current, one_minimal = drop_blocks(current, attempt, spent, block=1)
    return Shrunk(current, one_minimal, granted - spent["left"], granted)


def _start(
    first: Sequence[Collection[str]], growing: Callable[[], list[str]], attempt: Callable[[Collection[str]], bool],
    spent: dict[str, int],
) -> frozenset[str]:
    """The first working subset among `first`, then the growing ones (in the order `growing()` gives, asked only
    when no subset of `first` works); all of the items when none works."""
    for subset in first:
        if spent["left"] <= 0:
            break
        if attempt(subset):
            return frozenset(subset)
    items = growing()
    seed = frozenset().union(*first) if first else frozenset()
    others = [i for i in items if i not in seed]
    size = 1
    while size < len(others) and spent["left"] > 0:
        grown = seed | frozenset(others[:size])
        if attempt(grown):
            return grown
        size *= 2
    return frozenset(items)
