"""What every front door parses into: one frozen :class:`Request`, checked once, and its two
entry points, :func:`analysis` and :func:`points`.

A request names a workload of the registry (:mod:`symroof.workloads.registry`) with its
options as enum members, a model, a parallel :class:`Layout`, the :class:`Numerics`
resolved once, a chip (or None) and rows of values: ``sets`` maps symbols to their
values, and the rows are every combination; ``fixed`` binds some of the workload's own
symbols to numbers or expressions when it is built (the builder takes the value in the
symbol's place, so the formulas hold it: attention at a model's width and heads; a claim
recipe's GEMM at n, n, n), and ``keywords`` gives the builder's other keyword-only
parameters (a conv2d's padding, a GEMM's b). Making one checks it all, in the order a
reader meets it (formats, workload and options, the analysis with its model and layout,
each value against its symbol, the chip's peak, memory level and links), so that what
runs below takes a request that holds and checks nothing again. ``names`` spells each
field as the front door calls it (``--set``, ``--tp``), for errors only.

>>> from symroof.symbols import M
>>> r = make("gemm", sets={"M": 8192, "N": 8192, "K": (8192, 128)}, precision="bf16")
>>> analysis(r).intensity
2*K*M*N/(b*(K*M + K*N + M*N))
>>> [str(p.intensity) for p in points(r)]
['8192/3', '4096/33']
>>> make("gemm", sets={M: 0})
Traceback (most recent call last):
...
symroof.errors.SymroofError: sets M: expected a positive integer (a dimension), got 0
"""

from __future__ import annotations

# imports inside functions: the library below the front doors (graphs, models, chips,
# evaluation) loads when a request is made, not when this module is imported, so that a
# front door parses its input without networkx, numpy or jinja2 (tests/project/
# test_lazy_import.py); the compiled path loads numpy only when it runs.

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import sympy as sp

from symroof.errors import SymroofError, suggest
from symroof.options import ExpertReads, option
from symroof.precision import Numerics, Precision
from symroof.workloads import registry

if TYPE_CHECKING:
    from symroof.analysis import Analysis
    from symroof.evaluate import Point
    from symroof.serving import ServingRow
    from symroof.hardware import HardwareSpec
    from symroof.models import TransformerModel

__all__ = ["Layout", "Draft", "Request", "make", "analysis", "points", "served", "rows", "row_count", "spec",
           "model", "load_model", "refuse_unused", "MANY_ROWS", "check_sets", "parse_sets", "Rows",
           "Fixed", "Keywords", "arguments", "keywords_of"]

#: A request's values: each symbol with the values it takes (rows are their product).
Rows = tuple[tuple[sp.Symbol, tuple[sp.Expr, ...]], ...]

#: Symbols of a workload bound to one value each when it is built (a request's ``fixed``);
#: None leaves the builder's positional parameter out (its default: a decode step given
#: ``past`` instead of its context).
Fixed = tuple[tuple[sp.Symbol, sp.Expr | None], ...]

#: The builder's keyword-only parameters that are neither options nor the layout, each
#: with its value (a request's ``keywords``: a conv2d's padding, a GEMM's b).
Keywords = tuple[tuple[str, sp.Expr], ...]

#: How a field is called where nothing else is said (the Python API).
_PLAIN = {"sets": "sets", "fixed": "fixed", "keywords": "keywords", "chip": "hardware", "model": "model", "tp": "tp", "pp": "pp",
          "microbatches": "microbatches", "expert_reads": "expert_reads",
          "precision": "precision", "weights": "weights", "kv_cache": "kv_cache",
          "activations": "activations", "level": "level", "workload": "workload"}

_KINDS = ("weights", "kv_cache", "activations")

#: From this many rows, a request's sizes are checked at once from compiled formulas (the
#: command line's text output evaluates them on the compiled path too).
MANY_ROWS = 64


