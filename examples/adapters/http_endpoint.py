"""A retriever behind an HTTP endpoint, and a minimal server that serves one for a test.

    ragmorph run --retriever examples/adapters/http_endpoint.py:retriever --corpus ... --cases ...

The endpoint (RAGMORPH_HTTP_URL, default http://127.0.0.1:8000/search) receives POST
{"query": str, "k": int, "filters": {"tenant", "current_only", "metadata"} | null} and answers
{"hits": [{"id": str, "score": float | null}, ...]} best first. `serve` below is such a server.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmorph.adapters.http import HTTPRetriever
from ragmorph.model import Filters

retriever = HTTPRetriever(os.environ.get("RAGMORPH_HTTP_URL", "http://127.0.0.1:8000/search"), timeout=10.0)


def serve(inner: Any, port: int = 0) -> ThreadingHTTPServer:
    """Serve `inner` (any ragmorph retriever) on 127.0.0.1 in a background thread; `port=0` picks a free one."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet: one line per request is noise in a test run
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            filters = Filters(**request["filters"]) if request.get("filters") else None
            hits = inner.retrieve(request["query"], k=request["k"], filters=filters)
            body = json.dumps({"hits": [{"id": h.id, "score": h.score} for h in hits]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    from _demo import load_corpus, show

    from ragmorph.adapters import BM25Retriever

    corpus = load_corpus()
    server = serve(BM25Retriever(corpus))
    try:
        show(lambda _: HTTPRetriever(f"http://127.0.0.1:{server.server_address[1]}/search"), corpus)
    finally:
        server.shutdown()
