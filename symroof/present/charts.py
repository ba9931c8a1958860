"""Roofline and crossover charts as SVG and pgfplots, from templates, with no plotting library.

All layout (log scaling to pixels, ticks, clipping, label placement) happens here; the
templates ``templates/charts/chart.{svg,tex}.j2`` only place formatted values. Output is
byte-identical across runs and hash seeds: fixed decimals, no set or clock in sight.

>>> chart = RooflineChart("H100", roofs=[("HBM", 3.35e12)], ceilings=[("bf16", 989.4e12)],
...                       points=[("GEMM", 2731.0, 989.4e12, "bound")])
>>> svg = roofline_svg(chart)
>>> svg.startswith("<?xml") and "<title>H100</title>" in svg
True
>>> "xmode=log" in roofline_pgfplots(chart)
True
>>> si(989.4e12), si(0.25), quantity(3.35e12, "B/s")
('989 T', '0.25', '3.35 TB/s')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from symroof.errors import SymroofError
from symroof.present.chart_layout import (AL_SPOT, AR_SPOT, BL_SPOT, BR_SPOT, CENTRE_SPOT,
                                          DECADE, FAR,
                                          L_SPOT, PALETTE, R_SPOT, Canvas, Palette, Style,
                                          nth, number, quantity, si)
from symroof.present.templates import render

__all__ = ["Ceiling", "CurveChart", "Mark", "PALETTE", "Palette", "Point", "Roof", "RooflineChart",
           "Series", "Style", "curve_pgfplots", "curve_svg", "quantity",
           "roofline_pgfplots", "roofline_svg", "si"]


class Roof(NamedTuple):
    """A memory level's roof."""
    label: str
    bandwidth_bytes_per_s: float


class Ceiling(NamedTuple):
    """A compute peak (a matrix or vector unit at one precision) in FLOP per second."""
    label: str
    flop_per_s: float


class Point(NamedTuple):
    """A workload: ``kind`` is "bound" (predicted, on the roof), "measured", or "printed"
    (a document's own figure, drawn beside the derived one)."""
    label: str
    intensity_flop_per_byte: float
    flop_per_s: float
    kind: str = "bound"


class Series(NamedTuple):
    """One curve: matching ``xs`` and ``ys``."""
    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]


class Mark(NamedTuple):
    """A labelled point on a curve chart: ``kind`` "derived" (a dot) or "printed" (a
    document's figure, a hollow square)."""
    label: str
    x: float
    y: float
    kind: str = "derived"


def _seq(value: object, where: str) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise SymroofError(f"{where}: expected a sequence, got {value!r}")
    return tuple(value)


