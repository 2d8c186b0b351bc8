"""The heap a run starts with, kept out of the garbage collector's full passes while the run lasts.

A run over a large corpus allocates steadily (responses, derived corpora, Hypothesis's own data), so Python's
cyclic collector now and then makes a full pass over every object of the process, the caller's corpus included:
at 100k chunks about 250,000 objects, 0.1-0.2 s a pass, several passes a run. Everything alive when the run
starts (the corpus, the caller's data, imported modules) is moved to the collector's permanent generation
(`gc.freeze()`) for the run and back when it ends (`gc.unfreeze()`): collections during the run traverse only
what the run itself made. The collector stays enabled with its thresholds. What differs during a run: a
reference cycle among objects that existed before it is freed, if it becomes garbage meanwhile, by a collection
after the run; `gc.get_objects()` and `gc.get_referrers()` do not list the frozen objects; and a `gc.freeze()`
made by the retriever itself is undone with the run's (README, "The runner's own share at scale").
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_heap"]

_LOCK = threading.Lock()
_STATE = {"depth": 0, "froze": False}


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside, the objects alive on entry are left out of garbage collection passes (undone on exit).

    Re-entrant and thread-safe: runs in several threads share one freeze, undone when the last leaves. It does
    nothing when the collector is disabled or something is frozen already (a process that froze its own heap,
    e.g. before forking workers, keeps exactly what it froze).
    """
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["froze"] = gc.isenabled() and gc.get_freeze_count() == 0
            if _STATE["froze"]:
                gc.freeze()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["froze"]:
                _STATE["froze"] = False
                gc.unfreeze()
