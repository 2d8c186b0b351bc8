"""Issue 31, fuzzing pass over the config file, the compare inputs and the plugin options.

Each property draws inputs over the surface's schema (right keys with wrong values, wrong keys, valid values,
plain garbage) and asserts one outcome of two: a clear error (exit 2, or 4 for pytest, as one line naming what was
wrong, no traceback) or a valid run whose exit code is one of the documented ones.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

# Loaded before pytester's in-process runs (numpy's C extension cannot be loaded twice in one process).
import ragmorph.adapters  # noqa: F401
import ragmorph.reporting  # noqa: F401
import ragmorph.runner  # noqa: F401
import ragmorph.worlds  # noqa: F401
from ragmorph.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.config import PROFILES
from ragmorph.runner import TRAITS
from ragmorph.strategies import FAMILIES
from reliability.worldfiles import CASES, CHUNKS, write_jsonl

pytest_plugins = ["pytester"]

# nested_given: a valid run runs the engine, itself built on Hypothesis; each inner run is independent.
# RAGMORPH_FUZZ_EXAMPLES raises the budget for a longer hunt (the CI default keeps this file at seconds).
EXAMPLES = int(os.environ.get("RAGMORPH_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.nested_given])
DOCUMENTED = {EXIT_OK, EXIT_VIOLATIONS, EXIT_USAGE, EXIT_ERRORS}
BM25 = "ragmorph.adapters:BM25Retriever"
# Every run is kept to a fraction of a second: two cases, one cheap family, one example.
FAST = ["--strategies", "cutoff", "--max-examples", "1", "--k", "1,3"]


def _run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def _assert_clear(code: int, err: str) -> None:
    """A documented exit code, no traceback, and a usage error told in one `ragmorph: error:` line."""
    assert code in DOCUMENTED, (code, err)
    event(f"exit {code}")
    assert "Traceback" not in err, err
    if code == EXIT_USAGE:
        # Ours (`ragmorph: error: ...`) or argparse's (`ragmorph compare: error: argument --alpha: ...`).
        last = err.strip().splitlines()[-1] if err.strip() else ""
        assert re.match(r"ragmorph( [a-z]+)?: error: .{10,}", last), err


# --- TOML, written by hand: the stdlib reads TOML but does not write it --------------------------------------------


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}" if not 0xD800 <= ord(ch) <= 0xDFFF else "?")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"


def _toml(table: dict[str, Any]) -> str:
    return "".join(f"{_toml_string(key)} = {_toml_value(value)}\n" for key, value in table.items())


# --- the config file's schema ---------------------------------------------------------------------------------------

_NAME_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)
_SCALARS = st.one_of(st.booleans(), st.integers(-(10**20), 10**20), st.floats(), _NAME_TEXT)
_ANY = st.recursive(
    _SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_NAME_TEXT, inner, max_size=3)),
    max_leaves=6,
)
# File names in the temporary folder only: no separator, so a drawn path can never leave it.
_FILE_NAMES = st.text("abcxyz019_-.", min_size=1, max_size=8).filter(lambda name: name not in (".", ".."))


def _or_any(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly values of the key's own type, sometimes anything TOML holds."""
    return st.one_of(strategy, strategy, _ANY)


_TYPOS = st.sampled_from(["cutof", "lexcial", "", " ", "tenancy ", "CUTOFF"])
_RETRIEVER = st.one_of(
    st.sampled_from([BM25, "reliability.faults:raises", "ragmorph.adapters:Nope", "no-colon", "x.py:factory"]),
    st.fixed_dictionaries(
        {"spec": _or_any(st.sampled_from([BM25, "reliability.faults:PartialOutage"]))},
        optional={
            "traits": _or_any(st.lists(st.one_of(st.sampled_from(sorted(TRAITS)), _TYPOS), max_size=3)),
            "options": _or_any(st.dictionaries(st.sampled_from(["k1", "b", "token", "nope"]), _SCALARS, max_size=2)),
            "extra": _ANY,
        },
    ),
)
CONFIG_KEYS: dict[str, st.SearchStrategy[Any]] = {
    "corpus": _or_any(st.sampled_from(["corpus.jsonl", "missing.jsonl", "cases.jsonl"])),
    "cases": _or_any(st.sampled_from(["cases.jsonl", "corpus.jsonl", "missing.jsonl"])),
    "format": _or_any(st.sampled_from(["native", "ragas", "beir", "NATIVE"])),
    "beir": _or_any(_FILE_NAMES),
    "split": _or_any(st.sampled_from(["test", "dev", ""])),
    "ks": _or_any(st.lists(st.integers(-2, 12), max_size=4)),
    "strategies": _or_any(st.lists(st.one_of(st.sampled_from(sorted(FAMILIES)), _TYPOS), max_size=3)),
    "profile": _or_any(st.sampled_from([*PROFILES, "fast"])),
    "max_examples": _or_any(st.integers(-2, 3)),
    "budget": _or_any(st.sampled_from(["adaptive", "full", "half"])),
    "seed": _or_any(st.integers(-(2**70), 2**70)),
    "timeout": _or_any(st.floats(allow_nan=True, allow_infinity=True)),
    "fail_fast": _or_any(st.booleans()),
    "retrievers": _or_any(st.dictionaries(st.sampled_from(["bm25", "mine", "a b", "x:y", "ok-2"]), _RETRIEVER,
                                          max_size=2)),
    "outputs": _or_any(st.dictionaries(st.sampled_from(["json", "html", "junit", "replays", "csv"]), _FILE_NAMES,
                                       max_size=3)),
    "unknown_key": _ANY,
}
CONFIG = st.fixed_dictionaries({}, optional=CONFIG_KEYS)


