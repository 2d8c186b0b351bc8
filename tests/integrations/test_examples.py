"""The adapter examples in examples/adapters/: loadable by import string, and each `__main__` runs."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragmorph.adapters import BM25Retriever, describe_capabilities, load_retriever, validate_hits
from ragmorph.adapters.http import HTTPRetriever
from ragmorph.model import Filters
from support.integration_checks import tenant_corpus

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "adapters"
DATA = ROOT / "examples" / "data" / "corpus.jsonl"
FACTORIES = (
    "plain_function", "langchain_bm25", "llamaindex_bm25", "chroma_dense", "pgvector_hnsw", "qdrant_local",
    "faiss_index", "haystack_retrievers", "lancedb_table", "langchain_ensemble",
    "llamaindex_fusion",
)


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.mark.parametrize("name", FACTORIES)
def test_example_factories_load_by_import_string_and_honour_filters(name: str, on_path: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        factory = load_retriever(f"{name}:factory")
    assert describe_capabilities(factory).kind == "factory"
    corpus = tenant_corpus()
    retriever = factory(corpus)
    try:
        hits = validate_hits(retriever.retrieve("parental leave policy", k=3), k=3, query="q", corpus=corpus)
        assert hits and hits[0].id in {"hr-1#0", "hr-1#1", "hr-2#0"}
        # k=2: two globex-visible chunks match the query, so the LlamaIndex BM25 filter (which leaks other
        # tenants' chunks with score 0 when fewer than k match, see test_llamaindex.py) has nothing to leak.
        filtered = validate_hits(
            retriever.retrieve("parental leave policy", k=2, filters=Filters(tenant="globex")), k=2, query="q",
            corpus=corpus,
        )
        assert filtered and all(corpus[h.id].visible_to("globex") for h in filtered)
    finally:
        getattr(retriever, "close", lambda: None)()


def test_http_example_serves_and_loads(on_path: None) -> None:
    loaded = load_retriever("http_endpoint:retriever")
    assert isinstance(loaded, HTTPRetriever) and describe_capabilities(loaded).kind == "black_box"
    import http_endpoint

    corpus = tenant_corpus()
    server = http_endpoint.serve(BM25Retriever(corpus))
    try:
        remote = HTTPRetriever(f"http://127.0.0.1:{server.server_address[1]}/search")
        filters = Filters(tenant="acme", current_only=True)
        expected = BM25Retriever(corpus).retrieve("leave", k=4, filters=filters)
        assert remote.retrieve("leave", k=4, filters=filters) == tuple(expected)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_every_example_main_runs_on_the_example_corpus() -> None:
    assert DATA.is_file(), DATA
    scripts = sorted(EXAMPLES.glob("[!_]*.py"))
    assert {s.stem for s in scripts} == {*FACTORIES, "http_endpoint"}
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    # Two at a time: the start-ups overlap on a 2-core machine, while ten at once (each importing its library,
    # one starting PostgreSQL) made a loaded machine miss the timeout.
    def run(script: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)

    with ThreadPoolExecutor(max_workers=2) as pool:
        finished = list(zip(scripts, pool.map(run, scripts)))
    for script, process in finished:
        out, err = process.stdout, process.stderr
        assert process.returncode == 0, f"{script.name} failed:\n{err[-2000:]}"
        lines = out.splitlines()
        assert lines[0].startswith("query: ") and lines[1].startswith("1. "), f"{script.name} printed:\n{out}"
