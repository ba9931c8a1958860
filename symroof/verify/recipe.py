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
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof import bounds, hardware
from symroof.analysis import Analysis, analyze
from symroof.budget import check_expr, check_number, guarded, light, substitute
from symroof.errors import SymroofError, suggest
from symroof.evaluate import Roofline, roofline, symbol_map
from symroof.footprint import capacity, memory
from symroof.ir import Graph
from symroof.ir.nodes import Kind
from symroof.models import TransformerModel, get, transformer
from symroof.parse import FUNCTIONS, parse_expr
from symroof.passes.fuse import fuse_pass
from symroof.passes.pipeline import Pass, Pipeline
from symroof.passes.tile import tile_pass
from symroof.solve import crossover, crossover_curve, limit, sensitivity, theta
from symroof.symbols import CANONICAL, dim, quantity
from symroof.verify.grammar import NODE_KEYS, SPEC_KEYS, check_keys
from symroof.verify.named import twin
from symroof.workloads.attention import ElementwiseFlops
from symroof.workloads import registry

__all__ = ["ASSUMPTIONS", "Context", "declare", "declare_each", "evaluate", "model", "workload",
           "check_value", "OPERATIONS", "BUILDERS", "CONSTANTS", "QUANTITY_NAMES"]

#: Workload builders a recipe may name: the one registry's (its options are the builders'
#: keyword-only parameters, checked by the registry as the command line's are).
BUILDERS = registry.ENTRIES

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

_STRING_FIELDS = frozenset({"mlp", "norm", "positions", "activation", "name"})
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


@dataclass
class Context:
    """The names a claim file declares, and caches shared by its claims."""

    declared: Mapping[str, sp.Symbol]
    path: str = "<claims>"
    text: str = ""  # the claim file's text, to name the line of a field
    workloads: dict[str, Analysis] = field(default_factory=dict)
    models: dict[str, TransformerModel] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)  # bad [symbols] entries: why
    light_only: bool = False  # a structural node's first try: a heavy leaf goes to the guard
    in_guard: bool = False    # in the guarded child: everything runs here
    mentioned: set[sp.Basic] = field(default_factory=set)  # symbols the recipe's inputs use
    assumptions: frozenset[str] = frozenset()  # the claim's stated assumptions, in force
    # presets replaced by their twins (symroof.verify.named); each twin met: the numbers
    # its symbols stand for and its parameter count (a cached model or workload logs the
    # twins its build met, and meets them again when the cache answers)
    twins: bool = False
    twin_seen: list[tuple[dict[sp.Symbol, sp.Expr], sp.Expr]] = field(default_factory=list)
    twin_log: dict[str, list[tuple[dict[sp.Symbol, sp.Expr], sp.Expr]]] = field(
        default_factory=dict)
    twin_context: Context | None = None  # the twins' own context and caches, made once
    named: dict[str, Any] = field(default_factory=dict)  # a recipe's named form, once
    # a claim's recipe evaluated, once per recipe and assumptions (a table's rows differ
    # only in subs): its value and the symbols its inputs use (see formula_of)
    formulas: dict[str, tuple[Any, frozenset[sp.Basic]]] = field(default_factory=dict)
    graph_symbols: dict[Analysis, frozenset[sp.Basic]] = field(default_factory=dict)

    def with_twins(self) -> Context:
        """This file's context for deriving with twins (one per file: caches shared)."""
        if self.twin_context is None:
            self.twin_context = Context(self.declared, self.path, self.text,
                                        refused=self.refused, twins=True)
        return self.twin_context

    def symbol(self, name: str, where: str) -> sp.Symbol:
        if not isinstance(name, str):
            raise SymroofError(f"{where}: expected a symbol's name, got {name!r}")
        if name in CANONICAL:
            return CANONICAL[name]
        if name in self.declared:
            return self.declared[name]
        if name in self.refused:
            raise SymroofError(f"{where}: symbol {name!r} is not declared: {self.refused[name]}")
        raise SymroofError(f"{where}: unknown symbol {name!r}"
                           f"{suggest(name, [*CANONICAL, *self.declared])}; declare it in the "
                           "claim file's [symbols] table")


