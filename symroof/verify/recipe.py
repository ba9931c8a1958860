"""The recipe language of claim files: how the engine computes a claimed figure.

A recipe is a node: a number, an expression string (the safe parser's syntax over the
canonical symbols, the claim file's declared symbols and names bound by ``let``), or a
table with one kind of key. Nothing is evaluated as Python, and only the operations
listed in :data:`OPERATIONS` can be called.

- ``{let = {name = node, ...}, expr = "...", subs = {...}}``: bind names, then an expression.
- ``{workload = W, q = "F"}``: a workload's named quantity (:attr:`Analysis.quantities`:
  F, Q, I, F_weights, F_attention, Q_<kind>, tokens; ``op_F:<op>``/``op_Q:<op>`` for one op).
  ``W = {builder = "decode", model = M, args = [...], kwargs = {...}, options = {...},
  tile = {M = "T"}, fuse = [["a", "b"]], convention = {...}}`` or ``{graph = [...]}``.
- ``{model = M, q = "params"}``; ``M`` is a preset name, ``{preset = "...", weights =
  "int4", kv_cache = "fp8", activations = "bf16", bytes = "b", replace = {...}}`` or
  ``{transformer = {layers = "L", d_model = "D", heads = "H", ...}}``.
- ``{hardware = "h100-sxm", q = "ridge", precision = "bf16", unit = "matrix", level =
  "hbm", ops_per_mac = 2}`` (q: peak, bandwidth, ridge, capacity).
- ``{memory = {model = M, batch = ..., context = ..., training = false}, q = "kv_cache"}``.
- ``{capacity = {model = M, hardware = ..., context = ..., tp = 1, precision = "bf16"}}``.
- ``{roofline = {workload = W, hardware = ..., precision = ..., subs = {...},
  devices = 1}, q = "time_s"}``; ``devices = n`` is n chips in ideal tensor parallelism
  (peak and bandwidth n times, no communication), as the seeds' TP table assumes.
- ``{roofline_formula = {F = node, Q = node, peak = node, bandwidth = node, tokens =
  node}, q = "time_s"}``: the roofline's algebra on symbols.
- ``{limit = node, var = "B", to = "oo"}``, ``{crossover = {lhs, rhs, var}, index = 0}``,
  ``{curve = {lhs, rhs, x, y}, q = "expr" | "invariant"}``, ``{theta = node, small =
  [["S", "D"]]}``, ``{sensitivity = node, var = "T"}``, ``{min = [...]}``, ``{max = [...]}``.
- ``{operation = "tile_for_ridge", args = [...]}`` for the operations in :data:`OPERATIONS`.
- ``{over_hardware = [...], node = ..., reduce = "min"}`` (``"$hw"`` in the node).

Every node may carry ``subs = {...}`` applied to its value (each symbol one the node
uses; a value at a point: a dimension may be fractional or 0 there, never negative).

A recipe meets the command line's standard (:mod:`symroof.budget`): every leaf, ``let``
binding and node value is within the size, degree and digits limits; substitutions are
refused before they would build a number past the digits limit; algebra on values that
are not light, and a workload or model built from sizes that are not, runs in the
guarded child under the seconds and memory limits. Each node takes only the keys
:mod:`symroof.verify.grammar` lists for it.

>>> ctx = Context({})
>>> evaluate({"workload": {"builder": "gemm", "args": ["n", "n", "n"]}, "q": "I",
...           "subs": {"n": 8192, "b": 2}}, ctx, {}, "claim 'x'")
8192/3
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import sympy as sp

from symroof import bounds, hardware
from symroof.budget import guarded, light
from symroof.errors import SymroofError, suggest
from symroof.evaluate import Roofline, roofline
from symroof.footprint import capacity, memory
from symroof.parse import FUNCTIONS
from symroof.solve import crossover, crossover_curve, limit, sensitivity, theta
from symroof.symbols import CANONICAL
from symroof.verify.builds import (_KIND_NAMES, _OP_PARTS, BUILDERS, _workload_q, model,
                                   workload)
from symroof.verify.context import (Context, _algebra, _args, _bounded, _brief, _calling,
                                    _count, _expr, _flag, _Heavy, _index, _option,
                                    _structural, _subs, _table, _text, check_value, declare,
                                    declare_each)
from symroof.verify.grammar import NODE_KEYS, check_keys
from symroof.verify.named import chip
from symroof.workloads.attention import ElementwiseFlops

# Context, declare, declare_each and check_value live in symroof.verify.context, model,
# workload and BUILDERS in symroof.verify.builds; they are this module's names too.
__all__ = ["ASSUMPTIONS", "Context", "declare", "declare_each", "evaluate", "model", "workload",
           "check_value", "OPERATIONS", "BUILDERS", "CONSTANTS", "QUANTITY_NAMES"]


#: Named operations a recipe may call (nothing else is reachable from a claim file).
OPERATIONS: Mapping[str, Callable[..., Any]] = {
    "tile_for_ridge": bounds.tile_for_ridge, "largest_square_tile": bounds.largest_square_tile,
    "inner_loop_intensity": bounds.inner_loop_intensity, "waves": bounds.waves,
    "gemm_io_lower_bound": bounds.gemm_io_lower_bound,
    "flash_attention_hbm_accesses": bounds.flash_attention_hbm_accesses,
    "standard_attention_hbm_accesses": bounds.standard_attention_hbm_accesses,
}

#: Named constants a recipe may read (per-element FLOP counts of non-contraction ops).
CONSTANTS: Mapping[str, int] = {f"elementwise_flops.{k}": v
                                for k, v in vars(ElementwiseFlops()).items()}

_ROOFLINE_FIELDS = ("time_s", "compute_time_s", "memory_time_s", "time_serial_s",
                    "tokens_per_s", "tokens_per_s_per_user", "attainable", "peak", "bandwidth",
                    "ridge", "intensity", "flops", "bytes", "margin")


#: Assumptions a claim may state, each with how the recipe honours it. The verdict is
#: computed under them; what the engine models beyond them is a second line.
ASSUMPTIONS: Mapping[str, str] = {
    "ignores communication": "every roofline node drops its communication time (the "
                             "all-reduces of a sharded workload: their bytes and their "
                             "latency); the figure with communication is shown as a "
                             "second line",
    "FP16": "every roofline node runs at fp16 (2-byte values, the FP16 peak)",
    "BF16": "every roofline node runs at bf16",
    "FP8": "every roofline node runs at fp8",
}
_PRECISION_ASSUMPTIONS = {"FP16": "fp16", "BF16": "bf16", "FP8": "fp8"}


def honour(node: object, assumptions: tuple[str, ...], where: str) -> None:
    """Refuse ``assumptions`` a recipe cannot honour: one that needs a roofline node in a
    recipe with none, or a precision a roofline node contradicts."""
    rooflines = _roofline_specs(node)
    for a in assumptions:
        if a not in ASSUMPTIONS:
            raise SymroofError(f"{where}: the recipe cannot honour {a!r}")
        if not rooflines:
            raise SymroofError(f"{where}: the recipe cannot honour {a!r}: it has no roofline "
                               "node to apply it to")
        want = _PRECISION_ASSUMPTIONS.get(a)
        for spec in rooflines:
            got = spec.get("precision", "bf16") if isinstance(spec, Mapping) else None
            if want is not None and got != want:
                raise SymroofError(f"{where}: the recipe cannot honour {a!r}: a roofline node "
                                   f"runs at precision {got!r}")


def _roofline_specs(node: object) -> list[Any]:
    if isinstance(node, Mapping):
        found = [node["roofline"]] if "roofline" in node else []
        for k, v in node.items():
            if k != "roofline":
                found += _roofline_specs(v)
        return found
    if isinstance(node, list):
        return [x for v in node for x in _roofline_specs(v)]
    return []



# -- the interpreter ------------------------------------------------------------------


def evaluate(node: object, ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    """The value of a recipe node (an expression within the budget's limits)."""
    if not isinstance(node, Mapping):
        return _expr(node, ctx, env, where)
    kind = next((k for k in _KINDS if k in node), None)
    if kind is None:
        raise SymroofError(f"{where}: a recipe node needs one of {', '.join(_KINDS)}; got keys "
                           f"{', '.join(sorted(map(str, node))) or '(none)'}")
    check_keys(node, NODE_KEYS[kind], where)
    before, ctx.mentioned = ctx.mentioned, set()
    try:
        value = _KINDS[kind](node, ctx, env, f"{where}.{kind}")
        mine = set(ctx.mentioned)
    finally:
        ctx.mentioned |= before
    if isinstance(value, bool) or not isinstance(value, (int, sp.Expr)):
        raise SymroofError(f"{where}: the {kind} node gives {_brief(value)}, not a value")
    value = sp.Integer(value) if isinstance(value, int) else value
    if value.has(sp.nan, sp.zoo):
        raise SymroofError(f"{where}: the {kind} node's value is undefined ({value})")
    return _bounded(_subs(node, value, mine, ctx, env, where), ctx, where)


def formula_of(node: object, ctx: Context, where: str) -> Any:
    """``evaluate(node, ctx, {}, where)``, remembered per claim file: the rows of a table
    and the alternatives of several claims share one recipe, whose value (before any
    claim's substitution) depends only on the recipe and the assumptions in force. The
    symbols its inputs use and the Requests it ran (``ctx.ran``) are recorded again on
    each use; an error is never remembered
    (each claim names its own field in it)."""
    if ctx.twins or ctx.light_only or ctx.in_guard:  # twins log what each build meets
        return evaluate(node, ctx, {}, where)
    key = json.dumps([node, sorted(ctx.assumptions)], sort_keys=True, default=str)
    hit = ctx.formulas.get(key)
    if hit is None:
        before, ctx.mentioned = ctx.mentioned, set()
        ran = len(ctx.ran)
        try:
            value = evaluate(node, ctx, {}, where)
            hit = ctx.formulas[key] = (value, frozenset(ctx.mentioned), tuple(ctx.ran[ran:]))
        finally:
            ctx.mentioned |= before
    else:
        ctx.mentioned |= hit[1]
        ctx.ran += hit[2]
    return hit[0]


def _let(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    scope = dict(env)
    for name, sub in _table(node["let"], where).items():
        if not name.isidentifier() or name.startswith("_") or name in CANONICAL \
                or name in ctx.declared or name in FUNCTIONS or name == "oo":
            raise SymroofError(f"{where}.{name}: a let name must be a new identifier (not a "
                               "symbol's or a function's name)")
        scope[name] = evaluate(sub, ctx, scope, f"{where}.{name}")
    if "expr" not in node:
        raise SymroofError(f"{where}: let needs an expr that uses the names it binds")
    return _expr_node(node, ctx, scope, where)


@functools.lru_cache(maxsize=1024)  # recipes of several claims tidy the same ratio
def _tidy(value: sp.Expr) -> sp.Expr:
    return sp.factor_terms(sp.cancel(value))  # a ratio of byte counts reads as 2, not x/y


def _expr_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    value = _expr(node["expr"], ctx, env, f"{where}.expr")
    if value.free_symbols and not value.has(sp.Min, sp.Max, sp.Piecewise, sp.floor, sp.ceiling):
        value = _algebra(f"{where}: cancelling {_short(value)}", _tidy, value)
    return value


def _short(e: sp.Expr) -> str:
    text = str(e) if e.is_Atom or len(e.args) < 40 else f"{type(e).__name__}(...)"
    return text if len(text) <= 80 else text[:77] + "..."


@_structural
def _workload_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    a = workload(node["workload"], ctx, env, where)
    return _workload_q(a, _text(node.get("q", "I"), f"{where}.q"), where)


_MODEL_QUANTITIES = ("params", "kv_bytes_per_token", "weight_bytes_total", "layers", "d_model",
                     "heads", "kv_heads", "head_dim", "d_ff", "vocab")


@_structural
def _model_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    q = _text(node.get("q", "params"), f"{where}.q")
    if q not in _MODEL_QUANTITIES:
        raise SymroofError(f"{where}.q: unknown model quantity {q!r}"
                           f"{suggest(q, _MODEL_QUANTITIES)}; expected one of "
                           f"{', '.join(_MODEL_QUANTITIES)}")
    m = model(node["model"], ctx, env, where)
    return _calling(f"{where}.q", getattr, m, q)


def _hardware_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    name = _text(node["hardware"], where)
    spec = hardware.get(env.get("$hw", name) if name == "$hw" else name)
    q = _text(node.get("q", "ridge"), f"{where}.q")
    precision = _option(node, "precision", where, "bf16")
    unit, level = _option(node, "unit", where, None), _option(node, "level", where, None)
    ops = node.get("ops_per_mac", 2)
    if isinstance(ops, bool) or ops not in (1, 2):
        raise SymroofError(f"{where}.ops_per_mac: expected 1 or 2, got {_brief(ops)}")
    assert precision is not None
    if q not in _HARDWARE_QUANTITIES:
        raise SymroofError(f"{where}.q: unknown hardware quantity {q!r}"
                           f"{suggest(q, _HARDWARE_QUANTITIES)}; expected peak, ridge, "
                           "bandwidth or capacity")
    if q == "peak":
        value = spec.peak(precision, unit, ops)
    elif q == "ridge":
        value = spec.ridge(precision, unit, level, ops)
    elif q == "bandwidth":
        value = spec.bandwidth(level)
    if q != "capacity":
        return _chip_twin(q, spec, precision, unit, level, ops, value, ctx)
    cap = spec.capacity(level)
    if cap is None:
        raise SymroofError(f"{where}: {spec.name} has no published capacity")
    return cap


_HARDWARE_QUANTITIES = ("peak", "ridge", "bandwidth", "capacity")


def _chip_twin(q: str, spec: hardware.HardwareSpec, precision: str, unit: str | None,
               level: str | None, ops: int, value: sp.Expr, ctx: Context) -> sp.Expr:
    """``value``, or (deriving a named form with twin_numbers) the chip's π and β."""
    if not ctx.twin_numbers:
        return value
    found = chip(q, spec.peak(precision, unit, ops), spec.bandwidth(level), value)
    if found is None:
        return value
    ctx.twin_seen.append((found[1], None))
    return found[0]


_PARTS = ("weights", "kv_cache", "activations", "gradients", "optimizer_state", "total")


@_structural
def _memory_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    s = _table(node["memory"], where, "memory")
    q = _text(node.get("q", "kv_cache"), f"{where}.q")
    if q not in _PARTS:
        raise SymroofError(f"{where}.q: unknown footprint part {q!r}{suggest(q, _PARTS)}; "
                           f"expected one of {', '.join(_PARTS)}")
    fp = memory(model(s.get("model"), ctx, env, f"{where}.model"),
                batch=_expr(s.get("batch", 1), ctx, env, f"{where}.batch"),
                context=_expr(s.get("context", 1), ctx, env, f"{where}.context"),
                training=_flag(s, "training", where, False))
    return getattr(fp, q)


@_structural
def _capacity_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    s = _table(node["capacity"], where, "capacity")
    return capacity(model(s.get("model"), ctx, env, f"{where}.model"),
                    _text(s.get("hardware"), f"{where}.hardware"),
                    context=_expr(s.get("context"), ctx, env, f"{where}.context"),
                    tp=_count(s.get("tp", 1), ctx, env, f"{where}.tp"),
                    precision=_option(s, "precision", where, "bf16") or "bf16")


def _roofline_q(r: Roofline, q: str, devices: int, where: str) -> Any:
    if devices != 1:  # ideal tensor parallelism: n chips' peak and bandwidth, no communication
        r = Roofline(hardware=r.hardware, precision=r.precision, level=r.level, flops=r.flops,
                     bytes=r.bytes, intensity=r.intensity, peak=r.peak * devices,
                     bandwidth=r.bandwidth * devices, ridge=r.ridge, tokens=r.tokens)
    if q not in _ROOFLINE_FIELDS:
        raise SymroofError(f"{where}.q: unknown roofline quantity {q!r}"
                           f"{suggest(q, _ROOFLINE_FIELDS)}; expected one of "
                           f"{', '.join(_ROOFLINE_FIELDS)}")
    if q == "tokens_per_s_per_user":
        return 1 / r.time_s
    value = getattr(r, q)
    if value is None:
        raise SymroofError(f"{where}.q: {q} is undefined for this workload")
    return value


@_structural
def _roofline_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    s = _table(node["roofline"], where, "roofline")
    a = workload(s.get("workload"), ctx, env, f"{where}.workload")
    subs = {}
    for k, v in _table(s.get("subs", {}), f"{where}.subs").items():
        sym = ctx.symbol(k, f"{where}.subs")
        subs[sym] = check_value(sym, _expr(v, ctx, env, f"{where}.subs.{k}"),
                                f"{where}.subs.{k}")
    r = roofline(a, _text(s.get("hardware"), f"{where}.hardware"),
                 precision=_option(s, "precision", where, "bf16") or "bf16", subs=subs,
                 unit=_option(s, "unit", where, None), level=_option(s, "level", where, None),
                 latency=_flag(s, "latency", where, True))
    if "ignores communication" in ctx.assumptions:  # bandwidth and latency terms alike
        r = dataclasses.replace(r, communication=sp.Integer(0), link_latency_s=sp.Integer(0))
    devices = _count(s.get("devices", 1), ctx, env, f"{where}.devices")
    return _roofline_q(r, _text(node.get("q", "time_s"), f"{where}.q"), devices, where)


def _formula_q(part: Mapping[str, sp.Expr], tokens: sp.Expr | None, q: str, where: str) -> Any:
    no_format: Any = "-"  # a roofline of symbols has no chip, number format or level
    r = Roofline(hardware="symbolic", precision=no_format, level="-", flops=part["F"],
                 bytes=part["Q"], intensity=part["F"] / part["Q"], peak=part["peak"],
                 bandwidth=part["bandwidth"], ridge=part["peak"] / part["bandwidth"],
                 tokens=tokens)
    return _roofline_q(r, q, 1, where)


def _roofline_formula_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                           where: str) -> Any:
    s = _table(node["roofline_formula"], where, "roofline_formula")
    missing = [k for k in ("F", "Q", "peak", "bandwidth") if k not in s]
    if missing:
        raise SymroofError(f"{where}: missing {', '.join(missing)} (a roofline formula takes "
                           "F, Q, peak, bandwidth and optionally tokens)")
    part = {k: evaluate(s[k], ctx, env, f"{where}.{k}") for k in ("F", "Q", "peak", "bandwidth")}
    for k in ("Q", "peak", "bandwidth"):
        if part[k] == 0:
            raise SymroofError(f"{where}.{k}: expected a non-zero value")
    tokens = evaluate(s["tokens"], ctx, env, f"{where}.tokens") if "tokens" in s else None
    q = _text(node.get("q", "time_s"), f"{where}.q")
    return guarded(f"{where}: the roofline's {q}", _formula_q, part, tokens, q, where,
                   unguarded=_all_light([*part.values(), tokens]))


def _all_light(values: list[sp.Expr | None]) -> bool:
    return all(v is None or light(v) for v in values)


def _limit_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    value = evaluate(node["limit"], ctx, env, where)
    names = node.get("var")
    to = node.get("to", "oo")
    target = sp.oo if to == "oo" else _expr(to, ctx, env, f"{where}.to")
    for name in names if isinstance(names, list) and names else [names]:
        var = ctx.symbol(_text(name, f"{where}.var"), f"{where}.var")
        value = _calling(where, limit, value, var, target)
    return value


def _crossover_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                    where: str) -> Any:
    s = _table(node["crossover"], where, "crossover")
    var = ctx.symbol(_text(s.get("var"), f"{where}.var"), f"{where}.var")
    index = _index(node, where)
    roots = _calling(where, crossover, evaluate(s.get("lhs"), ctx, env, f"{where}.lhs"),
                     evaluate(s.get("rhs"), ctx, env, f"{where}.rhs"), var)
    if not roots:
        raise SymroofError(f"{where}: the sides never cross: "
                           f"{getattr(roots, 'reason', '') or f'no positive solution in {var}'}")
    if index >= len(roots):
        raise SymroofError(f"{where}: {len(roots)} positive solution(s) in {var}, no index {index}")
    return roots[index].value


