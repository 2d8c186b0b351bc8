"""The single-file HTML report: inline CSS and SVG, no script, no fonts, no network; all user text escaped."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_text
from ..secrets import redact_data
from ._common import (
    EXIT_MEANING,
    STATUSES,
    Cell,
    Marks,
    cell_label,
    cells,
    describe_filters,
    diff_rows,
    escape_html as _e,
    format_score,
    format_value,
    gone_ids,
    metric_pairs,
    metric_sort_key,
    relation_rows,
    replay_command,
    retriever_names,
    slice_label,
    slice_metrics,
    snippet,
    violation_marks,
    worst_slices,
)
from ..triage import Group, plural, soft_breaks, triage
from ._svg import legend, line_chart

__all__ = ["render_html", "write_html"]

PLOTTED_MEASURES: tuple[str, ...] = ("P", "R", "GroupR")
_OPEN_VIOLATIONS = 3

_CSS = """
:root { --pass:#1a7f37; --pass-bg:#dafbe1; --fail:#cf222e; --fail-bg:#ffebe9; --error:#9a6700; --error-bg:#fff8c5;
  --na:#57606a; --na-bg:#f0f2f4; --line:#d0d7de; --ink:#1f2328; --muted:#57606a; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--ink);
  margin: 0; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 32px 0 10px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; } h3 { font-size: 15px; margin: 0; display: inline; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { display: inline-block; padding: 4px 10px; border-radius: 6px; font-weight: 600; margin: 6px 0 10px; }
.verdict.pass { background: var(--pass-bg); color: var(--pass); }
.verdict.fail { background: var(--fail-bg); color: var(--fail); }
.verdict.error { background: var(--error-bg); color: var(--error); }
dl.manifest { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0; }
dl.manifest dt { color: var(--muted); } dl.manifest dd { margin: 0; overflow-wrap: anywhere; }
ul.totals { list-style: none; padding: 0; display: flex; gap: 8px; flex-wrap: wrap; margin: 10px 0; }
ul.totals li { padding: 3px 10px; border-radius: 12px; background: var(--na-bg); }
table { border-collapse: collapse; }
table.matrix th, table.matrix td, table.diff th, table.diff td, table.metrics th, table.metrics td {
  border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
table.matrix thead th, table.diff thead th, table.metrics thead th { background: #f6f8fa; }
td.pass { background: var(--pass-bg); color: var(--pass); } td.fail { background: var(--fail-bg); color: var(--fail);
  font-weight: 600; } td.error { background: var(--error-bg); color: var(--error); }
td.not_applicable, td.absent { background: var(--na-bg); color: var(--na); }
td.soft-broken { background: var(--error-bg); color: var(--error); }
.sev { color: var(--muted); font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { border: 1px solid var(--line); border-radius: 6px; background: #fff; }
svg.chart .grid { stroke: #eaeef2; } svg.chart .axis-line { stroke: #8c959f; }
svg.chart .tick { font-size: 11px; fill: var(--muted); } svg.chart .axis { font-size: 12px; fill: var(--muted); }
svg.chart .chart-title { font-size: 13px; font-weight: 600; fill: var(--ink); }
ul.legend { list-style: none; padding: 0; display: flex; gap: 16px; margin: 6px 0; }
details.violation { border: 1px solid var(--line); border-left: 4px solid var(--fail); border-radius: 6px;
  padding: 8px 12px; margin: 12px 0; }
details.violation summary { cursor: pointer; }
details.violation dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; }
details.violation dt { color: var(--muted); } details.violation dd { margin: 0; overflow-wrap: anywhere; }
table.diff { margin: 8px 0; width: 100%; table-layout: fixed; }
table.diff td { font-size: 12.5px; overflow-wrap: anywhere; }
table.diff col.rank { width: 3em; } table.diff col.move { width: 8.5em; }
tr .mark { display: inline-block; min-width: 1.4em; font-weight: 700; }
.m-gold { color: var(--pass); } .m-injected { color: var(--error); } .m-removed { color: var(--fail); }
td.is-gold { background: #f0fff4; } td.is-injected { background: #fffbea; } td.is-removed { background: #fff0f0; }
.text { color: var(--muted); display: block; }
.changed td { font-weight: 600; }
table.slices { margin: 6px 0 16px; } table.slices tr.fail td:first-child { border-left: 4px solid var(--fail); }
table.slices tr.fail td { background: var(--fail-bg); }
.muted { color: var(--muted); }
section.group { border-top: 1px solid var(--line); padding-top: 8px; margin-top: 16px; }
section.group h3 { display: block; margin: 4px 0; }
section.group .concern { color: var(--fail); text-transform: uppercase; font-size: 12px; letter-spacing: .04em; }
.badge.not-minimised { background: var(--na-bg); color: var(--na); border-radius: 10px; padding: 1px 8px; font-size: 12px; }
tr.culprit td { background: var(--fail-bg) !important; border-top: 2px solid var(--fail); border-bottom: 2px solid var(--fail); }
.breaks { color: var(--fail); font-weight: 700; font-size: 12px; }
p.rejected { color: var(--fail); background: var(--fail-bg); padding: 4px 8px; border-radius: 4px; }
td.fail a { color: inherit; }
ul.soft .example { color: var(--muted); font-size: 12.5px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
"""

_EXIT_STYLE = {0: "pass", 1: "fail", 3: "error"}


def _cell_html(cell: Cell | None, group: Group | None = None) -> str:
    if cell is None:
        return '<td class="absent">–</td>'
    text = _e(cell_label(cell))
    if cell.status == "fail":
        cases = ", ".join(cell.failing_cases)
        link = f'<a href="#{group.anchor}">{text}</a>' if group is not None else text
        return f'<td class="fail" title="failing cases: {_e(cases)}">{link}</td>'
    if cell.status == "error":
        return f'<td class="error" title="{_e("; ".join(cell.reasons))}">{text}</td>'
    if cell.status == "pass":
        if cell.soft and cell.tested:
            css = "soft-broken" if cell.soft_broken else "pass"
            return f'<td class="{css}" title="soft: share of tested perturbations where it held">{text}</td>'
        return f'<td class="pass">{text}</td>'
    return f'<td class="not_applicable" title="{_e("; ".join(cell.reasons))}">{text}</td>'


def _header(report: Mapping[str, Any]) -> str:
    manifest = report.get("manifest", {})
    summary = report.get("summary", {})
    settings = manifest.get("settings", {})
    css = _EXIT_STYLE.get(summary.get("exit_code"), "error")
    meaning = EXIT_MEANING.get(summary.get("exit_code"), "unknown")
    rows = [
        ("ragmorph", manifest.get("ragmorph_version")),
        ("created", manifest.get("created")),
        ("seed", manifest.get("seed")),
        ("corpus", f"{manifest.get('corpus', {}).get('chunks')} chunks · {manifest.get('corpus', {}).get('fingerprint', '')[:16]}"),
        ("cases", f"{manifest.get('cases', {}).get('count')} cases · {manifest.get('cases', {}).get('fingerprint', '')[:16]}"),
        ("strategies", ", ".join(manifest.get("strategies", ()))),
        ("settings", f"k {', '.join(str(k) for k in settings.get('ks', ()))} · max_examples {settings.get('max_examples')}"
                     f" · derandomize {settings.get('derandomize')} · timeout {settings.get('timeout')}"),
    ]
    totals = [
        ("pass", summary.get("pass", 0)), ("fail", summary.get("fail", 0)), ("error", summary.get("error", 0)),
        ("not applicable", summary.get("not_applicable", 0)),
        ("hard failure" if summary.get("hard_failures") == 1 else "hard failures", summary.get("hard_failures", 0)),
        ("soft break" if summary.get("soft_breaks") == 1 else "soft breaks", summary.get("soft_breaks", 0)),
    ]
    if "retriever_calls" in summary:  # reports written before calls were counted have none
        totals += [
            ("retriever call" if summary["retriever_calls"] == 1 else "retriever calls", summary["retriever_calls"]),
            ("calls per retriever x case", f"{summary.get('calls_per_case', 0):g}"),
        ]
    return (
        "<header><h1>ragmorph report</h1>"
        f'<div class="verdict {css}">exit code {_e(summary.get("exit_code"))}: {_e(meaning)}</div>'
        '<dl class="manifest">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows) + "</dl>"
        '<ul class="totals">' + "".join(f"<li>{_e(v)} {_e(k)}</li>" for k, v in totals) + "</ul></header>"
    )


def _matrix(report: Mapping[str, Any]) -> str:
    retrievers = retriever_names(report)
    table = cells(report)
    groups = {(g.retriever, g.relation): g for g in triage(report)}
    head = "<tr><th>strategy</th><th>relation</th><th>severity</th>" + "".join(
        f"<th>{_e(r)}</th>" for r in retrievers
    ) + "</tr>"
    body = []
    for strategy, relation, severity in relation_rows(report):
        row = f"<tr><td>{_e(strategy)}</td><td><code>{_e(relation)}</code></td><td class=\"sev\">{_e(severity)}</td>"
        row += "".join(_cell_html(table.get((r, strategy, relation)), groups.get((r, relation))) for r in retrievers)
        body.append(row + "</tr>")
    return (
        '<section id="matrix"><h2>Relations</h2>'
        '<p class="muted">Per retriever, aggregated over cases: every status counted (FAIL, ERROR, pass, n/a = not '
        "applicable); soft relations as the share of perturbations where they held. A failing cell links to its "
        "violation group; hover a cell for failing cases and reasons.</p>"
        f'<table class="matrix"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table></section>'
    )


def _aggregate_text(value: Mapping[str, Any]) -> str:
    """The macro average, with how many cases it leaves out because the retriever errored on them."""
    text = format_value(value.get("macro"))
    errored = int(value.get("errored") or 0)
    return f"{text} ({value.get('queries', 0)} scored, {errored} errored)" if errored else text


def _slices(report: Mapping[str, Any]) -> str:
    names = slice_metrics(report)
    tables = []
    for retriever in retriever_names(report):
        rows = worst_slices(report, retriever)
        if not rows:
            continue
        head = (
            "<tr><th>slice</th><th>cases</th><th>cases with hard failures</th><th>pass</th><th>fail</th><th>error</th>"
            "<th>n/a</th><th>soft rate</th>" + "".join(f"<th>{_e(n)}</th>" for n in names) + "</tr>"
        )
        body = []
        for row in rows:
            status, soft = row.get("status", {}), row.get("soft", {})
            failing = row.get("failing_cases") or []
            rate = "-" if soft.get("rate") is None else f"{soft['rate']:.0%} ({soft['held']}/{soft['tested']})"
            values = "".join(
                f'<td class="mono">{_e(format_value((row.get("metrics", {}).get(n) or {}).get("macro")))} '
                f'<span class="muted">({_e((row.get("metrics", {}).get(n) or {}).get("queries", 0))})</span></td>'
                for n in names
            )
            css = ' class="fail"' if failing else ""
            title = f' title="{_e(", ".join(failing))}"' if failing else ""
            body.append(
                f"<tr{css}><td>{_e(slice_label(row))}</td><td>{_e(row.get('cases', 0))}</td><td{title}>{len(failing)}</td>"
                + "".join(f"<td>{_e(status.get(s, 0))}</td>" for s in STATUSES)
                + f"<td>{_e(rate)}</td>{values}</tr>"
            )
        tables.append(
            f"<h3>{_e(retriever)}</h3>\n<table class=\"metrics slices\"><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"
        )
    if not tables:
        return ""
    return (
        '<section id="slices"><h2>Slices, worst first</h2>'
        '<p class="muted">Every aggregate per case tag and per tenant (a case counts in each of its tags), sorted by '
        "the share of cases with a hard failure, then evidence coverage, then the soft rate. Metric values are macro "
        "averages over the slice's queries (count in brackets).</p>" + "".join(tables) + "</section>"
    )


def _plots(report: Mapping[str, Any]) -> str:
    metrics = report.get("metrics") or {}
    ks = list(report.get("manifest", {}).get("settings", {}).get("ks", ()))
    retrievers = [r for r in retriever_names(report) if r in metrics] + sorted(
        set(metrics) - set(retriever_names(report))
    )
    if not metrics or not ks:
        return '<section id="metrics"><h2>Metrics</h2><p class="muted">No metrics in this report.</p></section>'
    charts = []
    for measure in PLOTTED_MEASURES:
        series = {
            name: [(metrics[name].get(f"{measure}@{k}") or {}).get("macro") for k in ks] for name in retrievers
        }
        if any(v is not None for values in series.values() for v in values):
            charts.append(line_chart(f"{measure}@k", ks, series))
    names = sorted({n for table in metrics.values() for n in table}, key=metric_sort_key)
    head = "<tr><th>metric</th>" + "".join(f"<th>{_e(r)}</th>" for r in retrievers) + "</tr>"
    rows = "".join(
        f"<tr><td><code>{_e(n)}</code></td>"
        + "".join(f'<td class="mono">{_e(_aggregate_text(metrics[r].get(n) or {}))}</td>' for r in retrievers)
        + "</tr>"
        for n in names
    )
    errored = {
        r: max((int(value.get("errored") or 0) for value in metrics[r].values()), default=0) for r in retrievers
    }
    caveat = "".join(
        f" {_e(r)}: {count} case{'s' if count != 1 else ''} errored and {'are' if count != 1 else 'is'} not in its averages."
        for r, count in errored.items()
        if count
    )
    return (
        '<section id="metrics"><h2>Metrics of the base worlds</h2>'
        f'<p class="muted">Macro averages over cases at each cutoff k.{caveat}</p>'
        f'{legend(retrievers)}<div class="plots">{"".join(charts)}</div>'
        f'<details><summary>All metric values</summary><table class="metrics"><thead>{head}</thead>'
        f"<tbody>{rows}</tbody></table></details></section>"
    )


def _hit_cell(hit: Mapping[str, Any] | None, marks: Marks) -> str:
    if hit is None:
        return "<td></td>"
    chunk_id = hit.get("id")
    mark = marks.of(chunk_id)
    classes = " ".join(
        css for symbol, css in (("G", "is-gold"), ("+", "is-injected"), ("-", "is-removed")) if symbol in mark
    )
    badges = "".join(
        f'<span class="mark {css}" title="{title}">{symbol}</span>'
        for symbol, css, title in (("G", "m-gold", "gold evidence"), ("+", "m-injected", "injected"),
                                   ("-", "m-removed", "removed by the perturbation"))
        if symbol in mark
    )
    text = snippet(hit.get("text"), 160)
    return (
        f'<td class="{classes}">{badges}<code>{_e(chunk_id)}</code> <span class="muted mono">'
        f"{_e(format_score(hit.get('score')))}</span><span class=\"text\">{_e(text)}</span></td>"
    )


def _violation(number: int, retriever: str, violation: Mapping[str, Any], *, opened: bool = True) -> str:
    marks = violation_marks(violation)
    base = violation.get("base") or {}
    follow = violation.get("follow_up") or {}
    before, after = base.get("ranking") or [], follow.get("ranking") or []
    rows = "".join(
        f'<tr{_culprit_row(marks, row.after)}><td class="mono">{row.rank}</td>{_hit_cell(row.before, marks)}'
        f'{_hit_cell(row.after, marks)}<td class="muted">{_e(row.moved)}{_culprit_badge(marks, row.after)}</td></tr>'
        for row in diff_rows(before, after)
    )
    diff = (
        '<table class="diff"><colgroup><col class="rank"><col><col><col class="move"></colgroup>'
        "<thead><tr><th>#</th><th>base</th><th>follow-up</th><th>move</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        '<p class="muted"><span class="mark m-gold">G</span> gold evidence · <span class="mark m-injected">+</span>'
        ' injected by the perturbation · <span class="mark m-removed">-</span> removed by the perturbation'
        + (' · <span class="breaks">breaks the relation</span> highlighted row' if marks.culprits else "")
        + "</p>"
    )
    for side, data in (("base", base), ("follow-up", follow)):
        if data.get("invalid"):
            diff = f'<p class="rejected">{side} call rejected by the response check: {_e(data["invalid"])}</p>' + (
                diff if before or after else ""
            )
    bm, fm = base.get("metrics") or {}, follow.get("metrics") or {}
    metric_rows = "".join(
        f'<tr class="{"changed" if old != new else ""}"><td><code>{_e(label)}</code></td>'
        f'<td class="mono">{_e(format_value(old))}</td><td class="mono">{_e(format_value(new))}</td></tr>'
        for label, old, new in metric_pairs(bm, fm)
    )
    # A rejected response has no ranking to measure: its metrics would read as a fake change from n/a.
    rejected = bool(base.get("invalid") or follow.get("invalid"))
    metrics = (
        '<table class="metrics"><thead><tr><th>metric</th><th>base</th><th>follow-up</th></tr></thead>'
        f"<tbody>{metric_rows}</tbody></table>" if metric_rows and not rejected else ""
    )
    perturbation = violation.get("perturbation") or {}
    minimal = violation.get("minimal_corpus") or []
    gone = gone_ids(before, after)
    command = replay_command(violation)
    facts = [
        ("query", _e(violation.get("query"))),
        ("perturbation", f"<code>{_e(perturbation.get('repr') or perturbation.get('type'))}</code>"),
        ("why", _e(violation.get("detail"))),
        *([("stage", _e((violation.get("stages") or {}).get("detail")))] if violation.get("stages") else []),
        ("params", f"base {_e(describe_filters(base.get('params')))} → follow-up {_e(describe_filters(follow.get('params')))}"),
        ("no longer returned", _e(", ".join(map(str, gone))) if gone else '<span class="muted">none</span>'),
        ("minimal corpus", f"{_e(plural(len(minimal), 'chunk'))}: " + ", ".join(f"<code>{_e(c.get('id'))}</code>" for c in minimal)),
        ("retriever calls", f"{_e(violation.get('calls_to_first_failure'))} to the first failure, "
                            f"{_e(violation.get('calls_shrinking'))} shrinking"),
        ("replay", f"<code>{_e(command)}</code>" if command else '<span class="muted">no replay file saved</span>'),
    ]
    return (
        f'<details class="violation" id="v{number}"{" open" if opened else ""}><summary>'
        f"<code>{_e(violation.get('relation'))}</code> · case <code>{_e(violation.get('case'))}</code> · "
        f"retriever <code>{_e(retriever)}</code></summary>"
        "<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
        f"{diff}{metrics}</details>"
    )


def _culprit_row(marks: Marks, hit: Mapping[str, Any] | None) -> str:
    return ' class="culprit"' if marks.breaks(hit) else ""


def _culprit_badge(marks: Marks, hit: Mapping[str, Any] | None) -> str:
    return ' <span class="breaks">breaks the relation</span>' if marks.breaks(hit) else ""


def _group(number: int, group: Group) -> str:
    """One violation group: headline, cases, the representative opened, the other cases listed."""
    others = [r for r in group.results if r is not group.representative]
    badge = "" if group.minimised else ' <span class="badge not-minimised">not minimised</span>'
    rest = ""
    if others:
        items = "".join(
            f"<li>case <code>{_e(r['case'])}</code>: {_e(snippet((r.get('violation') or {}).get('detail') or r.get('reason'), 200))}"
            f" <span class=\"muted\">({_e(plural(len((r.get('violation') or {}).get('minimal_corpus') or ()), 'chunk'))})</span></li>"
            for r in others
        )
        rest = f'<details class="others"><summary>{_e(plural(len(others), "other case"))}</summary><ul>{items}</ul></details>'
    concern = group.concern.name.lower().replace("_", "-")
    return (
        f'<section class="group concern-{concern}" id="{_e(group.anchor)}">'
        f'<h3>{number}. <span class="concern">{_e(group.concern.label)}</span> · <code>{_e(group.relation)}</code> · '
        f"retriever <code>{_e(group.retriever)}</code> · {_e(plural(len(group.cases), 'case'))}{badge}</h3>"
        f'<p class="muted">Smallest minimal case shown: <code>{_e(group.representative["case"])}</code>.</p>'
        + _violation(number, group.retriever, group.representative["violation"], opened=number <= _OPEN_VIOLATIONS)
        + rest
        + "</section>"
    )


def _violations(report: Mapping[str, Any]) -> str:
    groups = triage(report)
    if not groups:
        return '<section id="violations"><h2>Violations</h2><p class="muted">No violations.</p></section>'
    total = sum(len(g.results) for g in groups)
    order = (
        '<p class="muted">Grouped by retriever × relation, worst first: tenant leaks, then contract breaches, then '
        "other hard violations; groups whose corpus could not be minimised come last.</p>"
    )
    items = "".join(_group(i, g) for i, g in enumerate(groups, start=1))
    return (
        f'<section id="violations"><h2>Violations: {_e(plural(total, "violation"))} in {_e(plural(len(groups), "group"))}</h2>'
        f"{order}{items}</section>"
    )


def _soft(report: Mapping[str, Any]) -> str:
    breaks = soft_breaks(report)
    if not breaks:
        return ""
    items = "".join(
        f'<li><code>{_e(s.retriever)}</code> · <code>{_e(s.relation)}</code> held in {s.held} of {s.tested} '
        f"perturbations ({s.held / s.tested:.0%})"
        + (f'<div class="example">e.g. case <code>{_e(s.case)}</code>: <code>{_e(s.example["perturbation"])}</code>'
           f" — {_e(s.example['detail'])}</div>" if s.example else "")
        + "</li>"
        for s in breaks
    )
    return (
        '<section id="soft"><h2>Soft breaks</h2><p class="muted">Soft relations may break on a correct retriever: '
        f'reported as rates with one example perturbation each, never as failures.</p><ul class="soft">{items}</ul></section>'
    )


def _retrievers(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(r.get('name'))}</code></td><td>{_e(r.get('kind'))}</td><td>{_e(r.get('description'))}</td></tr>"
        for r in report.get("manifest", {}).get("retrievers", ())
    )
    return (
        '<section id="retrievers"><h2>Retrievers</h2><table class="matrix"><thead><tr><th>name</th><th>kind</th>'
        f"<th>description</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def render_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML document (inline CSS and SVG; no script, fonts or network)."""
    sections: Sequence[str] = (
        _header(report), _matrix(report), _slices(report), _violations(report), _soft(report), _plots(report),
        _retrievers(report),
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>ragmorph report</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(sections)
        + '\n<footer>Generated by ragmorph from a "ragmorph.report/1" JSON report. This file is self-contained.</footer>'
        "\n</body></html>\n"
    )


def write_html(report: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write `render_html(report)` to `path` as UTF-8; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, render_html(redact_data(report)))
    return target
