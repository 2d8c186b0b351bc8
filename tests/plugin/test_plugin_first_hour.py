"""The pytest plugin in a new user's first hour (issue 13): clean ids and marks, a replay command that runs as
printed, a config file read by the plugin, and missing data as one collection error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Loaded before pytester's in-process runs (see test_plugin.py for why).
import ragmorph.adapters  # noqa: F401
import ragmorph.demo  # noqa: F401
import ragmorph.reporting  # noqa: F401
import ragmorph.runner  # noqa: F401
import ragmorph.worlds  # noqa: F401

pytest_plugins = ["pytester"]

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