def declare(symbols: Mapping[str, object], where: str) -> dict[str, sp.Symbol]:
    """The claim file's ``[symbols]``: ``name = "dimension"`` (a positive integer) or
    ``"quantity"`` (a positive real: a peak, a bandwidth)."""
    out, refused = declare_each(symbols, where)
    if refused:
        raise SymroofError(next(iter(refused.values())))
    return out


def declare_each(symbols: Mapping[str, object],
                 where: str) -> tuple[dict[str, sp.Symbol], dict[str, str]]:
    """:func:`declare`, keeping going: (the symbols declared, why each other was not)."""
    out: dict[str, sp.Symbol] = {}
    refused: dict[str, str] = {}
    for name, kind in symbols.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_") \
                or name in FUNCTIONS or name == "oo":
            refused[str(name)] = (f"{where} symbols.{name}: expected a name of letters, digits "
                                  "and _ (not a function's name)")
        elif name in CANONICAL:
            refused[name] = (f"{where} symbols.{name}: {name} is a canonical symbol (a positive "
                             "integer dimension); use it without declaring it")
        elif kind == "dimension":
            out[name] = dim(name)
        elif kind == "quantity":
            out[name] = quantity(name)
        else:
            refused[name] = (f"{where} symbols.{name}: expected \"dimension\" or \"quantity\", "
                             f"got {kind!r}")
    return out, refused


# -- bounds ---------------------------------------------------------------------------


class _Heavy(Exception):
    """A leaf past the light limits inside a structural node's first, unguarded try."""


def _bounded(value: sp.Expr, ctx: Context, where: str) -> sp.Expr:
    """``value`` within the budget's size, degree and digits (symroof.budget)."""
    check_expr(value, where)
    check_number(value, where)
    if ctx.light_only and not light(value):
        raise _Heavy(where)
    return value


