"""Render a "ragmorph.report/1" dict: terminal summary and violations, JSON, JUnit XML and single-file HTML.

Every renderer reads the plain report dict (as `CheckReport.to_dict()` returns it or `load_report` reads it), so
reports render without importing Hypothesis, the runner or the strategies. The JSON format is described by
`report.schema.json`, shipped next to this module and returned by `report_schema()`.
"""

from __future__ import annotations

from ._common import plural
from ._html import render_html, write_html
from ._json import SCHEMA, load_report, report_schema, validate_report, write_json
from ._junit import write_junit
from ._terminal import ProgressBar, render_report, render_summary, render_violation

__all__ = [
    "SCHEMA",
    "ProgressBar",
    "load_report",
    "plural",
    "render_html",
    "render_report",
    "render_summary",
    "render_violation",
    "report_schema",
    "validate_report",
    "write_html",
    "write_json",
    "write_junit",
]
