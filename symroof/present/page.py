"""The Try-it page: seed 000's roofline simulation (basic and Expert view) as one HTML file.

The page's workloads are the engine's: each formula F, Q, I is derived by a workload
builder and printed into the page's script by SymPy's JavaScript printer
(:mod:`symroof.present.page_js`), and shown to the reader in the seed's notation
(``2P + 4LSD``; :mod:`symroof.present.page_notation`, each form checked exactly against
the engine's formula); the chip table, each figure with its source, is written from the
hardware TOML files;
numbers are formatted by the rules of :mod:`symroof.present.page_format`, mirrored in
the script. The script draws the log-log chart itself (inline SVG), so the page needs no
network. ``symroof sim`` writes it; rendering twice gives the same bytes.

>>> [w.key for w in sim_workloads()]
['gemm-big', 'gemm-small', 'attention', 'decode-small', 'decode-large', 'relu']
>>> p = page_peak(hardware.get("h100-sxm"), 1, PeakMode.CHIP)
>>> p.precision, p.rate / hardware.get("h100-sxm").bandwidth()
('fp8', 39578/67)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sympy as sp

from symroof import hardware
from symroof import symbols as s
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.hardware import UNITS, HardwareSpec
from symroof import request
from symroof.models import TransformerModel
from symroof.options import Unfused, option
from symroof.precision import BYTES, PRECISIONS
from symroof.present.chart_layout import PALETTE
from symroof.present.chart_layout import si as tick_label
from symroof.present.formula import text
from symroof.present.numbers import grouped, json_number, si
from symroof.present.page_format import MAX_DECIMALS, PREFIXES, TIME_UNITS, figure
from symroof.present.page_js import js_function
from symroof.present.page_notation import Notation, notation
from symroof.present.templates import render
from symroof.solve import limit

__all__ = ["Control", "SimWorkload", "PagePeak", "PeakMode", "TryStep", "sim_workloads",
           "try_prompts", "page_peak", "page_data", "conventions", "CONVENTIONS", "Shown", "render_page", "DEFAULT_OUT", "DEFAULT_CHIP",
           "MODEL", "TEMPLATE", "WIDTHS"]

#: Where ``symroof sim`` writes the page.
DEFAULT_OUT = "reports/try_it.html"
#: The chip the page opens on.
DEFAULT_CHIP = "h100-sxm"
#: The seed's decode and attention model: 32 layers, width 4,096, multi-head attention.
MODEL = "seed-6.4b"
#: The page's template (its script and styles are included from ``page/``).
TEMPLATE = "page/try_it.html.j2"
#: Bytes per value the page's switch offers (16 and 8 bit), widest first.
WIDTHS = (2, 1)


class PeakMode(StrEnum):
    """Which peak a chip gets at a precision on the page."""

    SEED = "seed"   # the seed's model: one peak (16-bit) at every precision (default)
    CHIP = "chip"   # a real chip: the peak it lists at the chosen precision


@dataclass(frozen=True)
class Control:
    """A shape control: the symbol it sets, its label, default and largest value."""

    symbol: sp.Symbol
    label: str
    default: int
    maximum: int


@dataclass(frozen=True)
class Shown:
    """How the page writes a workload's formulas in the seed's notation: F, Q, I per
    variant, the ceiling's steps, the named quantities and what they stand for."""

    forms: tuple[tuple[str, str, str], ...]          # (F, Q, I) texts, one per variant
    names: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()  # substituted in this order
    where: str = ""                                  # the names, as the page explains them
    ceiling: tuple[str, ...] = ()                    # equal forms of the limit, in order
    special: tuple[str, dict[sp.Symbol, sp.Expr], str] | None = None   # (when, subs, I)


