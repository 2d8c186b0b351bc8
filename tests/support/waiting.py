"""A retriever that waits like a service does, and counts how many of its calls were in flight at once.

Importable by workers (tests/ is on their import path), so `--jobs` and `--concurrency` runs build it there.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Filters

_LOCK = threading.Lock()
IN_FLIGHT = {"now": 0, "most": 0}
ASKED: list[str] = []  # the queries asked, in the order the calls started


class WaitingBM25(BM25Retriever):
    """BM25 behind a 20 ms wait per call (a service's latency); the answers are BM25's."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """BM25's hits, after the wait."""
        with _LOCK:
            ASKED.append(query)
            IN_FLIGHT["now"] += 1
            IN_FLIGHT["most"] = max(IN_FLIGHT["most"], IN_FLIGHT["now"])
        try:
            time.sleep(0.02)
            return super().retrieve(query, k=k, filters=filters)
        finally:
            with _LOCK:
                IN_FLIGHT["now"] -= 1