@st.composite
def _overrides(draw: st.DrawFn) -> dict[str, Any]:
    """One or two keys of the valid config redrawn from their schema."""
    keys = draw(st.lists(st.sampled_from(sorted(CONFIG_KEYS)), min_size=1, max_size=2, unique=True))
    return {key: draw(CONFIG_KEYS[key], label=key) for key in keys}


VALID = {"corpus": "corpus.jsonl", "cases": "cases.jsonl", "retrievers": {"bm25": {"spec": BM25, "traits": ["lexical"]}}}
# A valid config with a few keys redrawn, so that valid runs are common and each defect is alone in its file.
CONFIGS = st.one_of(
    st.builds(lambda overrides: _toml({**VALID, **overrides}), _overrides()),
    CONFIG.map(_toml),
    _NAME_TEXT,
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)


@FUZZ
@given(config=CONFIGS, in_pyproject=st.booleans())
def test_any_config_file_gives_a_clear_error_or_a_valid_run(config: str, in_pyproject: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_jsonl(root / "corpus.jsonl", CHUNKS)
        write_jsonl(root / "cases.jsonl", CASES)
        if in_pyproject:
            path = root / "pyproject.toml"
            path.write_text("[tool.ragmorph]\n" + config, encoding="utf-8", errors="surrogatepass")
        else:
            path = root / "ragmorph.toml"
            path.write_text(config, encoding="utf-8", errors="surrogatepass")
        # Flags keep the run small; the file's keys are still read and checked.
        code, err = _run_cli(["run", "--config", str(path), *FAST])
        _assert_clear(code, err)


# --- compare inputs: a saved baseline report with one defect, and every comparison option ----------------------------


@pytest.fixture(scope="module")
def compare_world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("fuzz-compare")
    cases = [dict(case, tags=["critical"]) if case["id"] == "q2" else dict(case) for case in CASES]
    corpus, cases_path = write_jsonl(folder / "corpus.jsonl", CHUNKS), write_jsonl(folder / "cases.jsonl", cases)
    base = folder / "base.json"
    code = main(["run", "--retriever", f"bm25={BM25}", "--corpus", str(corpus), "--cases", str(cases_path),
                 "--json", str(base), *FAST])
    assert code == EXIT_OK
    return {"corpus": corpus, "cases": cases_path, "report": json.loads(base.read_text(encoding="utf-8"))}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:3]):
            found += _paths(inner, (*prefix, index))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return document


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False), _NAME_TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_NAME_TEXT, inner, max_size=3)),
    max_leaves=5,
)
_OPTION_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8)
COMPARE_OPTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("--critical"), st.one_of(st.sampled_from(["critical", "critcal", ""]), _OPTION_TEXT)),
        st.tuples(st.just("--gate"), st.one_of(st.sampled_from(["nDCG@3", "GroupR@3,nDCG@1", "P@99", "nope"]), _OPTION_TEXT)),
        st.tuples(st.just("--alpha"), st.one_of(st.sampled_from(["0.05", "1", "0", "nan", "inf"]), _OPTION_TEXT)),
        st.tuples(st.just("--permutations"), st.one_of(st.sampled_from(["10", "0", "-1"]), _OPTION_TEXT)),
        st.tuples(st.just("--k"), st.one_of(st.sampled_from(["1,3", "3", "2", "0", "-1"]), _OPTION_TEXT)),
    ),
    max_size=3,
)


@FUZZ
@given(data=st.data(), options=COMPARE_OPTIONS)
def test_any_baseline_report_and_compare_options_give_a_clear_error_or_a_verdict(
    compare_world: dict[str, Any], data: st.DataObject, options: list[tuple[str, str]]
) -> None:
    report = json.loads(json.dumps(compare_world["report"]))
    path = data.draw(st.sampled_from(_paths(report)), label="path")
    delete = bool(path) and data.draw(st.booleans(), label="delete")
    report = _set(report, path, data.draw(_JSON, label="value"), delete)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "base.json"
        base.write_text(json.dumps(report), encoding="utf-8")
        argv = ["compare", "--baseline", str(base), "--candidate", BM25, "--corpus", str(compare_world["corpus"]),
                "--cases", str(compare_world["cases"]), "--strategies", "cutoff", "--max-examples", "1"]
        # `--opt=value`: a value starting with '-' is the option's value, not another option.
        code, err = _run_cli(argv + [f"{option}={value}" for option, value in options])
    _assert_clear(code, err)