@dataclass(frozen=True)
class SimWorkload:
    """A point on the page's chart: its formulas (one per variant), its controls, how the
    page writes them (``shown``), and for decode the intensity's limit as the batch grows."""

    key: str
    label: str
    short: str                                   # the label on the chart and in the table
    about: str
    controls: tuple[Control, ...]
    variants: tuple[tuple[str, Analysis], ...]   # ("", a) or ("fused", a), (convention, a)...
    shown: Shown
    ceiling: sp.Expr | None = None
    tag: str | None = None                       # a control whose value the labels show

    def __post_init__(self) -> None:
        settable = {c.symbol for c in self.controls} | {s.b}
        for name, a in self.variants:
            extra = (a.flops.free_symbols | a.bytes.free_symbols) - settable
            if extra:
                raise SymroofError(f"page workload {self.key} {name}: no control sets "
                                   f"{', '.join(sorted(map(str, extra)))}")
        if len(self.shown.forms) != len(self.variants):
            raise SymroofError(f"page workload {self.key}: one display form per variant")
        self.notations()   # every display form is checked against the engine when made

    def notations(self) -> tuple[tuple[Notation, ...], ...]:
        """The display forms, each checked exactly against the engine's formula: one
        (F, Q, I) triple per variant, then the ceiling's forms, then the special case."""
        names = dict(self.shown.names)
        out = [tuple(notation(text, getattr(a, field), names)
                     for text, field in zip(forms, ("flops", "bytes", "intensity")))
               for forms, (_, a) in zip(self.shown.forms, self.variants)]
        if self.shown.ceiling:
            if self.ceiling is None:
                raise SymroofError(f"page workload {self.key}: a ceiling form without a ceiling")
            out.append(tuple(notation(t, self.ceiling, names) for t in self.shown.ceiling))
        if self.shown.special is not None:
            _, subs, text_ = self.shown.special
            out.append((notation(text_, self.variants[0][1].intensity.subs(subs), names),))
        return tuple(out)


@dataclass(frozen=True)
class PagePeak:
    """The peak a chip offers the page: its precision, unit and rate in FLOP/s."""

    precision: str
    unit: str
    rate: sp.Rational