@dataclass(frozen=True)
class Layout:
    """How a model is served: tensor-parallel devices, pipeline stages, micro-batches per
    step, and which routed experts' weights a step reads."""

    tp: int = 1
    pp: int = 1
    microbatches: int = 1
    expert_reads: ExpertReads = ExpertReads.EXPECTED

    def changed(self) -> tuple[str, ...]:
        """The fields that differ from the defaults."""
        return tuple(f for f in ("tp", "pp", "microbatches", "expert_reads")
                     if getattr(self, f) != getattr(_DEFAULT_LAYOUT, f))


_DEFAULT_LAYOUT = Layout()


@dataclass(frozen=True)
class Draft:
    """Speculative decoding beside a decode step: a draft model proposing ``tokens`` per
    round, each accepted with probability ``acceptance``, on ``tp`` devices."""

    model: str | TransformerModel
    tokens: sp.Expr
    acceptance: sp.Expr
    tp: sp.Expr = sp.Integer(1)


@dataclass(frozen=True)
class Request:
    """One question, as every front door asks it: a workload, with its options, model,
    layout, number formats and chip, at rows of values. Made through :func:`make` (which
    takes loose input: names, strings, plain numbers); a Request is checked when made."""

    workload: str
    options: tuple[tuple[str, object], ...] = ()
    model: str | TransformerModel | None = None
    layout: Layout = _DEFAULT_LAYOUT
    numerics: Numerics = Numerics()
    chip: str | HardwareSpec | None = None
    sets: Rows = ()
    unit: str | None = None
    level: str | None = None
    link: str | None = None
    efficiency: sp.Expr = sp.Integer(1)
    reserve: sp.Expr = sp.Integer(0)
    prompt: sp.Expr | None = None   # decode: time to first token for prompts this long
    draft: Draft | None = None      # decode: speculative decoding with this draft
    collective: str = "ring"        # the collectives' algorithm (CollectiveAlgorithm)
    latency: bool = True            # add the link's per-collective latency (alpha-beta)
    fixed: Fixed = ()               # the workload's symbols built at these values
    keywords: Keywords = ()         # the builder's other keyword-only parameters
    names: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        _check(self)

    def name(self, key: str) -> str:
        """How the front door calls field ``key`` (``--set`` on the command line)."""
        return dict(self.names).get(key) or _PLAIN.get(key) or key

    @property
    def free(self) -> frozenset[sp.Symbol]:
        """The symbols of the analysis's F, Q and tokens (those values may be given for)."""
        from symroof.evaluate import workload_symbols  # see the note at the top

        return workload_symbols(analysis(self))

    def fill(self) -> dict[sp.Symbol, sp.Expr]:
        """``b`` at the numerics' bytes per value where the analysis keeps it free and no
        row gives it: what each row is evaluated with (and shows)."""
        from symroof.symbols import b  # see the note at the top

        given = {k for k, _ in self.sets}
        return {b: self.numerics.b} if b in self.free and b not in given else {}


# -- checks, once -----------------------------------------------------------------------


def refuse_unused(entry: registry.Entry, given: Iterable[str],
                  names: Mapping[str, str] | None = None) -> None:
    """Refuse a field (an option, ``model``, a layout field, a per-kind format) given for
    a workload that does not take it: an error naming it, never ignored."""
    spell = {**_PLAIN, **(names or {})}
    takes = _takes(entry)
    for key in given:
        if key not in takes:
            shown = ", ".join(spell.get(t, t) for t in takes) or "none"
            raise SymroofError(f"{spell.get(key, key)}: workload {entry.name!r} does not use "
                               f"it (its options: {shown})")


def _takes(entry: registry.Entry) -> tuple[str, ...]:
    """Every field ``entry`` takes beyond its symbols, in the order help lists them."""
    model = ("model",) if entry.model else ()
    kinds = _KINDS if entry.model else ()
    return (*model, *entry.options, *entry.layout, *kinds)