def _records(chart: object, field_: str, names: tuple[str, ...], positive: bool, least: int = 0,
             kinds: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    """``chart.field_`` as checked tuples (label, number, ..., [kind]): a string label,
    finite numbers (positive on a log axis) and, where ``kinds`` are given, an optional
    last field among them (the first by default). Errors name the chart, item and field."""
    where = f"{type(chart).__name__} {getattr(chart, 'title', '')!r}: {field_}"
    items = _seq(getattr(chart, field_), where)
    if len(items) < least:
        raise SymroofError(f"{where}: at least {least} needed, got {len(items)}")
    out = []
    for i, item in enumerate(items):
        at, item = f"{where}[{i}]", _seq(item, f"{where}[{i}]")
        if not len(names) <= len(item) <= len(names) + bool(kinds) \
                or not isinstance(item[0], str):
            raise SymroofError(f"{at}: expected ({', '.join(names + kinds[:1])}) with a string "
                               f"label, got {item!r}")
        kind = item[len(names)] if len(item) > len(names) else kinds[0] if kinds else None
        if kinds and kind not in kinds:
            raise SymroofError(f"{at} {item[0]!r} kind: expected one of {kinds}, got {kind!r}")
        numbers = (number(v, f"{at} {item[0]!r} {n}", positive)
                   for n, v in zip(names[1:], item[1:len(names)]))
        out.append((item[0], *numbers, *((kind,) if kinds else ())))
    return out


def _range(chart: object, field_: str, log: bool) -> None:
    value, where = getattr(chart, field_), f"{type(chart).__name__}: {field_}"
    if value is None:
        return
    bounds = _seq(value, where)
    if len(bounds) != 2:
        raise SymroofError(f"{where}: expected (low, high), got {value!r}")
    lo, hi = (number(v, where, log) for v in bounds)
    if not lo < hi:
        raise SymroofError(f"{where}: low must be below high, got {value!r}")
    object.__setattr__(chart, field_, (lo, hi))


def _strings(chart: object, *names: str) -> None:
    for name in names:
        if not isinstance(getattr(chart, name), str):
            raise SymroofError(f"{type(chart).__name__}: {name} must be a string, "
                               f"got {getattr(chart, name)!r}")


@dataclass(frozen=True)
class RooflineChart:
    """A log-log roofline: one roof per memory level, compute ceilings, workloads as points.
    Items may be plain tuples; they are checked and stored as Roof, Ceiling and Point."""
    title: str
    roofs: Sequence[tuple[str, float]]
    ceilings: Sequence[tuple[str, float]]
    points: Sequence[tuple[str, float, float] | tuple[str, float, float, str]] = ()
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:   # frozen: check and normalise once, here
        _strings(self, "title")
        checked = (tuple(Roof(*r) for r in _records(self, "roofs", Roof._fields, True, 1)),
                   tuple(Ceiling(*c) for c in _records(self, "ceilings", Ceiling._fields, True, 1)),
                   tuple(Point(*p) for p in _records(self, "points", Point._fields[:3], True,
                                                     kinds=("bound", "measured", "printed"))))
        for name, value in zip(("roofs", "ceilings", "points"), checked):
            object.__setattr__(self, name, value)
        _range(self, "x_range", True)
        _range(self, "y_range", True)


@dataclass(frozen=True)
class CurveChart:
    """Curves (e.g. S = c/B where KV bytes equal weight bytes) with labelled marks.
    Items may be plain tuples (xs and ys any iterables); they are stored as Series and Mark."""
    title: str
    x_label: str
    y_label: str
    series: Sequence[tuple[str, Iterable[float], Iterable[float]]]
    log_x: bool = True
    log_y: bool = True
    marks: Sequence[tuple[str, float, float] | tuple[str, float, float, str]] = ()
    regions: Sequence[tuple[str, float, float]] = ()
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        _strings(self, "title", "x_label", "y_label")
        where, series = f"CurveChart {self.title!r}: series", []
        for i, item in enumerate(_seq(self.series, where)):
            item = _seq(item, f"{where}[{i}]")
            if len(item) != 3 or not isinstance(item[0], str):
                raise SymroofError(f"{where}[{i}]: expected (label, xs, ys), got {item!r}")
            at = f"{where}[{i}] {item[0]!r}"
            xs, ys = _seq(item[1], f"{at} xs"), _seq(item[2], f"{at} ys")
            if len(xs) != len(ys):
                raise SymroofError(f"{at}: xs and ys differ in length ({len(xs)} vs {len(ys)})")
            if len(xs) < 2:
                raise SymroofError(f"{at} xs: a curve needs at least two points, got {len(xs)}")
            series.append(Series(item[0], *(tuple(number(v, f"{at} {n}[{j}]", log)
                                                  for j, v in enumerate(vs))
                                            for n, vs, log in (("xs", xs, self.log_x),
                                                               ("ys", ys, self.log_y)))))
        if not series:
            raise SymroofError(f"{where}: at least 1 needed, got 0")
        object.__setattr__(self, "series", tuple(series))
        marks = _records(self, "marks", Mark._fields[:3], False, kinds=("derived", "printed"))
        for i, (label, x, y, _) in enumerate(marks):   # positive only where the axis is a log axis
            for name, value, log in (("x", x, self.log_x), ("y", y, self.log_y)):
                number(value, f"CurveChart {self.title!r}: marks[{i}] {label!r} {name}", log)
        object.__setattr__(self, "marks", tuple(Mark(*m) for m in marks))
        object.__setattr__(self, "regions", tuple(
            (str(t), number(x, f"CurveChart {self.title!r}: regions {t!r} x", self.log_x),
             number(y, f"CurveChart {self.title!r}: regions {t!r} y", self.log_y))
            for t, x, y in _seq(self.regions, f"CurveChart {self.title!r}: regions")))
        _range(self, "x_range", self.log_x)
        _range(self, "y_range", self.log_y)


def _merged(items: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Equal values share one line and one label ('bf16 matrix, fp16 matrix')."""
    labels: dict[float, list[str]] = {}
    for label, value in items:
        labels.setdefault(value, []).append(label)
    return [(", ".join(names), value) for value, names in labels.items()]


_CENTRE = CENTRE_SPOT
_POINT_SPOTS = (BR_SPOT, AL_SPOT, R_SPOT, L_SPOT, BL_SPOT, AR_SPOT, *FAR)   # below right: clear of a rising roof
_MARK_SPOTS = (AR_SPOT, BL_SPOT, BR_SPOT, AL_SPOT, R_SPOT, L_SPOT, *FAR)    # above right: clear of a falling curve


def _roofline(chart: RooflineChart, tex: bool, palette: Palette, size: tuple[int, int],
              tex_width: float) -> dict[str, Any]:
    if not isinstance(chart, RooflineChart):
        raise SymroofError(f"roofline chart: expected a RooflineChart, "
                           f"got {type(chart).__name__}")
    roofs, ceilings = _merged(chart.roofs), _merged(chart.ceilings)
    top, fastest = max(c for _, c in ceilings), max(bw for _, bw in roofs)
    ridges = [(c / bw, c, i) for i, (_, bw) in enumerate(roofs) for _, c in ceilings]
    points = [Point(*p) for p in chart.points]
    xs = [r[0] for r in ridges] + [p.intensity_flop_per_byte for p in points]
    ys = [r[1] for r in ridges] + [p.flop_per_s for p in points]
    cv = Canvas(chart.x_range or (min(xs) / DECADE, max(xs) * DECADE),
                 chart.y_range or (min(ys) / DECADE, max(ys) * DECADE),
                 (True, True), size, tex_width, tex, palette)
    # a ceiling starts where the fastest memory roof reaches it; each roof rises to the top
    # ceiling, so together they draw min(bandwidth * I, peak) for every pair
    shown = []
    for i, (label, c) in enumerate(ceilings):
        if cv.line("ceiling", [(c / fastest, c), (cv.x.hi, c)], nth(palette.ceilings, i)):
            shown.append((label, c))
    slopes = []
    for i, (label, bw) in enumerate(roofs):
        start = min(cv.x.lo, top / bw)
        pieces = cv.line("roof", [(start, bw * start), (top / bw, top)], nth(palette.roofs, i))
        slopes += [(f"{label} {quantity(bw, 'B/s')}", p) for p in pieces[:1]]
    ridges = [r for r in ridges if cv.inside(r[0], r[1])]
    for x, y, i in ridges:
        cv.marker("ridge", "ring", x, y, nth(palette.roofs, i).color)
    points = [p for p in points if cv.inside(p.intensity_flop_per_byte, p.flop_per_s)]
    shapes = {"bound": ("dot", palette.bound), "measured": ("diamond", palette.measured),
              "printed": ("square", palette.printed)}
    for p in points:
        shape, color = shapes[p.kind]
        cv.marker(f"point {p.kind}", shape, p.intensity_flop_per_byte, p.flop_per_s, color)
    if any(p.kind == "printed" for p in points):   # a reader tells the document's from ours
        cv.legend_box([], _printed_legend(palette))
    # labels in order of importance: each later one moves around those placed before it
    for label, c in shown:   # at the right edge, else just after the ceiling's ridge
        cv.label("ceiling-label", f"{label} {quantity(c, 'FLOP/s')}",
                 [(cv.x.hi, c, AL_SPOT), (cv.x.hi, c, BL_SPOT), (max(c / fastest, cv.x.lo), c, AR_SPOT),
                  (max(c / fastest, cv.x.lo), c, BR_SPOT)])
    for text, piece in slopes:
        cv.along("roof-label", text, piece)
    for p in points:
        cv.label("point-label", p.label,
                 [(p.intensity_flop_per_byte, p.flop_per_s, s) for s in _POINT_SPOTS])
    for x, y, _ in ridges:   # a ridge's intensity, only where it covers nothing named
        cv.label("ridge-label", si(x), [(x, y, s) for s in (BR_SPOT, AL_SPOT, R_SPOT, BL_SPOT,
                                                            AR_SPOT, *FAR)], 9, optional=True)
    return cv.finish(chart.title, "Arithmetic intensity (FLOP/B)",
                     "Attainable performance (FLOP/s)")


def _printed_legend(palette: Palette) -> list[tuple[str, str, str]]:
    return [("derived by symroof", "dot", palette.bound),
            ("printed in the document", "square", palette.printed)]


def _padded(values: list[float], log: bool) -> tuple[float, float]:
    """The data's extent and 5% more each side (of its logarithm, on a log axis)."""
    lo, hi = min(values), max(values)
    lo, hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
    pad = 0.05 * (hi - lo) if hi > lo else 0.5 * (1 if log else max(abs(hi), 1.0))
    return (10 ** (lo - pad), 10 ** (hi + pad)) if log else (lo - pad, hi + pad)


def _curve(chart: CurveChart, tex: bool, palette: Palette, size: tuple[int, int],
           tex_width: float) -> dict[str, Any]:
    if not isinstance(chart, CurveChart):
        raise SymroofError(f"curve chart: expected a CurveChart, got {type(chart).__name__}")
    series = [Series(s[0], tuple(s[1]), tuple(s[2])) for s in chart.series]
    marks = [Mark(*m) for m in chart.marks]
    xs = [x for s in series for x in s.xs] + [m.x for m in marks]
    ys = [y for s in series for y in s.ys] + [m.y for m in marks]
    cv = Canvas(chart.x_range or _padded(xs, chart.log_x),
                 chart.y_range or _padded(ys, chart.log_y), (chart.log_x, chart.log_y), size,
                 tex_width, tex, palette)
    entries = []
    for i, s in enumerate(series):
        if cv.line("series", list(zip(s.xs, s.ys)), nth(palette.series, i), s.label) and s.label:
            entries.append((s.label, nth(palette.series, i)))
    marks = [m for m in marks if cv.inside(m.x, m.y)]
    for m in marks:
        printed = m.kind == "printed"
        cv.marker(f"mark {m.kind}", "square" if printed else "dot", m.x, m.y,
                  palette.printed if printed else palette.bound)
    cv.legend_box(entries, _printed_legend(palette) if any(m.kind == "printed" for m in marks)
                  else [])
    for m in marks:
        if m.label:
            cv.label("mark-label", m.label, [(m.x, m.y, s) for s in _MARK_SPOTS])
    for text, x, y in chart.regions:   # a region's name, centred where the caller puts it
        if cv.inside(x, y):
            cv.label("region-label", text, [(x, y, _CENTRE)], 12)
    return cv.finish(chart.title, chart.x_label, chart.y_label)


def _size(width: int, height: int) -> tuple[int, int]:
    if not (isinstance(width, int) and isinstance(height, int) and width >= 240 and height >= 160):
        raise SymroofError(f"chart size: width and height must be integers of at least 240 x 160 "
                           f"pixels, got {width!r} x {height!r}")
    return width, height


def _cm(width_cm: float) -> float:
    return number(width_cm, "chart width_cm", True)


def roofline_svg(chart: RooflineChart, *, width: int = 640, height: int = 400,
                 palette: Palette = PALETTE) -> str:
    """``chart`` as a standalone SVG 1.1 document."""
    return render("charts/chart.svg.j2",
                  **_roofline(chart, False, palette, _size(width, height), 10.0))


def roofline_pgfplots(chart: RooflineChart, *, width_cm: float = 10.0,
                      palette: Palette = PALETTE) -> str:
    r"""``chart`` as a ``tikzpicture`` (no preamble: the document loads ``pgfplots``)."""
    return render("charts/chart.tex.j2",
                  **_roofline(chart, True, palette, (640, 400), _cm(width_cm)))


def curve_svg(chart: CurveChart, *, width: int = 640, height: int = 400,
              palette: Palette = PALETTE) -> str:
    """``chart`` as a standalone SVG 1.1 document."""
    return render("charts/chart.svg.j2",
                  **_curve(chart, False, palette, _size(width, height), 10.0))


def curve_pgfplots(chart: CurveChart, *, width_cm: float = 10.0, palette: Palette = PALETTE) -> str:
    r"""``chart`` as a ``tikzpicture`` (no preamble: the document loads ``pgfplots``)."""
    return render("charts/chart.tex.j2",
                  **_curve(chart, True, palette, (640, 400), _cm(width_cm)))
