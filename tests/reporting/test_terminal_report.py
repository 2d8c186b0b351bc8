"""Terminal rendering: the summary table, violations side by side, control-character safety, the progress bar."""

from __future__ import annotations

import io

from hypothesis import given, settings

from ragmorph.reporting import ProgressBar, render_report, render_summary, render_violation
from ragmorph.reporting import render_triage
from support.report_samples import sample_report, sample_violation, triage_report
from support.report_strategies import reports


def test_render_report_is_golden(golden) -> None:
    golden("report.txt", render_report(sample_report()) + "\n")


def test_summary_counts_each_relation_per_retriever() -> None:
    text = render_summary(sample_report())
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith(("reorder.", "removal.", "tenancy.", "supersede."))}
    # Every status is counted in words, so "1 pass, 1 not applicable" never reads like a failure.
    assert rows["removal.removed_never_returned"].split()[2:] == ["pass", "2", "FAIL", "1,", "pass", "1"]
    assert rows["removal.recall_non_increasing"].split()[2:] == ["96%", "held", "(48/50)", "96%", "held", "(48/50)"]
    assert rows["tenancy.unauthorized_zero"].split()[2:] == ["pass", "2", "ERROR", "1,", "pass", "1"]
    assert rows["supersede.stale_zero"].split()[2:] == ["n/a", "2", "n/a", "2"]
    assert "1 hard failure, 2 soft breaks · exit code 1 (violations found)" in text
    assert "case has no evidence with a superseded version" in text
    assert "\x1b[" not in text


def test_color_is_opt_in() -> None:
    coloured = render_summary(sample_report(), color=True)
    assert "\x1b[1;31mFAIL 1, pass 1" in coloured and coloured.count("\x1b[0m") > 5


def test_violation_shows_rankings_marks_metrics_and_replay() -> None:
    text = render_violation(sample_violation(), retriever="cached-bm25")
    lines = text.splitlines()
    assert lines[0] == "FAIL removal.removed_never_returned · case q03 · retriever cached-bm25"
    # The removed chunk that came back is the row that breaks the relation: marked with ">".
    first_rank = next(line for line in lines if line.startswith(">   1 "))
    # The removed gold chunk is marked G- on both sides: it was removed and still came back.
    assert first_rank.count("G- acme-handbook-1#1") == 2 and first_rank.endswith("same")
    assert any(line.strip().startswith("3 ") and line.endswith("new") for line in lines)
    assert "  P@3             0.667 -> 0.333  (changed)" in lines
    assert "  Unauthorized@3  0.000 -> n/a  (changed)" in lines
    assert "  no longer returned: shared-policy-1#2" in lines
    assert lines[-1] == "  replay  ragmorph replay replays/cached-bm25-q03-removal.json"


def test_violation_without_optional_parts_still_renders() -> None:
    violation = sample_violation()
    for key in ("evidence", "replay"):
        violation.pop(key)
    violation["perturbation"] = {
        "type": "InjectDistractors", "repr": "InjectDistractors(...)",
        "fields": {"chunks": [{"__chunk__": {"id": "distractor-1", "text": "x"}}]},
    }
    text = render_violation(violation)
    assert "+  distractor-1" in text and "G " not in text.split("marks:")[0].split("#")[-1]
    assert "no replay file saved" in text
    assert "replay 'dir with space/x.json'" in render_violation({**sample_violation(), "replay": "dir with space/x.json"})


def test_control_characters_cannot_reach_the_terminal() -> None:
    violation = sample_violation()
    violation["query"] = "evil \x1b[2J\x1b]0;title\x07 query"
    violation["base"]["ranking"][0]["text"] = "clear \x1b[2J screen"
    violation["base"]["ranking"][0]["id"] = "id\x1b[31m"
    text = render_violation(violation)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil ?[2J?]0;title? query" in text


@settings(max_examples=25, deadline=None)
@given(report=reports())
def test_any_report_renders_without_escape_sequences(report: dict) -> None:
    text = render_report(report)
    assert "\x1b" not in text and "\x00" not in text
    # Violations are triaged into one group per retriever x relation, each headed by a FAIL line.
    groups = {(r["retriever"], r["relation"]) for r in report["results"] if r["status"] == "fail"}
    assert text.count("FAIL ") >= len(groups)


