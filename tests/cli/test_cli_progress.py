"""Progress and cost on any output (issue 32 item 2): a run whose stderr is a pipe prints a progress line every few
seconds and, once its calls prove slow, says how to make it shorter; through a real `ragmorph run` subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from ragmorph.io import write_cases, write_corpus
from ragmorph.worlds import generate

# A correct retriever whose every call costs what a small embedding model costs on a shared CPU.
SLOW_ADAPTER = '''
import time

from ragmorph.adapters import BM25Retriever


class Slow:
    traits = ("single_list",)

    def __init__(self, corpus):
        self._index = BM25Retriever(corpus)

    def retrieve(self, query, *, k, filters=None):
        time.sleep(0.2)
        return self._index.retrieve(query, k=k, filters=filters)
'''

PROGRESS = re.compile(
    r"^ragmorph: (\d+)/(\d+|\?) units, ([\d,]+) retriever calls( \((\d+\.\d+) s/call\))?, \S+ elapsed, "
    r"(no unit finished yet|about \S+ left)$"
)


def test_a_run_into_a_pipe_prints_progress_lines_and_a_speed_hint(tmp_path: Path) -> None:
    world = generate(3, chunks=24, cases=3)
    write_corpus(world.corpus, tmp_path / "corpus.jsonl")
    write_cases(world.cases, tmp_path / "cases.jsonl")
    (tmp_path / "slow.py").write_text(SLOW_ADAPTER, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "ragmorph.cli", "run", "--retriever", "slow.py:Slow", "--corpus", "corpus.jsonl",
         "--cases", "cases.jsonl"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ""},
    )
    lines: list[str] = []
    started = time.monotonic()
    try:
        assert process.stderr is not None
        # The whole run takes minutes: read until a line with a measured pace and the hint have both arrived.
        while time.monotonic() - started < 240:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            paced = [m for m in map(PROGRESS.match, lines) if m and m.group(5)]
            if paced and any("--profile smoke" in seen for seen in lines):
                break
    finally:
        process.kill()
        process.communicate()
    progress = [m for m in map(PROGRESS.match, lines) if m]
    assert progress, lines
    first_paced = next(m for m in progress if m.group(5))
    done, total, calls = int(first_paced.group(1)), int(first_paced.group(2)), int(first_paced.group(3).replace(",", ""))
    assert 0 < done < total and calls > 0
    assert 0.2 <= float(first_paced.group(5)) < 1.0  # the measured pace, not a guess
    hint = next(line for line in lines if "--profile smoke" in line)
    assert re.match(r"ragmorph: retriever calls take 0\.[2-9]\d s each and this run needs about [\d,]+ more", hint), hint
    assert "--concurrency N" in hint and "--jobs N" in hint
    # Nothing was drawn for a terminal: no carriage returns in a log.
    assert not any("\r" in line for line in lines)