def _curve_value(c: Any, q: str) -> Any:
    return c.invariant if q == "invariant" else c.expr


def _curve_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    s = _table(node["curve"], where, "curve")
    x = ctx.symbol(_text(s.get("x"), f"{where}.x"), f"{where}.x")
    y = ctx.symbol(_text(s.get("y"), f"{where}.y"), f"{where}.y")
    q = node.get("q", "expr")
    if q not in ("expr", "invariant"):
        raise SymroofError(f"{where}.q: expected \"expr\" or \"invariant\", got {_brief(q)}")
    index = _index(node, where)
    curves = _calling(where, crossover_curve, evaluate(s.get("lhs"), ctx, env, f"{where}.lhs"),
                      evaluate(s.get("rhs"), ctx, env, f"{where}.rhs"), x, y)
    if not curves:
        raise SymroofError(f"{where}: the two sides never meet for positive {y}")
    if index >= len(curves):
        raise SymroofError(f"{where}: {len(curves)} curve(s), no index {index}")
    c = curves[index]
    value = guarded(f"{where}: the curve's {q}", _calling, where, _curve_value, c, q,
                    unguarded=light(c.expr))
    if value is None:
        raise SymroofError(f"{where}: the curve is not a power law in {x}")
    return value


def _theta_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    raw = node.get("small", [])
    if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 for p in raw):
        raise SymroofError(f"{where}.small: expected a list of [x, y] pairs of symbol names "
                           f"(x << y), got {_brief(raw)}")
    small = [(ctx.symbol(x, f"{where}.small"), ctx.symbol(y, f"{where}.small")) for x, y in raw]
    value = evaluate(node["theta"], ctx, env, where)
    if value.has(sp.Min, sp.Max, sp.Piecewise, sp.floor, sp.ceiling):
        raise SymroofError(f"{where}: {_short(value)} has Min/Max/Piecewise/floor/ceiling; take "
                           "theta per branch")
    return _calling(where, theta, value, small)


