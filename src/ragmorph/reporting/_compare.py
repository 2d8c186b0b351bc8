"""Render a "ragmorph.compare/1" dict: terminal table, JSON, JUnit XML and a single-file HTML with a delta plot.

Like the run report renderers, these read the plain dict (from `ragmorph.compare.compare_reports` or a saved
file), so they need neither the runner nor Hypothesis.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..io import atomic_write_bytes, atomic_write_text
from ..secrets import redact_data
from ._common import HEADLINE_MEASURES, format_value, snippet, text_table
from ._common import escape_html as _e
from ._common import xml_text as _xml

__all__ = ["comparison_html", "delta_chart", "headline_metric", "render_comparison", "write_comparison"]

_EXIT = {
    0: "no regression",
    1: "regression: a lost critical case or a significantly worse metric",
    3: "retriever errors prevented a verdict",
}


def _p(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _delta(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def headline_metric(data: Mapping[str, Any]) -> str | None:
    """The metric the delta plot shows: of GroupR, R, nDCG and ClaimR at every shared k, the one whose per-query
    changes are largest in total (a flat plot shows nothing); GroupR at the largest k when nothing changed."""
    ks = sorted(data.get("manifest", {}).get("ks") or [], reverse=True)
    tested = {t["metric"] for t in data.get("metrics", ())}
    candidates = [
        f"{measure}@{k}" for measure in HEADLINE_MEASURES for k in ks
        if f"{measure}@{k}" in tested
    ]
    if not candidates:
        return next(iter(sorted(tested)), None)

    def moved(name: str) -> float:
        return sum(
            abs((row.get("deltas", {}).get(name) or {}).get("delta") or 0.0) for row in data.get("queries", ())
        )

    return max(candidates, key=lambda name: (moved(name), -candidates.index(name)))


def _lost_lines(row: Mapping[str, Any]) -> list[str]:
    lines = []
    for k, change in sorted(row.get("evidence", {}).items(), key=lambda item: int(item[0])):
        for verb in ("lost", "gained"):
            for group in change.get(verb, ()):
                lines.append(f"{verb} evidence group {group['group']} {group['members']} at k={k}")
    for violation in row.get("new_violations", ()):
        lines.append(f"new {violation['severity']} violation {violation['relation']}: {snippet(violation.get('reason'), 90)}")
    for violation in row.get("fixed_violations", ()):
        lines.append(f"fixed {violation['relation']}")
    return lines


def render_comparison(data: Mapping[str, Any], *, max_queries: int | None = 10) -> str:
    """Terminal text: the verdict, one row per metric (means, delta, p, verdict), then lost critical cases and the
    queries that lost evidence (critical first), then new and fixed violations."""
    data = redact_data(data)  # violation reasons quote retriever errors: mask every registered secret
    manifest, summary = data.get("manifest", {}), data.get("summary", {})
    base, cand = manifest.get("baseline", {}), manifest.get("candidate", {})
    test = manifest.get("test", {})
    lines = [
        f"compare {base.get('retriever')} (baseline, {base.get('source')}) -> {cand.get('retriever')} (candidate, "
        f"{cand.get('source')}) · {summary.get('queries', 0)} paired queries · k {','.join(map(str, manifest.get('ks', ())))}",
        f"test: {test.get('name')}, alpha {test.get('alpha')}, {test.get('permutations')} permutations "
        f"(exact up to {test.get('exact_up_to_queries')} queries), seed {test.get('seed')}",
        "",
    ]
    header = ["metric", "baseline", "candidate", "delta", "worse/better q", "p", "p (Holm)", "verdict"]
    rows = [
        [
            t["metric"] + (" *" if t.get("gate") else ""), format_value(t["baseline"]), format_value(t["candidate"]), _delta(t["delta"]),
            f"{t['worse_queries']}/{t['better_queries']}", _p(t["p_value"]), _p(t["p_adjusted"]),
            t["verdict"] + (" (lower is better)" if t["better"] == "lower" else ""),
        ]
        for t in data.get("metrics", ())
        if t["delta"] != 0 or t["verdict"] != "no significant change" or t.get("gate")
    ]
    unchanged = len(data.get("metrics", ())) - len(rows)
    if rows:
        lines += text_table(header, rows)
    lines.append("* gated: decides the exit code (Holm-adjusted p); the other metrics are reported with their raw p")
    if unchanged:
        lines.append(f"({unchanged} more metrics unchanged on every query)")
    queries = sorted(
        (row for row in data.get("queries", ()) if _lost_lines(row)), key=lambda row: (not row["critical"], not row["lost"])
    )
    if data.get("lost_critical"):
        lines += ["", f"LOST CRITICAL CASES: {', '.join(data['lost_critical'])}"]
    blocking = list(data.get("no_verdict", ()))
    for entry in blocking + [e for e in data.get("unpaired", ()) if e not in blocking]:
        verdict = "NO VERDICT" if entry in blocking else "unpaired"
        lines.append(f"{verdict} on {'critical case ' if entry['critical'] else ''}{entry['case']}: the {entry['side']} "
                     f"errored ({snippet(entry['reason'], 90)})")
    if queries:
        lines += ["", "per query (critical first):"]
        shown = queries if max_queries is None else queries[:max_queries]
        for row in shown:
            mark = "CRITICAL " if row["critical"] else ""
            lines.append(f"  {mark}{row['case']}: {snippet(row.get('query'), 70)}")
            lines += [f"    {line}" for line in _lost_lines(row)]
        if len(queries) > len(shown):
            lines.append(f"  ... and {len(queries) - len(shown)} more queries (all are in the JSON and HTML)")
    code = summary.get("exit_code")
    lines += [
        "",
        f"{summary.get('regressions', 0)} significant regressions, {summary.get('improvements', 0)} improvements, "
        f"{summary.get('lost_queries', 0)} queries lost evidence ({summary.get('lost_critical', 0)} critical), "
        f"{summary.get('new_violations', 0)} new and {summary.get('fixed_violations', 0)} fixed violations · "
        f"exit code {code} ({_EXIT.get(code, 'unknown')})",
    ]
    return "\n".join(lines)


_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 640, 260, 48, 12, 30, 46


def delta_chart(data: Mapping[str, Any], metric: str) -> str:
    """An inline SVG bar chart: one bar per paired query, candidate - baseline of `metric`, sorted from the worst
    loss to the best gain; losses red, gains green, critical queries outlined. No script, no network."""
    values = []
    for row in data.get("queries", ()):
        change = row.get("deltas", {}).get(metric)
        delta = 0.0 if change is None else change.get("delta")
        if delta is not None:
            values.append((float(delta), row["case"], bool(row.get("critical"))))
    lower = next((t["better"] == "lower" for t in data.get("metrics", ()) if t["metric"] == metric), False)
    values.sort(key=lambda item: (-item[0] if lower else item[0], item[1]))
    span = max([abs(v) for v, _, _ in values if v] or [1.0])
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    zero = _TOP + plot_h / 2
    title = f"{metric}: candidate - baseline per query ({len(values)} queries)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
        f'role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>',
        f'<text x="{_LEFT}" y="18" class="chart-title">{_e(title)}</text>',
    ]
    for tick in (-span, -span / 2, 0.0, span / 2, span):
        y = zero - plot_h / 2 * tick / span
        parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{tick:+.2g}</text>')
    parts.append(f'<line x1="{_LEFT}" y1="{zero:.1f}" x2="{_W - _RIGHT}" y2="{zero:.1f}" class="axis-line"/>')
    step = plot_w / max(len(values), 1)
    for i, (delta, case, critical) in enumerate(values):
        height = abs(delta) / span * plot_h / 2
        y = zero - height if delta > 0 else zero
        worse = delta > 0 if lower else delta < 0
        colour = "#cf222e" if worse else "#1a7f37"
        outline = ' stroke="#000" stroke-width="1.5"' if critical else ""
        width = max(step * 0.8, 1.0)
        parts.append(
            f'<rect x="{_LEFT + i * step + step * 0.1:.1f}" y="{y:.1f}" width="{width:.1f}" height="{max(height, 0.5):.1f}" '
            f'fill="{colour}"{outline}><title>{_e(case)}{" (critical)" if critical else ""}: {delta:+.3f}</title></rect>'
        )
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_H - 8}" text-anchor="middle" class="axis">queries, worst loss to best '
        "gain (outlined: critical)</text></svg>"
    )
    return "".join(parts)


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1f2328; margin: 0; padding: 24px 32px 48px; }
h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
table { border-collapse: collapse; } th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; } .mono, code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { display: inline-block; padding: 4px 10px; border-radius: 6px; font-weight: 600; }
.ok { background: #dafbe1; color: #1a7f37; } .bad, tr.regression td, tr.critical td { background: #ffebe9; color: #cf222e; }
tr.improvement td { background: #dafbe1; } .muted { color: #57606a; }
svg.chart { border: 1px solid #d0d7de; border-radius: 6px; } svg.chart .grid { stroke: #eaeef2; }
svg.chart .axis-line { stroke: #8c959f; } svg.chart .tick, svg.chart .axis { font-size: 11px; fill: #57606a; }
svg.chart .chart-title { font-size: 13px; font-weight: 600; }
"""


