"""Bisection over a grown corpus: the smallest size at which a violation that needs thousands of chunks shows.

A family whose perturbations grow the corpus themselves (`Family.grows_corpus`: the scale family's
`GrowCorpus`) generates nested worlds, each size a prefix of every larger one. Minimising thousands of chunk ids
one by one would cost hundreds of index builds; bisecting the size costs about log2(size / resolution) and
yields what a reader needs: the size from which the retriever fails, beside one at which it held. Pure over a
`fails(size) -> bool` predicate so it is tested on its own; the runner supplies the predicate (the plan re-run
on fresh indexes of the world grown to that size).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

__all__ = ["Bisection", "smallest_failing_size"]

# Sizes are bisected to this fraction of the failing size (at least one chunk): 1/64 of 5,000 is 78 chunks,
# reached in 6 probes.
RESOLUTION = 64
BUDGET = 8


@attrs.frozen
class Bisection:
    """The smallest failing size found, the largest size seen to hold (None: none tested), and the probes spent."""

    fails: int
    held: int | None
    probes: int


def smallest_failing_size(
    low: int, high: int, fails: Callable[[int], bool], *, budget: int = BUDGET, resolution: int = RESOLUTION
) -> Bisection:
    """Bisect between `low` (presumed to hold: nothing grown) and `high` (seen to fail) for the smallest failing size.

    Assumes failing is monotone in the size, as a candidate pool running dry is; where it is not, the size
    returned still fails and the one beside it still held, which is what the report states.
    """
    step = max(1, high // resolution)
    held: int | None = None
    probes = 0
    while high - low > step and probes < budget:
        middle = (low + high) // 2
        probes += 1
        if fails(middle):
            high = middle
        else:
            low = held = middle
    return Bisection(high, held, probes)
