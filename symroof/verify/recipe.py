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

Every node may carry ``subs = {...}`` applied to its value.

>>> ctx = Context({})
>>> evaluate({"workload": {"builder": "gemm", "args": ["n", "n", "n"]}, "q": "I",
...           "subs": {"n": 8192, "b": 2}}, ctx, {}, "claim 'x'")
8192/3
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof import bounds, hardware, workloads
from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError, suggest
from symroof.evaluate import Roofline, roofline
from symroof.footprint import capacity, memory
from symroof.ir import Graph
from symroof.models import TransformerModel, get, transformer
from symroof.parse import parse_expr
from symroof.passes import fuse, tile
from symroof.solve import crossover, crossover_curve, limit, sensitivity, theta
from symroof.symbols import CANONICAL, dim, quantity
from symroof.workloads.attention import ElementwiseFlops

__all__ = ["Context", "declare", "evaluate", "model", "workload", "OPERATIONS", "BUILDERS",
           "CONSTANTS"]

#: Workload builders a recipe may name.
BUILDERS: Mapping[str, Callable[..., Analysis]] = {
    "gemm": workloads.gemm, "gemv": workloads.gemv, "elementwise": workloads.elementwise,
    "conv2d": workloads.conv2d, "attention": workloads.attention,
    "prefill": workloads.prefill, "decode": workloads.decode, "training": workloads.training,
}
_MODEL_BUILDERS = ("prefill", "decode", "training")

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

# convention values passed to builders as they are (everything else is an expression)
_OPTION_KEYS = frozenset({"causal", "fused", "unfused", "ops", "flop_count", "flops", "traffic",
                          "logits", "lowering", "kv_write", "recompute", "projections"})
_STRING_FIELDS = frozenset({"mlp", "norm", "positions", "activation", "name"})
_ROOFLINE_FIELDS = ("time_s", "compute_time_s", "memory_time_s", "time_serial_s",
                    "tokens_per_s", "tokens_per_s_per_user", "attainable", "peak", "bandwidth",
                    "ridge", "intensity", "flops", "bytes", "margin")


@dataclass
class Context:
    """The names a claim file declares, and caches shared by its claims."""

    declared: Mapping[str, sp.Symbol]
    path: str = "<claims>"
    text: str = ""  # the claim file's text, to name the line of a field
    workloads: dict[str, Analysis] = field(default_factory=dict)
    models: dict[str, TransformerModel] = field(default_factory=dict)

    def symbol(self, name: str, where: str) -> sp.Symbol:
        if name in CANONICAL:
            return CANONICAL[name]
        if name in self.declared:
            return self.declared[name]
        raise SymroofError(f"{where}: unknown symbol {name!r}"
                           f"{suggest(name, [*CANONICAL, *self.declared])}; declare it in the "
                           "claim file's [symbols] table")


def declare(symbols: Mapping[str, object], where: str) -> dict[str, sp.Symbol]:
    """The claim file's ``[symbols]``: ``name = "dimension"`` (a positive integer) or
    ``"quantity"`` (a positive real: a peak, a bandwidth)."""
    out: dict[str, sp.Symbol] = {}
    for name, kind in symbols.items():
        if kind == "dimension":
            out[name] = dim(name)
        elif kind == "quantity":
            out[name] = quantity(name)
        else:
            raise SymroofError(f"{where} symbols.{name}: expected \"dimension\" or \"quantity\", "
                               f"got {kind!r}")
    return out


# -- leaves -------------------------------------------------------------------------