def _sensitivity_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                      where: str) -> Any:
    var = ctx.symbol(_text(node.get("var"), f"{where}.var"), f"{where}.var")
    return _calling(where, sensitivity, evaluate(node["sensitivity"], ctx, env, where), var)


def _operation_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                    where: str) -> Any:
    name = _text(node["operation"], where)
    if name in CONSTANTS:
        if "args" in node or "kwargs" in node:
            raise SymroofError(f"{where}: {name} is a constant; it takes no args or kwargs")
        return sp.Integer(CONSTANTS[name])
    if name not in OPERATIONS:
        known = [*OPERATIONS, *CONSTANTS]
        raise SymroofError(f"{where}: unknown operation {name!r}{suggest(name, known)}; "
                           f"expected one of {', '.join(known)}")
    args = [evaluate(a, ctx, env, f"{where}.args") for a in _args(node, where)]
    kwargs = {k: v if isinstance(v, bool) else evaluate(v, ctx, env, f"{where}.kwargs.{k}")
              for k, v in _table(node.get("kwargs", {}), f"{where}.kwargs").items()}
    exprs = [*args, *(v for v in kwargs.values() if isinstance(v, sp.Basic))]
    return guarded(f"{where}: {name}", _apply, f"{where}: {name}", OPERATIONS[name], args,
                   kwargs, unguarded=_all_light(exprs))