def _check(r: Request) -> None:
    """Everything a request holds, checked once, in the order a reader meets it."""
    entry = registry.get(r.workload)
    if not isinstance(r.numerics, Numerics) or not isinstance(r.layout, Layout):
        raise SymroofError("request: numerics and layout must be Numerics and Layout")
    given = [k for k, _ in r.options] + (["model"] if r.model is not None else []) \
        + list(r.layout.changed()) + ([k for k in _KINDS] if r.numerics.per_kind else [])
    refuse_unused(entry, given, dict(r.names))
    entry.check(dict(r.options), r.name("workload"))
    _check_fixed(r, entry)
    _check_keywords(r, entry)
    for key in ("prompt", "draft"):  # what a decode step is served with
        if getattr(r, key) is not None and r.workload != "decode":
            raise SymroofError(f"{r.name(key)}: only for decode (workload {r.workload!r})")
    a = analysis(r)  # the model, its layout and the builder's own checks
    _check_sets(r, a)
    _check_chip(r, a)


def arguments(entry: registry.Entry) -> tuple[sp.Symbol, ...]:
    """The symbols ``entry``'s builder is called with (a conv2d's filter pair flattened):
    those a request may fix."""
    out: list[sp.Symbol] = []
    for x in entry.arguments():
        out.extend(x if isinstance(x, tuple) else (x,))
    return tuple(out)


def _not_built_over(what: str, name: str, entry: registry.Entry) -> SymroofError:
    """The error for a fixed symbol that ``entry``'s builder does not take."""
    return SymroofError(f"{what} {name}: {entry.name} is not built over {name} (its symbols: "
                        f"{', '.join(x.name for x in arguments(entry)) or 'none'})")


def _check_fixed(r: Request, entry: registry.Entry) -> None:
    """Each fixed symbol one of the workload's arguments, given once, its value fit for it
    (:func:`symroof.evaluate.check_value`, the one rule); one left out (None) only where
    the builder's parameter has a default and every later one is left out too."""
    from symroof.evaluate import check_value  # see the note at the top

    takes = arguments(entry)
    seen: set[sp.Symbol] = set()
    for sym, value in r.fixed:
        shown = getattr(sym, "name", sym)
        if not isinstance(sym, sp.Symbol) or sym not in takes:
            raise _not_built_over(r.name("fixed"), str(shown), entry)
        if sym in seen:
            raise SymroofError(f"{r.name('fixed')} {shown}: fixed more than once")
        seen.add(sym)
        if value is not None:
            check_value(sym, value, f"{r.name('fixed')} {shown}")
    left_out = {sym for sym, value in r.fixed if value is None}
    if left_out:
        _check_left_out(r, entry, left_out)


def _check_left_out(r: Request, entry: registry.Entry, left_out: set[sp.Symbol]) -> None:
    """Arguments left out are the last ones, each of a parameter with a default."""
    import inspect  # see the note at the top

    params = [p for p in inspect.signature(entry.builder).parameters.values()
              if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD][int(entry.model):]
    after = False
    for x, p in zip(entry.arguments(), params):
        group = x if isinstance(x, tuple) else (x,)
        out = [y in left_out for y in group]
        name = "/".join(str(y) for y in group)
        if any(out) and not all(out):
            raise SymroofError(f"{r.name('fixed')} {name}: left out in part (give all of "
                               f"{name} or none)")
        if all(out) and p.default is inspect.Parameter.empty:
            raise SymroofError(f"{r.name('fixed')} {name}: {entry.name} needs it (its "
                               f"{p.name} has no default)")
        if after and not all(out):
            raise SymroofError(f"{r.name('fixed')} {name}: given after an argument left out "
                               "(only the last ones may be left out)")
        after = after or all(out)


def keywords_of(entry: registry.Entry) -> dict[str, sp.Symbol]:
    """The keyword-only parameters of ``entry``'s builder a request's ``keywords`` may
    give (not the layout, nor an enum or flag option: a numeric option such as a
    ``flops_per_element`` may be an expression here), each with the symbol its value is
    checked as: the parameter's default where that is a symbol (a GEMM's ``b``), else a
    symbol of no assumptions (the builder's own checks say more: a padding may be 0).
    The parameters are the registry's, read once per entry (``Entry._parameters``)."""
    return {name: p.default if isinstance(p.default, sp.Symbol) else sp.Symbol(name)
            for name, p in entry._parameters.items()
            if name not in registry.LAYOUT and (name not in entry.options
                                                or name in entry.numbers)}


