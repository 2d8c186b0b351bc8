"""Single-file HTML report: self-contained, escaped, with the matrix, ranking diffs and hand-drawn SVG plots."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings

from ragmorph.reporting import render_html, write_html
from support.report_samples import sample_report, triage_report
from support.report_strategies import reports

VOID = {"meta", "col", "br", "img", "input", "link", "hr", "circle", "line", "polyline"}


class TagChecker(HTMLParser):
    """Collects tags and checks that every non-void element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check(html: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(html)
    checker.close()
    assert checker.stack == [], f"unclosed tags: {checker.stack}"
    return checker


def test_html_is_self_contained() -> None:
    html = render_html(sample_report())
    checker = check(html)
    tags = {tag for tag, _ in checker.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert "@import" not in html and "url(" not in html
    assert any(a.get("http-equiv") == "Content-Security-Policy" for tag, a in checker.tags if tag == "meta")


def test_user_text_is_escaped() -> None:
    html = render_html(sample_report())
    assert "<script>" not in html
    assert "Acme &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;" in html
    assert 'Acme <script>alert("x")</script> & "quotes"' in "".join(check(html).text)


def test_matrix_violation_diff_and_plots() -> None:
    checker = check(render_html(sample_report()))
    cells = [(a.get("class"), a.get("title")) for tag, a in checker.tags if tag == "td" and a.get("class")]
    classes = [c for c, _ in cells]
    assert classes.count("fail") == 1 and classes.count("error") == 1 and classes.count("soft-broken") == 2
    assert ("fail", "failing cases: q03") in cells
    text = "".join(checker.text)
    assert "Violations: 1 violation in 1 group" in text and "ragmorph replay replays/cached-bm25-q03-removal.json" in text
    assert "How many days of parental leave does Acme grant?" in text
    gold = [a for tag, a in checker.tags if tag == "td" and "is-gold" in (a.get("class") or "")]
    assert len(gold) == 4, "both gold chunks are marked in base and follow-up"
    titles = [a.get("aria-label") for tag, a in checker.tags if tag == "svg" and a.get("class") == "chart"]
    assert titles == ["P@k against k", "R@k against k", "GroupR@k against k"]
    lines = [a for tag, a in checker.tags if tag == "polyline"]
    assert len(lines) == 6 and all(len(a["points"].split()) == 4 for a in lines)


def test_missing_metric_values_break_the_line() -> None:
    report = sample_report()
    report["metrics"]["bm25"]["P@5"]["macro"] = None
    checker = check(render_html(report))
    first_chart_lines = [a["points"] for tag, a in checker.tags if tag == "polyline"][:3]
    assert [len(p.split()) for p in first_chart_lines] == [2, 1, 4]


def test_report_without_violations_or_metrics() -> None:
    report = sample_report()
    report["results"] = [r for r in report["results"] if r["status"] != "fail"]
    report["metrics"] = {}
    text = "".join(check(render_html(report)).text)
    assert "No violations." in text and "No metrics in this report." in text


def test_unencodable_text_is_replaced(tmp_path) -> None:
    report = sample_report()
    report["results"][11]["violation"]["query"] = "lone \ud800 nul \x00 end"
    html = write_html(report, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "lone \ufffd nul \ufffd end" in html


def test_html_is_golden(tmp_path, golden) -> None:
    golden("report.html", write_html(sample_report(), tmp_path / "report.html").read_text(encoding="utf-8"))


@settings(max_examples=20, deadline=None)
@given(report=reports())
def test_any_report_gives_balanced_escaped_html(report: dict) -> None:
    html = render_html(report)
    checker = check(html)
    assert not any(tag == "script" for tag, _ in checker.tags)
    html.encode("utf-8")


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def _triage_structure(checker: TagChecker) -> tuple[list[str], dict[str, str], list[str]]:
    """(group section ids in page order, failing matrix cell link targets -> cell text, ids of groups with a
    highlighted row)."""
    groups, links, highlighted = [], {}, []
    current = None
    in_fail_cell = False
    for tag, attributes in checker.tags:
        classes = (attributes.get("class") or "").split()
        if tag == "section" and "group" in classes:
            current = attributes["id"]
            groups.append(current)
        if tag == "td":
            in_fail_cell = "fail" in classes
        if tag == "a" and in_fail_cell and attributes.get("href", "").startswith("#"):
            links[attributes["href"][1:]] = attributes["href"]
        if tag == "tr" and "culprit" in classes and current is not None and current not in highlighted:
            highlighted.append(current)
    return groups, links, highlighted


def test_violations_are_grouped_worst_first_linked_from_the_matrix_and_highlighted() -> None:
    checker = check(render_html(triage_report()))
    groups, links, highlighted = _triage_structure(checker)
    assert groups == [
        "g-cached-bm25--tenancy_no_cross_tenant",
        "g-cached-bm25--removal_removed_never_returned",
        "g-cached-bm25--repeat_identical",
        "g-bm25--tenancy_no_cross_tenant",
    ], "tenant leaks first, non-minimised last"
    assert set(links) == set(groups), "every failing matrix cell links to its group, every group is linked"
    assert highlighted == groups, "each representative highlights the row that breaks the relation"
    text = "".join(checker.text)
    assert "Violations: 5 violations in 4 groups" in text and "not minimised" in text
    assert "1 other case" in text, "the leak group lists its second case under the representative"
    assert "Soft breaks" in text and "RemoveChunks(k=3, ids=('acme-faq-1#1',), group=0)" in text


def _chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); the HTML checks above still ran")
    return browser


def _headless(browser: str, tmp_path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *arguments,
    ]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)


@pytest.mark.browser
@pytest.mark.slow
def test_headless_chromium_renders_the_triaged_report(tmp_path) -> None:
    browser = _chromium()
    page = write_html(triage_report(), tmp_path / "report.html")
    shot = tmp_path / "report.png"
    _headless(browser, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    data = shot.read_bytes()
    assert png_size(data) == (1280, 2000)
    # A blank page compresses to a few kB; the matrix, diff tables and charts make a far larger image.
    assert len(data) > 60_000, f"screenshot only {len(data)} bytes: the page probably failed to render"
    # The DOM as Chromium built it: the groups, their links and highlighted rows survive a real parser.
    dom = _headless(browser, tmp_path, "--dump-dom", page.as_uri()).stdout
    groups, links, highlighted = _triage_structure(check(dom.replace("<html", "<!DOCTYPE html><html", 1)))
    assert groups[0] == "g-cached-bm25--tenancy_no_cross_tenant" and len(groups) == 4
    assert set(links) == set(groups) and highlighted == groups
