"""Render a "ragmorph.report/1" dict: terminal summary and violations, JSON, JUnit XML and single-file HTML.

Every renderer reads the plain report dict (as `CheckReport.to_dict()` returns it or `load_report` reads it), so
reports render without importing Hypothesis, the runner or the strategies. The JSON format is described by
`report.schema.json`, shipped next to this module and returned by `report_schema()`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._common import plural
from ._compare import comparison_html, render_comparison, write_comparison
from ._html import render_html, write_html
from ._json import SCHEMA, load_report, report_schema, validate_report, write_json
from ._junit import write_junit
from ._terminal import ProgressBar, render_report, render_summary, render_triage, render_violation

__all__ = [
    "SCHEMA",
    "WRITERS",
    "ProgressBar",
    "Writer",
    "comparison_html",
    "load_report",
    "plural",
    "render_comparison",
    "render_html",
    "render_report",
    "render_summary",
    "render_triage",
    "render_violation",
    "report_schema",
    "validate_report",
    "write_comparison",
    "write_html",
    "write_json",
    "write_junit",
    "write_reports",
]


@attrs.frozen
class Writer:
    """One report file format: its name, the CLI flag that asks for it, its default file name and its writer."""

    name: str
    flag: str
    help: str
    filename: str
    write: Callable[[Mapping[str, Any], str | os.PathLike[str]], Path] = attrs.field(repr=False)


# The report writers, in the order the CLI lists them; the CLI flags, the demo and the pytest plugin use this.
WRITERS: dict[str, Writer] = {
    writer.name: writer
    for writer in (
        Writer("json", "--json", "write the ragmorph.report/1 JSON report", "report.json", write_json),
        Writer("junit", "--junit", "write JUnit XML (one testcase per retriever x strategy x relation)", "junit.xml", write_junit),
        Writer("html", "--html", "write a self-contained HTML report", "report.html", write_html),
    )
}


def write_reports(report: Mapping[str, Any], paths: Mapping[str, str | os.PathLike[str] | None]) -> list[Path]:
    """Write `report` once per format named in `paths` (writer name -> path; None skips it); the written paths.

    Each writer creates the missing folders itself.
    """
    unknown = sorted(set(paths) - set(WRITERS))
    if unknown:
        from ..errors import UsageError

        raise UsageError(f"expected report formats from {sorted(WRITERS)}, got {unknown}")
    return [WRITERS[name].write(report, path) for name, path in paths.items() if path is not None]
