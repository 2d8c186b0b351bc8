"""Secret values that must never reach an output, and the one place that hides them in any text written.

Adapters that hold credentials (the HTTP retriever's headers, query parameters and request-template values)
register them with `register_secret`. Every writer of text a user may share (terminal output and error lines,
JSON, JUnit, HTML, replay files, metrics files) passes what it writes through `redact` or `redact_data`, which
replace each registered value, in every encoding it may have been echoed in, by ``***``.

Hiding is by value, so it works whatever carried the secret (a header echoed by a server, an exception
message, a description): plain, URL-encoded (``%2B``/``+`` forms), JSON-escaped and HTML-escaped forms are all
replaced. Values shorter than `MIN_LENGTH` characters are not hidden: replacing every "5" or "en" in a report
would destroy it, and such values do not protect anything.
"""

from __future__ import annotations

import html
import json
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

__all__ = ["MASK", "MIN_LENGTH", "redact", "redact_data", "register_secret", "secret_forms"]

MASK = "***"
MIN_LENGTH = 4

_lock = threading.Lock()
_forms: set[str] = set()
_ordered: list[str] = []


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
        if new <= _forms:
            return
        _forms.update(new)
        # Longest first, so a whole value is replaced before any shorter part of it.
        _ordered[:] = sorted(_forms, key=lambda form: (-len(form), form))


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