class FakeClock:
    """A monotonic clock the test advances by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    """A text stream that claims to be a TTY."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_is_silent_off_a_tty() -> None:
    stream, clock = io.StringIO(), FakeClock()
    with ProgressBar(10, stream, clock=clock) as bar:
        clock.now += 60
        bar.update(5)
        bar(10, 10)
    assert stream.getvalue() == ""


def test_progress_bar_waits_for_long_runs_then_draws_and_closes() -> None:
    stream, clock = Terminal(), FakeClock()
    bar = ProgressBar(40, stream, clock=clock, delay=2.0, width=10)
    bar.update(4)
    clock.now += 1.0
    bar.update(4)
    assert stream.getvalue() == "", "a run shorter than the delay stays silent"
    clock.now += 1.5
    bar.update(4)
    assert stream.getvalue() == "\rragmorph [###.......] 12/40 (30%) 2s"
    bar.update(1)
    assert stream.getvalue().count("\r") == 1, "redraws are throttled"
    clock.now += 0.2
    bar(40)
    bar.close()
    assert stream.getvalue().endswith("\rragmorph [##########] 40/40 (100%) 3s\n")
    bar.close()
    assert stream.getvalue().count("\n") == 1


def test_progress_bar_short_tty_run_prints_nothing() -> None:
    stream, clock = Terminal(), FakeClock()
    with ProgressBar(3, stream, clock=clock) as bar:
        for _ in range(3):
            clock.now += 0.1
            bar.update()
    assert stream.getvalue() == ""


def test_a_rejected_response_shows_the_breach_not_an_empty_table_or_fake_metric_changes() -> None:
    violation = sample_violation()
    violation["relation"] = "contract.valid_response"
    violation["base"]["ranking"], violation["base"]["metrics"] = [], {}
    violation["base"]["invalid"] = "expected distinct ids, got id='a' at ranks 1 and 2"
    violation["follow_up"]["ranking"] = []
    violation["minimal_corpus"] = violation["minimal_corpus"][:1]
    text = render_violation(violation)
    assert "  base call     rejected by the response check: expected distinct ids" in text
    assert "#  base" not in text and "marks:" not in text
    assert "n/a ->" not in text and "(changed)" not in text
    assert "minimal corpus  1 chunk (" in text


def test_the_terminal_opens_with_the_triage_worst_group_first() -> None:
    text = render_report(triage_report(), max_violations=2)
    triaged = render_triage(triage_report()).splitlines()
    assert triaged[0] == "4 violation groups, worst first (group = retriever x relation):"
    # Tenant leak first (its smallest case, 1 chunk, represents both), then the other hard violations; the leak
    # that could not be minimised comes last.
    assert triaged[1] == ("  1. tenant leak · cached-bm25 · tenancy.no_cross_tenant · 2 cases (q03, q07) · "
                          "smallest: q07, 1 chunk")
    assert triaged[2].startswith("  2. hard violation · cached-bm25 · removal.removed_never_returned · 1 case (q03)")
    assert triaged[3].startswith("  3. hard violation · cached-bm25 · repeat.identical · 1 case (q07)")
    assert triaged[4].endswith("· bm25 · tenancy.no_cross_tenant · 1 case (q03) · smallest: q03, 40 chunks (not minimised)")
    assert "2 soft breaks (rates, never failures):" in triaged
    assert "  cached-bm25 · removal.recall_non_increasing held in 48 of 50 perturbations (96%)" in triaged
    assert any(line.startswith("    e.g. (case q03) RemoveChunks(") for line in triaged)
    shown = [line for line in text.splitlines() if line.startswith("FAIL ")]
    assert shown == ["FAIL tenancy.no_cross_tenant · case q07 · retriever cached-bm25",
                     "FAIL removal.removed_never_returned · case q03 · retriever cached-bm25"]
    assert "[1] tenant leak; also fails on 1 case: q03" in text
    assert text.rstrip().endswith("... and 2 more groups (every violation is in the JSON and HTML reports)")


def test_a_contract_relation_judged_in_two_families_is_named_with_its_family() -> None:
    report = sample_report()
    for strategy in ("reorder", "removal"):
        report["results"].append({**report["results"][0], "strategy": strategy, "relation": "contract.valid_response"})
    names = [line.split("  ")[0] for line in render_summary(report).splitlines() if line.startswith("contract.")]
    assert names == ["contract.valid_response (in reorder)", "contract.valid_response (in removal)"]
