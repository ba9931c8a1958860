"""Chart layout: styles, axes, clipping and a canvas that places lines, markers and labels.

Pixels for SVG and data coordinates for pgfplots come from the same layout, so the two
outputs show the same chart. Labels are measured with DejaVu Sans advance widths (no
font is loaded) and each goes where it covers the fewest other labels, markers and lines.

>>> si(989.4e12), si(0.25), quantity(3.35e12, "B/s")
('989 T', '0.25', '3.35 TB/s')
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple, SupportsFloat

from markupsafe import Markup, escape

from symroof.errors import SymroofError
from symroof.present.escape import latex_escape
from symroof.present.numbers import PREFIXES

__all__ = ["Style", "Palette", "PALETTE", "Canvas", "si", "quantity", "nth",
           "DECADE", "FAR", "CENTRE_SPOT", "number", "AL_SPOT", "AR_SPOT", "BL_SPOT",
           "BR_SPOT", "L_SPOT", "R_SPOT"]


def number(value: object, where: str, positive: bool) -> float:
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, SupportsFloat):
        raise SymroofError(f"{where}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SymroofError(f"{where}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise SymroofError(f"{where}: must be finite, got {value!r}")
    if positive and number <= 0:
        raise SymroofError(f"{where}: must be positive (it sits on a log axis), got {value!r}")
    return number


@dataclass(frozen=True)
class Style:
    """A line's colour (#rrggbb), dash pattern in pixels (empty: solid) and width in pixels."""
    color: str
    dash: tuple[float, ...] = ()
    width: float = 2.0

    def __post_init__(self) -> None:
        if not re.fullmatch(r"#[0-9a-fA-F]{6}", str(self.color)):   # pgfplots reads it as HTML
            raise SymroofError(f"Style: color must be '#rrggbb', got {self.color!r}")
        for value in (*self.dash, self.width):
            number(value, f"Style {self.color}: dash and width", True)


@dataclass(frozen=True)
class Palette:
    """Styles by role, cycled when a chart has more items. Neighbours differ in dash pattern
    as well as hue, so a greyscale print still tells every line apart."""
    roofs: tuple[Style, ...] = (Style("#1f4e79", (), 2.4), Style("#2e7d32", (9, 3), 2.4),
                                Style("#00838f", (3, 2), 2.4), Style("#5d4037", (9, 3, 2, 3), 2.4))
    ceilings: tuple[Style, ...] = (Style("#c0392b", (6, 3), 1.6), Style("#d35400", (2, 2), 1.6),
                                   Style("#7b1fa2", (8, 3, 2, 3), 1.6),
                                   Style("#616161", (1, 2), 1.6), Style("#9e7c0c", (12, 4), 1.6))
    series: tuple[Style, ...] = (Style("#1f4e79"), Style("#c0392b", (7, 3)),
                                 Style("#2e7d32", (2, 2)), Style("#7b1fa2", (8, 3, 2, 3)))
    bound: str = "#111111"        # predicted points: filled dots
    measured: str = "#7b1fa2"     # measured points: hollow diamonds
    printed: str = "#b35900"      # a document's printed figure beside the derived one: hollow squares
    ink: str = "#222222"
    grid: str = "#e6e6e6"

    def __post_init__(self) -> None:
        for role in ("roofs", "ceilings", "series"):
            if not getattr(self, role) or not all(isinstance(s, Style) for s in getattr(self, role)):
                raise SymroofError(f"Palette: {role} must be a non-empty tuple of Style")
        for role in ("bound", "measured", "printed", "ink", "grid"):
            Style(getattr(self, role))     # checks the colour


PALETTE = Palette()

_PREFIXES = ("", *(p for p, _ in reversed(PREFIXES)))   # "", k, M, ... Y: the one table
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# advance widths (hundredths of an em) of DejaVu Sans, the widest font in _FONT, for ASCII
# 32..126: labels are measured without a font; other characters count 0.7 em
_ADVANCE = bytes((32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34,   # space to /
                  64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34, 84, 84, 84, 53,   # 0 to ?
                  100, 68, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86, 75, 79,  # @ to O
                  60, 79, 69, 63, 61, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50,   # P to _
                  50, 61, 63, 55, 63, 62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61,   # ` to o
                  63, 63, 41, 52, 39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84))      # p to ~
