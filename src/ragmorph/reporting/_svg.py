"""Inline SVG line charts drawn by hand (no plotting library, no script): metric value against cutoff k."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["PALETTE", "legend", "line_chart"]

# Okabe-Ito colours (distinguishable with colour-blindness), each paired with a dash pattern as a second cue.
PALETTE: tuple[tuple[str, str], ...] = (
    ("#0072B2", ""),
    ("#D55E00", "6 3"),
    ("#009E73", "2 3"),
    ("#CC79A7", "8 3 2 3"),
    ("#E69F00", "4 4"),
    ("#56B4E9", "1 2"),
    ("#000000", "10 4"),
)

_WIDTH, _HEIGHT = 340, 230
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 12, 30, 40


def _fmt(number: float) -> str:
    return f"{number:.1f}".rstrip("0").rstrip(".")


def line_chart(title: str, ks: Sequence[int], series: Mapping[str, Sequence[float | None]]) -> str:
    """An SVG chart of one metric family: x = cutoff k (evenly spaced), y = value in [0, 1], a line per series.

    Missing values (None) break the line instead of being drawn as 0.
    """
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    step = plot_w / max(len(ks) - 1, 1)

    def x(i: int) -> float:
        return _LEFT + (i * step if len(ks) > 1 else plot_w / 2)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - max(0.0, min(1.0, value)))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{escape(title)} against k">',
        f"<title>{escape(title)} against k</title>",
        f'<text x="{_LEFT}" y="18" class="chart-title">{escape(title)}</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        ty = _fmt(y(tick))
        parts.append(f'<line x1="{_LEFT}" y1="{ty}" x2="{_WIDTH - _RIGHT}" y2="{ty}" class="grid"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{_fmt(y(tick) + 4)}" text-anchor="end" class="tick">{tick:g}</text>')
    for i, k in enumerate(ks):
        parts.append(
            f'<text x="{_fmt(x(i))}" y="{_HEIGHT - _BOTTOM + 16}" text-anchor="middle" class="tick">{k}</text>'
        )
    parts.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_HEIGHT - 6}" text-anchor="middle" class="axis">k</text>')
    parts.append(
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_WIDTH - _RIGHT}" y2="{_TOP + plot_h}" class="axis-line"/>'
    )
    for number, (name, values) in enumerate(series.items()):
        colour, dash = PALETTE[number % len(PALETTE)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        segment: list[str] = []
        segments: list[list[str]] = []
        for i, value in enumerate(values):
            if value is None:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{_fmt(x(i))},{_fmt(y(value))}")
        if segment:
            segments.append(segment)
        for points in segments:
            parts.append(
                f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>'
            )
        for i, value in enumerate(values):
            if value is not None:
                label = escape(f"{name}: {title.replace('@k', f'@{ks[i]}')} = {value:.3f}")
                parts.append(
                    f'<circle cx="{_fmt(x(i))}" cy="{_fmt(y(value))}" r="3.5" fill="{colour}"><title>{label}</title></circle>'
                )
    parts.append("</svg>")
    return "".join(parts)


def legend(names: Sequence[str]) -> str:
    """An HTML legend matching the colours and dash patterns `line_chart` gives series in this order."""
    items = []
    for number, name in enumerate(names):
        colour, dash = PALETTE[number % len(PALETTE)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        swatch = (
            f'<svg width="28" height="10" aria-hidden="true"><line x1="0" y1="5" x2="28" y2="5" stroke="{colour}" '
            f'stroke-width="2.5"{dash_attr}/></svg>'
        )
        items.append(f'<li>{swatch} {escape(name)}</li>')
    return f'<ul class="legend">{"".join(items)}</ul>'
