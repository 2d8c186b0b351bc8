"""Issue 31, items 11 and 12: secrets are masked before any cut, and a URL password is hidden in its Basic form.

A real HTTP service on 127.0.0.1 (tests/support/retriever_server.py) echoes the `Authorization` header in the body
of its 500 answers, as careless services do; httpx sends a URL's user info as `Authorization: Basic base64(u:p)`.
"""

from __future__ import annotations

import base64
import secrets as token_source
from collections.abc import Iterator

import pytest

from ragmorph.adapters import BM25Retriever, Configured, display_name, excerpt
from ragmorph.adapters.http import HTTPRetriever
from ragmorph.errors import RetrieverFailed, describe
from ragmorph.secrets import MASK, clip, register_secret
from support.integration_checks import tenant_corpus
from support.retriever_server import RetrieverServer

pytest.importorskip("httpx")


def _fresh(prefix: str) -> str:
    """A value no other test registered (the registry is per process)."""
    return f"{prefix}-{token_source.token_hex(8)}"


@pytest.fixture(scope="module")
def server() -> Iterator[RetrieverServer]:
    with RetrieverServer(BM25Retriever(tenant_corpus())) as running:
        yield running


def test_a_url_password_echoed_as_its_basic_authorization_is_masked(server: RetrieverServer) -> None:
    password = _fresh("pw")
    url = server.url("/error").replace("http://", f"http://reader:{password}@")
    basic = base64.b64encode(f"reader:{password}".encode()).decode()
    with HTTPRetriever(url) as remote, pytest.raises(RetrieverFailed) as caught:
        remote.retrieve("parental leave", k=3)
    assert server.requests[-1]["headers"]["Authorization"] == f"Basic {basic}"  # what the service saw and echoed
    message = str(caught.value)
    assert "internal error while authorising" in message and MASK in message
    assert basic not in message and basic[:12] not in message and password not in message


@pytest.mark.parametrize("cut", [1, 5, 10, 19])
def test_excerpts_and_described_values_mask_before_they_cut(cut: int) -> None:
    token = _fresh("tok")
    register_secret(token)
    response = [("a" * (120 - cut), 1.0), token]  # the token straddles the 120-character cut
    for text in (excerpt(response, limit=120), describe(response, limit=120), clip(repr(response), 120)):
        assert token[:5] not in text, text
    assert clip("x" * 10 + token, 12 + cut).startswith("x" * 10)


def test_the_manifest_description_of_configured_options_hides_a_secret_at_its_cut() -> None:
    token = _fresh("sig")
    register_secret(token)  # as an HTTPRetriever built from these options registers its header value
    configured = Configured("a.py:f", {"pad": "", "headers": {"X-Signature": token}})
    start = repr(configured).index(token)
    configured = Configured("a.py:f", {"pad": "p" * (75 - start), "headers": {"X-Signature": token}})
    assert repr(configured).index(token) == 75  # the old 80-character cut fell inside the token
    shown = display_name(configured)
    assert token[:4] not in shown and shown.endswith("**...")  # the mask, cut; never the secret
