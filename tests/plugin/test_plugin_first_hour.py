"""The pytest plugin in a new user's first hour (issue 13): clean ids and marks, a replay command that runs as
printed, a config file read by the plugin, and missing data as one collection error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Loaded before pytester's in-process runs (see test_plugin.py for why).
import ragmorph.adapters  # noqa: F401
import ragmorph.demo  # noqa: F401
import ragmorph.reporting  # noqa: F401
import ragmorph.runner  # noqa: F401
import ragmorph.worlds  # noqa: F401

pytest_plugins = ["pytester"]

# Hypothesis loads its `ci` profile (derandomize=True) where CI is set, as in .ci/run; the header reports it.
DERANDOMIZE = hypothesis_settings.default.derandomize

BUGGY = """
from ragmorph.worlds import generate
from ragmorph.demo import PostFilteredPipeline
from ragmorph.pytest_plugin import suite

WORLD = generate(3, chunks=24, cases=3)
ragmorph_suite = suite(retrievers={"postfilter": PostFilteredPipeline}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("tenancy",), ks=(1, 3, 5))
"""


def test_failures_name_the_relation_once_warn_about_no_mark_and_print_a_replay_command_that_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_buggy=BUGGY)
    result = pytester.runpytest_inprocess(
        "--ragmorph-max-examples", "10", "-p", "no:xdist", "-p", "no:cacheprovider",
        "-W", "error::pytest.PytestUnknownMarkWarning",
    )
    text = result.stdout.str()
    assert result.ret == 1, text
    assert "PytestUnknownMarkWarning" not in text and "xdist_group" not in text
    assert "tenancy.tenancy." not in text
    assert re.search(r"ragmorph postfilter: tenancy\.\w+ \(hard\)", text), text
    commands = re.findall(r"^\s*replay\s+(ragmorph replay \S+)$", text, flags=re.MULTILINE)
    assert commands, text
    done = subprocess.run([sys.executable, "-m", "ragmorph.cli", *commands[0].split()[1:]], capture_output=True, text=True, timeout=120, cwd=Path("/"))
    assert done.returncode == 1 and "reproduced" in done.stdout, done.stdout + done.stderr


def _project(pytester: pytest.Pytester, config: str) -> Path:
    from ragmorph.io import write_cases, write_corpus
    from ragmorph.worlds import generate

    world = generate(3, chunks=24, cases=3)
    data = pytester.mkdir("data")
    write_corpus(world.corpus, data / "corpus.jsonl")
    write_cases(world.cases, data / "cases.jsonl")
    pytester.makefile(".toml", ragmorph=config)
    tests = pytester.mkdir("tests")
    tests.joinpath("test_config.py").write_text("from ragmorph.pytest_plugin import suite\n\nragmorph_suite = suite()\n",
                                                encoding="utf-8")
    return tests


CONFIG = """
corpus = "data/corpus.jsonl"
cases = "data/cases.jsonl"
strategies = ["cutoff"]
ks = [1, 3]
max_examples = 3

[retrievers]
bm25 = { spec = "ragmorph.adapters:BM25Retriever", traits = ["lexical"] }
"""


def test_suite_without_arguments_reads_the_config_file_above_the_test(pytester: pytest.Pytester) -> None:
    tests = _project(pytester, CONFIG)
    result = pytester.runpytest_inprocess(str(tests), "-v", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_config.py::bm25?cutoff-prefix? PASSED*"])


def test_missing_data_is_one_short_collection_error(pytester: pytest.Pytester) -> None:
    tests = _project(pytester, CONFIG)
    (pytester.path / "data" / "cases.jsonl").unlink()
    result = pytester.runpytest_inprocess(str(tests), "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    result.stdout.fnmatch_lines(["*ragmorph suite 'ragmorph_suite': *cases.jsonl: expected an existing file*",
                                 "*1 error*"])
    assert "Traceback" not in text and "site-packages" not in text
    assert len(result.outlines) < 25, text


def test_a_bad_config_key_is_a_collection_error_naming_file_and_key(pytester: pytest.Pytester) -> None:
    tests = _project(pytester, CONFIG.replace("ks = [1, 3]", "ks = [0]"))
    result = pytester.runpytest_inprocess(str(tests), "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*ragmorph.toml field 'ks': expected a non-empty list of positive integers*"])
    assert "Traceback" not in result.stdout.str()


def test_assert_ok_in_a_users_test_fails_with_the_triaged_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_python_api="""
from ragmorph import check
from ragmorph.demo import PostFilteredPipeline
from ragmorph.worlds import generate

