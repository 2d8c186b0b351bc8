"""FunctionRetriever: a plain search function `fn(query, k)` or `fn(query, k, filters)` as a Retriever."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Filters
from ._protocol import RawHit

__all__ = ["FunctionRetriever", "positional_arity"]


def positional_arity(fn: Callable[..., Any]) -> tuple[int, int, bool] | None:
    """(required positional, maximum positional, has *args) of `fn`, or None when it has no signature."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    required = maximum = 0
    star = False
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            maximum += 1
            if parameter.default is parameter.empty:
                required += 1
        elif parameter.kind is parameter.VAR_POSITIONAL:
            star = True
    return required, maximum, star


class FunctionRetriever:
    """Wraps `fn(query, k)` or `fn(query, k, filters)`; the signature decides whether filters are passed.

    A two-argument function cannot honour filters, so `supports_filters` is False and a call with non-empty
    filters raises UsageError rather than silently returning unfiltered hits.
    """

    def __init__(self, fn: Callable[..., Sequence[RawHit]], *, name: str | None = None) -> None:
        if not callable(fn):
            raise UsageError(f"expected a callable fn(query, k[, filters]), got fn={describe(fn)}")
        arity = positional_arity(fn)
        if arity is None:
            raise UsageError(f"expected a callable with an inspectable signature, got fn={describe(fn)}")
        required, maximum, star = arity
        if required > 3 or (maximum < 2 and not star):
            raise UsageError(
                f"expected fn(query, k) or fn(query, k, filters), got fn={describe(fn)} taking {required} "
                f"required and {maximum} positional arguments"
            )
        self.fn = fn
        self.supports_filters = star or maximum >= 3
        self.name = name or getattr(fn, "__qualname__", None) or repr(fn)

    def __repr__(self) -> str:
        return f"FunctionRetriever({self.name})"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Sequence[RawHit]:
        """Call the function; filters go as the third positional argument when it takes one."""
        if self.supports_filters:
            return self.fn(query, k, filters)
        if filters is not None and not filters.is_empty:
            raise UsageError(
                f"expected no filters for {self.name}(query, k), got filters={filters!r}; give the function a third "
                "`filters` parameter or wrap the retriever in ragmorph.adapters.TenantFilter"
            )
        return self.fn(query, k)
