"""Shared plumbing for the readers and writers: numbered UTF-8 lines, strict JSON, field checks, atomic writes."""

from __future__ import annotations

import difflib
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, describe

__all__ = [
    "FirstSeen",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_fields",
    "dumps_line",
    "iter_json_objects",
    "iter_text_lines",
    "loads_strict",
    "read_bytes",
    "special_file",
    "stream_target",
]

PathLike = str | os.PathLike


def read_bytes(path: PathLike) -> bytes:
    """The bytes of `path`; a missing or unreadable file is an InputError naming it."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("expected an existing file, got a path that does not exist", file=str(path)) from None
    except IsADirectoryError:
        raise InputError("expected a file, got a directory", file=str(path)) from None
    except OSError as error:
        raise InputError(f"expected a readable file, got {error.strerror}", file=str(path)) from None


def iter_text_lines(path: PathLike, data: bytes | None = None) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text) for each non-blank line, decoding UTF-8 line by line.

    Decoding per line lets an invalid byte be reported at its own line. A leading byte-order mark is not data
    and is dropped; `\\r\\n` endings are accepted. Blank (whitespace-only) lines are skipped. `data`, when
    given, is the file's bytes already read (errors still name `path`).
    """
    if data is None:
        data = read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"expected UTF-8 text, got byte {raw[error.start:error.start + 1]!r} at column {error.start + 1}"
                " (re-save the file as UTF-8)",
                file=str(path),
                line=number,
            ) from None
        text = text.removesuffix("\r")
        if text.strip():
            yield number, text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a finite number)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            # Plain json.loads keeps the last duplicate silently; a repeated key is almost always a mistake.
            raise ValueError(f"duplicate key {key!r} in one object")
        result[key] = value
    return result


def loads_strict(text: str, *, file: str | None = None, line: int | None = None) -> Any:
    """Parse strict JSON (no NaN/Infinity, no repeated keys) or raise InputError at `file`:`line`."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise InputError(
            f"expected valid JSON, got {error.msg} at column {error.colno}", file=file, line=line
        ) from None
    except ValueError as error:
        raise InputError(f"expected valid JSON, got {error}", file=file, line=line) from None
    except RecursionError:
        too_deep = True
    else:
        too_deep = _too_deep(value)
    if too_deep:
        raise InputError(
            f"expected JSON nested at most {MAX_DEPTH} levels deep, got deeper nesting", file=file, line=line
        )
    return value


# Far below Python's recursion limit: values this deep are never real data, and every later step (hashing
# metadata, fingerprints, reports) recurses over them again from deeper in the stack.
MAX_DEPTH = 64


def _too_deep(value: Any) -> bool:
    """Whether `value` nests lists/objects more than MAX_DEPTH levels (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def iter_json_objects(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file; non-objects are errors."""
    for number, text in iter_text_lines(path):
        value = loads_strict(text, file=str(path), line=number)
        if not isinstance(value, dict):
            raise InputError(
                f"expected one JSON object per line, got {describe(value, 60)}", file=str(path), line=number
            )
        yield number, value


def check_fields(
    record: Mapping[str, Any],
    *,
    required: Collection[str],
    allowed: Collection[str],
    file: str | None = None,
    line: int | None = None,
    hint: str = "",
) -> None:
    """Raise InputError for a missing required field or an unknown one (with a did-you-mean suggestion)."""
    for name in record:
        if name not in allowed:
            close = difflib.get_close_matches(name, list(allowed), n=1)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(
                f"expected one of {sorted(allowed)}, got unknown field {name!r}{suggestion}{hint}",
                file=file,
                line=line,
                field=name,
                value=record[name],
            )
    # Unknown fields first: a misspelt required field is best reported with its suggestion.
    for name in required:
        if name not in record:
            raise InputError(f"expected field {name!r}, got no such field", file=file, line=line, field=name)


class FirstSeen:
    """Remembers the line where each key was first seen and rejects a repeat, naming both lines."""

    def __init__(self, what: str, *, file: str, field: str) -> None:
        self._lines: dict[Any, int] = {}
        self._what = what
        self._file = file
        self._field = field

    def add(self, key: Any, *, line: int, shown: str, note: str = "") -> None:
        """Record `key` at `line`; raise InputError when it was seen before (`shown` renders it)."""
        if key in self._lines:
            raise InputError(
                f"expected {self._what}, got {shown} again (first on line {self._lines[key]}){note}",
                file=self._file, line=line, field=self._field, value=key,
            )
        self._lines[key] = line


def _canonical(value: Any) -> Any:
    # Sorted object keys make equal values write equal bytes whatever order they were built in.
    if isinstance(value, Mapping):
        return {str(key): _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not valid JSON")
    return value


def dumps_line(record: Mapping[str, Any], *, sort_keys_of: Collection[str] = ()) -> str:
    """One JSON line: top-level keys in the given order, the values under `sort_keys_of` canonically sorted."""
    ordered = {key: (_canonical(value) if key in sort_keys_of else value) for key, value in record.items()}
    return json.dumps(ordered, ensure_ascii=False, allow_nan=False)


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write `text` as UTF-8 to `path` via a temporary file in the same folder and an atomic rename.

    A crash never leaves a half-written file, and a reader that has the old file open keeps reading the old
    content (the rename swaps the directory entry; it never truncates the file being read). A symlink is
    followed, so its target is replaced. Text that cannot be UTF-8 (lone surrogates) is an InputError.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(
            f"expected text encodable as UTF-8, got {text[error.start:error.end]!r} (a lone surrogate)",
            file=str(path),
        ) from None
    atomic_write_bytes(path, data)


def _mode_of(path: PathLike) -> int | None:
    try:
        return os.stat(path).st_mode  # follows symlinks, /dev/stdout's /proc magic link included
    except (OSError, ValueError):
        return None


def stream_target(path: PathLike) -> bool:
    """Whether `path` is an existing stream (a FIFO, or a character device such as /dev/null or /dev/stdout).

    An output there is written into as it is: replacing it by a regular file would destroy `/dev/null` for a
    root user, and a pipe behind `/dev/stdout` has no folder to put a temporary file in.
    """
    mode = _mode_of(path)
    return mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))


def special_file(path: PathLike) -> str | None:
    """What `path` is when it exists and is neither a regular file, a folder nor a stream (e.g. "a block device")."""
    mode = _mode_of(path)
    if mode is None or stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return None
    return "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file"


def _write_stream(path: PathLike, data: bytes) -> None:
    # What the caller wrote to its own stdout goes first when the stream is the same one (`--json /dev/stdout`).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    with open(path, "wb") as handle:  # opened as it is: a stream is never replaced
        handle.write(data)


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically, as `atomic_write_text` does (temporary file with a unique name).

    The temporary file gets a name no other file has (mkstemp), so no unrelated `F.tmp` is ever replaced or
    deleted; a failed write (disk full, file-size limit) removes it and leaves the old file as it was. A stream
    (`stream_target`: a FIFO, /dev/stdout, /dev/null) is written into instead; a block device or socket is an
    InputError.
    """
    if stream_target(path):
        _write_stream(path, data)
        return
    kind = special_file(path)
    if kind is not None:
        raise InputError(
            f"expected a regular file or a stream (a FIFO, /dev/stdout) to write into, got {kind}", file=str(path)
        )
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise InputError("expected an existing folder to write into, got a missing folder", file=str(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600 files; keep the replaced file's mode, else use what an ordinary open() gives.
        os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
