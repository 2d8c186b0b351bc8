"""Issue 31, items 3, 10, 11, 13 and 14: secrets in parallel runs, in options, and in the world of a replay file.

A real local service (127.0.0.1, an ephemeral port) serves BM25 over the corpus but ignores tenant filters, so a
run has violations, rankings and replay files; it echoes the request's headers into every hit's text, 150
characters in (so a 160-character snippet cut falls inside an echoed token). ragmorph runs in a subprocess, as
a user runs it: the secret registry lives as long as its process, and a common word registered as a secret
here ('policy') must not mask the worlds of later tests.
"""

from __future__ import annotations

import base64
import json
import secrets as token_source
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmorph.adapters import BM25Retriever
from ragmorph.cli import EXIT_USAGE, EXIT_VIOLATIONS
from ragmorph.io import read_corpus

pytest.importorskip("httpx")


def _fresh(prefix: str) -> str:
    return f"{prefix}-{token_source.token_hex(8)}"


class _EchoingLeakyService:
    """BM25 that ignores filters (a cross-tenant leak) and echoes X-Signature and Authorization into hit texts."""

    def __init__(self, corpus_path: Path) -> None:
        retriever = BM25Retriever(read_corpus(corpus_path))

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                echoed = f"{self.headers.get('X-Signature')} {self.headers.get('Authorization')}"
                hits = retriever.retrieve(payload["query"], k=int(payload["k"]))  # filters ignored: a leak
                body = {"hits": [{"id": h.id, "score": h.score, "text": "x" * 150 + echoed} for h in hits]}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, user_info: str = "") -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{user_info}{host}:{port}/search"


@pytest.fixture
def service(world: tuple[Path, Path]) -> Iterator[_EchoingLeakyService]:
    served = _EchoingLeakyService(world[0])
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


_HTTP_ADAPTER = '''
from ragmorph.adapters.http import HTTPRetriever


def factory(corpus, *, url, signature, collection="c-7f3e9a1b"):
    """The service, with a signature header whose name looks harmless and a request-template literal."""
    template = {"query": "${query}", "k": "${k}", "filters": "${filters}", "collection": collection}
    return HTTPRetriever(url, headers={"X-Signature": signature}, request_template=template, text_field="text")
'''

_LEAKY_ADAPTER = '''
from ragmorph.adapters import BM25Retriever


class Leaky:
    """BM25 that ignores tenant filters: violations, and so replay files, for sure."""

    def __init__(self, corpus):
        self.inner = BM25Retriever(corpus)

    def retrieve(self, query, *, k, filters=None):
        return self.inner.retrieve(query, k=k)


def factory(corpus, *, conn, dsn):
    """Options as a database client takes them: a nested password and a URL with one."""
    return Leaky(corpus)
'''


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _config(folder: Path, world: tuple[Path, Path], adapter: str, options: dict[str, Any], strategies: str) -> Path:
    (folder / "adapter.py").write_text(adapter, encoding="utf-8")
    corpus, cases = world
    config = folder / "ragmorph.toml"
    config.write_text(
        f'corpus = "{corpus.name}"\ncases = "{cases.name}"\nmax_examples = 3\nstrategies = {strategies}\n'
        f'[retrievers]\nsvc = {{ spec = "adapter.py:factory", options = {_toml(options)} }}\n',
        encoding="utf-8",
    )
    return config


