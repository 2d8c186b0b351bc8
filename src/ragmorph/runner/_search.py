"""The one search driver: Hypothesis draws examples, a test judges each, the first failure is shrunk.

Both the retriever runner and the evaluator mode search through `search()`; shrinking belongs to Hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, example, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

__all__ = ["search"]

Found = TypeVar("Found")


class _Failed(Exception):
    """Raised inside the Hypothesis test so that it shrinks the example; carries what the test found."""

    def __init__(self, found: Any) -> None:
        super().__init__(repr(found)[:200])
        self.found = found


def search(
    strategy: st.SearchStrategy[Any],
    test: Callable[[Any], Found | None],
    *,
    max_examples: int,
    derandomize: bool,
    seed: int,
    on_flaky: Callable[[], Found | None],
    explicit: Sequence[Any] = (),
) -> Found | None:
    """Draw up to `max_examples` values of `strategy` and call `test` on each; None when every call returned None.

    The `explicit` values are tested first, in order (Hypothesis's explicit examples: a failing one is returned
    as it is, not shrunk).

    A value for which `test` returns something is a failure: Hypothesis shrinks it and the failure of the
    shrunk example is returned. When a failure does not repeat on Hypothesis's replay (state or randomness in
    what is tested), `on_flaky()` supplies the failure that was observed (or None).
    """

    # Hypothesis keeps the function it runs in reference cycles of its own (the wrapped test, its handle, its run
    # state), which only the collector's full passes free. Reached through this list, emptied when the search
    # ends, the test no longer keeps a unit's executor and the batch's call cache (every response, 100k hits each
    # at depth k = corpus + 1) alive past the batch. (A search that fails still does until such a pass: the
    # exceptions Hypothesis keeps hold the frames of the calls, which hold their callers' frames.)
    tests = [test]

    def run_one(value: Any) -> None:
        found = tests[0](value)
        if found is not None:
            raise _Failed(found)

    run = given(strategy)(run_one)
    # Hypothesis runs explicit examples last-applied first.
    for value in reversed(explicit):
        run = example(value)(run)
    # No example database is used, so skip Hypothesis's key for it: a digest of the test's source code, which
    # it would otherwise re-read and tokenize for every search.
    run._hypothesis_internal_database_key = b"ragmorph-runner"  # type: ignore[attr-defined]
    run = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )(run)
    if not derandomize:
        run = hypothesis_seed(seed)(run)
    try:
        run()
    except _Failed as failed:
        return failed.found  # type: ignore[no-any-return]
    except Flaky:
        return on_flaky()
    finally:
        tests.clear()
    return None
