"""The one family of errors ragmorph raises; every message says what was expected and what was got."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "AdapterError",
    "ContractRule",
    "CorpusChanged",
    "ExitCode",
    "InputError",
    "InvalidResponse",
    "RagmorphError",
    "RetrieverFailed",
    "RetrieverTimeout",
    "UsageError",
    "describe",
    "raised_at",
    "retriever_errors",
]


class ExitCode(enum.IntEnum):
    """The exit codes of every ragmorph command, report and the evaluator (the one place they are defined)."""

    OK = 0  # every hard relation holds
    VIOLATIONS = 1  # violations found
    USAGE = 2  # usage or input error (no report is produced)
    ERRORS = 3  # retriever errors prevented a verdict

    @property
    def meaning(self) -> str:
        """The code in words, as reports print it."""
        return _EXIT_MEANINGS[self]


_EXIT_MEANINGS = {
    ExitCode.OK: "every hard relation holds",
    ExitCode.VIOLATIONS: "violations found",
    ExitCode.USAGE: "usage or input error",
    ExitCode.ERRORS: "retriever errors prevented a verdict",
}


def describe(value: Any, limit: int = 80) -> str:
    """Render a received value as `repr (type)`, cut to `limit` characters, for error messages."""
    from .secrets import clip  # same layer; masked before the cut, or a cut secret's prefix would show

    return f"{clip(repr(value), limit)} ({type(value).__name__})"


class RagmorphError(Exception):
    """Base class of every error ragmorph raises on purpose."""


class UsageError(RagmorphError):
    """A command, option or argument was used wrongly (CLI exit code 2)."""


class InputError(RagmorphError):
    """A world, file or value is invalid; names the file, line and field where they are known.

    The structured parts stay available as attributes so callers (the CLI, reports) can render them.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        value: Any = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.value = value
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file is not None:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
        if self.field is not None:
            where = f"{where} field {self.field!r}" if where else f"field {self.field!r}"
        return f"{where}: {self.message}" if where else self.message

    def at(self, *, file: str | None = None, line: int | None = None) -> InputError:
        """Return a copy of this error located in `file` at `line` (readers add the place they know)."""
        return InputError(
            self.message,
            file=file if file is not None else self.file,
            line=line if line is not None else self.line,
            field=self.field,
            value=self.value,
        )


class CorpusChanged(RagmorphError):
    """A Corpus no longer matches its own index: something edited it in place (e.g. with object.__setattr__)."""


class AdapterError(RagmorphError):
    """A retriever misbehaved; carries the query and an excerpt of what it returned or raised."""

    def __init__(self, message: str, *, query: str | None = None, excerpt: str | None = None) -> None:
        self.message = message
        self.query = query
        self.excerpt = excerpt
        parts = [message]
        if query is not None:
            parts.append(f"query={query!r}")
        if excerpt is not None:
            parts.append(f"response: {excerpt}")
        super().__init__("; ".join(parts))


class ContractRule(enum.Enum):
    """Which rule of the retriever contract (DESIGN section 3) a rejected response broke."""

    MALFORMED = "malformed"  # not a sequence of hits, a hit of the wrong type or shape, an empty id
    TOO_MANY_HITS = "too_many_hits"
    DUPLICATE_ID = "duplicate_id"
    UNKNOWN_ID = "unknown_id"
    NON_FINITE_SCORE = "non_finite_score"
    RISING_SCORE = "rising_score"


class InvalidResponse(AdapterError):
    """The retriever answered, but the answer breaks the retriever contract (too many hits, unknown ids...).

    `rule` names the broken rule as a value, so callers never parse the message to tell breaches apart.
    """

    def __init__(
        self,
        message: str,
        *,
        query: str | None = None,
        excerpt: str | None = None,
        rule: ContractRule = ContractRule.MALFORMED,
    ) -> None:
        super().__init__(message, query=query, excerpt=excerpt)
        self.rule = rule


class RetrieverFailed(AdapterError):
    """The retriever raised an exception."""


class RetrieverTimeout(AdapterError):
    """The retriever did not answer within its per-call time limit."""


@contextmanager
def retriever_errors(what: str, *, query: str | None = None) -> Iterator[None]:
    """Report any exception raised inside, other than ragmorph's own, as RetrieverFailed naming `what`.

    A retriever's (or its factory's) exception is a verdict of its own, never an empty ranking or a pass. That
    includes BaseExceptions such as SystemExit raised by user code: a `sys.exit(0)` inside a retriever must not
    end the run with exit 0. Only KeyboardInterrupt (the user stopping the run) and asyncio cancellation (the
    event loop's own control flow) pass through.
    """
    try:
        yield
    except RagmorphError:
        raise
    except BaseException as error:
        if _passes_through(error):
            raise
        raise RetrieverFailed(f"{what} raised {_what_was_raised(error)}", query=query) from error


def _passes_through(error: BaseException) -> bool:
    if isinstance(error, KeyboardInterrupt):
        return True
    # Looked up, not imported: without asyncio loaded nothing can be an asyncio cancellation (keeps CLI start fast).
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(error, asyncio.CancelledError)


def _what_was_raised(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"SystemExit (sys.exit({error.code!r})); a retriever must return hits, not end the process"
    where = raised_at(error)
    return f"{type(error).__name__}: {error}" + (f" (raised at {where})" if where else "")


def raised_at(error: BaseException) -> str | None:
    """Where `error` was raised: the innermost frame as ``path:line in function``, a library's path from its
    package folder (``langchain_core/vectorstores/utils.py:56 in _cosine_similarity``), a user's relative to the
    working folder; None without a traceback."""
    import os

    frame = error.__traceback__
    if frame is None:
        return None
    while frame.tb_next is not None:
        frame = frame.tb_next
    code = frame.tb_frame.f_code
    path = code.co_filename.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        try:
            relative = os.path.relpath(path)
            path = relative if not relative.startswith("..") else path
        except ValueError:  # another drive on Windows
            pass
    return f"{path}:{frame.tb_lineno} in {code.co_name}"
