"""What keeps a seed's draws the same in every process: Hypothesis without constants from loaded local modules.

Hypothesis now and then (about one draw in twenty) replaces a random choice by a constant taken from the source of
every *local* (not site-packages) module loaded in the process: ragmorph itself when installed editable, the
user's adapter, whatever the caller imported. Which modules are loaded depends on the process's history, so the
same seed drew other perturbations in a worker process than in the caller (measured: 13 of 105 units of the demo
world differed), and `ragmorph demo` and a script that imported one more module could disagree too. While the
runner draws, that pool is empty; everything else about Hypothesis's generation stays as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["without_local_constants"]


_LOCK = threading.Lock()
_ENTERED = {"depth": 0, "original": None}


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Inside, Hypothesis draws no constants from local modules (restored on exit; a no-op if Hypothesis changes).

    Re-entrant and thread-safe: batches running in several threads share one patch, undone when the last leaves.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # a future Hypothesis without the feature, or with it elsewhere: nothing to pin
        yield
        return
    cache: Any = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if getattr(providers, "_get_local_constants", None) is None or not hasattr(cache, "clear"):
        yield
        return
    with _LOCK:
        if _ENTERED["depth"] == 0:
            empty = Constants()
            _ENTERED["original"] = providers._get_local_constants
            # The cache holds the constants a draw may use per choice type, local ones included: start clean.
            cache.clear()
            providers._get_local_constants = lambda: empty
        _ENTERED["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ENTERED["depth"] -= 1
            if _ENTERED["depth"] == 0:
                providers._get_local_constants = _ENTERED["original"]
                cache.clear()
