"""Secret values that must never reach an output, and the one place that hides them in any text written.

Adapters that hold credentials (the HTTP retriever's headers, query parameters and request-template values)
register them with `register_secret`. Every writer of text a user may share (terminal output and error lines,
JSON, JUnit, HTML, replay files, metrics files) passes what it writes through `redact` or `redact_data`, which
replace each registered value, in every encoding it may have been echoed in, by ``***``.

Hiding is by value, so it works whatever carried the secret (a header echoed by a server, an exception
message, a description): plain, URL-encoded (``%2B``/``+`` forms), JSON-escaped and HTML-escaped forms are all
replaced. Values shorter than `MIN_LENGTH` characters are not hidden: replacing every "5" or "en" in a report
would destroy it, and such values do not protect anything.

Masking always comes before cutting: `clip` is the one way to shorten text that may hold a secret, so an
excerpt never ends with a secret's first characters. A process that renders what another process computed
(a `--jobs` worker, a Ray actor) registers that process's secrets first (`registered` gives them to send).
Retriever options are data too: `register_option_secrets` hides every value under a secret-looking name at
any depth and every password inside a URL, since a factory's options are written into replay files.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "SECRET_WORDS",
    "clip",
    "is_secret_name",
    "option_secrets",
    "redact",
    "redact_data",
    "register_option_secrets",
    "register_secret",
    "registered",
    "secret_forms",
    "url_credentials",
]

MASK = "***"
MIN_LENGTH = 4

_lock = threading.Lock()
_forms: set[str] = set()
_ordered: list[str] = []
_values: dict[str, None] = {}  # the raw values, in registration order (what another process must register)

# Words of option names whose values are credentials. Whole words, so `max_tokens` or `keywords` are not.
SECRET_WORDS = frozenset({
    "apikey", "auth", "authorization", "cookie", "credential", "credentials", "key", "passphrase", "passwd",
    "password", "pwd", "secret", "token",
})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def secret_forms(value: str) -> set[str]:
    """`value` as it may appear in an output: plain, URL-encoded, JSON-escaped and HTML-escaped."""
    forms = {
        value,
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote(value),
        urllib.parse.quote_plus(value),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        html.escape(value),
        html.escape(value, quote=False),
    }
    return {form for form in forms if len(form) >= MIN_LENGTH}


def register_secret(value: str) -> None:
    """Hide `value` (and each word of it, for `Bearer <token>` echoed as the bare token) in every later output."""
    if not isinstance(value, str):
        value = str(value)
    words = [word for word in value.split() if len(word) >= MIN_LENGTH]
    new = set().union(*(secret_forms(part) for part in {value, *words}))
    with _lock:
        _values.setdefault(value, None)
        if new <= _forms:
            return
        _forms.update(new)
        # Longest first, so a whole value is replaced before any shorter part of it.
        _ordered[:] = sorted(_forms, key=lambda form: (-len(form), form))


def registered() -> tuple[str, ...]:
    """Every value registered in this process so far, in registration order (to register in another process)."""
    with _lock:
        return tuple(_values)


def url_credentials(text: str) -> list[str]:
    """The credentials inside URLs in `text`: each password, `user:password`, and its HTTP Basic form.

    ``https://u:pw@host/`` sends ``Authorization: Basic base64(u:pw)``, which a service may echo back: that form
    is a secret as much as the password. `user:password` also hides the user info of a URL whose password is
    shorter than `MIN_LENGTH`.
    """
    found: list[str] = []
    for match in _URL_USERINFO.finditer(text):
        user, _, password = match.group(1).partition(":")
        if not password:
            continue
        plain = [urllib.parse.unquote(user), urllib.parse.unquote(password)]
        pair = ":".join(plain)
        basic = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        found += [plain[1], match.group(1), pair, basic, f"Basic {basic}"]
    return found


# scheme://userinfo@ : userinfo has no '/', '@' or whitespace (RFC 3986 section 3.2.1).
_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/@\s]+)@")


def is_secret_name(name: str) -> bool:
    """Whether option name `name` holds a credential: one of its words (`api_key`, `apiKey`, `X-Auth-Token`) is in
    SECRET_WORDS."""
    words = [word.lower() for word in _WORD.findall(name)]
    return any(word in SECRET_WORDS for word in words) or "".join(words).endswith("apikey")


def option_secrets(value: Any, *, secret: bool = False) -> list[str]:
    """The credentials in retriever options: every scalar under a secret-looking name at any depth, and every
    URL password (see `url_credentials`)."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += option_secrets(item, secret=secret or (isinstance(key, str) and is_secret_name(key)))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            found += option_secrets(item, secret=secret)
    elif isinstance(value, str):
        found += url_credentials(value)
        if secret and value:
            found.append(value)
    elif secret and isinstance(value, (int, float)) and not isinstance(value, bool):
        found.append(str(value))  # a numeric PIN or key is still a credential
    return found


def register_option_secrets(options: Any) -> None:
    """Register every credential of retriever `options` (see `option_secrets`) so no output shows it."""
    for value in option_secrets(options):
        register_secret(value)


def clip(text: str, limit: int, ellipsis: str = "...") -> str:
    """`text` with secrets masked, then cut to `limit` characters ending in `ellipsis` when longer.

    Masking first: a cut made before it could leave a secret's first characters, which no longer match.
    """
    text = redact(text)
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ellipsis), 0)] + ellipsis


def redact(text: str) -> str:
    """`text` with every registered secret, in any of its forms, replaced by ``***``."""
    if not _ordered or not isinstance(text, str):
        return text
    for form in _ordered:
        if form in text:
            text = text.replace(form, MASK)
    return text


def redact_data(value: Any) -> Any:
    """A copy of JSON-like `value` with `redact` applied to every string in it, keys included."""
    if not _ordered:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(key) if isinstance(key, str) else key: redact_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    return value

