"""Terminal output: the relation x retriever summary table, violations with side-by-side rankings, progress."""

from __future__ import annotations

import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from ._common import (
    EXIT_MEANING,
    STATUSES,
    Cell,
    cell_label,
    cells,
    describe_filters,
    diff_rows,
    format_score,
    format_value,
    gone_ids,
    metric_pairs,
    relation_rows,
    replay_command,
    retriever_names,
    slice_label,
    slice_metrics,
    snippet,
    text_table,
    violation_marks,
    worst_slices,
)
from ..triage import plural, soft_breaks, triage

__all__ = ["ProgressBar", "render_report", "render_slices", "render_summary", "render_triage", "render_violation"]

_ANSI = {"pass": "32", "fail": "1;31", "error": "33", "not_applicable": "2", "absent": "2", "bold": "1", "dim": "2"}


def _clean(text: Any) -> str:
    """User text made safe for a terminal: control characters (escape sequences included) become '?'."""
    return "".join(
        " " if ch in "\t\n\r" else ("?" if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") else ch)
        for ch in str(text)
    )


def _paint(text: str, style: str, color: bool) -> str:
    return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if color and style in _ANSI else text


def _cell_style(cell: Cell | None) -> str:
    if cell is None:
        return "absent"
    if cell.status == "pass" and cell.soft_broken:
        return "error"
    return cell.status


def render_summary(report: Mapping[str, Any], *, color: bool = False) -> str:
    """The relation x retriever table with pass/fail/error/n-a counts and soft rates, then the totals."""
    manifest = report.get("manifest", {})
    settings = manifest.get("settings", {})
    header = (
        f"ragmorph {manifest.get('ragmorph_version', '?')} · seed {manifest.get('seed', '?')} · "
        f"{manifest.get('corpus', {}).get('chunks', '?')} chunks · {manifest.get('cases', {}).get('count', '?')} cases · "
        f"k {','.join(str(k) for k in settings.get('ks', ()))} · max_examples {settings.get('max_examples', '?')}"
    )
    retrievers = retriever_names(report)
    table = cells(report)
    rows = relation_rows(report)
    texts = [[cell_label(table.get((r, strategy, relation))) for r in retrievers] for strategy, relation, _ in rows]
    # A contract relation judged inside another family's run appears once per family: say which.
    names = [_clean(relation if relation.startswith(strategy + ".") else f"{relation} (in {strategy})")
             for strategy, relation, _ in rows]
    name_width = max([len("relation"), *map(len, names)])
    widths = [max([len(_clean(r)), *(len(row[i]) for row in texts)]) for i, r in enumerate(retrievers)]
    lines = [header, ""]
    head = f"{'relation':<{name_width}}  sev   " + "  ".join(f"{_clean(r):<{w}}" for r, w in zip(retrievers, widths))
    lines.append(_paint(head.rstrip(), "bold", color))
    for (strategy, relation, severity), name, row in zip(rows, names, texts):
        styled = [
            _paint(f"{text:<{w}}", _cell_style(table.get((r, strategy, relation))), color)
            for r, text, w in zip(retrievers, row, widths)
        ]
        lines.append((f"{name:<{name_width}}  {severity:<4}  " + "  ".join(styled)).rstrip())
    notes = _notes(report, table)
    if notes:
        lines += ["", *notes]
    suggestions = report.get("suggestions") or []
    if suggestions:
        lines += ["", "trait suggestions (declare them only if they hold for your retriever):"]
        lines += [f"  {_clean(s['retriever'])}: {_clean(s['message'])}" for s in suggestions]
    lines += ["", _totals(report, color)]
    return "\n".join(lines)


_NOTES_PER_RETRIEVER = 3


def _notes(report: Mapping[str, Any], table: Mapping[tuple[str, str, str], Cell]) -> list[str]:
    """Why cells could not be judged: error cells, and cells where no case was applicable at all.

    Partly applicable cells are not explained (some cases cannot test some relations, by design), and a
    retriever failing everywhere collapses to one line; the JSON and HTML reports keep every reason.
    """
    notes = []
    for retriever in retriever_names(report):
        for status, label in (("error", "error"), ("not_applicable", "not applicable")):
            found = [
                (relation, cell)
                for strategy, relation, _ in relation_rows(report)
                if (cell := table.get((retriever, strategy, relation))) is not None
                and cell.status == status
                and cell.reasons
            ]
            if len(found) > _NOTES_PER_RETRIEVER:
                results = sum(cell.counts[status] for _, cell in found)
                first = _clean(snippet(found[0][1].reasons[0], 110))
                notes.append(f"  {_clean(retriever)}: {label} in {len(found)} relations ({results} results), e.g. {first}")
                continue
            for relation, cell in found:
                more = f" (+{len(cell.reasons) - 1} more)" if len(cell.reasons) > 1 else ""
                reason = _clean(snippet(cell.reasons[0], 110))
                notes.append(f"  {_clean(relation)} @ {_clean(retriever)}: {label}: {reason}{more}")
    return notes


def _totals(report: Mapping[str, Any], color: bool) -> str:
    summary = report.get("summary", {})
    code = summary.get("exit_code")
    text = (
        f"{summary.get('pass', 0)} pass, {summary.get('fail', 0)} fail, {summary.get('error', 0)} error, "
        f"{summary.get('not_applicable', 0)} not applicable · {plural(summary.get('hard_failures', 0), 'hard failure')}, "
        f"{plural(summary.get('soft_breaks', 0), 'soft break')} · exit code {code} ({EXIT_MEANING.get(code, 'unknown')})"
    )
    if "retriever_calls" in summary:  # reports written before calls were counted have none
        text += f" · {plural(summary['retriever_calls'], 'retriever call')} ({summary.get('calls_per_case', 0):g} per case)"
    style = {0: "pass", 1: "fail", 3: "error"}.get(code, "bold")
    return _paint(text, style, color)


def _hit_text(hit: Mapping[str, Any] | None, marks: Any, id_width: int, text_width: int) -> str:
    if hit is None:
        return " " * (3 + id_width + 1 + 8 + text_width)
    mark = marks.of(hit.get("id"))
    chunk_id = snippet(_clean(hit.get("id", "")), id_width)
    return (
        f"{mark:<2} {chunk_id:<{id_width}} {format_score(hit.get('score')):>8} "
        f"{snippet(_clean(hit.get('text') or ''), text_width):<{text_width}}"
    )


def render_violation(
    violation: Mapping[str, Any], *, retriever: str | None = None, color: bool = False, snippet_width: int = 28
) -> str:
    """One violation: query, minimal perturbation, rankings side by side with marks, metrics, calls, replay."""
    marks = violation_marks(violation)
    base = violation.get("base") or {}
    follow = violation.get("follow_up") or {}
    before, after = base.get("ranking") or [], follow.get("ranking") or []
    title = f"FAIL {_clean(violation.get('relation'))} · case {_clean(violation.get('case'))}"
    if retriever is not None:
        title += f" · retriever {_clean(retriever)}"
    perturbation = violation.get("perturbation") or {}
    lines = [
        _paint(title, "fail", color),
        f"  query         {_clean(violation.get('query'))}",
        f"  perturbation  {_clean(perturbation.get('repr') or perturbation.get('type'))}",
        f"  why           {_clean(violation.get('detail'))}",
        *([f"  stage         {_clean((violation.get('stages') or {}).get('detail'))}"] if violation.get("stages") else []),
        f"  params        base {describe_filters(base.get('params'))}  ->  follow-up {describe_filters(follow.get('params'))}",
        "",
    ]
    for side, data in (("base", base), ("follow-up", follow)):
        if data.get("invalid"):
            lines.insert(-1, f"  {side + ' call':<13} rejected by the response check: {_clean(snippet(data['invalid'], 160))}")
    if before or after:
        id_width = min(28, max([len("id"), *(len(_clean(h.get("id", ""))) for h in (*before, *after))]))
        column = 3 + id_width + 1 + 8 + 1 + snippet_width
        lines.append(_paint(f"  {'#':>3}  {'base':<{column}}  {'follow-up':<{column}}  move", "bold", color))
        for row in diff_rows(before, after):
            left = _hit_text(row.before, marks, id_width, snippet_width)
            right = _hit_text(row.after, marks, id_width, snippet_width)
            culprit = marks.breaks(row.after)
            line = f"{'>' if culprit else ' '} {row.rank:>3}  {left}  {right}  {row.moved}".rstrip()
            lines.append(_paint(line, "fail", color) if culprit else line)
        legend = "  marks: G gold evidence, + injected by the perturbation, - removed by the perturbation"
        if marks.culprits:
            legend += "; > the row that breaks the relation"
        lines.append(_paint(legend, "dim", color))
        dropped = gone_ids(before, after)
        if dropped:
            lines.append(f"  no longer returned: {', '.join(_clean(i) for i in dropped)}")
        lines.append("")
    # A rejected response has no ranking to measure: its metrics would read as a fake change from n/a.
    if not (base.get("invalid") or follow.get("invalid")):
        lines.extend(_metric_lines(base.get("metrics") or {}, follow.get("metrics") or {}))
    minimal = violation.get("minimal_corpus") or []
    shown = ", ".join(_clean(c.get("id")) for c in minimal[:8]) + (", ..." if len(minimal) > 8 else "")
    lines.append(f"  minimal corpus  {plural(len(minimal), 'chunk')} ({shown})")
    lines.append(
        f"  retriever calls  {violation.get('calls_to_first_failure', '?')} to the first failure, "
        f"{violation.get('calls_shrinking', '?')} shrinking"
    )
    command = replay_command(violation)
    lines.append(f"  replay  {_clean(command)}" if command else "  replay  (no replay file saved; ragmorph run --replay-dir DIR saves one)")
    return "\n".join(lines)


def _metric_lines(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    rows = metric_pairs(before, after)
    if not rows:
        return []
    width = max(len("metric"), *(len(_clean(label)) for label, _, _ in rows))
    lines = [f"  {'metric':<{width}}  base -> follow-up"]
    for label, old, new in rows:
        change = "" if old == new else "  (changed)"
        lines.append(f"  {_clean(label):<{width}}  {format_value(old)} -> {format_value(new)}{change}")
    return lines


_SLICES_SHOWN = 8


def render_slices(report: Mapping[str, Any], *, limit: int | None = _SLICES_SHOWN) -> str:
    """Per retriever, the slices (case tags, tenants) worst first: cases, hard failures, statuses, soft rate and
    the headline metrics (macro, with the number of queries); empty when the report has no slices."""
    names = slice_metrics(report)
    blocks = []
    for retriever in retriever_names(report):
        rows = worst_slices(report, retriever)
        if not rows:
            continue
        shown = rows if limit is None else rows[:limit]
        header = ["slice", "cases", "hard fails", "pass/fail/err/n-a", "soft rate", *names]
        table = []
        for row in shown:
            status, soft = row.get("status", {}), row.get("soft", {})
            values = [row.get("metrics", {}).get(name) or {} for name in names]
            table.append(
                [
                    _clean(snippet(slice_label(row), 32)),
                    str(row.get("cases", 0)),
                    str(len(row.get("failing_cases") or ())),
                    "/".join(str(status.get(s, 0)) for s in STATUSES),
                    "-" if soft.get("rate") is None else f"{soft['rate']:.0%} ({soft['held']}/{soft['tested']})",
                    *(f"{format_value(v.get('macro'))} ({v.get('queries', 0)})" for v in values),
                ]
            )
        lines = [f"slices of {_clean(retriever)}, worst first (hard fails = cases with a hard failure):"]
        lines += text_table(header, table, indent="  ")
        if len(rows) > len(shown):
            lines.append(f"  ... and {len(rows) - len(shown)} more slices (all are in the JSON and HTML reports)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_triage(report: Mapping[str, Any], *, color: bool = False) -> str:
    """The violation groups, worst first, one line each, then the soft breaks with one example perturbation."""
    groups = triage(report)
    lines = []
    if groups:
        lines.append(_paint(f"{plural(len(groups), 'violation group')}, worst first (group = retriever x relation):", "bold", color))
        for number, group in enumerate(groups, start=1):
            lines.append(_paint(f"  {number}. {_clean(group.headline())}", "fail" if number == 1 else "bold", color))
    breaks = soft_breaks(report)
    if breaks:
        if lines:
            lines.append("")
        lines.append(_paint(f"{plural(len(breaks), 'soft break')} (rates, never failures):", "bold", color))
        for soft in breaks:
            lines.append(f"  {_clean(soft.headline())}")
            if soft.example:
                where = f" (case {_clean(soft.case)})" if soft.case else ""
                lines.append(f"    e.g.{where} {_clean(snippet(soft.example['perturbation'], 100))}: "
                             f"{_clean(snippet(soft.example['detail'], 140))}")
    return "\n".join(lines)


def render_report(report: Mapping[str, Any], *, color: bool = False, max_violations: int | None = None) -> str:
    """The summary table, the triage, then each violation group's representative (all, or the first N groups)."""
    parts = [render_summary(report, color=color)]
    # The triage comes straight after the table: the worst group must be the first thing read after the verdict.
    triaged = render_triage(report, color=color)
    if triaged:
        parts.append(triaged)
    slices = render_slices(report)
    if slices:
        parts.append(slices)
    groups = triage(report)
    shown = groups if max_violations is None else groups[: max(max_violations, 0)]
    for number, group in enumerate(shown, start=1):
        others = [case for case in group.cases if case != group.representative["case"]]
        heading = f"[{number}] {group.concern.label}" + (f"; also fails on {plural(len(others), 'case')}: {', '.join(others[:8])}"
                                                         + (", ..." if len(others) > 8 else "") if others else "")
        parts.append(_paint(_clean(heading), "bold", color) + "\n" + render_violation(
            group.representative["violation"], retriever=group.retriever, color=color
        ))
    if len(groups) > len(shown):
        parts.append(f"... and {plural(len(groups) - len(shown), 'more group')} (every violation is in the JSON and HTML reports)")
    return "\n\n".join(parts)


class ProgressBar:
    """Progress of a run: a one-line bar on a TTY, and (with `log_every`) a plain line every few seconds elsewhere.

    On a TTY the bar draws only once a run has lasted `delay` seconds, so short runs stay silent. Off a TTY (a CI
    log, a pipe) nothing is drawn unless `log_every` is set: then a background thread writes a line every
    `log_every` seconds (units done/total, retriever calls, seconds per call, an ETA from them), so a run of
    slow calls is never silent for minutes. Once the measured calls show a long run of slow calls (at least
    `slow_call` seconds each and `long_run` seconds in all), `hint` is written once. Use `update(n)` per finished
    unit (or call the bar with `(done, total)`), `record_calls(n)` with each unit's retriever calls (`check`
    does), and `close()` at the end.
    """

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        *,
        delay: float = 2.0,
        width: int = 30,
        label: str = "ragmorph",
        clock: Callable[[], float] = time.monotonic,
        log_every: float | None = None,
        hint: str | None = None,
        slow_call: float = 0.02,
        long_run: float = 60.0,
    ) -> None:
        self.total = max(int(total), 0)
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.width = width
        self.label = label
        self.clock = clock
        self.done = 0
        self.calls = 0
        self.measured = 0  # the units whose calls are in `calls` (a batch's calls arrive before its units' updates)
        self.started = clock()
        self.drawn = False
        self.hint = hint
        self.slow_call = slow_call
        self.long_run = long_run
        self.hinted = False
        self._last_draw = float("-inf")
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        # The stream is written from the caller's thread and the logging thread: one writer at a time.
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._logger: threading.Thread | None = None
        if log_every is not None and not self.enabled:
            self._logger = threading.Thread(target=self._log, args=(log_every,), name="ragmorph-progress", daemon=True)
            self._logger.start()

    def update(self, n: int = 1) -> None:
        """Record `n` more finished units and redraw when due."""
        self.done = min(self.done + n, self.total) if self.total else self.done + n
        self._maybe_draw()

    def record_calls(self, calls: int, units: int = 1) -> None:
        """Record the retriever calls that `units` finished units spent: they give the seconds per call and the ETA."""
        self.calls += max(int(calls), 0)
        self.measured += max(int(units), 0)

    def __call__(self, done: int, total: int | None = None, *_unit: object) -> None:
        """Callback form for `check(progress=bar)`: `(done, total, unit)` sets the absolute count (unit ignored)."""
        if total is not None:
            self.total = max(int(total), 0)
        self.done = done
        self._maybe_draw()

    def seconds_per_call(self, elapsed: float) -> float | None:
        """Wall-clock seconds per retriever call so far (None before any call was recorded)."""
        return elapsed / self.calls if self.calls else None

    def eta(self, elapsed: float) -> float | None:
        """Seconds left: the calls the remaining units will make (at this run's calls per unit) times seconds per call."""
        per_call = self.seconds_per_call(elapsed)
        if per_call is None or not self.measured or not self.total:
            return None
        return self._calls_left() * per_call

    def _calls_left(self) -> float:
        return self.calls / self.measured * max(self.total - self.measured, 0) if self.measured else 0.0

    def _maybe_draw(self) -> None:
        now = self.clock()
        self._maybe_hint(now - self.started)
        if not self.enabled:
            return
        finished = self.total and self.done >= self.total
        if now - self.started < self.delay or (now - self._last_draw < 0.1 and not finished):
            return
        self._last_draw = now
        self.drawn = True
        with self._lock:
            self.stream.write("\r" + self.line(now - self.started))
            self.stream.flush()

    def _maybe_hint(self, elapsed: float) -> None:
        """Once: when calls are slow and the run long, say what makes it shorter (the `hint`)."""
        per_call = self.seconds_per_call(elapsed)
        eta = self.eta(elapsed)
        # A pace measured on one unit and a couple of calls is mostly start-up time: wait for a sample.
        if self.hint is None or self.hinted or eta is None or per_call is None or self.measured < 2 or self.calls < 10:
            return
        if per_call < self.slow_call or elapsed + eta < self.long_run:
            return
        left = self._calls_left()
        with self._lock:
            if self.hinted:  # the other thread got here first
                return
            self.hinted = True
            self.stream.write(
                ("\r\n" if self.drawn else "")
                + f"{self.label}: retriever calls take {per_call:.2f} s each and this run needs about {left:,.0f} more "
                f"(about {_duration(eta)}): {self.hint}\n"
            )
            self.stream.flush()

    def _log(self, every: float) -> None:
        while not self._stop.wait(every):
            elapsed = self.clock() - self.started
            self._maybe_hint(elapsed)
            with self._lock:
                self.stream.write(self.log_line(elapsed) + "\n")
                self.stream.flush()

    def log_line(self, elapsed: float) -> str:
        """The plain progress line, e.g. `ragmorph: 12/40 units, 300 calls (0.18 s/call), 54s elapsed, about 2m left`."""
        parts = [f"{self.label}: {self.done}/{self.total or '?'} units", f"{self.calls:,} retriever calls"]
        per_call = self.seconds_per_call(elapsed)
        if per_call is not None:
            parts[-1] += f" ({per_call:.3f} s/call)"
        parts.append(f"{_duration(elapsed)} elapsed")
        eta = self.eta(elapsed)
        parts.append("no unit finished yet" if eta is None else f"about {_duration(eta)} left")
        return ", ".join(parts)

    def line(self, elapsed: float) -> str:
        """The bar text for the current count, e.g. `ragmorph [#####.....] 12/40 (30%) 3s`."""
        share = self.done / self.total if self.total else 0.0
        filled = int(round(share * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total} ({share:.0%}) {elapsed:.0f}s"

    def close(self) -> None:
        """Stop the logging thread; end the line if the bar was drawn; silent otherwise."""
        self._stop.set()
        if self._logger is not None and self._logger is not threading.current_thread():
            self._logger.join()
        if self.drawn:
            with self._lock:
                self.stream.write("\n")
                self.stream.flush()
            self.drawn = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _duration(seconds: float) -> str:
    """`42s`, `3m10s`, `1h05m`: a length of time for a progress line."""
    seconds = max(int(round(seconds)), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