def _ragmorph(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragmorph.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _run(config: Path, out: Path, *extra: str) -> tuple[int, dict[str, str]]:
    argv = ["run", "--config", str(config), "--json", str(out / "r.json"), "--junit", str(out / "j.xml"),
            "--html", str(out / "r.html"), "--replay-dir", str(out / "replays"), *extra]
    done = _ragmorph(*argv, cwd=config.parent)
    code = done.returncode
    outputs = {"terminal": done.stdout + done.stderr}
    outputs.update({p.name: p.read_text(encoding="utf-8") for p in [*out.glob("r.*"), out / "j.xml", *out.glob("replays/*.json")]})
    return code, outputs


def _assert_hidden(outputs: dict[str, str], *values: str) -> None:
    for name, text in outputs.items():
        for value in values:
            assert value[:7] not in text, f"{value!r} (or its first characters) leaked into {name}"


_RAY = pytest.param(("--executor", "ray", "--jobs", "2"), id="ray", marks=[pytest.mark.slow, pytest.mark.integration])


@pytest.mark.parametrize("extra", [pytest.param((), id="serial"), pytest.param(("--jobs", "2"), id="jobs2"), _RAY])
def test_echoed_tokens_are_masked_in_every_output_and_before_every_cut(
    world: tuple[Path, Path], service: _EchoingLeakyService, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    """Items 10 and 11: with --jobs or Ray only the workers build the retriever (and register its header); the
    caller that renders must hide it too, and no 160-character snippet may end inside it."""
    if "ray" in extra:
        pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'ragmorph[ray]'")
    signature, password = _fresh("sig"), _fresh("pw")
    basic = base64.b64encode(f"reader:{password}".encode()).decode()
    config = _config(tmp_path, world, _HTTP_ADAPTER, {"url": service.url(f"reader:{password}@"), "signature": signature},
                     '["tenancy"]')
    code, outputs = _run(config, tmp_path / "out", *extra)
    assert code == EXIT_VIOLATIONS, outputs["terminal"]
    report = json.loads(outputs["r.json"])
    shown = [hit["text"] for row in report["results"] if row.get("violation")
             for side in ("base", "follow_up") for hit in row["violation"][side]["ranking"] if hit.get("text")]
    assert shown and all(text.startswith("x" * 150) for text in shown)  # the echo reached the report, masked
    assert any(name.endswith(".json") and name != "r.json" for name in outputs), "expected replay files"
    _assert_hidden(outputs, signature, password, basic)


def test_nested_option_passwords_and_url_passwords_never_reach_a_replay_file(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    """Items 13 and 14: only top-level option names were checked, and a password inside a URL was kept."""
    nested, in_url = _fresh("np"), _fresh("dp")
    options = {"conn": {"host": "db.internal", "password": nested}, "dsn": f"postgresql://app:{in_url}@db/x"}
    config = _config(tmp_path, world, _LEAKY_ADAPTER, options, '["tenancy"]')
    code, outputs = _run(config, tmp_path / "out")
    assert code == EXIT_VIOLATIONS, outputs["terminal"]
    replays = sorted((tmp_path / "out" / "replays").glob("*.json"))
    assert replays
    stored = json.loads(replays[0].read_text(encoding="utf-8"))["retriever"]
    assert stored["options"]["conn"] == {"host": "db.internal", "password": "***"}
    assert stored["options"]["dsn"] == "postgresql://***@db/x"
    _assert_hidden(outputs, nested, in_url)
    # Replaying with *** in place of the password would judge another retriever: replay asks for one instead.
    replayed = _ragmorph("replay", str(replays[0]), cwd=tmp_path)
    assert replayed.returncode == EXIT_USAGE, replayed.stdout + replayed.stderr
    err = replayed.stderr
    assert "retriever.options" in err and "--retriever" in err and "Traceback" not in err
    _assert_hidden({"replay": err}, nested, in_url)


def test_a_template_literal_that_is_a_word_of_the_query_makes_the_replay_refuse_instead_of_saying_fixed(
    world: tuple[Path, Path], service: _EchoingLeakyService, tmp_path: Path
) -> None:
    """Item 3: the literal 'policy' is a secret and a word of the query 'parental leave policy'; masking it in
    the replay file's world made replay judge 'parental leave ***' and report "fixed" on a live leak."""
    signature = _fresh("sig")
    config = _config(tmp_path, world, _HTTP_ADAPTER,
                     {"url": service.url(), "signature": signature, "collection": "policy"}, '["tenancy"]')
    code, outputs = _run(config, tmp_path / "out")
    assert code == EXIT_VIOLATIONS, outputs["terminal"]
    replays = sorted((tmp_path / "out" / "replays").glob("*q1*.json"))
    assert replays, "expected a violation on case q1 (query 'parental leave policy')"
    data = json.loads(replays[0].read_text(encoding="utf-8"))
    assert data["world"]["case"]["query"] == "parental leave ***"  # no secret reaches the file, world included
    assert "world" in data["expected"]["masked"]
    replayed = _ragmorph("replay", str(replays[0]), "--retriever", str(tmp_path / "adapter.py") + ":factory", cwd=tmp_path)
    assert replayed.returncode == EXIT_USAGE, replayed.stdout
    assert "fixed" not in replayed.stdout and "expected.masked" in replayed.stderr and "Traceback" not in replayed.stderr
