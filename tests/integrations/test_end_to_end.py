"""The integrations under the real runner: correct libraries raise no false alarms, secrets stay out of reports."""

from __future__ import annotations

import json
import warnings

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.adapters.chroma import chroma_factory
from ragmorph.adapters.http import HTTPRetriever
from ragmorph.adapters.langchain import langchain_bm25_factory
from ragmorph.adapters.llamaindex import LlamaIndexBM25Retriever, llamaindex_bm25_factory
from ragmorph.model import Corpus
from ragmorph.runner import check
from ragmorph.worlds import demo_world
from support.retriever_server import RetrieverServer

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

TOKEN = "Bearer e2e-s3cr3t-t0ken"


def llamaindex_bm25_post_filtered(corpus: Corpus) -> LlamaIndexBM25Retriever:
    """LlamaIndex BM25 with ragmorph's filter instead of the library's leaking one."""
    return llamaindex_bm25_factory(corpus, post_filter=True)


llamaindex_bm25_post_filtered.ragmorph_traits = ("lexical",)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_library_factories_hold_every_hard_relation_on_the_demo_world() -> None:
    world = demo_world()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        report = check(
            {"langchain_bm25": langchain_bm25_factory, "llamaindex_bm25": llamaindex_bm25_post_filtered,
             "chroma": chroma_factory},
            world.corpus,
            world.cases[:2],
            ks=(1, 3),
            max_examples=5,
            seed=3,
        ).to_dict()
    problems = [r for r in report["results"] if r["status"] in ("fail", "error")]
    assert not problems, json.dumps(problems[:2], indent=1, default=str)[:3000]
    assert report["summary"]["pass"] > 0 and report["summary"]["exit_code"] == 0
    kinds = {r["name"]: r["kind"] for r in report["manifest"]["retrievers"]}
    assert kinds == {"langchain_bm25": "factory", "llamaindex_bm25": "factory", "chroma": "factory"}


def test_the_default_suite_finds_the_llamaindex_bm25_tenant_leak() -> None:
    """The library's filter returns other tenants' chunks (score 0) when fewer than k chunks match: pinned."""
    world = demo_world()
    report = check({"llamaindex_bm25": llamaindex_bm25_factory}, world.corpus, world.cases[:1], ks=(1, 3),
                   max_examples=5, seed=3)
    failed = {r.relation for r in report.results if r.status == "fail"}
    assert failed & {"tenancy.no_cross_tenant", "tenancy.unauthorized_zero"}, failed
    # The same leak, and nothing else: families that ask under the tenant filter (odd queries, other filters) see it too.
    assert {r.relation.partition(".")[0] for r in report.results if r.status == "fail"} <= {"tenancy", "odd_query", "filters"}, failed
    assert not [r for r in report.results if r.status == "error"]


def test_an_http_retriever_runs_as_a_black_box_and_its_token_stays_out_of_the_report() -> None:
    world = demo_world()
    with RetrieverServer(BM25Retriever(world.corpus)) as server:
        remote = HTTPRetriever(server.url(), headers={"Authorization": TOKEN}, text_field="text")
        report = check({"service": remote}, world.corpus, world.cases[:1], strategies=["tenancy", "cutoff"],
                       ks=(1, 3), max_examples=3)
        sent = {request["headers"].get("Authorization") for request in server.requests}
    text = json.dumps(report.to_dict(), default=str)
    assert sent == {TOKEN}
    assert "s3cr3t" not in text and "service" in text
    assert report.to_dict()["summary"]["error"] == 0
