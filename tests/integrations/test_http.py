"""HTTPRetriever against a real HTTP server (stdlib, 127.0.0.1, ephemeral port) serving a real BM25Retriever."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator

import pytest

from ragmorph.adapters import BM25Retriever, GuardedRetriever, describe_capabilities, display_name, validate_hits
from ragmorph.adapters.http import HTTPRetriever, redact_url, render_template
from ragmorph.errors import AdapterError, InvalidResponse, RetrieverFailed, RetrieverTimeout, UsageError
from ragmorph.model import Filters, Params
from support.integration_checks import tenant_corpus
from support.retriever_server import RetrieverServer

pytestmark = pytest.mark.integration

TOKEN = "Bearer s3cr3t-t0ken-value"
API_KEY = "k3y-in-the-query-string"


@pytest.fixture(scope="module")
def server() -> Iterator[RetrieverServer]:
    with RetrieverServer(BM25Retriever(tenant_corpus()), slow_seconds=1.5) as running:
        yield running


def _secret_free(text: str) -> None:
    for secret in (TOKEN, "s3cr3t-t0ken-value", API_KEY, "hunter2"):
        assert secret not in text, text


def test_hits_equal_the_served_retriever(server: RetrieverServer) -> None:
    corpus = tenant_corpus()
    direct = BM25Retriever(corpus)
    with HTTPRetriever(server.url(), text_field="text") as remote:
        for query in ("parental leave", "password reset", "nothing here"):
            for k in (1, 3, 20):
                hits = validate_hits(remote.retrieve(query, k=k), k=k, query=query, corpus=corpus)
                assert hits == tuple(direct.retrieve(query, k=k))


def test_filters_reach_the_service_and_it_answers_without_leaks(server: RetrieverServer) -> None:
    corpus = tenant_corpus()
    filters = Filters(tenant="acme", current_only=True)
    with HTTPRetriever(server.url()) as remote:
        hits = remote.retrieve("parental leave policy", k=10, filters=filters)
    assert hits and all(filters.allows(corpus[h.id]) for h in hits)
    assert server.requests[-1]["json"] == {
        "query": "parental leave policy",
        "k": 10,
        "filters": {"tenant": "acme", "current_only": True, "metadata": {}},
    }


def test_a_leaky_service_is_passed_through_for_ragmorph_to_report(server: RetrieverServer) -> None:
    corpus = tenant_corpus()
    with HTTPRetriever(server.url("/leaky")) as remote:
        hits = remote.retrieve("parental leave policy", k=10, filters=Filters(tenant="acme"))
    assert any(not corpus[h.id].visible_to("acme") for h in hits)


def test_get_with_a_custom_template(server: RetrieverServer) -> None:
    template = {"query": "${query}", "k": "${k}", "tenant": "${tenant}", "current_only": "${current_only}"}
    with HTTPRetriever(server.url(), method="GET", request_template=template) as remote:
        hits = remote.retrieve("leave", k=4, filters=Filters(tenant="globex"))
    assert hits and all(tenant_corpus()[h.id].visible_to("globex") for h in hits)
    assert server.requests[-1]["params"] == {"query": "leave", "k": "4", "tenant": "globex", "current_only": "false"}


def test_nested_response_paths(server: RetrieverServer) -> None:
    remote = HTTPRetriever(
        server.url("/nested"), response_path="data.results", id_field="doc.chunk_id", score_field="relevance"
    )
    hits = remote.retrieve("password reset", k=2)
    assert [h.id for h in hits] == [h.id for h in BM25Retriever(tenant_corpus()).retrieve("password reset", k=2)]
    assert all(isinstance(h.score, float) for h in hits)


def test_the_timeout_is_a_retriever_timeout(server: RetrieverServer) -> None:
    remote = HTTPRetriever(server.url("/slow"), timeout=0.2)
    started = time.perf_counter()
    with pytest.raises(RetrieverTimeout, match=r"within 0.2 s") as caught:
        remote.retrieve("leave", k=1)
    assert time.perf_counter() - started < 1.2
    assert "/slow" in str(caught.value)


def test_http_500_names_the_url_and_scrubs_the_echoed_token(server: RetrieverServer) -> None:
    remote = HTTPRetriever(server.url("/error") + f"?api_key={API_KEY}&v=1", headers={"Authorization": TOKEN}, public=("v",))
    with pytest.raises(RetrieverFailed, match="HTTP 500") as caught:
        remote.retrieve("leave", k=1)
    error = caught.value
    assert "/error?api_key=***&v=1" in str(error) and "internal error while authorising" in (error.excerpt or "")
    assert server.requests[-1]["headers"]["Authorization"] == TOKEN  # the real token was sent...
    _secret_free(str(error))  # ...and appears nowhere in the error
    _secret_free(repr(error.__cause__) + repr(error.__context__))


def test_malformed_json_is_an_invalid_response_with_an_excerpt(server: RetrieverServer) -> None:
    with pytest.raises(InvalidResponse, match="expected a JSON body") as caught:
        HTTPRetriever(server.url("/malformed")).retrieve("leave", k=1)
    assert '{"hits": [{"id": "a#0"' in (caught.value.excerpt or "")


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("/missing-id", {}, r"id_field='id' of hit 1"),
        ("/search", {"score_field": "relevance"}, r"score_field='relevance'"),
        ("/search", {"response_path": "results"}, r"response_path='results'"),
        ("/nested", {"response_path": "data"}, r"expected a list at response_path='data'"),
    ],
)
def test_missing_fields_are_invalid_responses(server: RetrieverServer, path: str, options: dict, message: str) -> None:
    with pytest.raises(InvalidResponse, match=message):
        HTTPRetriever(server.url(path), **options).retrieve("leave", k=2)


def test_connection_refused_is_a_retriever_failure() -> None:
    with RetrieverServer(BM25Retriever(tenant_corpus())) as short_lived:
        url = short_lived.url()
    with pytest.raises(RetrieverFailed, match="ConnectError"):
        HTTPRetriever(url, timeout=2).retrieve("leave", k=1)


def test_secrets_never_appear_in_repr_description_capabilities_or_guarded_errors(server: RetrieverServer) -> None:
    remote = HTTPRetriever(
        server.url("/error").replace("http://", "http://user:hunter2@") + f"?api_key={API_KEY}",
        headers={"Authorization": TOKEN, "X-Api-Key": "k3y-in-the-query-string", "X-Trace": "visible"},
        public=("X-Trace",),
    )
    shown = " ".join([repr(remote), str(remote), remote.description, display_name(remote),
                      repr(describe_capabilities(remote).to_dict())])
    _secret_free(shown)
    assert "X-Trace" in shown and "visible" in shown and "***" in shown
    guarded = GuardedRetriever(remote, corpus=tenant_corpus(), timeout=5)
    with pytest.raises(AdapterError) as caught:
        guarded.retrieve("leave", Params(k=1))
    _secret_free(str(caught.value) + repr(caught.value.__cause__))


def test_pickles_without_its_connection_pool(server: RetrieverServer) -> None:
    remote = HTTPRetriever(server.url())
    remote.retrieve("leave", k=1)
    copy = pickle.loads(pickle.dumps(remote))
    assert copy.retrieve("leave", k=2) == remote.retrieve("leave", k=2)


def test_template_rendering_keeps_types_and_interpolates_text() -> None:
    values = {"query": "q?", "k": 3, "tenant": None, "current_only": False, "metadata": {"a": 1}, "filters": None}
    template = {
        "q": "${query}", "n": ["${k}", "top-${k}"], "t": "${tenant}", "m": "${metadata}", "lit": "$$5 ${tenant}"
    }
    assert render_template(template, values) == {"q": "q?", "n": [3, "top-3"], "t": None, "m": {"a": 1}, "lit": "$5 "}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"request_template": {"q": "${qeury}"}}, r"placeholders among"),
        ({"request_template": {"q": "cost $5"}}, r"bare '\$'"),
        ({"request_template": {"q": object()}}, r"JSON-able"),
        ({"method": "GET", "request_template": ["${query}"]}, r"flat object"),
        ({"method": "PUT"}, r"'GET' or 'POST'"),
        ({"timeout": 0}, r"positive number"),
        ({"id_field": ""}, r"non-empty id_field"),
    ],
)
def test_bad_configuration_is_a_usage_error(options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        HTTPRetriever("http://127.0.0.1:9/search", **options)


def test_bad_urls_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="http"):
        HTTPRetriever("ftp://example.org/x")


def test_redact_url_masks_user_info_and_secret_parameters() -> None:
    url = "https://me:pw@api.example.org/v1/search?token=abc&access_key=def&page=2"
    assert redact_url(url) == "https://***@api.example.org/v1/search?token=***&access_key=***&page=***"
    assert redact_url(url, public=("page",)) == "https://***@api.example.org/v1/search?token=***&access_key=***&page=2"