def _check_keywords(r: Request, entry: registry.Entry) -> None:
    """Each keyword one the builder takes beyond its options and layout, given once, its
    value fit for it (the one rule, :func:`symroof.evaluate.check_value`)."""
    if not r.keywords:
        return
    from symroof.evaluate import check_value  # see the note at the top

    takes = keywords_of(entry)
    seen: set[str] = set()
    for name, value in r.keywords:
        if name not in takes:
            raise SymroofError(f"{r.name('keywords')} {name}: workload {entry.name!r} takes "
                               f"no keyword {name!r}{suggest(str(name), takes)} (its keywords: "
                               f"{', '.join(takes) or 'none'})")
        if name in seen or name in dict(r.options):
            raise SymroofError(f"{r.name('keywords')} {name}: given more than once"
                               f"{'' if name in seen else ' (as an option too)'}")
        seen.add(name)
        check_value(takes[name], value, f"{r.name('keywords')} {name}")


def _check_sets(r: Request, a: Analysis) -> None:
    """The request's values (:func:`check_sets`), the number of rows within the budget,
    and the sizes every row leaves the graph (none zero, negative or fractional). A
    request without values has one row that sets no size (at most the formats' ``b``):
    its sizes are the builder's, checked by it, and its F and Q are not summed here (a
    claim recipe's workload is built without them; the algebra it asks may run in the
    budget's guarded child)."""
    from symroof.budget import check_rows  # see the note at the top

    if r.prompt is not None:
        from symroof.evaluate import check_value  # see the note at the top
        from symroof.symbols import S  # likewise

        check_value(S, r.prompt, r.name("prompt"))
    if not r.sets:
        return
    seen: set[object] = set()
    for sym, _ in r.sets:
        if sym in seen:
            raise SymroofError(f"{r.name('sets')} {getattr(sym, 'name', sym)}: set more "
                               "than once")
        seen.add(sym)
    check_sets(dict(r.sets), r.free, what=r.name("sets"), workload=r.workload)
    check_rows([(k.name, len(v)) for k, v in r.sets], r.name("sets"))
    if row_count(r) < MANY_ROWS:  # each row leaves the graph's sizes positive
        from symroof.evaluate import check_rows_domain  # see the note at the top

        check_rows_domain(a, rows(r))
    else:  # at once, from the compiled sizes (numpy: only for many rows)
        from symroof.compiled.numeric import check_rows_domain as check_many

        check_many(a, rows(r))


def check_sets(sets: Mapping[sp.Symbol, Sequence[sp.Expr]], free: Iterable[sp.Symbol], *,
               what: str = "sets", workload: str = "the workload") -> None:
    """Each symbol one of ``free`` (else an error naming those ``workload`` uses), each
    value fit for its symbol (:func:`symroof.evaluate.check_value`, the one rule): what
    every front door's values meet, once."""
    from symroof.evaluate import check_value  # see the note at the top

    free = frozenset(free)
    used = ", ".join(sorted(x.name for x in free)) or "none"
    for sym, values in sets.items():
        if not isinstance(sym, sp.Symbol) or sym not in free:
            shown = getattr(sym, "name", sym)
            raise SymroofError(f"{what} {shown}: {workload} does not use {shown} "
                               f"(its symbols: {used})")
        for v in values:
            check_value(sym, v, f"{what} {sym.name}")


def parse_sets(items: Sequence[str], free: Iterable[sp.Symbol], *, what: str = "sets",
               workload: str = "the workload") -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    """``NAME=V[,V...]`` texts (the safe parser's syntax; ``8k`` is 8000, ``8Ki`` 8192)
    over the canonical symbols and ``free``, checked (:func:`check_sets`)."""
    from symroof.parse import parse_assignments  # see the note at the top
    from symroof.symbols import CANONICAL  # likewise

    free = frozenset(free)
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in free})
    sets = parse_assignments(items, table, what=what)
    check_sets(sets, free, what=what, workload=workload)
    return sets


