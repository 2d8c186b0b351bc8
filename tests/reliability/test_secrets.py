"""No secret of an HTTP retriever reaches any output (item 10 of issue 12).

A real local service echoes every credential back (plain, URL-encoded and JSON-escaped) in its error bodies and
leaks across tenants so the run has violations and replay files. The retriever is configured the way a user
does it, through a config file with options; the test then greps the terminal output, the JSON, JUnit and HTML
reports, every replay file and the output of `ragmorph replay` for every configured secret in every form.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.cli import main
from ragmorph.io import read_corpus
from ragmorph.secrets import MASK, redact, register_secret

pytest.importorskip("httpx")

# Header names outside any "secret-looking" pattern, a short token, characters that URL-encode and JSON-escape.
SECRETS = {
    "authorization": "Bearer tok-0123456789abcdef",
    "x-authentication": "xa+9/Zq=",
    "x-short": "s3cr",
    "query": "q&p/é",
    "body": 'bk-"quoted"\\7',
    "password": "pa55word",
}


def _forms(value: str) -> set[str]:
    return {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value), json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1]}


class _EchoingLeakyService:
    """Serves BM25 over the corpus but ignores tenant filters; a query with 'reset' gets a 500 echoing credentials."""

    def __init__(self, corpus_path: Path) -> None:
        retriever = BM25Retriever(read_corpus(corpus_path))

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                payload = json.loads(body)
                if "reset" in payload["query"]:
                    echoed = [f"{name}: {value} | {urllib.parse.quote(value, safe='')} | {json.dumps(value)}"
                              for name, value in self.headers.items()]
                    text = "denied " + " ; ".join(echoed) + f" path={self.path} body={body.decode()}"
                    self._send(500, text.encode(), "text/plain")
                    return
                hits = retriever.retrieve(payload["query"], k=int(payload["k"]))  # filters ignored: a leak
                self._send(200, json.dumps({"hits": [{"id": h.id, "score": h.score} for h in hits],
                                            "debug": payload}).encode(), "application/json")

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://user:{SECRETS['password']}@{host}:{port}/search"


@pytest.fixture
def service(world: tuple[Path, Path]) -> Iterator[_EchoingLeakyService]:
    served = _EchoingLeakyService(world[0])
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


_ADAPTER = '''
from ragmorph.adapters.http import HTTPRetriever


def factory(corpus, *, url, headers, literal, signature_param):
    """An HTTP service over a fixed remote index (the corpus is not used)."""
    template = {"query": "${query}", "k": "${k}", "filters": "${filters}", "api_key": literal}
    return HTTPRetriever(url + "?sig=" + signature_param, headers=headers, request_template=template, score_field="score")
'''


def test_no_configured_secret_reaches_any_output(
    world: tuple[Path, Path], service: _EchoingLeakyService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, cases = world
    (tmp_path / "adapter.py").write_text(_ADAPTER, encoding="utf-8")
    options = {
        "url": service.url,
        "headers": {"Authorization": SECRETS["authorization"], "X-Authentication": SECRETS["x-authentication"],
                    "X-Short": SECRETS["x-short"]},
        "literal": SECRETS["body"],
        "signature_param": urllib.parse.quote(SECRETS["query"], safe=""),
    }
    config = tmp_path / "ragmorph.toml"
    config.write_text(
        f'corpus = "{corpus.name}"\ncases = "{cases.name}"\nmax_examples = 4\nstrategies = ["tenancy", "cutoff"]\n'
        f"[retrievers]\nhttp = {{ spec = \"adapter.py:factory\", options = {_toml(options)} }}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    argv = ["run", "--config", str(config), "--json", str(out / "r.json"), "--junit", str(out / "j.xml"),
            "--html", str(out / "r.html"), "--replay-dir", str(out / "replays")]
    code = main(argv)
    terminal = capsys.readouterr()
    assert code in (1, 3), terminal.out + terminal.err
    replays = sorted((out / "replays").glob("*.json"))
    assert replays, "the leaky service should have produced violations with replay files"
    outputs = {"terminal": terminal.out + terminal.err}
    outputs.update({path.name: path.read_text(encoding="utf-8") for path in [*out.glob("r.*"), out / "j.xml", *replays]})
    assert main(["replay", str(replays[0])]) == 2  # its options were masked: replay asks for --retriever
    outputs["replay command"] = "".join(capsys.readouterr())
    report = json.loads(outputs["r.json"])
    assert any("denied" in (row.get("reason") or "") for row in report["results"]), "the echo must reach a report"
    for name, text in outputs.items():
        for secret in SECRETS.values():
            for form in _forms(secret):
                assert form not in text, f"{secret!r} (as {form!r}) leaked into {name}"
    assert MASK in outputs["r.json"]


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def test_redaction_hides_every_form_of_a_registered_value_but_not_short_ones() -> None:
    register_secret("Zx9+/tok")
    text = " ".join(_forms("Zx9+/tok")) + " and 5 and en"
    assert redact(text) == " ".join([MASK] * len(_forms("Zx9+/tok"))) + " and 5 and en"
    register_secret("ab")
    assert redact("ab cd") == "ab cd"  # too short to hide without destroying every report