def test_no_hard_violations():
    world = generate(3, chunks=24, cases=3)
    check({"postfilter": PostFilteredPipeline}, world.corpus, world.cases, strategies=["tenancy"],
          max_examples=10).assert_ok()
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    # Filtering after the cut to k leaks nothing but drops visible chunks: the under-return (a contract breach)
    # first, then the filtered ranking that is not the visible part of the unfiltered one; never a tenant leak.
    result.stdout.fnmatch_lines(["*ViolationsFound: ragmorph: * hard failure* in 2 groups*",
                                 "*1. contract breach · postfilter · tenancy.full_k*smallest: *",
                                 "*2. hard violation · postfilter · tenancy.filtered_equals_visible*smallest: *"])
    result.stdout.no_fnmatch_line("*tenant leak*")


def test_the_smoke_profile_option_sets_the_budget_over_the_config(pytester: pytest.Pytester) -> None:
    import xml.etree.ElementTree as ET

    tests = _project(pytester, CONFIG.replace("max_examples = 3", "max_examples = 20"))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(str(tests), "--ragmorph-profile", "smoke", f"--junitxml={junit}",
                                          "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    values = {p.get("value") for p in ET.parse(junit).iter("property") if p.get("name") == "ragmorph_max_examples"}
    assert values == {"5"}


def test_the_header_prints_the_settings_each_suite_runs_with(pytester: pytest.Pytester) -> None:
    # The config file's profile and max_examples (not the built-in 25) are what the engine runs use.
    tests = _project(pytester, CONFIG.replace("ks = [1, 3]\n", 'profile = "smoke"\n').replace("max_examples = 3", "max_examples = 7"))
    tests.joinpath("test_declared.py").write_text(
        "from ragmorph.worlds import generate\nfrom ragmorph.adapters import BM25Retriever\n"
        "from ragmorph.pytest_plugin import suite\n\nWORLD = generate(3, chunks=24, cases=3)\n"
        "ragmorph_suite = suite(retrievers={'bm25': BM25Retriever}, corpus=WORLD.corpus, cases=WORLD.cases,\n"
        "                       strategies=('cutoff',), ks=(1, 3), max_examples=4)\n", encoding="utf-8")
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(str(tests), f"--junitxml={junit}", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"ragmorph: seed=0 derandomize={DERANDOMIZE} (repeat with --hypothesis-seed=0)"])
    result.stdout.fnmatch_lines_random([
        f"ragmorph: seed=0 max_examples=7 derandomize={DERANDOMIZE} ks=1,5,20 for tests/test_config.py::ragmorph_suite",
        f"ragmorph: seed=0 max_examples=4 derandomize={DERANDOMIZE} ks=1,3 for tests/test_declared.py::ragmorph_suite",
    ])
    assert "max_examples=25" not in result.stdout.str()
    values = {p.get("value") for p in _properties(junit) if p.get("name") == "ragmorph_max_examples"}
    assert values == {"7", "4"}
    # A command-line budget is session-wide: the header says it, and every suite's line agrees.
    result = pytester.runpytest_inprocess(str(tests), "--ragmorph-profile", "smoke", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"ragmorph: seed=0 max_examples=5 derandomize={DERANDOMIZE} ks=1,5,20 (repeat with*"])
    assert result.stdout.str().count(f"max_examples=5 derandomize={DERANDOMIZE} ks=1,5,20 for ") == 2


def test_the_config_files_seed_is_the_seed_its_suite_runs_with(pytester: pytest.Pytester) -> None:
    tests = _project(pytester, CONFIG.replace("max_examples = 3", "max_examples = 3\nseed = 7"))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(str(tests), f"--junitxml={junit}", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        f"ragmorph: seed=7 max_examples=3 derandomize={DERANDOMIZE} ks=1,3 for tests/test_config.py::ragmorph_suite"
        " (its own seed; repeat with --hypothesis-seed=7)"
    ])
    assert {p.get("value") for p in _properties(junit) if p.get("name") == "ragmorph_seed"} == {"7"}
    # The command line beats the file.
    result = pytester.runpytest_inprocess(str(tests), "--hypothesis-seed=3", f"--junitxml={junit}", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert {p.get("value") for p in _properties(junit) if p.get("name") == "ragmorph_seed"} == {"3"}


def test_a_profile_naming_its_families_runs_those_families(pytester: pytest.Pytester) -> None:
    tests = _project(pytester, CONFIG)
    result = pytester.runpytest_inprocess(str(tests), "--ragmorph-profile", "scale", "--collect-only", "-q",
                                          "-p", "no:cacheprovider")
    items = [line for line in result.stdout.lines if line.startswith("tests/") and "::" in line]
    assert items and all("[scale-" in line for line in items), items
    assert any("scale-full_k" in line for line in items)


def test_a_suites_seed_must_be_an_integer() -> None:
    from ragmorph.errors import UsageError
    from ragmorph.pytest_plugin import suite

    with pytest.raises(UsageError, match="expected seed= as an integer"):
        suite(lambda q, k, filters=None: [], corpus=[], cases=[], seed="7")


def _properties(path: Path) -> list:
    """Every <property> of a JUnit file."""
    import xml.etree.ElementTree as ET

    return list(ET.parse(path).iter("property"))