def _check_chip(r: Request, a: Analysis) -> None:
    """The chip's figures a request needs, once, before any row: a peak at the numerics'
    peak format, the memory level, and links where the layout shards the model."""
    if r.chip is None:
        return
    hw = spec(r)
    peak = r.numerics.peak
    flag = r.name("activations" if r.numerics.peak_from == "activations" else "precision")
    try:
        hw.peak(peak, unit=r.unit, ops_per_mac=a.convention.flop_count.ops_per_mac)
    except SymroofError:
        offers = ", ".join(hw.precisions(r.unit))
        hint = " (4-bit weights with 16-bit compute: --weights int4)" \
            if peak in (Precision.INT4, Precision.FP4) else ""
        raise SymroofError(f"{flag} {peak}: {hw.name} has no peak for {peak}; it offers "
                           f"{offers}{hint}") from None
    hw.bandwidth(r.level)
    sharded = [f for f in ("tp", "pp") if getattr(r.layout, f) != 1]
    if sharded and not hw.interconnects:
        raise SymroofError(f"{r.name(sharded[0])} {getattr(r.layout, sharded[0])}: {hw.name} "
                           "lists no interconnect (give a chip file with an "
                           "[interconnect.*] table)")


# -- what a request builds ------------------------------------------------------------


def model(r: Request) -> TransformerModel | None:
    """The request's model with its per-kind formats (None for a workload without one)."""
    if not registry.get(r.workload).model:
        return None
    return _model(r.model, r.numerics)


@lru_cache(maxsize=16)
def _model(spec_: str | TransformerModel | None, numerics: Numerics) -> TransformerModel:
    from symroof.models import TransformerModel  # see the note at the top

    m = spec_ if isinstance(spec_, TransformerModel) else load_model(spec_)
    if not numerics.per_kind:
        return m
    return m.with_precision(weights=numerics.weights, kv_cache=numerics.kv_cache,
                            activations=numerics.activations)


def load_model(text: str | None) -> TransformerModel:
    """A model from its spec: a preset name in any case, a config.json, or a folder
    holding one; None is the seeds' symbolic model (L, D, H)."""
    import os  # see the note at the top

    from symroof import symbols as s  # likewise
    from symroof.models import names, resolve, transformer  # likewise

    if text is None:
        return transformer(name="symbolic", layers=s.L, d_model=s.D, heads=s.H)
    if not isinstance(text, str):
        raise SymroofError(f"model: expected a preset name, a config.json or a model, got "
                           f"{type(text).__name__}")
    if os.path.isdir(text):
        path = os.path.join(text, "config.json")
        if not os.path.isfile(path):
            raise SymroofError(f"--model {text}: a folder, but it holds no config.json")
        return resolve(path)
    lower = {n.lower(): n for n in names()}
    return resolve(lower.get(text.lower(), text) if not text.endswith(".json") else text)


def spec(r: Request) -> HardwareSpec:
    """The request's chip (a request without one is an error)."""
    from symroof import hardware  # see the note at the top

    if r.chip is None:
        raise SymroofError(f"{r.workload}: the request names no chip")
    return hardware.resolve(r.chip)


def analysis(r: Request) -> Analysis:
    """The request's workload, built once per workload, options, model, layout and formats.

    >>> a = analysis(make("decode", model="seed-6.4b"))
    >>> a.graph.name
    'seed-6.4b-decode'
    """
    return _analysis(r.workload, r.options, r.model, r.layout, r.numerics,
                     tuple(sorted(r.names)), r.fixed, r.keywords)