def comparison_html(data: Mapping[str, Any]) -> str:
    """The comparison as one self-contained HTML document: verdict, metric table, delta plot, per-query changes."""
    manifest, summary = data.get("manifest", {}), data.get("summary", {})
    code = summary.get("exit_code")
    metric_rows = "".join(
        f'<tr class="{_e(t["verdict"].split()[0])}"><td><code>{_e(t["metric"])}</code>{" <b>gate</b>" if t.get("gate") else ""}</td><td>{_e(t["queries"])}</td>'
        f'<td class="mono">{_e(format_value(t["baseline"]))}</td><td class="mono">{_e(format_value(t["candidate"]))}</td>'
        f'<td class="mono">{_e(_delta(t["delta"]))}</td><td>{_e(t["worse_queries"])}/{_e(t["better_queries"])}</td>'
        f'<td class="mono">{_e(_p(t["p_value"]))}</td><td class="mono">{_e(_p(t["p_adjusted"]))}</td>'
        f'<td>{_e(t["verdict"])}{" (lower is better)" if t["better"] == "lower" else ""}</td></tr>'
        for t in sorted(data.get("metrics", ()), key=lambda t: (not t.get("gate"), t["delta"] == 0))
    )
    metric = headline_metric(data)
    chart = delta_chart(data, metric) if metric else '<p class="muted">No paired metric.</p>'
    query_rows = []
    for row in sorted(data.get("queries", ()), key=lambda r: (not r["critical"], not r["lost"], r["case"])):
        changes = _lost_lines(row)
        deltas = ", ".join(
            f"{name} {_delta(change['delta'])}" for name, change in row.get("deltas", {}).items() if change["delta"]
        )
        if not changes and not deltas:
            continue
        css = "critical" if row["critical"] and row["lost"] else ""
        query_rows.append(
            f'<tr class="{css}"><td><code>{_e(row["case"])}</code>{" <b>critical</b>" if row["critical"] else ""}</td>'
            f'<td>{_e(row.get("query", ""))}</td><td>{"<br>".join(_e(c) for c in changes) or "-"}</td>'
            f'<td class="mono">{_e(snippet(deltas, 400)) or "-"}</td></tr>'
        )
    base, cand = manifest.get("baseline", {}), manifest.get("candidate", {})
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>ragmorph comparison</title><style>{_CSS}</style></head><body>\n"
        f"<h1>ragmorph comparison</h1><p>baseline <code>{_e(base.get('retriever'))}</code> ({_e(base.get('source'))}) → "
        f"candidate <code>{_e(cand.get('retriever'))}</code> ({_e(cand.get('source'))}) · corpus "
        f"{_e(str(manifest.get('corpus', {}).get('fingerprint', ''))[:16])} · {_e(summary.get('queries'))} paired queries</p>"
        f'<div class="verdict {"ok" if code == 0 else "bad"}">exit code {_e(code)}: {_e(_EXIT.get(code, "unknown"))}</div>'
        + (f"<p class=\"bad\">Lost critical cases: {_e(', '.join(data['lost_critical']))}</p>" if data.get("lost_critical") else "")
        + f'\n<section id="deltas"><h2>Per-query change</h2>{chart}</section>'
        f'\n<section id="metrics"><h2>Metrics</h2><p class="muted">{_e(manifest.get("test", {}).get("name"))}; alpha '
        f'{_e(manifest.get("test", {}).get("alpha"))}. Gated metrics first, then those that changed.</p><table><thead><tr><th>metric</th><th>queries</th><th>baseline</th>'
        "<th>candidate</th><th>delta</th><th>worse/better queries</th><th>p</th><th>p (Holm)</th><th>verdict</th></tr>"
        f"</thead><tbody>{metric_rows}</tbody></table></section>"
        f'\n<section id="queries"><h2>Queries that changed</h2><table><thead><tr><th>case</th><th>query</th>'
        f"<th>evidence and violations</th><th>metric deltas</th></tr></thead><tbody>{''.join(query_rows)}</tbody></table>"
        "</section>\n<footer class=\"muted\">Generated by ragmorph from a \"ragmorph.compare/1\" dict. Self-contained.</footer>"
        "\n</body></html>\n"
    )


