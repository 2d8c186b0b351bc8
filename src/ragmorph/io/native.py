"""Native JSON Lines files: ``corpus.jsonl`` (one chunk a line) and ``cases.jsonl`` (one case a line).

Readers are strict: bad JSON, a line that is not an object, a wrong type, a missing or unknown field, invalid
UTF-8 and duplicate ids are InputErrors naming the file, the line and the field. Nothing is silently dropped;
only blank lines are skipped. Writers emit UTF-8 JSON Lines with every field in a fixed order (metadata keys
sorted), atomically, so writing then reading gives equal values and writing again gives equal bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ..errors import InputError, describe
from ..model import Case, Chunk, Corpus, check_evidence
from ._lines import FirstSeen, atomic_write_text, check_fields, dumps_line, iter_json_objects

__all__ = [
    "CASE_FIELDS",
    "CHUNK_FIELDS",
    "case_from_dict",
    "chunk_from_dict",
    "read_cases",
    "read_corpus",
    "write_cases",
    "write_corpus",
]

PathLike = str | os.PathLike

CHUNK_FIELDS: tuple[str, ...] = (
    "id", "text", "source", "tenant", "version", "effective_from", "superseded_by", "metadata",
)
CASE_FIELDS: tuple[str, ...] = ("id", "query", "tenant", "evidence", "claims", "answerable", "tags")

_EXTRA_DATA_HINT = ' (put extra data under "metadata")'


def _require_json_type(record: Mapping[str, Any], name: str, kinds: tuple[type, ...], expected: str) -> None:
    # The model's converters accept any iterable or mapping; from a file only the JSON type itself is right.
    if name in record and record[name] is not None and not isinstance(record[name], kinds):
        raise InputError(f"expected {expected}, got {name}={describe(record[name])}", field=name, value=record[name])


def chunk_from_dict(record: Mapping[str, Any], *, file: str | None = None, line: int | None = None) -> Chunk:
    """Build a Chunk from its native JSON object (only `id` and `text` required); errors name file and line."""
    try:
        check_fields(record, required=("id", "text"), allowed=CHUNK_FIELDS, hint=_EXTRA_DATA_HINT)
        _require_json_type(record, "effective_from", (str,), "an ISO date string like '2026-09-01' or null")
        _require_json_type(record, "metadata", (dict,), "a JSON object or null")
        return Chunk(**record)
    except InputError as error:
        raise error.at(file=file, line=line) from None


def case_from_dict(record: Mapping[str, Any], *, file: str | None = None, line: int | None = None) -> Case:
    """Build a Case from its native JSON object (`id` and `query` required); errors name file and line."""
    try:
        check_fields(record, required=("id", "query"), allowed=CASE_FIELDS)
        _require_json_type(record, "evidence", (list,), "a list of evidence groups (lists of chunk ids)")
        for number, group in enumerate(record.get("evidence") or ()):
            if not isinstance(group, (list, str, dict)):
                raise InputError(
                    f"expected evidence group {number} to be a list of chunk ids (or of "
                    f'{{"chunk": id, "span": [start, end]}} entries), got {describe(group)}',
                    field=f"evidence[{number}]",
                    value=group,
                )
        _require_json_type(record, "claims", (list,), "a list of strings")
        _require_json_type(record, "tags", (list,), "a list of strings")
        query = record.get("query")
        if isinstance(query, str) and not query.strip():
            raise InputError(
                f"expected a query to ask, got query={describe(query)}; an empty query cannot be judged",
                field="query",
                value=query,
            )
        return Case(**record)
    except InputError as error:
        raise error.at(file=file, line=line) from None


_Identified = TypeVar("_Identified", Chunk, Case)


def _read_unique(path: PathLike, what: str, parse: Callable[[dict[str, Any], str, int], _Identified]) -> list[_Identified]:
    """Every object of a JSON Lines file, parsed by `parse(record, file, line)`; a repeated id names both lines."""
    file = str(path)
    items: list[_Identified] = []
    ids = FirstSeen(f"unique {what} ids", file=file, field="id")
    for line, record in iter_json_objects(path):
        item = parse(record, file, line)
        ids.add(item.id, line=line, shown=f"id={item.id!r}")
        items.append(item)
    return items


def read_corpus(path: PathLike) -> Corpus:
    """Read ``corpus.jsonl``: one chunk object per line, blank lines skipped; ids must be unique."""
    lines: dict[str, int] = {}

    def parse(record: dict[str, Any], file: str, line: int) -> Chunk:
        chunk = chunk_from_dict(record, file=file, line=line)
        lines.setdefault(chunk.id, line)
        return chunk

    chunks = _read_unique(path, "chunk", parse)
    try:
        return Corpus(chunks)
    except InputError as error:
        # Corpus-wide rules (a superseded_by cycle) name a chunk id; point at that chunk's line.
        raise error.at(file=str(path), line=lines.get(error.value) if isinstance(error.value, str) else None) from None


def read_cases(path: PathLike, corpus: Corpus | None = None) -> tuple[Case, ...]:
    """Read ``cases.jsonl``: one case object per line, blank lines skipped; ids must be unique.

    An evidence entry is a chunk id or `{"chunk": id, "span": [start, end]}` (character offsets into the chunk's
    text, half-open). With `corpus`, every evidence id must name a chunk of it and every span must lie inside
    that chunk's text; the error names the case, the id, the line and the field.
    """

    def parse(record: dict[str, Any], file: str, line: int) -> Case:
        case = case_from_dict(record, file=file, line=line)
        if corpus is not None:
            check_evidence(case, corpus, file=file, line=line)
        return case

    return tuple(_read_unique(path, "case", parse))


def write_corpus(corpus: Corpus | Iterable[Chunk], path: PathLike) -> None:
    """Write chunks to `path` as ``corpus.jsonl`` (all fields, fixed order, metadata keys sorted), atomically."""
    lines = []
    for chunk in corpus:
        try:
            lines.append(dumps_line(chunk.to_dict(), sort_keys_of=("metadata",)))
        except (TypeError, ValueError) as error:
            raise InputError(
                f"expected JSON metadata (objects, lists, strings, finite numbers, booleans, null), got {error}"
                f" in chunk {chunk.id!r}",
                file=str(path),
                field="metadata",
            ) from None
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def write_cases(cases: Iterable[Case], path: PathLike) -> None:
    """Write cases to `path` as ``cases.jsonl`` (all fields, fixed order), atomically; ids must be unique."""
    seen: set[str] = set()
    lines = []
    for case in cases:
        if case.id in seen:
            raise InputError(
                f"expected unique case ids, got id={case.id!r} twice", file=str(path), field="id", value=case.id
            )
        seen.add(case.id)
        lines.append(dumps_line(case.to_dict()))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