@lru_cache(maxsize=16)
def _analysis(workload: str, options: tuple[tuple[str, object], ...],
              model_: str | TransformerModel | None, layout: Layout, numerics: Numerics,
              names: tuple[tuple[str, str], ...], fixed: Fixed = (),
              keywords: Keywords = ()) -> Analysis:
    entry = registry.get(workload)
    opts = {**entry.keywords(entry.check(dict(options), "workload")), **dict(keywords)}
    at: dict[sp.Symbol, sp.Expr | None] = dict(fixed)
    args = tuple(tuple(at.get(y, y) for y in x) if isinstance(x, tuple) else at.get(x, x)
                 for x in entry.arguments())
    while args and (args[-1] is None or (isinstance(args[-1], tuple)
                                         and all(y is None for y in args[-1]))):
        args = args[:-1]  # left out: the builder's default (checked: only the last ones)
    if not entry.model:
        return entry.builder(*args, **opts)
    from symroof.workloads.parallel import check_layout  # see the note at the top

    m = _model(model_, numerics)
    spell = {**_PLAIN, **dict(names)}
    lay = {k: getattr(layout, k) for k in entry.layout}
    if entry.layout:
        check_layout(m, tp=layout.tp, pp=layout.pp, microbatches=layout.microbatches,
                     names=(spell["tp"], spell["pp"], spell["microbatches"]))
    return entry.builder(m, *args, **opts, **lay)


def rows(r: Request) -> Iterator[dict[sp.Symbol, sp.Expr]]:
    """Each row of values, in the order given, with ``b`` filled in where the analysis
    keeps it free (:meth:`Request.fill`); made one at a time."""
    from symroof.evaluate import product  # see the note at the top

    return product(dict(r.sets), r.name("sets"), r.fill())


def row_count(r: Request) -> int:
    """How many rows the request has."""
    n = 1
    for _, values in r.sets:
        n *= len(values)
    return n


def points(r: Request, *, compiled: bool = False) -> Iterator[Point]:
    """The request's rows evaluated (:class:`symroof.evaluate.Point`, with the roofline
    on its chip): exactly, or with ``compiled`` in float64 from compiled formulas
    (:mod:`symroof.compiled.numeric`). The rows were checked when the request was made; nothing is
    checked again."""
    a = analysis(r)
    hw = None if r.chip is None else spec(r)
    options = _roofline_options(r) if hw is not None else {}
    found: Iterator[Point]
    if compiled:
        from symroof import compiled as fast  # numpy: only on this path

        found = fast.points(a, rows(r), hw=hw, precision=r.numerics.peak, checked=True,
                            **options)
    else:
        from symroof.evaluate import points_at  # see the note at the top

        found = points_at(a, rows(r), spec=hw, peak=r.numerics.peak, **options)
    return found


def served(r: Request, found: Iterator[Point]) -> Iterator[Point | ServingRow]:
    """``found`` (the request's points), each with what the request asks beside a decode
    step: the time to first token and speculative decoding (a
    :class:`symroof.serving.ServingRow`); the points themselves where it asks neither."""
    if r.chip is None or (r.prompt is None and r.draft is None):
        return found
    return _served(r, spec(r), found)


def _served(r: Request, hw: HardwareSpec, found: Iterator[Point]) -> Iterator[ServingRow]:
    """Each decode point with the time to first token (a prefill of ``prompt``-token
    prompts at the point's batch, as one step) and speculative decoding, where asked."""
    from symroof.evaluate import roofline  # see the note at the top
    from symroof.options import Logits  # likewise
    from symroof.serving import ServingRow, speculative  # likewise
    from symroof.symbols import B, S, b  # likewise
    from symroof.workloads.transformer import prefill  # likewise

    m = model(r)
    assert m is not None  # decode takes a model
    lay = r.layout
    ttft = None if r.prompt is None else prefill(
        m, B, r.prompt, logits=Logits.LAST, tp=lay.tp, pp=lay.pp,
        microbatches=lay.microbatches, expert_reads=lay.expert_reads)
    draft = None if r.draft is None else _model(r.draft.model, r.numerics)
    for p in found:
        first = None
        if ttft is not None:
            free = ttft.flops.free_symbols | ttft.bytes.free_symbols
            first = roofline(ttft, hw, precision=r.numerics.peak,
                             subs={k: v for k, v in p.values.items() if k in (B, b) and k in free},
                             efficiency=r.efficiency, link=r.link,
                             collective=r.collective, latency=r.latency)
        spec_ = None if r.draft is None or draft is None else speculative(
            m, draft, hw, batch=p.values.get(B, B), context=p.values.get(S, S),
            draft_tokens=r.draft.tokens, acceptance=r.draft.acceptance, tp=lay.tp,
            draft_tp=r.draft.tp, precision=r.numerics.peak, link=r.link,
            collective=r.collective, latency=r.latency, expert_reads=lay.expert_reads)
        yield ServingRow(p, first, spec_)


