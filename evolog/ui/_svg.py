"""Plots drawn on the server as SVG: no script, no CDN, and the numbers stay in the page.

Every label is escaped; coordinates are numbers formatted here, so a recorded text can never
reach an attribute unescaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

#: A palette that stays apart on white and for the common colour blindnesses (Okabe-Ito).
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000")

Series = tuple[str, Sequence[tuple[float, float]]]


def _f(x: float) -> str:
    return f"{x:.1f}"


def line_plot(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 640,
    height: int = 240,
) -> str:
    """Lines of (x, y) points, one per series, with a legend; an empty plot says so."""
    points = [p for _, pts in series for p in pts]
    head = (
        f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>"
    )
    if not points:
        return head + f'<text x="10" y="20">{escape(title)}: nothing to plot</text></svg>'
    left, right, top, bottom = 48, 150, 22, 30
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y0, y1 = min(0.0, *(p[1] for p in points)), max(p[1] for p in points)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    w, h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return top + h - (y - y0) / (y1 - y0) * h

    out = [head, f'<text x="{left}" y="14" class="t">{escape(title)}</text>']
    out.append(
        f'<line x1="{left}" y1="{_f(sy(y0))}" x2="{left + w}" y2="{_f(sy(y0))}" class="ax"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" class="ax"/>'
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{y1:.3g}</text>'
        f'<text x="{left - 4}" y="{_f(sy(y0))}" text-anchor="end">{y0:.3g}</text>'
        f'<text x="{left}" y="{height - 8}">{x0:.6g}</text>'
        f'<text x="{left + w}" y="{height - 8}" text-anchor="end">{x1:.6g}</text>'
        f'<text x="{left + w / 2:.0f}" y="{height - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text x="4" y="{top + h / 2:.0f}" class="yl">{escape(y_label)}</text>'
    )
    for n, (name, pts) in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        path = " ".join(f"{_f(sx(x))},{_f(sy(y))}" for x, y in pts)
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}">'
            f"<title>{escape(name)}</title></polyline>"
        )
        if len(pts) == 1:
            x, y = pts[0]
            out.append(f'<circle cx="{_f(sx(x))}" cy="{_f(sy(y))}" r="3" fill="{colour}"/>')
        ly = top + 12 * n + 6
        out.append(
            f'<rect x="{left + w + 8}" y="{ly - 7}" width="10" height="3" fill="{colour}"/>'
            f'<text x="{left + w + 22}" y="{ly}">{escape(name[:20])}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _heat(p: float) -> str:
    """Red (0) through pale yellow to green (1)."""
    p = min(1.0, max(0.0, p))
    if p < 0.5:
        r, g, b = 215, int(48 + (p / 0.5) * (230 - 48)), 39
    else:
        r, g, b = int(215 - ((p - 0.5) / 0.5) * (215 - 26)), int(230 - ((p - 0.5) / 0.5) * 78), 80
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_map(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: dict[tuple[str, str], tuple[float, float]],
    *,
    title: str,
) -> str:
    """A grid of rows by cols; each cell (p, weight) is coloured by p and labelled by weight."""
    cw, ch, left, top = 64, 22, 180, 110
    width, height = left + cw * max(1, len(cols)) + 10, top + ch * max(1, len(rows)) + 10
    out = [
        f'<svg class="plot heat" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<text x="4" y="14" class="t">{escape(title)}</text>',
    ]
    if not rows or not cols:
        out.append('<text x="4" y="40">no edges as of this point</text></svg>')
        return "".join(out)
    for j, col in enumerate(cols):
        x = left + j * cw + cw / 2
        out.append(
            f'<text transform="translate({x:.0f},{top - 6}) rotate(-45)">{escape(col[:18])}'
            f"<title>{escape(col)}</title></text>"
        )
    for i, row in enumerate(rows):
        y = top + i * ch
        out.append(
            f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(row[:26])}'
            f"<title>{escape(row)}</title></text>"
        )
        for j, col in enumerate(cols):
            cell = cells.get((row, col))
            if cell is None:
                continue
            p, weight = cell
            x = left + j * cw
            out.append(
                f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{_heat(p)}" '
                f'class="cell" data-key="{escape(row)}" data-gene="{escape(col)}">'
                f"<title>{escape(row)} / {escape(col)}: p={p:.3f}, weight={weight:.3f}</title>"
                f'</rect><text x="{x + cw / 2 - 1:.0f}" y="{y + 15}" text-anchor="middle">'
                f"{p:.2f}</text>"
            )
    out.append("</svg>")
    return "".join(out)


__all__ = ["PALETTE", "heat_map", "line_plot"]