@dataclass(frozen=True)
class TryStep:
    """A button under one of the seed's "Try" prompts: what it sets on the page."""

    label: str
    workload: str | None = None
    set: tuple[tuple[str, int], ...] = ()   # (symbol name, value) on ``workload``
    fused: bool | None = None
    width: int | None = None
    mode: PeakMode | None = None

    def record(self) -> dict[str, Any]:
        """The step as the page's script reads it (fields left unset are left out)."""
        out: dict[str, Any] = {"label": self.label, "set": dict(self.set)}
        for key in ("workload", "fused", "width", "mode"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def _built(workload: str, controls: tuple[Control, ...], **given: Any) -> Analysis:
    """The page's workload parsed into a :class:`~symroof.request.Request`, like every
    front door's: each control's default and largest value are its rows, checked by the
    one rule (the request refuses a value its symbol does not take, or a size the graph
    cannot have), and its analysis the registry's build."""
    sets = {c.symbol: (c.default, c.maximum) for c in controls}
    return request.analysis(request.make(workload, sets=sets,
                                         names={"sets": "page control"}, **given))


_GEMM = (("M", s.M, "rows of A and C"), ("N", s.N, "columns of B and C"),
         ("K", s.K, "the inner dimension"))
_DIM_MAX = 2**20


def _gemm(key: str, label: str, size: int) -> SimWorkload:
    controls = tuple(Control(sym, f"{name}, {what}", size, _DIM_MAX) for name, sym, what in _GEMM)
    shown = Shown((("2MNK", "b(MK + KN + MN)", "2MNK/(b(MK + KN + MN))"),),
                  special=("M = N = K = n", {s.M: s.n, s.N: s.n, s.K: s.n}, "2n/(3b)"))
    return SimWorkload(key, label, label, "C = A B with A M x K and B K x N: 2MNK FLOPs; "
                       "A and B read once, C written once.", controls,
                       (("", _built("gemm", controls)),), shown)


def _model_names(m: TransformerModel) -> tuple[tuple[sp.Symbol, sp.Expr], ...]:
    return ((s.P, 12 * s.L * s.D**2), (s.L, sp.Integer(m.layers)), (s.D, sp.Integer(m.d_model)),
            (s.H, sp.Integer(m.heads)))


def _decode(key: str, label: str, batch: int, m: TransformerModel) -> SimWorkload:
    controls = (Control(s.B, "B, batch (sequences)", batch, 2**16),
                Control(s.S, "S, context (tokens attended)", 1024, _DIM_MAX))
    a = _built("decode", controls, model=m)
    shown = Shown((("B(2P + 4LSD)", "bP + 2bBLSD", "B(2P + 4LSD)/(b(P + 2BLSD))"),),
                  _model_names(m), f"P = 12LD² (the weights), L = {m.layers} (layers), "
                  f"D = {grouped(m.d_model)} (width)", ("(2P + 4LSD)/(2bLSD)", "(12D/S + 2)/b"))
    return SimWorkload(
        key, label, "decode", f"One decode step of the {m.name} model ({m.layers} layers, width "
        f"{m.d_model}, multi-head attention): all weights and each sequence's KV cache are "
        "read; activations stay on chip.",
        controls, (("", a),), shown, limit(a.intensity, s.B), tag=s.B.name)


#: Unfused attention's two traffic models, as the page names them (name: what each adds).
CONVENTIONS: Mapping[Unfused, str] = {
    Unfused.MATERIALIZE_ONCE: "materialize once: one S × S matrix per head written once "
                              "(hS²b more)",
    Unfused.WRITE_AND_READ: "write and read: S and P each written and read back per head "
                            "(4hS²b more)",
}


def _core(m: TransformerModel, controls: tuple[Control, ...] = (),
          unfused: Unfused | None = None) -> Analysis:
    """The attention core at the model's width and heads (fixed in the request), fused, or
    unfused under convention ``unfused``."""
    return _built("attention", controls, fixed={s.D: m.d_model, s.H: m.heads},
                  options={} if unfused is None else {"unfused": unfused})


def _attention(m: TransformerModel, mode: Unfused) -> SimWorkload:
    prompt = (Control(s.S, "S, prompt length (tokens)", 4096, _DIM_MAX),)
    shown = Shown((("2S²D", "4SDb", "S/(2b)"),
                   ("2S²D", "4SDb + hS²b", "2S²D/(4SDb + hS²b)"),
                   ("2S²D", "4SDb + 4hS²b", "2S²D/(4SDb + 4hS²b)")),
                  _model_names(m)[2:], f"D = {grouped(m.d_model)} (width), h = {m.heads} (heads)")
    return SimWorkload(
        "attention", "attention prefill", "attention",
        f"The attention core (QK\u1d40, softmax, PV) of one layer of the {m.name} model over S "
        f"tokens, causal: fused keeps the S x S matrices on chip, unfused writes them to "
        f"memory (opens on {mode.value.replace('_', ' ')}; the other convention is one "
        "choice away).",
        prompt, (("fused", _core(m, prompt)),
                 *((u.value, _core(m, prompt, u)) for u in CONVENTIONS)), shown)


def sim_workloads(model: str = MODEL,
                  unfused: Unfused | str = Unfused.MATERIALIZE_ONCE) -> tuple[SimWorkload, ...]:
    """The seed's Expert view: big and small GEMM, causal attention prefill (fused and both
    unfused conventions, opening on ``unfused``), decode at two batches, and a ReLU."""
    m = request.load_model(model)
    mode = option(Unfused, unfused, "unfused")
    relu = (Control(s.n, "n, values", 16 * 2**20, 2**40),)
    return (
        _gemm("gemm-big", "big GEMM", 8192),
        _gemm("gemm-small", "small GEMM", 256),
        _attention(m, mode),
        _decode("decode-small", "decode, small batch", 1, m),
        _decode("decode-large", "decode, large batch", 64, m),
        SimWorkload("relu", "ReLU", "ReLU", "y = max(x, 0) over n values: 1 FLOP per value, "
                    "x read once, y written once.",
                    relu, (("", _built("elementwise", relu)),), Shown((("n", "2bn", "1/(2b)"),))),
    )


def try_prompts() -> tuple[tuple[str, str, tuple[TryStep, ...]], ...]:
    """The seed's four "Try" prompts (key, text, the buttons that set them up)."""
    return (
        ("shrink", "Shrink one GEMM dimension and confirm that intensity tracks the smallest "
                   "of M, N, K.",
         (TryStep(f"Big GEMM with N = {grouped(128)}", "gemm-big", (("N", 128),)),)),
        ("unfuse", "Turn off fusion for prefill and see how far attention falls once the "
                   "S x S matrices go to memory.",
         (TryStep("Attention prefill, unfused", "attention", fused=False),)),
        ("batch", f"Push decode batch to {grouped(512)} at {grouped(1024)} and then "
                  f"{grouped(8192)} tokens of context. Where does intensity level off, and why?",
         tuple(TryStep(f"B = {grouped(512)}, S = {grouped(ctx)}", "decode-large",
                       (("B", 512), ("S", ctx))) for ctx in (1024, 8192))),
        ("bits", "Switch to 8-bit. What moves, and what would you expect to happen to peak "
                 "compute on a real chip?",
         (TryStep("8-bit", width=1), TryStep("8-bit on a real chip", width=1,
                                              mode=PeakMode.CHIP))),
    )


def _precisions(width: int) -> tuple[str, ...]:
    return tuple(p for p in PRECISIONS if BYTES[p] == width)


def page_peak(spec: HardwareSpec, width: int, mode: PeakMode | str) -> PagePeak | None:
    """The peak ``spec`` offers at ``width`` bytes per value (None if it lists none).

    ``PeakMode.SEED`` gives one peak at every width: the 16-bit one, or the chip's
    highest if it lists no 16-bit peak (an fp64-only CPU, an int8-only TPU).
    """
    chosen = option(PeakMode, mode, "peak mode")
    if chosen is PeakMode.SEED:
        found = page_peak(spec, WIDTHS[0], PeakMode.CHIP)
        if found is not None:
            return found
        best = max(spec.peaks, key=lambda p: p.rate)
        return PagePeak(best.precision, best.unit, spec.peak(best.precision, best.unit))
    for precision in _precisions(width):
        for unit in UNITS:
            if precision in spec.precisions(unit):
                return PagePeak(precision, unit, spec.peak(precision, unit))
    return None


def _peak_record(spec: HardwareSpec, width: int, mode: PeakMode) -> dict[str, Any]:
    p = page_peak(spec, width, mode)
    if p is None:
        return {"missing": f"{spec.display_name} lists no {8 * width}-bit peak "
                           f"({' or '.join(_precisions(width))})"}
    ridge = p.rate / spec.bandwidth()
    return {"precision": p.precision, "unit": p.unit, "rate": json_number(p.rate),
            "rate_text": si(p.rate, "OP/s" if p.precision.startswith("int") else "FLOP/s", 12),
            "ridge": json_number(ridge), "ridge_text": figure(ridge),
            "source": spec.source(f"peak.{p.unit}.{p.precision}")}


def _chip(spec: HardwareSpec) -> dict[str, Any]:
    return {"name": spec.name, "label": spec.display_name, "memory": spec.main_memory,
            "bandwidth": json_number(spec.bandwidth()),
            "bandwidth_text": si(spec.bandwidth(), "B/s"),
            "bandwidth_source": spec.source(f"memory.{spec.main_memory}"),
            "peaks": {mode.value: {str(w): _peak_record(spec, w, mode) for w in WIDTHS}
                      for mode in PeakMode}}


def _workload(w: SimWorkload) -> dict[str, Any]:
    shown = w.notations()
    special = None if w.shown.special is None else \
        {"when": w.shown.special[0], "intensity": shown[-1][0].text}
    return {"key": w.key, "label": w.label, "short": w.short, "about": w.about, "tag": w.tag,
            "controls": [{"name": c.symbol.name, "id": f"{w.key}-{c.symbol.name}",
                          "label": c.label, "default": c.default, "max": c.maximum,
                          "max_text": grouped(c.maximum),
                          "steps": c.maximum.bit_length() - 1} for c in w.controls],
            "variants": [{"name": name, "flops": f.text, "bytes": q.text, "intensity": i.text}
                         for (name, _), (f, q, i) in zip(w.variants, shown)],
            "where": w.shown.where, "special": special,
            "ceiling": " = ".join(w.shown.ceiling) if w.ceiling is not None else None}


def _formulas(w: SimWorkload) -> dict[str, Any]:
    return {"key": w.key, "ceiling": None if w.ceiling is None else js_function(w.ceiling),
            "variants": [{"name": name, "flops": js_function(a.flops),
                          "bytes": js_function(a.bytes), "intensity": js_function(a.intensity)}
                         for name, a in w.variants]}


def check_steps(ws: tuple[SimWorkload, ...],
                prompts: tuple[tuple[str, str, tuple[TryStep, ...]], ...]) -> None:
    """Each "Try" button's values checked as its workload's controls are: a symbol one of
    them sets, a value the symbol takes (the one rule, :func:`symroof.request.check_sets`)
    and within the control's range."""
    by_key = {w.key: w for w in ws}
    for key, _, steps in prompts:
        for t in steps:
            if t.workload is None:
                continue
            w = by_key.get(t.workload)
            if w is None:
                raise SymroofError(f"try {key} {t.label!r}: no page workload {t.workload!r}")
            controls = {c.symbol.name: c for c in w.controls}
            for name, value in t.set:
                c = controls.get(name)
                sym = sp.Symbol(name) if c is None else c.symbol
                request.check_sets({sym: (sp.Integer(value),)}, controls_of(w),
                                   what=f"try {key} {t.label!r}", workload=f"page {w.key}")
                if c is not None and value > c.maximum:
                    raise SymroofError(f"try {key} {t.label!r} {name}: {value} is past the "
                                       f"control's largest value, {c.maximum}")


def controls_of(w: SimWorkload) -> tuple[sp.Symbol, ...]:
    """The symbols ``w``'s controls set."""
    return tuple(c.symbol for c in w.controls)


#: Where the seed uses each unfused convention (its §7 model; its §3 text).
_SEED_USES = {Unfused.MATERIALIZE_ONCE: "the simulation (its section 7 and the note under Try)",
              Unfused.WRITE_AND_READ: "the text of section 3, \u201cAttention, fused and unfused\u201d"}


def conventions(unfused: Unfused | str = Unfused.MATERIALIZE_ONCE) -> list[dict[str, Any]]:
    """Unfused attention's two conventions: name, meaning, where the seed uses each and
    its intensity at the seed's S = 4,096, 16 bits (computed here, shown outside the script)."""
    default = option(Unfused, unfused, "unfused")
    m = request.load_model(MODEL)
    at = {s.S: 4096, s.b: 2}
    out = []
    for u, meaning in CONVENTIONS.items():
        a = _core(m, unfused=u)
        out.append({"value": u.value, "meaning": meaning, "seed": _SEED_USES[u],
                    "short": f"{meaning.split(':')[0]} ({meaning.rsplit('(', 1)[1]}",
                    "default": u is default,
                    "at_seed": figure(a.intensity.subs(at))})
    return out


def page_data(chips: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What the template places: workloads, their printed formulas, chips, chart labels."""
    names = hardware.names() if chips is None else chips
    if DEFAULT_CHIP not in names:
        raise SymroofError(f"page chips: the default chip {DEFAULT_CHIP!r} must be one of them")
    ws = sim_workloads()
    prompts = try_prompts()
    check_steps(ws, prompts)
    palette: Mapping[str, str] = {"roof": PALETTE.roofs[0].color, "point": PALETTE.bound,
                                  "selected": PALETTE.ceilings[0].color, "ink": PALETTE.ink,
                                  "grid": PALETTE.grid}
    data = {"workloads": [_workload(w) for w in ws],
            "chips": [_chip(hardware.get(n)) for n in names],
            "default_chip": DEFAULT_CHIP, "widths": list(WIDTHS),
            "default_chip_label": hardware.get(DEFAULT_CHIP).display_name,
            "modes": [m.value for m in PeakMode], "palette": palette,
            "unfused_default": Unfused.MATERIALIZE_ONCE.value,
            "ticks": {str(e): tick_label(10.0**e) for e in range(-9, 25)},
            "format": {"max_decimals": MAX_DECIMALS, "prefixes": PREFIXES,
                       "time_units": TIME_UNITS},
            "try": [{"key": key, "prompt": prompt, "steps": [t.record() for t in steps]}
                    for key, prompt, steps in prompts]}
    return {"data": data, "formulas": [_formulas(w) for w in ws],
            "conventions": conventions()}


def render_page() -> str:
    """The whole page: one self-contained HTML file (inline script and styles)."""
    return render(TEMPLATE, **page_data())