def _roofline_options(r: Request) -> dict[str, Any]:
    """What the roofline of each row takes beyond the values: the memory level, link,
    efficiency and reserve; a prefill's cache (it writes the cache it then holds); no
    footprint for a training step (its memory is symroof train's)."""
    opts: dict[str, Any] = {"unit": r.unit, "level": r.level, "efficiency": r.efficiency,
                            "link": r.link, "reserve": r.reserve,
                            "footprint": r.workload != "training",
                            "collective": r.collective, "latency": r.latency}
    if r.workload == "prefill":
        from symroof.serving import kv_cache_per_device  # see the note at the top
        from symroof.symbols import B, S  # likewise

        m = model(r)
        assert m is not None  # a model workload
        opts["kv_cache"] = kv_cache_per_device(m, batch=B, context=S, tp=r.layout.tp,
                                               pp=r.layout.pp)
    return opts


# -- loose input in -----------------------------------------------------------------------


def make(workload: str, *, options: Mapping[str, object] | None = None,
         model: str | TransformerModel | None = None, tp: object = 1, pp: object = 1,
         microbatches: object = 1, expert_reads: ExpertReads | str = ExpertReads.EXPECTED,
         precision: Precision | str | None = None, weights: Precision | str | None = None,
         kv_cache: Precision | str | None = None, activations: Precision | str | None = None,
         chip: str | HardwareSpec | None = None,
         sets: Mapping[object, object] | Sequence[str] | None = None,
         unit: str | None = None, level: str | None = None, link: str | None = None,
         efficiency: object = 1, reserve: object = 0, prompt: object | None = None,
         draft: Draft | None = None, numerics: Numerics | None = None,
         names: Mapping[str, str] | None = None, collective: str = "ring",
         latency: bool = True, fixed: Mapping[object, object] | None = None,
         keywords: Mapping[str, object] | None = None) -> Request:
    """A checked :class:`Request` from loose input: the formats resolved once
    (:meth:`Numerics.resolve`), options by name or member, ``sets`` as ``NAME=V[,V...]``
    texts (the safe parser's syntax) or a mapping of symbols or their names to a value or
    a sequence of values; ``fixed`` maps some of the workload's symbols (or their names)
    to the one value each is built at (a number or an expression; a symbol at itself is
    not fixed; None leaves a last, defaulted argument out); ``keywords`` gives the
    builder's other keyword-only parameters (:func:`keywords_of`); ``model`` is a
    preset's name, a config.json or a model; ``numerics``, resolved by the caller, stands for
    the four formats. ``names`` spells the fields in errors (the CLI's flags).

    >>> r = make("attention", fixed={"D": 4096, "H": 32}, options={"unfused": "materialize_once"})
    >>> analysis(r).intensity
    256*S/(b*(S + 512))
    >>> make("attention", fixed={"B": 2})
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: fixed B: attention is not built over B (its symbols: S, D, H)
    """
    spell = {**_PLAIN, **(names or {})}
    if numerics is None:
        numerics = Numerics.resolve(precision=precision, weights=weights, kv_cache=kv_cache,
                                    activations=activations, names=spell)
    elif any(x is not None for x in (precision, weights, kv_cache, activations)):
        raise SymroofError("request: give numerics or the formats, not both")
    entry = registry.get(workload)
    opts = tuple(entry.check(options or {}, spell["workload"]).items())
    layout = Layout(_count(tp, spell["tp"]), _count(pp, spell["pp"]),
                    _count(microbatches, spell["microbatches"]),
                    option(ExpertReads, expert_reads, spell["expert_reads"]))
    from symroof.ir import as_expr  # see the note at the top

    common: dict[str, Any] = dict(
        workload=workload, options=opts, model=model, layout=layout, numerics=numerics,
        chip=chip, unit=unit, level=level, link=link,
        efficiency=as_expr(efficiency, "efficiency"), reserve=as_expr(reserve, "reserve"),
        prompt=None if prompt is None else as_expr(prompt, spell.get("prompt", "prompt")),
        draft=draft, names=tuple(sorted((names or {}).items())),
        collective=_collective(collective, spell.get("collective", "collective")),
        latency=_flag(latency, spell.get("latency", "latency")),
        fixed=_fixed(entry, fixed or {}, spell["fixed"]),
        keywords=_keywords(keywords or {}, spell["keywords"]))
    bare = Request(**common)  # checked without values: their names need the analysis
    if not sets:
        return bare
    return Request(**{**common, "sets": _sets(bare, sets)})


