"""The JSON report: the shipped schema, a validator that reads it, and writing and reading report files.

`report.schema.json` (JSON Schema 2020-12) is the single description of the format. `validate_report` walks it
with the small subset of JSON Schema the file uses (type, const, enum, required, properties,
additionalProperties, items, anyOf, $ref, minimum), so validation needs no third-party package; the tests check
that the `jsonschema` package agrees with it.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError, describe
from ..io import atomic_write_bytes
from ..secrets import redact_data

__all__ = ["SCHEMA", "load_report", "report_schema", "validate_report", "write_json"]

SCHEMA = "ragmorph.report/1"

_JSON_TYPES: dict[str, str] = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


@functools.lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files(__package__).joinpath("report.schema.json").read_text(encoding="utf-8")


def report_schema() -> dict[str, Any]:
    """A fresh copy of the JSON Schema of "ragmorph.report/1" (the file shipped as report.schema.json)."""
    return json.loads(_schema_text())


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, Mapping)
    if name == "array":
        return isinstance(value, (list, tuple))
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, (int, float))


def _field(path: str) -> str:
    return path or "<report>"


class _Validator:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.definitions = schema.get("$defs", {})

    def check(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            self.check(value, self.definitions[name], path)
        if "anyOf" in schema:
            self._any_of(value, schema["anyOf"], path)
        if "const" in schema and value != schema["const"]:
            self._fail(path, f"{schema['const']!r}", value)
        if "enum" in schema and (value not in schema["enum"] or isinstance(value, bool)):
            self._fail(path, "one of " + ", ".join(repr(v) for v in schema["enum"]), value)
        if "type" in schema:
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is_type(value, name) for name in names):
                self._fail(path, " or ".join(_JSON_TYPES[n] for n in names), value)
        if isinstance(value, float) and not math.isfinite(value):
            self._fail(path, "a finite number (JSON has no NaN or Infinity; use null for undefined)", value)
        if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
            self._fail(path, f"a number >= {schema['minimum']}", value)
        if isinstance(value, Mapping):
            self._object(value, schema, path)
        if isinstance(value, (list, tuple)) and "items" in schema:
            for position, item in enumerate(value):
                self.check(item, schema["items"], f"{path}[{position}]")

    def _object(self, value: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> None:
        for key in schema.get("required", ()):
            if key not in value:
                where = f"{path}." if path else ""
                raise InputError(
                    f"expected the key {key!r} in {_field(path)}, got keys {sorted(map(str, value))}",
                    field=f"{where}{key}",
                )
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key in properties:
                self.check(item, properties[key], where)
            elif extra is False:
                raise InputError(f"expected only the keys {sorted(properties)}, got the extra key {key!r}", field=where)
            elif isinstance(extra, Mapping):
                self.check(item, extra, where)

    def _any_of(self, value: Any, options: list[Mapping[str, Any]], path: str) -> None:
        failures: list[InputError] = []
        for option in options:
            try:
                self.check(value, option, path)
            except InputError as error:
                failures.append(error)
            else:
                return
        # The deepest failure names the offending field best (e.g. a bad score inside a violation, not "not null").
        raise max(failures, key=lambda error: len(error.field or ""))

    @staticmethod
    def _fail(path: str, expected: str, value: Any) -> None:
        name = path.rsplit(".", 1)[-1] if path else "report"
        raise InputError(f"expected {expected}, got {name}={describe(value)}", field=_field(path), value=value)


def validate_report(report: Any, *, file: str | os.PathLike[str] | None = None) -> None:
    """Raise InputError naming the field (e.g. `results[3].status`) when `report` does not match the schema."""
    if not isinstance(report, Mapping):
        raise InputError(
            f"expected a report object with schema {SCHEMA!r}, got {describe(report)}",
            file=None if file is None else str(file),
        )
    if report.get("schema") != SCHEMA:
        raise InputError(
            f"expected schema={SCHEMA!r}, got schema={describe(report.get('schema'))}; "
            "is this a metrics file or a replay file instead of a report?",
            file=None if file is None else str(file),
            field="schema",
            value=report.get("schema"),
        )
    schema = report_schema()
    try:
        _Validator(schema).check(report, schema, "")
    except InputError as error:
        raise error.at(file=None if file is None else str(file)) from None


def write_json(report: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Validate `report` and write it as UTF-8 JSON (2-space indent, keys in the given order); returns the path."""
    target = Path(path)
    validate_report(report)
    report = redact_data(report)
    text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (possible in generated chunk text) have no UTF-8 form; JSON escapes keep them exactly.
        data = (json.dumps(report, indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, data)
    return target


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a report file written by `write_json` (InputError naming the file otherwise)."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"expected a readable report file, got {error.strerror}", file=str(source)) from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"expected JSON, got {error.msg}", file=str(source), line=error.lineno) from None
    validate_report(report, file=source)
    return report
