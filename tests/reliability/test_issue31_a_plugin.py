"""Issue 31, pytest plugin: an always-raising retriever never passes an item, and every `--ragmorph-*` option
with a value no run can use is one usage error (exit 4, no traceback), never a failing item or an empty run."""

from __future__ import annotations

import pytest

# Loaded before pytester's in-process runs (numpy's C extension cannot be loaded twice in one process).
import ragmorph.adapters  # noqa: F401
import ragmorph.reporting  # noqa: F401
import ragmorph.runner  # noqa: F401
import ragmorph.worlds  # noqa: F401

pytest_plugins = ["pytester"]

SUITE = """
from ragmorph.adapters import BM25Retriever
from ragmorph.pytest_plugin import suite
from ragmorph.worlds import generate

WORLD = generate(3, chunks=24, cases=3)

class Broken:
    def __init__(self, corpus):
        pass

    def retrieve(self, query, *, k, filters=None):
        raise ConnectionError("index server down")

ragmorph_suite = suite(retrievers={{"{name}": {retriever}}}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("cutoff",), ks=(3,))
"""


def test_the_valid_response_item_of_an_always_raising_retriever_has_no_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken=SUITE.format(name="broken", retriever="Broken"))
    result = pytester.runpytest_inprocess("-rA", "--ragmorph-max-examples", "3", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 3 and "passed" not in outcomes, result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED *broken[[]cutoff-valid_response[]]*retriever errors*"])


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--ragmorph-max-examples", "0", "expected a positive integer, got 0"),
        ("--ragmorph-max-examples", "-3", "expected a positive integer, got -3"),
        ("--ragmorph-ks", "-1", "expected comma-separated positive integers like 1,3,5,10, got '-1'"),
        ("--ragmorph-ks", "3,x", "expected comma-separated positive integers"),
        ("--ragmorph-ks", ",", "expected comma-separated positive integers"),
        ("--ragmorph-timeout", "inf", "expected a positive, finite number of seconds"),
        ("--ragmorph-timeout", "nan", "expected a positive, finite number of seconds"),
        ("--ragmorph-timeout", "0", "expected a positive, finite number of seconds"),
        ("--ragmorph-strategies", "cutof", "expected strategy families among approximate, claims"),
        ("--ragmorph-strategies", ",", "expected at least one strategy family"),
    ],
)
def test_an_unusable_option_value_is_one_usage_error(pytester: pytest.Pytester, option, value, expected) -> None:
    pytester.makepyfile(test_ok=SUITE.format(name="bm25", retriever="BM25Retriever"))
    result = pytester.runpytest_inprocess(f"{option}={value}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    text = result.stderr.str()
    assert f"{option}: {expected}" in text and "Traceback" not in text
    if value == "cutof":
        assert "got 'cutof' (str) (did you mean 'cutoff'?)" in text


@pytest.mark.parametrize(
    "declaration, expected",
    [
        ("strategies=[]", "suite(strategies=): expected at least one strategy family"),
        ("strategies=['cutof']", "did you mean 'cutoff'?"),
        ("traits={'bm25': ['lexcial']}", "suite(traits=) of 'bm25': expected traits among"),
    ],
)
def test_an_empty_or_misspelt_declaration_is_refused_by_suite(declaration: str, expected: str) -> None:
    from ragmorph.errors import UsageError
    from ragmorph.pytest_plugin import suite
    from ragmorph.worlds import generate

    world = generate(3, chunks=24, cases=3)
    with pytest.raises(UsageError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        eval(f"suite(retrievers={{'bm25': 'ragmorph.adapters:BM25Retriever'}}, corpus=c, cases=k, {declaration})",
             {"suite": suite, "c": world.corpus, "k": world.cases})
