"""The progress bar's plain lines, pace, ETA and speed hint (issue 32 item 2), on a clock the test moves."""

from __future__ import annotations

import io
import time

from ragmorph.reporting import ProgressBar
from ragmorph.runner import check
from ragmorph.worlds import generate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


HINT = "--profile smoke runs a budget of minutes"


def test_the_log_line_states_units_calls_pace_and_an_eta_from_the_measured_seconds_per_call() -> None:
    clock = Clock()
    bar = ProgressBar(0, io.StringIO(), clock=clock)
    assert bar.log_line(5.0) == "ragmorph: 0/? units, 0 retriever calls, 5s elapsed, no unit finished yet"
    bar.record_calls(40, 4)
    bar(4, 20)
    # 40 calls in 20 s: 0.5 s a call; 16 units left at 10 calls each: 160 calls, 80 s.
    assert bar.eta(20.0) == 80.0
    assert bar.log_line(20.0) == "ragmorph: 4/20 units, 40 retriever calls (0.500 s/call), 20s elapsed, about 1m20s left"


def test_the_hint_comes_once_when_calls_are_slow_and_the_run_long() -> None:
    clock, stream = Clock(), io.StringIO()
    bar = ProgressBar(0, stream, clock=clock, hint=HINT)
    bar.record_calls(40, 4)
    clock.now += 20
    bar(4, 200)
    assert stream.getvalue() == (
        "ragmorph: retriever calls take 0.50 s each and this run needs about 1,960 more (about 16m20s): "
        f"{HINT}\n"
    )
    bar.record_calls(10, 1)
    clock.now += 5
    bar(5, 200)
    assert stream.getvalue().count(HINT) == 1


def test_no_hint_for_fast_calls_a_short_run_or_too_small_a_sample() -> None:
    for calls, units, seconds, total in [(4000, 4, 20, 400), (40, 4, 20, 5), (9, 1, 20, 400)]:
        clock, stream = Clock(), io.StringIO()
        bar = ProgressBar(0, stream, clock=clock, hint=HINT)
        bar.record_calls(calls, units)
        clock.now += seconds
        bar(units, total)
        assert stream.getvalue() == "", (calls, units, seconds, total)


def test_on_a_terminal_the_hint_ends_the_bar_line_first() -> None:
    clock, stream = Clock(), Terminal()
    bar = ProgressBar(0, stream, clock=clock, hint=HINT, width=4)
    clock.now += 10
    bar(1, 100)
    bar.record_calls(40, 4)
    clock.now += 10
    bar(4, 100)
    assert stream.getvalue().startswith("\rragmorph [....] 1/100 (1%) 10s\r\nragmorph: retriever calls take 0.50 s each")


def test_log_every_writes_lines_off_a_terminal_and_close_stops_them() -> None:
    stream = io.StringIO()
    bar = ProgressBar(10, stream, log_every=0.05)
    time.sleep(0.3)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("ragmorph: 0/10 units, 0 retriever calls") for line in lines)
    time.sleep(0.15)
    assert stream.getvalue().splitlines() == lines


def test_log_every_draws_nothing_extra_on_a_terminal() -> None:
    stream = Terminal()
    bar = ProgressBar(10, stream, log_every=0.05)
    time.sleep(0.2)
    bar.close()
    assert stream.getvalue() == ""


def test_check_reports_every_call_the_report_counts_before_the_units_progress() -> None:
    world = generate(3, chunks=16, cases=2)
    events: list[tuple[str, int, int]] = []

    class Recorder:
        def record_calls(self, calls: int, units: int) -> None:
            events.append(("calls", calls, units))

        def __call__(self, done: int, total: int, unit: object) -> None:
            events.append(("unit", done, total))

    report = check("ragmorph.adapters:BM25Retriever", world.corpus, world.cases, strategies=["cutoff", "tenancy"],
                   max_examples=3, progress=Recorder())
    assert sum(calls for kind, calls, _ in events if kind == "calls") == report.to_dict()["summary"]["retriever_calls"]
    # One batch per case, its calls first: calls, unit, unit, calls, unit, unit.
    assert [kind for kind, *_ in events] == ["calls", "unit", "unit", "calls", "unit", "unit"]
    assert [units for kind, _, units in events if kind == "calls"] == [2, 2]
