"""Ragas-style evaluation rows (``SingleTurnSample`` fields) as a corpus, cases and the retrieved rankings.

Input: JSON Lines (one row a line, as ``EvaluationDataset.to_jsonl`` writes) or one JSON list of rows (errors
then name the 1-based row as the line). Fields
used: ``user_input`` (required, the query), ``retrieved_contexts`` / ``retrieved_context_ids`` (the ranking, in
order), ``reference_contexts`` / ``reference_context_ids`` (the gold evidence) and ``reference`` (the reference
answer, kept as the case's claim). Other ``SingleTurnSample`` fields (``response``, ``rubrics``...) are accepted
and ignored; an ``id`` field, when present, names the case; any other field is an error (typo guard).

Mapping and missing ids:

- case ids are the row's ``id`` or ``row-<n>`` (n = 1-based row number);
- each reference id is its own evidence group (Ragas' ID-based context recall counts every reference id);
- contexts without ids get a content id ``ctx-<first 12 hex of sha256(text)>``, so equal texts share one chunk
  and a reference context can match a retrieved one;
- ids without texts (only ``*_context_ids`` given) become chunks with empty text and
  ``metadata["text_missing"] = True``: ID-based metrics work, text-based judges have nothing to read;
- when ids and contexts are both given they must have equal lengths; one id with two different texts anywhere
  in the file is an error naming both rows; integer ids become strings;
- a row with a ``reference`` but no reference contexts or ids becomes a case with ``answerable=True`` and no
  evidence (recall undefined; the reference is its claim); a row with neither is an answerable-unknown case
  with no evidence (so it counts as unanswerable).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

import attrs

from ..errors import InputError, describe
from ..model import Case, Chunk, Corpus, Ranking
from ._lines import check_fields, iter_text_lines, loads_strict, read_bytes

__all__ = ["RAGAS_FIELDS", "RagasData", "read_ragas"]

PathLike = str | os.PathLike

RAGAS_FIELDS: tuple[str, ...] = (
    "user_input", "retrieved_contexts", "reference_contexts", "retrieved_context_ids", "reference_context_ids",
    "response", "multi_responses", "reference", "rubrics", "persona_name", "query_style", "query_length",
)
_ALLOWED = (*RAGAS_FIELDS, "id")


@attrs.frozen
class RagasData:
    """What a Ragas file holds: the corpus of all contexts, one case per row, and each row's retrieved ranking."""

    corpus: Corpus
    cases: tuple[Case, ...]
    rankings: dict[str, Ranking]


def content_id(text: str) -> str:
    """The id given to a context that came without one: stable across rows and files."""
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _rows(path: PathLike) -> Iterator[tuple[int, Any]]:
    data = read_bytes(path)
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"["):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InputError(f"expected UTF-8 text, got an invalid byte at offset {error.start}",
                             file=str(path)) from None
        for number, row in enumerate(loads_strict(text, file=str(path)), start=1):
            yield number, row
    else:
        for line, text in iter_text_lines(path, data):
            yield line, loads_strict(text, file=str(path), line=line)


def _string_list(row: dict[str, Any], name: str, *, ids: bool = False) -> list[str] | None:
    value = row.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {name}={describe(value)}", field=name, value=value)
    items: list[str] = []
    for item in value:
        if ids and isinstance(item, int) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str) or (ids and not item.strip()):
            kind = "non-empty string or integer ids" if ids else "strings"
            raise InputError(f"expected a list of {kind}, got an item {describe(item)} in {name}", field=name,
                             value=item)
        items.append(item)
    return items


def _contexts(row: dict[str, Any], prefix: str) -> list[tuple[str, str | None]]:
    texts = _string_list(row, f"{prefix}_contexts")
    ids = _string_list(row, f"{prefix}_context_ids", ids=True)
    if texts is not None and ids is not None and len(texts) != len(ids):
        raise InputError(
            f"expected as many {prefix}_context_ids as {prefix}_contexts, got {len(ids)} ids and {len(texts)} texts",
            field=f"{prefix}_context_ids",
        )
    if ids is None:
        return [(content_id(text), text) for text in texts or ()]
    return [(chunk_id, texts[n] if texts is not None else None) for n, chunk_id in enumerate(ids)]


def read_ragas(path: PathLike) -> RagasData:
    """Read Ragas-style rows (JSON Lines or a JSON list) into a RagasData (see the module docstring)."""
    file = str(path)
    texts: dict[str, tuple[str | None, int]] = {}
    order: list[str] = []
    cases: list[Case] = []
    rankings: dict[str, Ranking] = {}
    for number, row in _rows(path):
        try:
            if not isinstance(row, dict):
                raise InputError(f"expected each row to be a JSON object, got {describe(row, 60)}")
            check_fields(row, required=("user_input",), allowed=_ALLOWED)
            query = row["user_input"]
            if not isinstance(query, str):
                raise InputError(f"expected a string, got user_input={describe(query)}", field="user_input")
            if not query.strip():
                # As the native reader: an empty query cannot be judged.
                raise InputError(
                    f"expected a query to ask, got user_input={describe(query)}; an empty query cannot be judged",
                    field="user_input", value=query,
                )
            retrieved = _contexts(row, "retrieved")
            reference = _contexts(row, "reference")
            for chunk_id, text in (*retrieved, *reference):
                known = texts.get(chunk_id)
                if known is None or (known[0] is None and text is not None):
                    if known is None:
                        order.append(chunk_id)
                    texts[chunk_id] = (text, number)
                elif text is not None and known[0] != text:
                    raise InputError(
                        f"expected one text per context id, got two different texts for {chunk_id!r}"
                        f" (the other in row {known[1]})",
                        field="retrieved_context_ids", value=chunk_id,
                    )
            answer = row.get("reference")
            if answer is not None and not isinstance(answer, str):
                raise InputError(f"expected a string, got reference={describe(answer)}", field="reference")
            evidence = [[chunk_id] for chunk_id, _ in reference]
            case_id = row.get("id", f"row-{number}")
            if isinstance(case_id, int) and not isinstance(case_id, bool):
                case_id = str(case_id)
            case = Case(
                id=case_id,
                query=query,
                evidence=evidence,
                claims=[answer] if answer else [],
                answerable=True if answer and not evidence else None,
            )
            if case.id in rankings:
                raise InputError(f"expected unique row ids, got id={case.id!r} twice", field="id", value=case.id)
            rankings[case.id] = Ranking.of(chunk_id for chunk_id, _ in retrieved)
            cases.append(case)
        except InputError as error:
            raise error.at(file=file, line=number) from None
    corpus = Corpus(
        Chunk(chunk_id, text) if text is not None else Chunk(chunk_id, "", metadata={"text_missing": True})
        for chunk_id, (text, _) in ((chunk_id, texts[chunk_id]) for chunk_id in order)
    )
    return RagasData(corpus=corpus, cases=tuple(cases), rankings=rankings)