def _junit(data: Mapping[str, Any]) -> ET.ElementTree:
    root = ET.Element("testsuites", name="ragmorph-compare")
    suite = ET.SubElement(root, "testsuite", name="ragmorph.compare")
    counts = {"tests": 0, "failures": 0}
    for test in data.get("metrics", ()):
        case = ET.SubElement(suite, "testcase", classname="ragmorph.compare.metrics", name=_xml(test["metric"]), time="0")
        counts["tests"] += 1
        text = (
            f"baseline {format_value(test['baseline'])} -> candidate {format_value(test['candidate'])} "
            f"(delta {_delta(test['delta'])}, p {_p(test['p_value'])}, Holm {_p(test['p_adjusted'])}, {test['queries']} queries)"
        )
        if test["verdict"] == "regression" and not test["gate"]:
            # As the exit code: only a gated metric fails the comparison; an ungated one is reported on its raw p.
            text += "; a regression on its raw p, not gated, so it does not fail the comparison"
        if test["verdict"] == "regression" and test["gate"]:
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=_xml(f"significant regression of {test['metric']}"), type="regression").text = text
        ET.SubElement(case, "system-out").text = text
    for row in data.get("queries", ()):
        if not row["critical"]:
            continue
        case = ET.SubElement(suite, "testcase", classname="ragmorph.compare.critical", name=_xml(row["case"]), time="0")
        counts["tests"] += 1
        if row["lost"]:
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=_xml(f"critical case {row['case']} lost evidence"), type="lost_critical").text = (
                _xml("\n".join(_lost_lines(row)))
            )
    for entry in data.get("no_verdict", ()):
        case = ET.SubElement(suite, "testcase", classname="ragmorph.compare.no_verdict", name=_xml(entry["case"]), time="0")
        counts["tests"] += 1
        counts["errors"] = counts.get("errors", 0) + 1
        ET.SubElement(case, "error", message=_xml(f"no verdict on {entry['case']}: the {entry['side']} errored"),
                      type="retriever_error").text = _xml(entry["reason"])
    for key, value in counts.items():
        suite.set(key, str(value))
        root.set(key, str(value))
    tree = ET.ElementTree(root)
    ET.indent(tree, space="  ")
    return tree


def write_comparison(
    data: Mapping[str, Any],
    *,
    json_path: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    junit: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write the comparison as JSON, HTML and/or JUnit XML (one testcase per metric, one per critical case;
    a significant regression of a gated metric or a lost critical case is a <failure>, as in the exit code); the
    written paths."""
    data = redact_data(data)  # as the run report writers do: no registered secret reaches a file
    written = []
    for path, render in (
        (json_path, lambda: json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"),
        (html, lambda: comparison_html(data)),
    ):
        if path is not None:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, render())
            written.append(target)
    if junit is not None:
        target = Path(junit)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, ET.tostring(_junit(data).getroot(), encoding="utf-8", xml_declaration=True))
        written.append(target)
    return written
