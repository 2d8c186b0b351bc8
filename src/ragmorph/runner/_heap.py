"""The heap a run starts with, kept out of the garbage collector's passes while the run lasts, and fewer passes.

A run over a large corpus allocates steadily (responses, derived corpora, Hypothesis's own data), so Python's
cyclic collector now and then makes a full pass over every object of the process, the caller's corpus included:
at 100k chunks about 250,000 objects, 0.1-0.2 s a pass, several passes a run. Everything alive when the run
starts (the corpus, the caller's data, imported modules) is moved to the collector's permanent generation
(`gc.freeze()`) for the run and back when it ends (`gc.unfreeze()`): collections during the run traverse only
what the run itself made.

The run also raises the collector's first threshold from CPython's 700 to `YOUNG_THRESHOLD` allocations
(restored when it ends). A response of 100k hits is 100k new objects in a list that is itself young while it
fills, so at 700 every young pass traverses the growing list again (quadratic in its length), and full passes
come every 70,000 allocations: at 100k chunks that was 0.7 s of the runner's 5 s, and 2 s of the retriever's
own calls. At 10,000 the passes are 14 times fewer and each young pass holds at most 10,000 objects; cyclic
garbage waits for a pass that much longer (at most a full pass per million allocations).

What differs during a run: a reference cycle among objects that existed before it is freed, if it becomes
garbage meanwhile, by a collection after the run; cyclic garbage made during the run is freed later; a
`gc.get_objects()` or `gc.get_referrers()` does not list the frozen objects; and a `gc.freeze()` or
`gc.set_threshold()` made by the retriever itself is undone with the run's (docs/scale.md, "Large
corpora").
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["YOUNG_THRESHOLD", "frozen_heap"]

# Allocations between young collections during a run (CPython's default is 700); never lowered.
YOUNG_THRESHOLD = 10_000

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"depth": 0, "froze": False, "thresholds": None}


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside, the objects alive on entry are left out of garbage collection passes, and young passes come every
    `YOUNG_THRESHOLD` allocations at least (both undone on exit).

    Re-entrant and thread-safe: runs in several threads share one freeze, undone when the last leaves. It does
    nothing when the collector is disabled or something is frozen already (a process that froze its own heap,
    e.g. before forking workers, keeps exactly what it froze and its thresholds).
    """
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["froze"] = gc.isenabled() and gc.get_freeze_count() == 0
            if _STATE["froze"]:
                gc.freeze()
                thresholds = gc.get_threshold()
                _STATE["thresholds"] = thresholds
                gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["froze"]:
                _STATE["froze"] = False
                gc.set_threshold(*_STATE["thresholds"])
                gc.unfreeze()