DECADE = 10.0     # default roofline ranges leave a decade around every ridge and point
_MARGINS = (72, 20, 36, 50)   # left, right, top, bottom: room for ticks, axis labels, title
_PT_PER_CM = 28.45274
def _si_parts(value: Decimal) -> tuple[str, str]:
    """Digits and SI prefix of an exact decimal; plain digits below 1000 (0.25, 100)."""
    group = min(max(value.copy_abs().adjusted(), 0) // 3, len(_PREFIXES) - 1) if value else 0
    return format(value.scaleb(-3 * group).normalize(), "f"), _PREFIXES[group]


def si(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures with an SI prefix: 989.4e12 -> '989 T'."""
    number, prefix = _si_parts(Decimal(f"{value:.{digits - 1}e}"))
    return f"{number} {prefix}" if prefix else number


def quantity(value: float, unit: str, digits: int = 3) -> str:
    """``value`` with an SI-prefixed unit: (3.35e12, 'B/s') -> '3.35 TB/s'."""
    number, prefix = _si_parts(Decimal(f"{value:.{digits - 1}e}"))
    return f"{number} {prefix}{unit}"


# a power written as in the documents, 8192^3 or 10^{-3}: the base's word and its exponent
_POWER = re.compile(r"([A-Za-z0-9.,]+)\^(\{[^{}]*\}|[A-Za-z0-9.+\-]+)")


def typeset(text: str, tex: bool) -> str:
    r"""``text`` for the chart with powers typeset: SVG markup with a superscript
    ``<tspan>``, or LaTeX with the power in math. Everything else is escaped.

    >>> str(typeset("GEMM 8192^3 & more", False))
    'GEMM 8192<tspan baseline-shift="super" font-size="75%">3</tspan> &amp; more'
    >>> print(typeset("GEMM 8192^3 & more", True))
    GEMM $8192^{3}$ \& more
    """
    out: list[str] = []
    at = 0
    for m in _POWER.finditer(text):
        base, power = m.group(1), m.group(2).strip("{}")
        plain = text[at:m.start()]
        if tex:
            out.append(latex_escape(plain) + f"${latex_escape(base)}^{{{latex_escape(power)}}}$")
        else:
            out.append(escape(plain) + escape(base) + Markup(
                '<tspan baseline-shift="super" font-size="75%">') + escape(power)
                + Markup("</tspan>"))
        at = m.end()
    rest = text[at:]
    return "".join(out) + latex_escape(rest) if tex else Markup("").join(out) + escape(rest)


def _px(value: float) -> str:
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def _num(value: float) -> str:
    """A pgfplots coordinate: 7 significant figures, exponent without '+' or zero padding."""
    mantissa, exponent = f"{value:.6e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


@dataclass(frozen=True)
class _Axis:
    lo: float
    hi: float
    log: bool
    start: float            # pixel of lo
    end: float              # pixel of hi

    def _t(self, value: float) -> float:
        return math.log10(value) if self.log else value

    def unit(self, value: float) -> float:
        return (self._t(value) - self._t(self.lo)) / (self._t(self.hi) - self._t(self.lo))

    def value(self, unit: float) -> float:
        t = self._t(self.lo) + unit * (self._t(self.hi) - self._t(self.lo))
        return 10.0 ** t if self.log else t

    def pixel(self, value: float) -> float:
        return self.start + self.unit(value) * (self.end - self.start)

    def ticks(self) -> list[Decimal]:
        """Decades (1, 2, 5 or every mantissa on a short span) on a log axis; 1-2-5 steps
        on a linear one. Exact decimals, so labels never show float noise."""
        if not self.log:
            raw = (self.hi - self.lo) / 5
            e = math.floor(math.log10(raw))
            m = next(m for m in (1, 2, 5, 10) if m * 10.0 ** e >= raw * (1 - 1e-9))
            step = Decimal(m).scaleb(e)
            return [step * k for k in range(math.ceil(self.lo / float(step) - 1e-9),
                                            math.floor(self.hi / float(step) + 1e-9) + 1)]
        first, last = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
        ticks: list[Decimal] = []
        for mantissas in ((1,), (1, 2, 5), tuple(range(1, 10))):
            ticks = [Decimal(m).scaleb(e) for e in range(first, last + 1) for m in mantissas
                     if self.lo * (1 - 1e-9) <= float(Decimal(m).scaleb(e)) <= self.hi * (1 + 1e-9)]
            if len(ticks) >= 3:
                break
        return ticks[::math.ceil(len(ticks) / 9)]     # at most nine labels fit along an axis


def _clip(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float] | None:
    """Liang-Barsky: the parameter interval of segment a-b inside the unit square."""
    t0, t1 = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0]), (dx, 1 - a[0]), (-dy, a[1]), (dy, 1 - a[1])):
        if p == 0:
            if q < -1e-12:
                return None
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
    return (t0, t1) if t1 - t0 > 1e-12 else None


_Box = tuple[float, float, float, float]       # x0, y0, x1, y1 in pixels


def _overlap(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _holds(box: _Box, p: tuple[float, float]) -> bool:
    return box[0] <= p[0] <= box[2] and box[1] <= p[1] <= box[3]


class _Spot(NamedTuple):
    """Where a label's baseline starts against its anchor point, in pixels, and which end
    of the text sits there (SVG text-anchor)."""
    dx: float
    dy: float
    anchor: str


BR_SPOT, AR_SPOT, BL_SPOT, AL_SPOT = (_Spot(6, 15, "start"), _Spot(6, -7, "start"), _Spot(-6, 15, "end"),
                      _Spot(-6, -7, "end"))
R_SPOT, L_SPOT = _Spot(8, 4, "start"), _Spot(-8, 4, "end")
CENTRE_SPOT = _Spot(0, 4, "middle")   # a region's name, centred on its point
FAR = (_Spot(6, 27, "start"), _Spot(-6, -19, "end"), _Spot(6, -19, "start"), _Spot(-6, 27, "end"))
# where no usual spot is clear: a ring further out, one text line (12 px) at a time, still
# beside the point and nearer to it than to any other marker the layout left clear
_FURTHER = tuple(_Spot(sx * dx, dy, a) for k in (1, 2, 3)
                 for sx, dx, dy, a in ((1, 6, 27 + 12 * k, "start"), (-1, 6, -19 - 12 * k, "end"),
                                       (1, 6, -19 - 12 * k, "start"), (-1, 6, 27 + 12 * k, "end"),
                                       (1, 8 + 10 * k, 4, "start"), (-1, 8 + 10 * k, 4, "end")))
_BASE = {"start": "base west", "end": "base east", "middle": "base"}   # TikZ anchors
_SHAPES = {"dot": "mark=*, mark size=1.9pt, mark options={{fill={c}, draw={c}}}",
           "ring": "mark=*, mark size=1.7pt, "
                   "mark options={{fill=white, draw={c}, line width=0.7pt}}",
           "diamond": "mark=diamond*, mark size=2.8pt, "
                      "mark options={{fill=white, draw={c}, line width=0.8pt}}",
           "square": "mark=square*, mark size=2.2pt, "
                     "mark options={{fill=white, draw={c}, line width=0.8pt}}"}


def nth(styles: tuple[Style, ...], i: int) -> Style:
    return styles[i % len(styles)]


def _width(text: str, size: float) -> float:
    return sum(_ADVANCE[ord(c) - 32] if 32 <= ord(c) < 127 else 70 for c in text) * size / 100


def _text_box(x: float, y: float, anchor: str, text: str, size: int) -> _Box:
    width = _width(text, size)
    x0 = {"start": x, "end": x - width}.get(anchor, x - width / 2)
    return (x0, y - 0.8 * size, x0 + width, y + 0.22 * size)   # ascent, descent


class Canvas:
    """One chart being laid out: pixels for SVG, data coordinates for pgfplots, and the
    boxes already taken so that each new label goes where it covers the least."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float], log: tuple[bool, bool],
                 size: tuple[int, int], tex_width: float, tex: bool, palette: Palette) -> None:
        left, right, top, bottom = _MARGINS
        self.size, self.palette = size, palette
        self.x = _Axis(x[0], x[1], log[0], left, size[0] - right)
        self.y = _Axis(y[0], y[1], log[1], size[1] - bottom, top)
        self.frame: _Box = (left, top, size[0] - right, size[1] - bottom)
        self.tex = tex
        self.esc: Callable[[str], str] = latex_escape if tex else str   # SVG autoescapes
        self.pt = tex_width * _PT_PER_CM / (self.frame[2] - self.frame[0])   # TeX pt per pixel
        self.lines: list[dict[str, str]] = []
        self.markers: list[dict[str, str]] = []
        self.texts: list[dict[str, str]] = []
        self.legend: list[dict[str, str]] = []
        self.legend_rect: dict[str, str] = {}
        self.legend_pos = ""
        self.legend_marks: list[dict[str, str]] = []
        self.boxes: list[_Box] = []                    # markers and labels placed so far
        self.dots: list[tuple[float, float]] = []      # samples along drawn lines
        self.turned: list[tuple[float, float]] = []    # samples over turned (roof) labels
        self.colors: dict[str, str] = {}               # TeX colour name -> hex, in order of use
        self.ink = self.color(palette.ink)

    def color(self, hex_: str) -> str:
        self.colors["sr" + hex_.lstrip("#").lower()] = hex_.lstrip("#").upper()
        return "sr" + hex_.lstrip("#").lower()

    def pixel(self, x: float, y: float) -> tuple[float, float]:
        return self.x.pixel(x), self.y.pixel(y)

    def inside(self, x: float, y: float) -> bool:
        return all(-1e-9 <= a.unit(v) <= 1 + 1e-9 for a, v in ((self.x, x), (self.y, y)))

    def _point(self, u: tuple[float, float]) -> tuple[float, float]:
        return self.x.value(u[0]), self.y.value(u[1])

    def line(self, cls: str, points: Sequence[tuple[float, float]], style: Style,
             legend: str = "") -> list[list[tuple[float, float]]]:
        """A polyline clipped to the plot; returns its visible pieces in pixels. Ends that
        need no clipping keep the caller's numbers, so pgfplots gets the engine's values."""
        units = [(self.x.unit(x), self.y.unit(y)) for x, y in points]
        pieces: list[list[tuple[float, float]]] = []
        joined = False
        for i, (a, b) in enumerate(zip(units, units[1:])):
            span = None if a == b else _clip(a, b)
            if span is None:
                joined = False
                continue
            ends = [points[i + j] if t == j else self._point((a[0] + t * (b[0] - a[0]),
                                                              a[1] + t * (b[1] - a[1])))
                    for j, t in enumerate(span)]
            if not (joined and span[0] == 0):
                pieces.append([ends[0]])
            pieces[-1].append(ends[1])
            joined = span[1] == 1
        dash = style.dash * (2 if len(style.dash) % 2 else 1)   # SVG repeats an odd list
        tex_dash = " ".join(f"on {a * self.pt:.2f}pt off {b * self.pt:.2f}pt"
                            for a, b in zip(dash[::2], dash[1::2]))
        drawn = []
        for n, piece in enumerate(pieces):
            pix = [self.pixel(*p) for p in piece]
            for (x0, y0), (x1, y1) in zip(pix, pix[1:]):
                steps = max(1, int(math.hypot(x1 - x0, y1 - y0) / 3))
                self.dots += [(x0 + k / steps * (x1 - x0), y0 + k / steps * (y1 - y0))
                              for k in range(steps + 1)]
            self.lines.append(dict(
                cls=cls, px=" ".join(f"{_px(a)},{_px(b)}" for a, b in pix), color=style.color,
                data=" ".join(f"({_num(a)},{_num(b)})" for a, b in piece),
                width=f"{style.width:g}", dash=" ".join(f"{d:g}" for d in style.dash),
                tex=f"draw={self.color(style.color)}, line width={style.width * self.pt:.2f}pt, "
                    f"mark=none, " + (f"dash pattern={tex_dash}" if dash else "solid"),
                legend=typeset(legend, self.tex) if n == 0 else ""))
            drawn.append(pix)
        return drawn

    def marker(self, cls: str, shape: str, x: float, y: float, color: str) -> None:
        px, py = self.pixel(x, y)
        self.boxes.append((px - 4.5, py - 4.5, px + 4.5, py + 4.5))
        self.markers.append(dict(cls=cls, shape=shape, x=_px(px), y=_px(py), color=color,
                                 at=f"({_num(x)},{_num(y)})",
                                 tex=_SHAPES[shape].format(c=self.color(color))))

    def _score(self, box: _Box) -> int:
        left, top, right, bottom = self.frame
        inside = left <= box[0] and box[2] <= right and top <= box[1] and box[3] <= bottom
        return ((0 if inside else 1000) + 10 * sum(_overlap(box, b) for b in self.boxes)
                + 10 * any(_holds(box, d) for d in self.turned)
                + sum(_holds(box, d) for d in self.dots))

    def label(self, cls: str, text: str, spots: Sequence[tuple[float, float, _Spot]],
              size: int = 11, optional: bool = False) -> None:
        """``text`` beside one of the data points, on the side given with it: the first of
        the places that cover the fewest labels, markers and lines. An optional label that
        would cover anything (a label, a marker, a drawn line) or leave the plot is left out."""
        def box(c: tuple[float, float, _Spot]) -> _Box:
            px, py = self.pixel(c[0], c[1])
            return _text_box(px + c[2].dx, py + c[2].dy, c[2].anchor, text, size)
        x, y, spot = min(spots, key=lambda c: self._score(box(c)))
        if optional and self._score(box((x, y, spot))) > 0:  # an extra never crosses a line
            return
        if self._score(box((x, y, spot))) >= 10:     # covers a label or a marker: look further
            further = [(c[0], c[1], f) for c in spots[:1] for f in _FURTHER]
            x, y, spot = min([(x, y, spot), *further], key=lambda c: self._score(box(c)))
        self.boxes.append(box((x, y, spot)))
        px, py = self.pixel(x, y)
        self._text(cls, text, px + spot.dx, py + spot.dy, spot.anchor, size)

    def along(self, cls: str, text: str, piece: list[tuple[float, float]], size: int = 11) -> None:
        """``text`` on the upper side of a straight line, turned to its slope, where it
        covers the fewest markers."""
        (x0, y0), (x1, y1) = piece[0], piece[-1]
        length = math.hypot(x1 - x0, y1 - y0)
        if length < 1:
            return
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        lift, width = 4 + 0.35 * size, _width(text, size)

        def midline(s: float) -> list[tuple[float, float]]:
            return [(x0 + (s + t) * ux + lift * uy, y0 + (s + t) * uy - lift * ux)
                    for t in range(0, int(width) + 1, 4)]
        offsets = [14.0] + [f * (length - width) for f in (0.35, 0.7) if length - width > 14]
        s = min(offsets, key=lambda s: sum(_holds(b, p) for b in self.boxes for p in midline(s)))
        self.dots += midline(s)
        # the text's own band (baseline to ascent), so that later labels keep off it
        self.turned += [(x + k * uy, y - k * ux) for x, y in midline(s)
                        for k in (-0.35 * size, 0.0, 0.35 * size)]
        # the baseline starts 4 px above the line, on its normal (uy, -ux)
        angle = math.degrees(math.atan2(uy, ux))
        self._text(cls, text, x0 + s * ux + 4 * uy, y0 + s * uy - 4 * ux, "start", size, angle)

    def _text(self, cls: str, text: str, x: float, y: float, anchor: str, size: int,
              angle: float = 0.0) -> None:
        """A label whose baseline starts (or ends) at pixel (x, y); pgfplots gets the same
        point in data coordinates, so both outputs put every label in the same place."""
        at = (self.x.value((x - self.x.start) / (self.x.end - self.x.start)),
              self.y.value((y - self.y.start) / (self.y.end - self.y.start)))
        font = r"\tiny" if size < 10 else r"\scriptsize"
        self.texts.append(dict(
            cls=cls, text=typeset(text, self.tex), x=_px(x), y=_px(y), anchor=anchor, size=str(size),
            rotate=f"rotate({_px(angle)} {_px(x)} {_px(y)})" if angle else "",
            at=f"(axis cs:{_num(at[0])},{_num(at[1])})",
            tex=f"anchor={_BASE[anchor]}, " + (f"rotate={_px(-angle)}, " if angle else "")
                + f"font={font}, text={self.ink}, inner sep=0pt"))

    def legend_box(self, entries: Sequence[tuple[str, Style]],
                   marks: Sequence[tuple[str, str, str]] = ()) -> None:
        """A legend in the corner (first of equals: NE, NW, SE, SW) that hides least: the
        lines ``entries`` (drawn with their ``line`` call) and then ``marks``, each a
        marker's (text, shape, colour), so that a reader tells printed from derived."""
        if not entries and not marks:
            return
        row, (left, top, right, bottom) = 16, self.frame
        texts = [t for t, _ in entries] + [t for t, _, _ in marks]
        w, h = 46 + max(_width(t, 11) for t in texts), 8 + row * len(texts)
        corners = {"north east": (right - 8 - w, top + 8), "north west": (left + 8, top + 8),
                   "south east": (right - 8 - w, bottom - 8 - h),
                   "south west": (left + 8, bottom - 8 - h)}
        self.legend_pos = min(corners, key=lambda c: self._score(
            (corners[c][0], corners[c][1], corners[c][0] + w, corners[c][1] + h)))
        x, y = corners[self.legend_pos]
        self.boxes.append((x, y, x + w, y + h))
        self.legend_rect = dict(x=_px(x), y=_px(y), w=_px(w), h=_px(h))
        for i, (text, style) in enumerate(entries):
            base = y + row * (i + 1)
            self.legend.append(dict(x1=_px(x + 8), x2=_px(x + 32), y=_px(base - 4),
                                    tx=_px(x + 38), ty=_px(base), text=typeset(text, self.tex),
                                    color=style.color, shape="", mx=_px(x + 20),
                                    width=f"{style.width:g}",
                                    dash=" ".join(f"{d:g}" for d in style.dash)))
        for i, (text, shape, color) in enumerate(marks, start=len(entries)):
            base = y + row * (i + 1)
            self.legend.append(dict(x1=_px(x + 8), x2=_px(x + 32), y=_px(base - 4),
                                    tx=_px(x + 38), ty=_px(base), text=typeset(text, self.tex),
                                    color=color, shape=shape, mx=_px(x + 20), width="", dash="",
                                    tex=_SHAPES[shape].format(c=self.color(color))))
        self.legend_marks = [e for e in self.legend if e["shape"]]

    def finish(self, title: str, x_label: str, y_label: str) -> dict[str, Any]:
        """The template's values, every one a formatted string."""
        left, top, right, bottom = self.frame

        def ticks(axis: _Axis) -> list[dict[str, str]]:
            out = []
            for v in axis.ticks():
                number, prefix = _si_parts(v.normalize())
                p = axis.pixel(float(v))
                out.append(dict(pos=_px(p), text_pos=_px(p + 4), value=_num(float(v)),
                                label=self.esc(f"{number} {prefix}".strip())))
            return out
        xticks, yticks = ticks(self.x), ticks(self.y)
        return dict(
            title=self.esc(title), title_text=typeset(title, self.tex),
            x_label=typeset(x_label, self.tex), y_label=typeset(y_label, self.tex),
            width=str(self.size[0]), height=str(self.size[1]), font=_FONT, palette=self.palette,
            left=_px(left), top=_px(top), right=_px(right), bottom=_px(bottom),
            plot_w=_px(right - left), plot_h=_px(bottom - top), title_x=_px(self.size[0] / 2),
            title_y="22.00", xlabel_x=_px((left + right) / 2), xlabel_y=_px(self.size[1] - 10),
            ylabel_x="18.00", ylabel_y=_px((top + bottom) / 2), xtick_end=_px(bottom + 5),
            xtick_text=_px(bottom + 17), ytick_end=_px(left - 5), ytick_text=_px(left - 8),
            xticks=xticks, yticks=yticks, lines=self.lines, markers=self.markers,
            texts=self.texts, legend=self.legend, legend_rect=self.legend_rect,
            legend_pos=self.legend_pos, legend_marks=self.legend_marks,
            colors=[dict(name=k, hex=v) for k, v in self.colors.items()],
            xmode="log" if self.x.log else "normal", ymode="log" if self.y.log else "normal",
            xmin=_num(self.x.lo), xmax=_num(self.x.hi), ymin=_num(self.y.lo), ymax=_num(self.y.hi),
            xtick_values=",".join(t["value"] for t in xticks),
            xtick_labels=",".join("{" + t["label"] + "}" for t in xticks),
            ytick_values=",".join(t["value"] for t in yticks),
            ytick_labels=",".join("{" + t["label"] + "}" for t in yticks),
            tex_width=f"{(right - left) * self.pt / _PT_PER_CM:.2f}cm",
            tex_height=f"{(bottom - top) * self.pt / _PT_PER_CM:.2f}cm")