@FUZZ
@given(value=st.one_of(st.floats(allow_nan=True), st.integers(-(10**400), 10**400)))
def test_any_number_in_place_of_a_baseline_metric_is_clear(compare_world: dict[str, Any], value: Any) -> None:
    report = json.loads(json.dumps(compare_world["report"]))
    report["queries"]["bm25"]["q1"]["metrics"]["nDCG@3"] = value
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "base.json"
        # Python's json writes NaN and Infinity, which a strict reader refuses: that is a clear error too.
        base.write_text(json.dumps(report), encoding="utf-8")
        code, err = _run_cli(["compare", "--baseline", str(base), "--candidate", BM25, "--corpus",
                              str(compare_world["corpus"]), "--cases", str(compare_world["cases"]),
                              "--strategies", "cutoff", "--max-examples", "1", "--k", "1,3"])
    _assert_clear(code, err)
    if not (isinstance(value, (int, float)) and 0 <= value <= 1):
        assert code == EXIT_USAGE, err


# --- plugin options ---------------------------------------------------------------------------------------------------

SUITE = """
from ragmorph.adapters import BM25Retriever
from ragmorph.pytest_plugin import suite
from ragmorph.worlds import generate

WORLD = generate(3, chunks=24, cases=3)
ragmorph_suite = suite(retrievers={"bm25": BM25Retriever}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("cutoff", "repeat"), ks=(1, 3))
"""
_INT_TEXT = st.integers(-3, 3).map(str)
# Values that parse as a large budget or a heavy family are left out: the property is about parsing, not load.
PLUGIN_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "--ragmorph-max-examples": st.one_of(_INT_TEXT, _OPTION_TEXT.filter(lambda t: not t.strip().lstrip("+-").isdigit())),
        "--ragmorph-ks": st.one_of(st.sampled_from(["1", "1,3", "3,1000", "-1", "0", ",", "1,,2", "a"]), _OPTION_TEXT),
        "--ragmorph-timeout": st.one_of(st.sampled_from(["5", "inf", "-inf", "nan", "0", "-1", "1e400", "1e-300"]),
                                        _OPTION_TEXT),
        "--ragmorph-strategies": st.one_of(
            st.sampled_from(["cutoff", "repeat", "cutoff,repeat", "cutof", ",", "tenancy", "cutoff,nope"]), _OPTION_TEXT
        ),
        "--ragmorph-budget": st.one_of(st.sampled_from(["adaptive", "full", "half"]), _OPTION_TEXT),
        "--ragmorph-profile": st.one_of(st.sampled_from(["smoke", "default", "fast"]), _OPTION_TEXT),
    },
)


@settings(FUZZ, max_examples=max(1, EXAMPLES * 2 // 3), suppress_health_check=[*FUZZ.suppress_health_check, HealthCheck.function_scoped_fixture])
@given(options=PLUGIN_OPTIONS)
def test_any_plugin_options_give_a_clear_error_or_a_valid_session(pytester: pytest.Pytester, options: dict) -> None:
    assume(options.get("--ragmorph-max-examples") not in {"3"} or "--ragmorph-profile" in options)
    pytester.makepyfile(test_fuzzed=SUITE)
    argv = [f"{option}={value}" for option, value in options.items()]
    result = pytester.runpytest_inprocess(*argv, "--ragmorph-max-examples=1" if "--ragmorph-max-examples" not in options
                                          else "-q", "-p", "no:cacheprovider")
    text = result.stdout.str() + result.stderr.str()
    event(f"pytest exit {int(result.ret)}")
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    if result.ret == pytest.ExitCode.USAGE_ERROR:
        assert "--ragmorph-" in result.stderr.str(), text
    elif result.ret == pytest.ExitCode.NO_TESTS_COLLECTED:
        # Only a valid family the suite does not declare keeps nothing (`--ragmorph-strategies tenancy`).
        kept = {part.strip() for part in options.get("--ragmorph-strategies", "").split(",") if part.strip()}
        assert kept and kept <= set(FAMILIES) and not kept & {"cutoff", "repeat"}, text
    elif result.ret == pytest.ExitCode.TESTS_FAILED:
        # BM25 keeps every hard relation: a failure can only be a verdict the retriever's errors (a timeout) prevented.
        assert "retriever errors prevented a verdict" in text and "hard relation violated" not in text, text
    else:
        assert result.ret == pytest.ExitCode.OK, text