def _collective(value: object, what: str) -> str:
    from symroof.passes.shard import CollectiveAlgorithm  # see the note at the top

    return option(CollectiveAlgorithm, value, what).value


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise SymroofError(f"{what}: expected true or false, got {value!r}")
    return value


def _count(value: object, what: str) -> int:
    if isinstance(value, sp.Integer):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SymroofError(f"{what}: expected a positive integer, got {value!r}")
    return value


def _fixed(entry: registry.Entry, fixed: Mapping[object, object], what: str) -> Fixed:
    """``fixed`` as the workload's symbols with one value each (parsed, not yet checked:
    the Request checks them; a name that is none of its symbols is an error there); a
    symbol at itself is left out (it is not fixed), None kept (the argument left out)."""
    from symroof.ir import as_expr  # see the note at the top
    from symroof.symbols import CANONICAL  # likewise

    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in arguments(entry)})
    out: list[tuple[sp.Symbol, sp.Expr | None]] = []
    for key, raw in fixed.items():
        name = key.name if isinstance(key, sp.Symbol) else str(key)
        sym = key if isinstance(key, sp.Symbol) else table.get(name)
        if not isinstance(sym, sp.Symbol):
            raise _not_built_over(what, name, entry)
        if raw is None:
            out.append((sym, None))
        elif raw != sym:
            out.append((sym, as_expr(raw, f"{what} {name}")))
    return tuple(out)


def _keywords(keywords: Mapping[str, object], what: str) -> Keywords:
    """``keywords`` as names with one value each (parsed, not yet checked: the Request
    checks them against the builder's parameters)."""
    from symroof.ir import as_expr  # see the note at the top

    out: list[tuple[str, sp.Expr]] = []
    for key, raw in keywords.items():
        if not isinstance(key, str):
            raise SymroofError(f"{what}: expected parameter names as keys, got {key!r}")
        out.append((key, as_expr(raw, f"{what} {key}")))
    return tuple(out)


def _sets(bare: Request, sets: Mapping[object, object] | Sequence[str]) -> Rows:
    """``sets`` as symbols of the analysis with their values (parsed, not yet checked:
    the Request checks them)."""
    from symroof.ir import as_expr  # see the note at the top
    from symroof.parse import parse_assignment, parse_assignments  # likewise
    from symroof.symbols import CANONICAL  # likewise

    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in bare.free})
    what = bare.name("sets")
    if isinstance(sets, str) or not isinstance(sets, Mapping):
        return tuple(parse_assignments(sets, table, what=what).items())
    out: dict[sp.Symbol, tuple[sp.Expr, ...]] = {}
    for key, raw in sets.items():
        name = key.name if isinstance(key, sp.Symbol) else key
        sym = table.get(name) if isinstance(name, str) else None
        if not isinstance(sym, sp.Symbol) or (isinstance(key, sp.Symbol) and key != sym):
            raise SymroofError(f"{what} {key}: not a symbol of {bare.workload} (its symbols: "
                               f"{', '.join(sorted(x.name for x in bare.free)) or 'none'})")
        if isinstance(raw, str):
            out[sym] = parse_assignment(f"{name}={raw}", table, what=what)[1]
            continue
        many = raw if isinstance(raw, (list, tuple)) else (raw,)
        out[sym] = tuple(as_expr(v, f"{what} {name}") for v in many)
    return tuple(out.items())