def _apply(where: str, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    return _calling(where, fn, *args, **kwargs)


def _items(node: Mapping[str, Any], key: str, where: str) -> list[Any]:
    items = node[key]
    if not isinstance(items, list) or not items:
        raise SymroofError(f"{where}: expected a non-empty list, got {_brief(items)}")
    return items


def _extreme(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str,
             key: str) -> Any:
    items = [evaluate(x, ctx, env, f"{where}[{i}]")
             for i, x in enumerate(_items(node, key, where))]
    pick = sp.Min if key == "min" else sp.Max
    return guarded(f"{where}: the {key} of {len(items)} values", pick, *items,
                   unguarded=_all_light(items))


def _over_hardware(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    reduce = node.get("reduce", "min")
    if reduce not in ("min", "max"):
        raise SymroofError(f"{where}.reduce: expected \"min\" or \"max\", got {_brief(reduce)}")
    if "node" not in node:
        raise SymroofError(f"{where}: over_hardware needs a node (with \"$hw\" for the chip)")
    names = [_text(n, f"{where}[{i}]") for i, n in enumerate(_items(node, "over_hardware",
                                                                     where))]
    values = [evaluate(node["node"], ctx, {**env, "$hw": name}, f"{where}[{name}]")
              for name in names]
    pick = sp.Max if reduce == "max" else sp.Min
    return guarded(f"{where}: the {reduce} over {len(values)} chips", pick, *values,
                   unguarded=_all_light(values))


_KINDS: dict[str, Callable[[Mapping[str, Any], Context, Mapping[str, Any], str], Any]] = {
    "let": _let, "expr": _expr_node, "workload": _workload_node, "model": _model_node,
    "hardware": _hardware_node, "memory": _memory_node, "capacity": _capacity_node,
    "roofline": _roofline_node, "roofline_formula": _roofline_formula_node,
    "limit": _limit_node, "crossover": _crossover_node, "curve": _curve_node,
    "theta": _theta_node, "sensitivity": _sensitivity_node, "operation": _operation_node,
    "min": lambda n, c, e, w: _extreme(n, c, e, w, "min"),
    "max": lambda n, c, e, w: _extreme(n, c, e, w, "max"),
    "over_hardware": _over_hardware,
}
assert set(_KINDS) == set(NODE_KEYS)

#: The names each kind of node reads by ``q``, from the interpreter's own tables (a
#: workload's ``F``, ``Q``, ``I``, ``F_weights``, ``F_attention`` and ``tokens`` are
#: :attr:`Analysis.quantities`; ``<part>:<op>`` names one op). :mod:`symroof.verify.reference`
#: documents each; a test fails on one without its line.
QUANTITY_NAMES: Mapping[str, tuple[str, ...]] = {
    "workload": ("F", "Q", "I", "F_weights", "F_attention", "tokens",
                 *(f"Q_{k}" for k in _KIND_NAMES), *(f"{p}:<op>" for p in _OP_PARTS)),
    "model": _MODEL_QUANTITIES, "hardware": _HARDWARE_QUANTITIES, "memory": _PARTS,
    "roofline": _ROOFLINE_FIELDS, "roofline_formula": _ROOFLINE_FIELDS,
    "curve": ("expr", "invariant"),
}
