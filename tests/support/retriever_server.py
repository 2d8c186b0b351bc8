"""A real HTTP retrieval service for tests: stdlib ThreadingHTTPServer on 127.0.0.1, an ephemeral port.

It serves a ragmorph retriever (e.g. the built-in BM25Retriever) as JSON, plus misbehaving endpoints:

- ``POST /search`` with ``{"query", "k", "filters": {"tenant", "current_only", "metadata"} | null}``
  -> ``{"hits": [{"id", "score", "text"}]}``; ``GET /search?query=..&k=..&tenant=..&current_only=..``;
- ``POST /nested`` -> ``{"data": {"results": [{"doc": {"chunk_id"}, "relevance"}]}}``;
- ``POST /slow`` answers like /search after `slow_seconds`; ``POST /error`` is a 500 whose body echoes the
  request's Authorization header (as careless services do); ``POST /malformed`` is 200 with broken JSON;
  ``POST /missing-id`` returns a hit without an id; ``POST /leaky`` ignores the filters.

Every request's path, headers and JSON body are kept in `requests` for assertions. `latency` seconds are spent
on every /search request, as a service's model and network time; `max_in_flight` is the most requests the server
was answering at once.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmorph.model import Filters

__all__ = ["RetrieverServer"]


def _filters(raw: Any) -> Filters | None:
    if not raw:
        return None
    return Filters(
        tenant=raw.get("tenant"), current_only=bool(raw.get("current_only")), metadata=raw.get("metadata") or {}
    )


class RetrieverServer:
    """Serve `retriever` over HTTP until `close()` (also a context manager)."""

    def __init__(self, retriever: Any, *, slow_seconds: float = 2.0, latency: float = 0.0) -> None:
        self.retriever = retriever
        self.slow_seconds = slow_seconds
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self._counting = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _answer(self, payload: dict[str, Any], *, use_filters: bool = True) -> list[dict[str, Any]]:
                filters = _filters(payload.get("filters")) if use_filters else None
                hits = server.retriever.retrieve(str(payload["query"]), k=int(payload["k"]), filters=filters)
                return [{"id": h.id, "score": h.score, "text": h.text} for h in hits]

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                parts = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(parts.query))
                server.requests.append({"path": parts.path, "headers": dict(self.headers), "params": params})
                filters = None
                if params.get("tenant") or params.get("current_only") == "true":
                    filters = {"tenant": params.get("tenant"), "current_only": params.get("current_only") == "true"}
                hits = self._answer({"query": params["query"], "k": params["k"], "filters": filters})
                self._send(200, json.dumps({"hits": hits}).encode())

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                path = urllib.parse.urlsplit(self.path).path
                server.requests.append({"path": path, "headers": dict(self.headers), "json": payload})
                if path == "/search":
                    with server._counting:
                        server.in_flight += 1
                        server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    try:
                        time.sleep(server.latency)
                        body = json.dumps({"hits": self._answer(payload)}).encode()
                    finally:
                        with server._counting:
                            server.in_flight -= 1
                    self._send(200, body)
                elif path == "/nested":
                    results = [{"doc": {"chunk_id": h["id"]}, "relevance": h["score"]} for h in self._answer(payload)]
                    self._send(200, json.dumps({"data": {"results": results}}).encode())
                elif path == "/slow":
                    time.sleep(server.slow_seconds)
                    self._send(200, json.dumps({"hits": self._answer(payload)}).encode())
                elif path == "/error":
                    echoed = f"internal error while authorising {self.headers.get('Authorization')}"
                    self._send(500, echoed.encode(), "text/plain")
                elif path == "/malformed":
                    self._send(200, b'{"hits": [{"id": "a#0", "score": 1.0', "application/json")
                elif path == "/missing-id":
                    self._send(200, json.dumps({"hits": [{"score": 1.0}]}).encode())
                elif path == "/leaky":
                    self._send(200, json.dumps({"hits": self._answer(payload, use_filters=False)}).encode())
                else:
                    self._send(404, b'{"error": "no such endpoint"}')

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="retriever-server", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str = "/search") -> str:
        """The full URL of an endpoint."""
        return self.base_url + path

    def close(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RetrieverServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