def _algebra(step: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` here when every expression among ``args`` is light, else in the
    budget's guarded child (its seconds and memory limits)."""
    exprs = [a for a in args if isinstance(a, sp.Basic)]
    exprs += [x for a in args if isinstance(a, (list, tuple)) for x in a
              if isinstance(x, sp.Basic)]
    return guarded(step, fn, *args, unguarded=all(light(e) for e in exprs))


def _structural(fn: Callable[[Mapping[str, Any], Context, Mapping[str, Any], str], Any]
                ) -> Callable[[Mapping[str, Any], Context, Mapping[str, Any], str], Any]:
    """A node that builds a workload or model from its leaves: run here while every leaf
    is light (the library's own formulas on small sizes), else again, whole, in the
    budget's guarded child, so that sizes composed from ``let`` bindings cannot run the
    builders or their algebra past the seconds and memory limits."""
    @functools.wraps(fn)
    def run(node: Mapping[str, Any], ctx: Context, env: Mapping[str, Any], where: str) -> Any:
        if ctx.light_only or ctx.in_guard:
            return fn(node, ctx, env, where)
        ctx.light_only = True
        try:
            return fn(node, ctx, env, where)
        except _Heavy:
            if ctx.twins:  # a named form is shown only where it comes cheaply
                raise SymroofError(f"{where}: too large for a named form") from None
        finally:
            ctx.light_only = False
        value, mentioned = guarded(where, _in_guard, fn, node, ctx, env, where)
        ctx.mentioned |= mentioned
        return value
    return run


def _in_guard(fn: Callable[..., Any], node: Mapping[str, Any], ctx: Context,
              env: Mapping[str, Any], where: str) -> tuple[Any, set[sp.Basic]]:
    ctx.in_guard = True  # the child's copy of the context
    return fn(node, ctx, env, where), ctx.mentioned


def check_value(sym: sp.Symbol, value: sp.Expr, where: str, *, point: bool = False) -> sp.Expr:
    """A value substituted for ``sym``: the library's rule (finite, real; a dimension a
    positive integer, a quantity positive; :func:`symroof.evaluate.symbol_map`), within
    the size, degree and digits limits. ``point``: a recipe's own substitution, which
    evaluates a formula at a point: there a dimension may be fractional (a crossover at
    n = 59364/67) or 0 (a term taken out), never negative."""
    check_number(value, where)
    if not (point and value == 0):
        try:
            symbol_map(sym, {sym: value}, integers=not point)
        except SymroofError as err:
            raise SymroofError(f"{where}: {err}") from None
    if value.free_symbols:
        check_expr(value, where)
        if value.is_positive is False or (sym.is_integer and value.is_integer is False
                                          and not point):
            kind = ("a positive integer (a dimension)" if sym.is_integer and not point
                    else "a positive value")
            raise SymroofError(f"{where}: value of {sym}: expected {kind}, got {value}")
    return value


# -- leaves -------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_]\w*")


def _expr(text: object, ctx: Context, env: Mapping[str, Any], where: str) -> sp.Expr:
    if isinstance(text, bool):
        raise SymroofError(f"{where}: expected a number or an expression, got {text!r}")
    if isinstance(text, int):
        return _bounded(sp.Integer(text), ctx, where)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise SymroofError(f"{where}: expected a finite number, got {text!r}")
        return _bounded(sp.Rational(repr(text)), ctx, where)
    if not isinstance(text, str):
        raise SymroofError(f"{where}: expected a number or an expression, got "
                           f"{type(text).__name__} {_brief(text)}")
    for name in _NAME.findall(text) if ctx.refused else ():
        if name in ctx.refused and name not in env:
            raise SymroofError(f"{where}: symbol {name!r} is not declared: {ctx.refused[name]}")
    table: dict[str, sp.Basic] = {**CANONICAL, **ctx.declared}
    names = {n: sp.Dummy(n) for n, v in env.items() if isinstance(v, sp.Basic)}
    table.update(names)
    if "oo" not in table:
        table["oo"] = sp.oo
    value = parse_expr(text, table, what=where)
    if names:
        value = substitute(value, {names[n]: env[n] for n in names}, where)
    ctx.mentioned |= value.free_symbols
    return _bounded(value, ctx, where)


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _subs(node: Mapping[str, Any], value: sp.Expr, mentioned: set[sp.Basic], ctx: Context,
          env: Mapping[str, Any], where: str) -> sp.Expr:
    """A node's ``subs`` applied to its value; each symbol must be one the node uses
    (in its value, or in its inputs: an attention layer's D)."""
    given = node.get("subs")
    if given is None:
        return value
    table = _table(given, f"{where}.subs")
    if not table:
        return value
    mapping: dict[sp.Symbol, sp.Expr] = {}
    for k, v in table.items():
        at = f"{where}.subs.{k}"
        sym = ctx.symbol(k, at)
        if sym not in value.free_symbols and sym not in mentioned:
            used = ", ".join(sorted(str(x) for x in value.free_symbols | mentioned)) or "none"
            raise SymroofError(f"{at}: the node does not use {k} (its symbols: {used})")
        mapping[sym] = check_value(sym, _expr(v, ctx, env, at), at, point=True)
    return substitute(value, mapping, f"{where}.subs")


def _table(value: object, where: str, kind: str | None = None) -> Mapping[str, Any]:
    """A table; with ``kind``, one whose keys are those :data:`SPEC_KEYS` lists for it."""
    if not isinstance(value, Mapping):
        raise SymroofError(f"{where}: expected a table, got {type(value).__name__} "
                           f"{_brief(value)}")
    if kind is not None:
        check_keys(value, SPEC_KEYS[kind], where, f"a {kind} table")
    return value


def _args(node: Mapping[str, Any], where: str) -> list[Any]:
    """A node's ``args``: a list (none when absent)."""
    raw = node.get("args", [])
    if not isinstance(raw, list):
        raise SymroofError(f"{where}.args: expected a list of arguments, got {_brief(raw)}")
    return raw


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SymroofError(f"{where}: expected a name, got {_brief(value)}")
    return value


def _option(spec: Mapping[str, Any], key: str, where: str, default: str | None) -> str | None:
    """An optional name (precision, unit, level): a string, or the default when absent."""
    value = spec.get(key, default)
    if value is None:
        return None
    return _text(value, f"{where}.{key}")


def _count(value: object, ctx: Context, env: Mapping[str, Any], where: str) -> int:
    """A number of devices: a positive integer (not a fraction, a float or true)."""
    if isinstance(value, (float, bool)):
        raise SymroofError(f"{where}: expected a positive integer number of devices, got "
                           f"{value!r}")
    number = _expr(value, ctx, env, where)
    if not (number.is_Integer and number > 0):
        raise SymroofError(f"{where}: expected a positive integer number of devices, got "
                           f"{number}")
    return int(number)


def _index(node: Mapping[str, Any], where: str) -> int:
    value = node.get("index", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SymroofError(f"{where}.index: expected a non-negative integer, got "
                           f"{_brief(value)}")
    return value


def _flag(spec: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise SymroofError(f"{where}.{key}: expected true or false, got {_brief(value)}")
    return value


def _calling(where: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(...)`` with a wrong argument (a TypeError, a ValueError, a KeyError from a
    library function given a claim file's values) or what SymPy cannot do (a
    NotImplementedError, an ArithmeticError such as PrecisionExhausted) named as the
    field's error."""
    try:
        return fn(*args, **kwargs)
    except SymroofError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, NotImplementedError,
            ArithmeticError) as err:
        text = " ".join(str(err).split())
        text = text if len(text) <= 200 else text[:197] + "..."
        raise SymroofError(f"{where}: {type(err).__name__}: {text}") from None


def _env_key(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted((k, sp.srepr(v) if isinstance(v, sp.Basic) else str(v))
                  for k, v in env.items())


# -- models and workloads -------------------------------------------------------------


def model(spec: object, ctx: Context, env: Mapping[str, Any], where: str) -> TransformerModel:
    """A model from a preset name or a table (see the module docstring)."""
    key = json.dumps([spec, _env_key(env)], sort_keys=True, default=str)
    if key in ctx.models:
        ctx.twin_seen += ctx.twin_log.get(key, [])
        return _mention_model(ctx, ctx.models[key])
    mark = len(ctx.twin_seen)
    if isinstance(spec, str):
        m = _twin(get(spec), ctx, where)
    else:
        s = _table(spec, where, "model")
        if "preset" in s:
            m = _twin(get(_text(s["preset"], f"{where}.preset")), ctx, where)
        elif "transformer" in s:
            kw = {k: (v if k in _STRING_FIELDS or isinstance(v, bool) else
                      _expr(v, ctx, env, f"{where}.transformer.{k}"))
                  for k, v in _table(s["transformer"], f"{where}.transformer").items()}
            m = _calling(f"{where}.transformer", transformer, **kw)
        else:
            raise SymroofError(f"{where}: expected a preset name, {{preset = ...}} or "
                               f"{{transformer = {{...}}}}, got keys {sorted(s)}")
        if "replace" in s:
            changes = {k: v if k in _STRING_FIELDS or isinstance(v, bool) else
                       _expr(v, ctx, env, f"{where}.replace.{k}")
                       for k, v in _table(s["replace"], f"{where}.replace").items()}
            m = _calling(f"{where}.replace", m.replace, **changes)
        if "bytes" in s:
            m = m.with_bytes(_expr(s["bytes"], ctx, env, f"{where}.bytes"))
        formats = {k: _text(s[k], f"{where}.{k}") for k in ("weights", "kv_cache", "activations")
                   if k in s}
        if formats:
            m = _calling(where, m.with_precision, **formats)
    ctx.models[key] = m
    if ctx.twins:
        ctx.twin_log[key] = ctx.twin_seen[mark:]
    return _mention_model(ctx, m)


def _twin(m: TransformerModel, ctx: Context, where: str) -> TransformerModel:
    """The preset itself, or (deriving the named form) its twin."""
    if not ctx.twins:
        return m
    t, values = _calling(where, twin, m)
    ctx.twin_seen.append((values, t.params))
    return t


def _mention_model(ctx: Context, m: TransformerModel) -> TransformerModel:
    """Record the symbols of a model's fields as used by the recipe."""
    for f in dataclasses.fields(m):
        value = getattr(m, f.name)
        if isinstance(value, sp.Basic):
            ctx.mentioned |= value.free_symbols
    return m


def _mention_graph(ctx: Context, a: Analysis) -> Analysis:
    """Record the symbols of a workload's tensors (shapes, bytes) as used by the recipe:
    an attention layer's intensity cancels D, but a claim's D = 4096 is its input."""
    found = ctx.graph_symbols.get(a)
    if found is None:  # a cached workload is met again by many claims: its symbols once
        found = ctx.graph_symbols[a] = frozenset().union(*(
            e.free_symbols for t in a.graph.tensors for e in (*t.shape, t.bytes_per_value)))
    ctx.mentioned |= found
    return a


def _arg(value: object, ctx: Context, env: Mapping[str, Any], where: str) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return tuple(_arg(v, ctx, env, where) for v in value)
    return _expr(value, ctx, env, where)


def _shape(row: list[Any], ctx: Context, env: Mapping[str, Any], at: str) -> tuple[sp.Expr, ...]:
    if len(row) < 3 or not isinstance(row[2], list):
        raise SymroofError(f"{at}: expected [kind, name, [sizes]]")
    return tuple(_expr(x, ctx, env, at) for x in row[2])


def _graph(rows: object, ctx: Context, env: Mapping[str, Any], where: str) -> Graph:
    """A small custom graph: rows ``["input", name, [shape]]``, ``["elementwise", name,
    [inputs], flops_per_element]``, ``["reduce", name, input]``, ``["output", name]``."""
    if not isinstance(rows, list):
        raise SymroofError(f"{where}: expected a list of rows")
    g = Graph("claim")
    t: dict[str, Any] = {}

    def tensor(name: object, at: str) -> Any:
        if not isinstance(name, str) or name not in t:
            raise SymroofError(f"{at}: no tensor {_brief(name)} defined above")
        return t[name]

    for i, row in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(row, list) or len(row) < 2:
            raise SymroofError(f"{at}: expected [kind, name, ...]")
        kind, name = row[0], _text(row[1], at)
        want = {"input": 3, "weight": 3, "elementwise": 3, "gemm": 4, "reduce": 3, "output": 2}
        if kind not in want:
            raise SymroofError(f"{at}: unknown row kind {_brief(kind)}; expected input, weight, "
                               "elementwise, gemm, reduce, output")
        if len(row) < want[kind] or len(row) > want[kind] + (kind == "elementwise"):
            raise SymroofError(f"{at}: a {kind} row has {want[kind]} entries"
                               f"{' (and flops per element)' if kind == 'elementwise' else ''}")
        if kind == "input":
            t[name] = _calling(at, g.input, name, _shape(row, ctx, env, at))
        elif kind == "weight":
            t[name] = _calling(at, g.weight, name, _shape(row, ctx, env, at))
        elif kind == "elementwise":
            if not isinstance(row[2], list):
                raise SymroofError(f"{at}: expected [\"elementwise\", name, [inputs], flops]")
            fpe = _expr(row[3], ctx, env, at) if len(row) > 3 else 1
            t[name] = _calling(at, g.elementwise, *(tensor(x, at) for x in row[2]), name=name,
                               flops_per_element=fpe)
        elif kind == "gemm":
            t[name] = _calling(at, g.gemm, tensor(row[2], at), tensor(row[3], at), name=name)
        elif kind == "reduce":
            t[name] = _calling(at, g.reduce, tensor(row[2], at), name=name)
        else:
            _calling(at, g.output, tensor(name, at))
    return g


def workload(spec: object, ctx: Context, env: Mapping[str, Any], where: str) -> Analysis:
    """The analysis a workload table describes (cached per claim file)."""
    s = _table(spec, where, "graph" if isinstance(spec, Mapping) and "graph" in spec
               else "workload")
    key = json.dumps([s, _env_key(env)], sort_keys=True, default=str)
    if key in ctx.workloads:
        ctx.twin_seen += ctx.twin_log.get(key, [])
        return _mention_graph(ctx, ctx.workloads[key])
    mark = len(ctx.twin_seen)
    if "graph" in s:
        a = _calling(where, analyze, _graph(s["graph"], ctx, env, f"{where}.graph"))
    else:
        name = _text(s.get("builder"), f"{where}.builder")
        entry = BUILDERS.get(name)
        if entry is None:
            raise SymroofError(f"{where}.builder: unknown workload {name!r}"
                               f"{suggest(name, BUILDERS)}; expected one of {', '.join(BUILDERS)}")
        args = [_arg(v, ctx, env, f"{where}.args") for v in _args(s, where)]
        if entry.model:
            args.insert(0, model(s.get("model"), ctx, env, f"{where}.model"))
        elif "model" in s:
            models = ", ".join(n for n, e in BUILDERS.items() if e.model)
            raise SymroofError(f"{where}.model: workload {name!r} takes no model (only "
                               f"{models} do)")
        kwargs = {k: _arg(v, ctx, env, f"{where}.kwargs.{k}")
                  for k, v in _table(s.get("kwargs", {}), f"{where}.kwargs").items()}
        options = dict(_table(s.get("options", {}), f"{where}.options"))
        clash = set(kwargs) & set(options)
        if clash:
            raise SymroofError(f"{where}.kwargs: {', '.join(sorted(clash))} given twice (in "
                               "kwargs and in options)")
        a = _calling(f"{where}: {name}", entry.build, *args, options=options, where=where,
                     **kwargs)
    a = _passes(a, s, ctx, env, where)
    ctx.workloads[key] = a
    if ctx.twins:
        ctx.twin_log[key] = ctx.twin_seen[mark:]
    return _mention_graph(ctx, a)


def _passes(a: Analysis, s: Mapping[str, Any], ctx: Context, env: Mapping[str, Any],
            where: str) -> Analysis:
    conv = a.convention
    g = a.graph
    # a claim's fuse and tile run as extra stages of the workload's pipeline, in the
    # pipeline's order (fusion first: what stays on chip is a property of the kernels)
    stages: list[tuple[str, Pass]] = []
    if s.get("fuse"):
        groups = s["fuse"]
        if not isinstance(groups, list) or not all(
                isinstance(x, list) and all(isinstance(n, str) for n in x) for x in groups):
            raise SymroofError(f"{where}.fuse: expected a list of lists of op names, got "
                               f"{_brief(groups)}")
        stages.append(("fuse", _calling(f"{where}.fuse", fuse_pass,
                                        [set(group) for group in groups])))
    if s.get("tile"):
        tiles = {_expr(k, ctx, env, f"{where}.tile"): _expr(v, ctx, env, f"{where}.tile.{k}")
                 for k, v in _table(s["tile"], f"{where}.tile").items()}
        stages.append(("tile", _calling(f"{where}.tile", tile_pass, tiles)))
    for key, stage in stages:
        g = _calling(f"{where}.{key}", Pipeline(f"claim {key}", (stage,)).apply, g)
    if g is not a.graph:
        a = Analysis(g, conv, a.tokens)   # the new graph's assumptions (tiles divide)
    if s.get("convention"):
        a = _calling(f"{where}.convention", a.with_convention,
                     **_table(s["convention"], f"{where}.convention"))
    return a


#: The tensor kinds a ``Q_<kind>`` may name.
_KIND_NAMES = tuple(k.value for k in Kind)
#: One op's parts a workload node reads as ``<part>:<op>`` (FLOPs, bytes, read, written).
_OP_PARTS = ("op_F", "op_Q", "op_Qr", "op_Qw")


def _workload_q(a: Analysis, q: str, where: str) -> sp.Expr:
    if q != "I" and a.bytes != 0:  # one sum: the intensity (a cancel) is not needed
        sums = _calling(where, lambda: a._sums)  # noqa: SLF001 - quantities but I
        if q in sums:
            return sums[q]
    quantities = _calling(where, lambda: a.quantities)
    if q in quantities:
        return quantities[q]
    if ":" in q:
        what, _, op = q.partition(":")
        if op not in a.per_op:
            raise SymroofError(f"{where}.q: no op {op!r}{suggest(op, a.per_op)}")
        c = a.per_op[op]
        parts = dict(zip(_OP_PARTS, (c.flops, c.bytes, c.bytes_read, c.bytes_written)))
        if what in parts:
            return parts[what]
        raise SymroofError(f"{where}.q: unknown per-op quantity {what!r}; expected "
                           f"{', '.join(f'{p}:<op>' for p in parts)}")
    if q.startswith("Q_"):  # a kind this workload's convention does not count moves 0 bytes
        if q[2:] in _KIND_NAMES:
            return sp.Integer(0)
        raise SymroofError(f"{where}.q: unknown tensor kind {q[2:]!r}"
                           f"{suggest(q[2:], _KIND_NAMES)}; Q_<kind> takes one of "
                           f"{', '.join(_KIND_NAMES)}")
    hint = _WORDS.get(q.lower())
    hint = f" ({q} is {hint!r} here)" if hint in quantities else suggest(q, quantities)
    raise SymroofError(f"{where}.q: unknown workload quantity {q!r}{hint}; expected one of "
                       f"{', '.join(quantities)} (symroof report --reference lists each)")


# the words an author writes for a workload's quantities, and the names they have here
_WORDS = {"flops": "F", "flop": "F", "bytes": "Q", "traffic": "Q", "intensity": "I",
          "ai": "I", "arithmetic_intensity": "I"}


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
    symbols its inputs use are recorded again on each use; an error is never remembered
    (each claim names its own field in it)."""
    if ctx.twins or ctx.light_only or ctx.in_guard:  # twins log what each build meets
        return evaluate(node, ctx, {}, where)
    key = json.dumps([node, sorted(ctx.assumptions)], sort_keys=True, default=str)
    hit = ctx.formulas.get(key)
    if hit is None:
        before, ctx.mentioned = ctx.mentioned, set()
        try:
            value = evaluate(node, ctx, {}, where)
            hit = ctx.formulas[key] = (value, frozenset(ctx.mentioned))
        finally:
            ctx.mentioned |= before
    else:
        ctx.mentioned |= hit[1]
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
        return spec.peak(precision, unit, ops)
    if q == "ridge":
        return spec.ridge(precision, unit, level, ops)
    if q == "bandwidth":
        return spec.bandwidth(level)
    cap = spec.capacity(level)
    if cap is None:
        raise SymroofError(f"{where}: {spec.name} has no published capacity")
    return cap


_HARDWARE_QUANTITIES = ("peak", "ridge", "bandwidth", "capacity")


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
