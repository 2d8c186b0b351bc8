"""HTTP integration: a retriever behind a JSON endpoint, called with httpx.

Needs the extra ``ragmorph[http]`` (httpx), imported when the retriever is built.

**Request template.** `request_template` is any JSON-able structure (dicts, lists, strings, numbers). Inside
its strings, ``${name}`` is a placeholder (``$$`` is a literal ``$``). A string that is exactly one
placeholder is replaced by the typed value (``"${k}"`` becomes the number ``5``, ``"${filters}"`` an object
or null); a placeholder inside a longer string is replaced by its text (None as the empty string, objects
as JSON). Placeholders:

- ``query`` (string), ``k`` (integer);
- ``tenant`` (string or null), ``current_only`` (boolean), ``metadata`` (object of equality constraints);
- ``filters``: ``{"tenant", "current_only", "metadata"}`` or null when no filter applies.

With ``method="POST"`` (the default) the rendered template is the JSON body. With ``method="GET"`` it must be
a flat object, sent as query parameters: strings and numbers as text, booleans as ``true``/``false``,
objects and lists as JSON, nulls left out.

**Response mapping.** `response_path` is a dotted path from the JSON body to the list of hits (``""`` when the
body is the list itself; a numeric part indexes a list, e.g. ``"results.0.hits"``). In each hit, `id_field`,
`score_field` (None: the endpoint gives no scores) and `text_field` (optional) are dotted paths too.

**Errors** are `AdapterError` subclasses naming the URL and an excerpt of the response: `RetrieverTimeout`
when the endpoint does not answer within `timeout` seconds, `RetrieverFailed` for connection errors and HTTP
status >= 400, `InvalidResponse` for a body that is not JSON or lacks the mapped fields.

**Secrets.** Every configured header value, query parameter value, URL user info (also as the base64 of the
`Authorization: Basic` header httpx sends for it) and placeholder-free string
in `request_template` is a secret unless its name is listed in `public` (header names compare
case-insensitively; a template string is named by its key). `Content-Type`, `Accept`, `Accept-Encoding`,
`Accept-Language` and `User-Agent` are public unless listed in `secret`. `repr`, `description` and every error
show secrets as ``***``, and each value is registered with `ragmorph.secrets`, so every output ragmorph writes
(terminal, JSON, JUnit, HTML, replay files) hides it too, also URL-encoded or JSON-escaped. Values shorter than
four characters are shown (hiding every "5" would destroy a report); declare such parameters public.

Filters are passed to the endpoint and not re-checked here: the service behind the URL is the system under
test, and a leak it makes is exactly what ragmorph should report.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Collection, Mapping
from typing import Any

from ..errors import InvalidResponse, RetrieverFailed, RetrieverTimeout, UsageError, describe
from ..model import Filters, Hit
from ..secrets import MASK, redact, register_secret, url_credentials

__all__ = ["DEFAULT_REQUEST_TEMPLATE", "HTTPRetriever", "PLACEHOLDERS", "redact_url", "render_template"]

DEFAULT_REQUEST_TEMPLATE: dict[str, Any] = {"query": "${query}", "k": "${k}", "filters": "${filters}"}
PLACEHOLDERS: tuple[str, ...] = ("query", "k", "tenant", "current_only", "metadata", "filters")

_PLACEHOLDER = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)\}|(.|$))", re.DOTALL)
# Content negotiation, not credentials: shown unless the user lists them in `secret`.
DEFAULT_PUBLIC_HEADERS = frozenset({"content-type", "accept", "accept-encoding", "accept-language", "user-agent"})
_EXCERPT = 200


def redact_url(url: str, public: Collection[str] = ()) -> str:
    """`url` with user info and every query parameter value not named in `public` replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(
        f"{urllib.parse.quote(name, safe='')}={urllib.parse.quote(value, safe='') if name in public else MASK}"
        for name, value in pairs
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _check_template(template: Any, where: str = "request_template") -> None:
    """Raise UsageError for unknown placeholders or values that are not JSON-able."""
    if isinstance(template, str):
        for escaped, name, stray in _PLACEHOLDER.findall(template):
            if name and name not in PLACEHOLDERS:
                raise UsageError(
                    f"expected placeholders among {list(PLACEHOLDERS)}, got ${{{name}}} in {where}; "
                    "write a literal $ as $$"
                )
            if not escaped and not name:
                raise UsageError(
                    f"expected ${{name}} or $$ in {where}, got a bare '$' in {template!r}; write a literal $ as $$"
                )
    elif isinstance(template, Mapping):
        for key, value in template.items():
            if not isinstance(key, str):
                raise UsageError(f"expected string keys in {where}, got {describe(key)}")
            _check_template(value, f"{where}.{key}")
    elif isinstance(template, (list, tuple)):
        for position, value in enumerate(template):
            _check_template(value, f"{where}[{position}]")
    elif template is not None and not isinstance(template, (bool, int, float)):
        raise UsageError(f"expected a JSON-able request_template, got {where}={describe(template)}")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_template(template: Any, values: Mapping[str, Any]) -> Any:
    """Substitute the ``${name}`` placeholders of `template` with `values` (see the module docstring)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole is not None and whole.group(2):
            return values[whole.group(2)]
        return _PLACEHOLDER.sub(lambda m: "$" if m.group(1) else _as_text(values[m.group(2)]), template)
    if isinstance(template, Mapping):
        return {key: render_template(value, values) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        return [render_template(value, values) for value in template]
    return template


def _query_params(rendered: Any) -> dict[str, str]:
    if not isinstance(rendered, Mapping):
        raise UsageError(f"expected a flat object as request_template for GET, got {describe(rendered)}")
    params: dict[str, str] = {}
    for name, value in rendered.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            params[name] = str(value)
        else:
            params[name] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return params


def _template_secrets(template: Any, public: Collection[str], key: str | None = None) -> list[str]:
    """The placeholder-free strings of `template` (literal API keys and the like), except under `public` keys."""
    if isinstance(template, str):
        return [] if key in public or _PLACEHOLDER.search(template) else [template]
    if isinstance(template, Mapping):
        return [found for name, value in template.items() for found in _template_secrets(value, public, name)]
    if isinstance(template, (list, tuple)):
        return [found for value in template for found in _template_secrets(value, public, key)]
    return []


def _secret_values(
    url: str, headers: Mapping[str, str], template: Any, public: Collection[str], public_headers: Collection[str]
) -> list[str]:
    """Every configured value that is not declared public (see the module docstring)."""
    parts = urllib.parse.urlsplit(url)
    found = {value for name, value in headers.items() if name.lower() not in public_headers and value}
    found |= {value for name, value in urllib.parse.parse_qsl(parts.query) if name not in public and value}
    # The password, and the `Authorization: Basic` header httpx makes of the user info (a service may echo it);
    # the user name is masked in URLs shown, but it is not a secret on its own.
    found |= set(url_credentials(url))
    found |= set(_template_secrets(template, public))
    return sorted(found)


_MISSING = object()


def _follow(value: Any, path: str) -> Any:
    """The value at dotted `path` inside `value`, or `_MISSING`."""
    if not path:
        return value
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.lstrip("-").isdigit():
            position = int(part)
            value = value[position] if -len(value) <= position < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return value
    return value


def _check_path(name: str, path: Any, *, optional: bool = False) -> None:
    if path is None and optional:
        return
    if not isinstance(path, str):
        raise UsageError(f"expected a dotted path string for {name}, got {name}={describe(path)}")


class HTTPRetriever:
    """A retriever served over HTTP: renders a JSON request per call and maps the JSON response to hits."""

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        request_template: Any = None,
        response_path: str = "hits",
        id_field: str = "id",
        score_field: str | None = "score",
        text_field: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 10.0,
        public: Collection[str] = (),
        secret: Collection[str] = (),
    ) -> None:
        try:
            import httpx
        except ImportError as error:
            raise UsageError(
                "expected httpx to be installed for HTTPRetriever, got ImportError; "
                "install it with `pip install 'ragmorph[http]'`"
            ) from error
        if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise UsageError(f"expected an http(s) URL, got url={describe(url)}")
        method = str(method).upper()
        if method not in ("GET", "POST"):
            raise UsageError(f"expected method 'GET' or 'POST', got method={describe(method)}")
        template = DEFAULT_REQUEST_TEMPLATE if request_template is None else request_template
        _check_template(template)
        if method == "GET" and not isinstance(template, Mapping):
            raise UsageError(f"expected a flat object as request_template for GET, got {describe(template)}")
        _check_path("response_path", response_path)
        _check_path("id_field", id_field)
        _check_path("score_field", score_field, optional=True)
        _check_path("text_field", text_field, optional=True)
        if not id_field:
            raise UsageError("expected a non-empty id_field, got id_field=''")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UsageError(f"expected a positive number of seconds or None, got timeout={describe(timeout)}")
        self.url = url
        self.method = method
        self.request_template = template
        self.response_path = response_path
        self.id_field = id_field
        self.score_field = score_field
        self.text_field = text_field
        self.timeout = timeout
        for name, names in (("public", public), ("secret", secret)):
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise UsageError(f"expected {name} to be a list of names, got {name}={describe(names)}")
        self.public = frozenset(public)
        self._public_headers = (DEFAULT_PUBLIC_HEADERS - {n.lower() for n in secret}) | {n.lower() for n in public}
        self._headers = {str(name): str(value) for name, value in (headers or {}).items()}
        self._register_secrets()
        self._httpx = httpx
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def safe_url(self) -> str:
        """The URL with secrets masked, as shown in messages."""
        return redact_url(self.url, self.public)

    @property
    def safe_headers(self) -> dict[str, str]:
        """The headers with every value not declared public masked."""
        return {n: v if n.lower() in self._public_headers else MASK for n, v in self._headers.items()}

    @property
    def description(self) -> str:
        """A one-line description safe to put in reports."""
        return f"HTTP {self.method} {self.safe_url}"

    def __repr__(self) -> str:
        return f"HTTPRetriever({self.safe_url!r}, method={self.method!r}, headers={self.safe_headers!r})"

    __str__ = __repr__

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_client=None, _lock=None, _httpx=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import httpx

        self.__dict__.update(state)
        self._httpx = httpx
        self._lock = threading.Lock()
        self._register_secrets()  # a worker process writes outputs too

    def _register_secrets(self) -> None:
        for value in _secret_values(self.url, self._headers, self.request_template, self.public, self._public_headers):
            register_secret(value)

    def __enter__(self) -> HTTPRetriever:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool (the retriever reopens it if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _scrub(self, text: str) -> str:
        return redact(text.replace(self.url, self.safe_url))

    def _excerpt(self, text: str) -> str:
        text = self._scrub(text)
        return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._httpx.Client(headers=self._headers, timeout=self.timeout, follow_redirects=False)
            return self._client

    def request_for(self, query: str, *, k: int, filters: Filters | None = None) -> Any:
        """The rendered request (JSON body, or query parameters for GET) for one call."""
        active = filters if filters is not None and not filters.is_empty else None
        values = {
            "query": query,
            "k": k,
            "tenant": active.tenant if active else None,
            "current_only": active.current_only if active else False,
            "metadata": dict(active.metadata) if active else {},
            "filters": active.to_dict() if active else None,
        }
        rendered = render_template(self.request_template, values)
        return _query_params(rendered) if self.method == "GET" else rendered

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """POST (or GET) the rendered request and map the response's hits."""
        request = self.request_for(query, k=k, filters=filters)
        where = f"{self.method} {self.safe_url}"
        httpx = self._httpx
        try:
            if self.method == "GET":
                response = self._http().get(self.url, params=request)
            else:
                response = self._http().post(self.url, json=request)
        except httpx.TimeoutException:
            raise RetrieverTimeout(
                f"expected an answer from {where} within {self.timeout} s, got a timeout; "
                "raise timeout= or check the service",
                query=query,
            ) from None
        except httpx.HTTPError as error:
            # `from None`: httpx messages may repeat the full URL, query-string secrets included.
            raise RetrieverFailed(
                f"expected {where} to answer, got {type(error).__name__}: {self._scrub(str(error))}",
                query=query,
            ) from None
        if response.status_code >= 400:
            raise RetrieverFailed(
                f"expected a 2xx answer from {where}, got HTTP {response.status_code} {response.reason_phrase}",
                query=query,
                excerpt=self._excerpt(response.text),
            )
        try:
            body = response.json()
        except ValueError:
            raise InvalidResponse(
                f"expected a JSON body from {where}, got content-type {response.headers.get('content-type')!r}",
                query=query,
                excerpt=self._excerpt(response.text),
            ) from None
        return self._hits(body, query=query, where=where)

    def _hits(self, body: Any, *, query: str, where: str) -> tuple[Hit, ...]:
        items = _follow(body, self.response_path)
        if items is _MISSING or not isinstance(items, list):
            got = "nothing" if items is _MISSING else type(items).__name__
            raise InvalidResponse(
                f"expected a list at response_path={self.response_path!r} in the JSON from {where}, got {got}",
                query=query,
                excerpt=self._excerpt(json.dumps(body, ensure_ascii=False)),
            )
        hits = []
        for rank, item in enumerate(items, start=1):
            chunk_id = _follow(item, self.id_field)
            if not isinstance(chunk_id, str) or not chunk_id:
                got = "nothing" if chunk_id is _MISSING else describe(chunk_id)
                raise InvalidResponse(
                    f"expected a non-empty string at id_field={self.id_field!r} of hit {rank} from {where}, got {got}",
                    query=query,
                    excerpt=self._excerpt(json.dumps(item, ensure_ascii=False)),
                )
            score = None
            if self.score_field is not None:
                score = _follow(item, self.score_field)
                if score is _MISSING or isinstance(score, bool) or not isinstance(score, (int, float, type(None))):
                    got = "nothing" if score is _MISSING else describe(score)
                    raise InvalidResponse(
                        f"expected a number or null at score_field={self.score_field!r} of hit {rank} from {where}, "
                        f"got {got}; pass score_field=None if the service gives no scores",
                        query=query,
                        excerpt=self._excerpt(json.dumps(item, ensure_ascii=False)),
                    )
            text = _follow(item, self.text_field) if self.text_field is not None else None
            hits.append(
                Hit(chunk_id, None if score is None else float(score), text if isinstance(text, str) else None)
            )
        return tuple(hits)
