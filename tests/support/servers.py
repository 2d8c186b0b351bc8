"""Real servers for the integration tests, started on first use and stopped when the test process exits."""

from __future__ import annotations

import atexit
import functools
import tempfile
import warnings
from pathlib import Path

__all__ = ["postgres_uri"]


@functools.cache
def postgres_uri() -> str:
    """A connection URI for a PostgreSQL 16 server with pgvector (the `pgserver` wheel), one per process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns that XDG_RUNTIME_DIR is unset
        import pgserver

        directory = Path(tempfile.mkdtemp(prefix="ragmorph-pg-")) / "data"
        server = pgserver.get_server(directory, cleanup_mode="delete")
    atexit.register(server.cleanup)
    return server.get_uri()
