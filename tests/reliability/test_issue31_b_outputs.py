"""Issue 31, items 15 and 16: an output path that is a stream is written into, never replaced; a device is refused.

`--json /dev/null` run as root (many CI containers) replaced /dev/null with a regular file, and `--json
/dev/stdout | cat` ran the whole suite and then failed to put a temporary file next to `pipe:[...]`. The device
nodes here are made in the test's own folder (never /dev itself): a copy of /dev/null's numbers, and a block
device node that is never opened.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, main
from reliability.worldfiles import run_args

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")


def test_a_fifo_output_is_written_into_and_stays_a_fifo(world: tuple[Path, Path], tmp_path: Path) -> None:
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever", "--json", str(fifo))) == EXIT_OK
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(received[0])["schema"] == "ragmorph.report/1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@ROOT_ONLY
def test_a_character_device_output_stays_a_device(world: tuple[Path, Path], tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    for option in ("--json", "--html", "--junit"):
        assert main(run_args(world, "ragmorph.adapters:BM25Retriever", option, str(null))) == EXIT_OK
        assert stat.S_ISCHR(os.stat(null).st_mode), f"{option} replaced the device with a regular file"


@ROOT_ONLY
def test_a_block_device_output_is_refused_before_the_run(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = tmp_path / "disk"
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever", "--json", str(disk))) == EXIT_USAGE
    captured = capsys.readouterr()
    assert "--json" in captured.err and "block device" in captured.err and captured.out == ""
    assert stat.S_ISBLK(os.stat(disk).st_mode)


def test_json_to_dev_stdout_through_a_pipe_writes_the_report(world: tuple[Path, Path], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragmorph.cli", *run_args(world, "ragmorph.adapters:BM25Retriever", "--json", "/dev/stdout")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == EXIT_OK, done.stderr
    # The terminal summary comes first (flushed before the report), the lines naming the outputs after it.
    report, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index('{\n  "schema"'):])
    assert report["summary"]["exit_code"] == EXIT_OK
    assert done.stderr == ""