def _expr(text: object, ctx: Context, env: Mapping[str, sp.Expr], where: str) -> sp.Expr:
    if isinstance(text, bool):
        raise SymroofError(f"{where}: expected a number or an expression, got {text!r}")
    if isinstance(text, int):
        return sp.Integer(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise SymroofError(f"{where}: expected a finite number, got {text!r}")
        return sp.Rational(repr(text))
    if not isinstance(text, str):
        raise SymroofError(f"{where}: expected a number or an expression, got {text!r}")
    table: dict[str, sp.Basic] = {**CANONICAL, **ctx.declared}
    names = {n: sp.Dummy(n) for n, v in env.items() if isinstance(v, sp.Basic)}
    table.update(names)
    if "oo" not in table:
        table["oo"] = sp.oo
    value = parse_expr(text, table, what=where)
    return value.xreplace({names[n]: v for n, v in env.items()})


def _subs(node: Mapping[str, Any], value: Any, ctx: Context, env: Mapping[str, sp.Expr],
          where: str) -> Any:
    given = node.get("subs")
    if not given:
        return value
    mapping = {ctx.symbol(k, f"{where} subs"): _expr(v, ctx, env, f"{where} subs.{k}")
               for k, v in _table(given, f"{where} subs").items()}
    if isinstance(value, dict):
        return {k: v.xreplace(mapping) for k, v in value.items()}
    return value.xreplace(mapping)


def _table(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SymroofError(f"{where}: expected a table, got {type(value).__name__} {value!r}")
    return value


def _args(node: Mapping[str, Any], where: str) -> list[Any]:
    """A node's ``args``: a list (none when absent)."""
    raw = node.get("args", [])
    if not isinstance(raw, list):
        raise SymroofError(f"{where}.args: expected a list of arguments, got {raw!r}")
    return raw


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SymroofError(f"{where}: expected a name, got {value!r}")
    return value


# -- models and workloads -------------------------------------------------------------


def model(spec: object, ctx: Context, env: Mapping[str, sp.Expr], where: str) -> TransformerModel:
    """A model from a preset name or a table (see the module docstring)."""
    key = json.dumps(spec, sort_keys=True, default=str)
    if key in ctx.models:
        return ctx.models[key]
    if isinstance(spec, str):
        m = get(spec)
    else:
        s = _table(spec, where)
        if "preset" in s:
            m = get(_text(s["preset"], f"{where}.preset"))
        elif "transformer" in s:
            kw = {k: (v if k in _STRING_FIELDS or isinstance(v, bool) else
                      _expr(v, ctx, env, f"{where}.transformer.{k}"))
                  for k, v in _table(s["transformer"], f"{where}.transformer").items()}
            m = transformer(**kw)
        else:
            raise SymroofError(f"{where}: expected a preset name, {{preset = ...}} or "
                               f"{{transformer = {{...}}}}, got keys {sorted(s)}")
        if "replace" in s:
            m = m.replace(**{k: v if k in _STRING_FIELDS or isinstance(v, bool) else
                             _expr(v, ctx, env, f"{where}.replace.{k}")
                             for k, v in _table(s["replace"], f"{where}.replace").items()})
        if "bytes" in s:
            m = m.with_bytes(_expr(s["bytes"], ctx, env, f"{where}.bytes"))
        formats = {k: s[k] for k in ("weights", "kv_cache", "activations") if k in s}
        if formats:
            m = m.with_precision(**formats)
    ctx.models[key] = m
    return m


def _arg(value: object, ctx: Context, env: Mapping[str, sp.Expr], where: str) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return tuple(_arg(v, ctx, env, where) for v in value)
    return _expr(value, ctx, env, where)


def _graph(rows: object, ctx: Context, env: Mapping[str, sp.Expr], where: str) -> Graph:
    """A small custom graph: rows ``["input", name, [shape]]``, ``["elementwise", name,
    [inputs], flops_per_element]``, ``["reduce", name, input]``, ``["output", name]``."""
    if not isinstance(rows, list):
        raise SymroofError(f"{where}: expected a list of rows")
    g = Graph("claim")
    t: dict[str, Any] = {}
    for i, row in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(row, list) or len(row) < 2:
            raise SymroofError(f"{at}: expected [kind, name, ...]")
        kind, name = row[0], _text(row[1], at)
        try:
            if kind == "input":
                t[name] = g.input(name, tuple(_expr(x, ctx, env, at) for x in row[2]))
            elif kind == "weight":
                t[name] = g.weight(name, tuple(_expr(x, ctx, env, at) for x in row[2]))
            elif kind == "elementwise":
                fpe = _expr(row[3], ctx, env, at) if len(row) > 3 else 1
                t[name] = g.elementwise(*(t[x] for x in row[2]), name=name, flops_per_element=fpe)
            elif kind == "gemm":
                t[name] = g.gemm(t[row[2]], t[row[3]], name=name)
            elif kind == "reduce":
                t[name] = g.reduce(t[row[2]], name=name)
            elif kind == "output":
                g.output(t[name])
            else:
                raise SymroofError(f"{at}: unknown row kind {kind!r}; expected input, weight, "
                                   "elementwise, gemm, reduce, output")
        except KeyError as missing:
            raise SymroofError(f"{at}: no tensor {missing} defined above") from None
    return g


def workload(spec: object, ctx: Context, env: Mapping[str, sp.Expr], where: str) -> Analysis:
    """The analysis a workload table describes (cached per claim file)."""
    s = _table(spec, where)
    key = json.dumps([s, sorted(env.items(), key=str)], sort_keys=True, default=str)
    if key in ctx.workloads:
        return ctx.workloads[key]
    if "graph" in s:
        a = analyze(_graph(s["graph"], ctx, env, f"{where}.graph"))
    else:
        name = _text(s.get("builder"), f"{where}.builder")
        if name not in BUILDERS:
            raise SymroofError(f"{where}.builder: unknown workload {name!r}"
                               f"{suggest(name, BUILDERS)}; expected one of {', '.join(BUILDERS)}")
        args = [_arg(v, ctx, env, f"{where}.args") for v in _args(s, where)]
        if name in _MODEL_BUILDERS:
            args.insert(0, model(s.get("model"), ctx, env, f"{where}.model"))
        kwargs = {k: _arg(v, ctx, env, f"{where}.kwargs.{k}")
                  for k, v in _table(s.get("kwargs", {}), f"{where}.kwargs").items()}
        options = dict(_table(s.get("options", {}), f"{where}.options"))
        unknown = set(options) - _OPTION_KEYS
        if unknown:
            raise SymroofError(f"{where}.options: unknown option(s) {', '.join(sorted(unknown))}; "
                               f"expected some of {', '.join(sorted(_OPTION_KEYS))}")
        try:
            a = BUILDERS[name](*args, **kwargs, **options)
        except TypeError as err:
            raise SymroofError(f"{where}: {name}: {err}") from None
    a = _passes(a, s, ctx, env, where)
    ctx.workloads[key] = a
    return a


def _passes(a: Analysis, s: Mapping[str, Any], ctx: Context, env: Mapping[str, sp.Expr],
            where: str) -> Analysis:
    conv = a.convention
    g = a.graph
    if s.get("tile"):
        tiles = {_expr(k, ctx, env, f"{where}.tile"): _expr(v, ctx, env, f"{where}.tile.{k}")
                 for k, v in _table(s["tile"], f"{where}.tile").items()}
        g = tile(g, tiles)
    if s.get("fuse"):
        g = fuse(g, [set(group) for group in s["fuse"]])
    if g is not a.graph:
        a = Analysis(g, conv, a.tokens, a.assumptions)
    if s.get("convention"):
        a = a.with_convention(**_table(s["convention"], f"{where}.convention"))
    return a


def _workload_q(a: Analysis, q: str, where: str) -> sp.Expr:
    if q in a.quantities:
        return a.quantities[q]
    if ":" in q:
        what, _, op = q.partition(":")
        if op not in a.per_op:
            raise SymroofError(f"{where}.q: no op {op!r}{suggest(op, a.per_op)}")
        c = a.per_op[op]
        parts = {"op_F": c.flops, "op_Q": c.bytes, "op_Qr": c.bytes_read, "op_Qw": c.bytes_written}
        if what in parts:
            return parts[what]
    if q.startswith("Q_"):  # a kind this workload moves none of, or does not count
        return sp.Integer(0)
    raise SymroofError(f"{where}.q: unknown workload quantity {q!r}"
                       f"{suggest(q, a.quantities)}; expected one of {', '.join(a.quantities)}")


# -- the interpreter ------------------------------------------------------------------


def evaluate(node: object, ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    """The value of a recipe node (an expression)."""
    if not isinstance(node, Mapping):
        return _expr(node, ctx, env, where)
    keys = set(node) - {"subs", "q", "index"}
    kind = next((k for k in _KINDS if k in keys), None)
    if kind is None:
        raise SymroofError(f"{where}: a recipe node needs one of {', '.join(_KINDS)}; got keys "
                           f"{', '.join(sorted(node)) or '(none)'}")
    return _subs(node, _KINDS[kind](node, ctx, env, f"{where}.{kind}"), ctx, env, where)


def _let(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    scope = dict(env)
    for name, sub in _table(node["let"], where).items():
        if not name.isidentifier() or name in CANONICAL or name in ctx.declared:
            raise SymroofError(f"{where}.{name}: a let name must be a new identifier")
        scope[name] = evaluate(sub, ctx, scope, f"{where}.{name}")
    if "expr" not in node:
        raise SymroofError(f"{where}: let needs an expr that uses the names it binds")
    return _expr_node(node, ctx, scope, where)


def _expr_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    value = _expr(node["expr"], ctx, env, f"{where}.expr")
    if value.free_symbols and not value.has(sp.Min, sp.Max, sp.Piecewise, sp.floor, sp.ceiling):
        value = sp.factor_terms(sp.cancel(value))  # a ratio of byte counts reads as 2, not x/y
    return value


def _workload_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    a = workload(node["workload"], ctx, env, where)
    return _workload_q(a, _text(node.get("q", "I"), f"{where}.q"), where)


def _model_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    m = model(node["model"], ctx, env, where)
    q = _text(node.get("q", "params"), f"{where}.q")
    values = {"params": lambda: m.params, "kv_bytes_per_token": lambda: m.kv_bytes_per_token,
              "weight_bytes_total": lambda: m.weight_bytes_total, "layers": lambda: m.layers,
              "d_model": lambda: m.d_model, "heads": lambda: m.heads,
              "kv_heads": lambda: m.kv_heads, "head_dim": lambda: m.head_dim,
              "d_ff": lambda: m.d_ff, "vocab": lambda: m.vocab}
    if q not in values:
        raise SymroofError(f"{where}.q: unknown model quantity {q!r}{suggest(q, values)}")
    return values[q]()


def _hardware_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    name = _text(node["hardware"], where)
    spec = hardware.get(env.get("$hw", name) if name == "$hw" else name)
    q = _text(node.get("q", "ridge"), f"{where}.q")
    precision, unit = node.get("precision", "bf16"), node.get("unit")
    level, ops = node.get("level"), node.get("ops_per_mac", 2)
    if q == "peak":
        return spec.peak(precision, unit, ops)
    if q == "ridge":
        return spec.ridge(precision, unit, level, ops)
    if q == "bandwidth":
        return spec.bandwidth(level)
    if q == "capacity":
        cap = spec.capacity(level)
        if cap is None:
            raise SymroofError(f"{where}: {spec.name} has no published capacity")
        return cap
    raise SymroofError(f"{where}.q: unknown hardware quantity {q!r}; expected peak, ridge, "
                       "bandwidth or capacity")


def _memory_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    s = _table(node["memory"], where)
    fp = memory(model(s.get("model"), ctx, env, f"{where}.model"),
                batch=_expr(s.get("batch", 1), ctx, env, f"{where}.batch"),
                context=_expr(s.get("context", 1), ctx, env, f"{where}.context"),
                training=bool(s.get("training", False)))
    q = _text(node.get("q", "kv_cache"), f"{where}.q")
    parts = ("weights", "kv_cache", "activations", "gradients", "optimizer_state", "total")
    if q not in parts:
        raise SymroofError(f"{where}.q: unknown footprint part {q!r}; expected one of "
                           f"{', '.join(parts)}")
    return getattr(fp, q)


def _capacity_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    s = _table(node["capacity"], where)
    return capacity(model(s.get("model"), ctx, env, f"{where}.model"),
                    _text(s.get("hardware"), f"{where}.hardware"),
                    context=_expr(s.get("context"), ctx, env, f"{where}.context"),
                    tp=int(s.get("tp", 1)), precision=s.get("precision", "bf16"))


def _roofline_q(r: Roofline, q: str, devices: sp.Expr, where: str) -> Any:
    if devices != 1:  # ideal tensor parallelism: n chips' peak and bandwidth, no communication
        r = Roofline(r.hardware, r.precision, r.level, r.flops, r.bytes, r.intensity,
                     r.peak * devices, r.bandwidth * devices, r.ridge, r.tokens)
    if q == "tokens_per_s_per_user":
        return 1 / r.time_s
    if q not in _ROOFLINE_FIELDS:
        raise SymroofError(f"{where}.q: unknown roofline quantity {q!r}"
                           f"{suggest(q, _ROOFLINE_FIELDS)}")
    value = getattr(r, q)
    if value is None:
        raise SymroofError(f"{where}.q: {q} is undefined for this workload")
    return value


def _roofline_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    s = _table(node["roofline"], where)
    a = workload(s.get("workload"), ctx, env, f"{where}.workload")
    subs = {ctx.symbol(k, f"{where}.subs"): _expr(v, ctx, env, f"{where}.subs.{k}")
            for k, v in _table(s.get("subs", {}), f"{where}.subs").items()}
    r = roofline(a, _text(s.get("hardware"), f"{where}.hardware"),
                 precision=s.get("precision", "bf16"), subs=subs, unit=s.get("unit"),
                 level=s.get("level"))
    devices = _expr(s.get("devices", 1), ctx, env, f"{where}.devices")
    return _roofline_q(r, _text(node.get("q", "time_s"), f"{where}.q"), devices, where)


def _roofline_formula_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                           where: str) -> Any:
    s = _table(node["roofline_formula"], where)
    part = {k: evaluate(s[k], ctx, env, f"{where}.{k}") for k in ("F", "Q", "peak", "bandwidth")}
    tokens = evaluate(s["tokens"], ctx, env, f"{where}.tokens") if "tokens" in s else None
    r = Roofline("symbolic", "-", "-", part["F"], part["Q"], part["F"] / part["Q"], part["peak"],
                 part["bandwidth"], part["peak"] / part["bandwidth"], tokens)
    return _roofline_q(r, _text(node.get("q", "time_s"), f"{where}.q"), sp.Integer(1), where)


def _limit_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    value = evaluate(node["limit"], ctx, env, where)
    names = node.get("var")
    to = node.get("to", "oo")
    target = sp.oo if to == "oo" else _expr(to, ctx, env, f"{where}.to")
    for name in names if isinstance(names, list) else [names]:
        value = limit(value, ctx.symbol(_text(name, f"{where}.var"), f"{where}.var"), target)
    return value


def _crossover_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                    where: str) -> Any:
    s = _table(node["crossover"], where)
    var = ctx.symbol(_text(s.get("var"), f"{where}.var"), f"{where}.var")
    roots = crossover(evaluate(s.get("lhs"), ctx, env, f"{where}.lhs"),
                      evaluate(s.get("rhs"), ctx, env, f"{where}.rhs"), var)
    index = int(node.get("index", 0))
    if index >= len(roots):
        raise SymroofError(f"{where}: {len(roots)} positive solution(s) in {var}, no index {index}")
    return roots[index].value


def _curve_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    s = _table(node["curve"], where)
    x = ctx.symbol(_text(s.get("x"), f"{where}.x"), f"{where}.x")
    y = ctx.symbol(_text(s.get("y"), f"{where}.y"), f"{where}.y")
    curves = crossover_curve(evaluate(s.get("lhs"), ctx, env, f"{where}.lhs"),
                             evaluate(s.get("rhs"), ctx, env, f"{where}.rhs"), x, y)
    if not curves:
        raise SymroofError(f"{where}: the two sides never meet for positive {y}")
    c = curves[int(node.get("index", 0))]
    if node.get("q", "expr") == "invariant":
        if c.invariant is None:
            raise SymroofError(f"{where}: the curve is not a power law in {x}")
        return c.invariant
    return c.expr


def _theta_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
    small = [(ctx.symbol(x, f"{where}.small"), ctx.symbol(y, f"{where}.small"))
             for x, y in node.get("small", [])]
    return theta(evaluate(node["theta"], ctx, env, where), small)


def _sensitivity_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                      where: str) -> Any:
    var = ctx.symbol(_text(node.get("var"), f"{where}.var"), f"{where}.var")
    return sensitivity(evaluate(node["sensitivity"], ctx, env, where), var)


def _operation_node(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                    where: str) -> Any:
    name = _text(node["operation"], where)
    if name in CONSTANTS:
        return sp.Integer(CONSTANTS[name])
    if name not in OPERATIONS:
        known = [*OPERATIONS, *CONSTANTS]
        raise SymroofError(f"{where}: unknown operation {name!r}{suggest(name, known)}; "
                           f"expected one of {', '.join(known)}")
    args = [evaluate(a, ctx, env, f"{where}.args") for a in _args(node, where)]
    kwargs = {k: v if isinstance(v, bool) else evaluate(v, ctx, env, f"{where}.kwargs.{k}")
              for k, v in _table(node.get("kwargs", {}), f"{where}.kwargs").items()}
    return OPERATIONS[name](*args, **kwargs)


def _extreme(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str,
             key: str) -> Any:
    items = [evaluate(x, ctx, env, where) for x in node[key]]
    return (sp.Min if key == "min" else sp.Max)(*items)


def _over_hardware(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
                   where: str) -> Any:
    values = [evaluate(node.get("node"), ctx, {**env, "$hw": name}, f"{where}[{name}]")
              for name in node["over_hardware"]]
    return (sp.Max if node.get("reduce", "min") == "max" else sp.Min)(*values)


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
