"""The models and workloads a recipe builds (cached per claim file), and the
quantities a workload node reads from them.

A model is a preset name or a table (``{preset = ..., bytes = ..., replace = {...}}``,
``{transformer = {...}}``); a workload a builder of :data:`BUILDERS` or a small custom
``graph``, with a claim's ``fuse``, ``tile`` and ``convention``. Deriving a named form
(:mod:`symroof.verify.named`) a preset is replaced by its twin.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import sympy as sp

from symroof import request
from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError, suggest
from symroof.ir import Graph
from symroof.ir.nodes import Kind
from symroof.models import TransformerModel, get, transformer
from symroof.options import ExpertReads
from symroof.passes.fuse import fuse_pass
from symroof.passes.pipeline import Pass, Pipeline
from symroof.passes.tile import tile_pass
from symroof.verify.context import (Context, _args, _brief, _calling, _env_key, _expr,
                                    _table, _text)
from symroof.verify.named import arguments, twin, writes_numbers
from symroof.workloads import registry

__all__ = ["BUILDERS", "model", "workload", "recipe_request"]

#: Workload builders a recipe may name: the one registry's (its options are the builders'
#: keyword-only parameters, checked by the registry as the command line's are).
BUILDERS = registry.ENTRIES

_STRING_FIELDS = frozenset({"mlp", "norm", "positions", "activation", "name"})


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
    numbers = ctx.twin_numbers and writes_numbers(s)
    if numbers:  # its number arguments named: not the presets' twin (whose caches it shares)
        key = f"numbers {key}"
    if key in ctx.workloads:
        ctx.twin_seen += ctx.twin_log.get(key, [])
        if key in ctx.requests:
            ctx.ran.append(ctx.requests[key])
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
        if numbers:  # a named form: number arguments as the builder's parameters
            args, values = arguments(entry.arguments(), args)
            if values:
                ctx.twin_seen.append((values, None))
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
        r = _calling(f"{where}: {name}", recipe_request, entry, args, kwargs, options, where)
        a = _calling(f"{where}: {name}", request.analysis, r)
        ctx.requests[key] = r
        ctx.ran.append(r)
    a = _passes(a, s, ctx, env, where)
    ctx.workloads[key] = a
    if ctx.twins:
        ctx.twin_log[key] = ctx.twin_seen[mark:]
    return _mention_graph(ctx, a)


def recipe_request(entry: registry.Entry, args: list[object], kwargs: Mapping[str, object],
                   options: Mapping[str, object], where: str) -> request.Request:
    """The :class:`symroof.request.Request` a recipe's workload table asks (the front door
    every other one parses into): its ``args`` fix the builder's symbols in order (a model
    first, already built from its table; a pair such as a conv2d's kernel from a list or
    one size; the last ones may be left out for a builder's default), its ``kwargs`` are
    the layout (``tp``), the options (a flag) or the builder's other keyword-only
    parameters (a conv2d's padding), and its ``options`` are checked as the command
    line's are. Errors name the recipe's fields (``where.args M``, ``where.kwargs.tp``)."""
    m = args[0] if entry.model else None
    values = args[1:] if entry.model else args
    takes = entry.arguments()
    if len(values) > len(takes):
        shown = ", ".join("/".join(map(str, x)) if isinstance(x, tuple) else str(x)
                          for x in takes)
        raise SymroofError(f"{where}.args: workload {entry.name!r} takes {len(takes)} "
                           f"arguments ({shown}), got {len(values)}")
    fixed: dict[object, object] = {}
    for i, x in enumerate(takes):
        given = values[i] if i < len(values) else None
        if not isinstance(x, tuple):
            fixed[x] = given
            continue
        pair = given if isinstance(given, tuple) else (given,) * len(x)
        if len(pair) != len(x):
            raise SymroofError(f"{where}.args[{i}]: expected one size or {len(x)} "
                               f"({', '.join(map(str, x))}), got {len(pair)} values")
        fixed.update(zip(x, pair))
    layout = {k: v for k, v in kwargs.items() if k in registry.LAYOUT}
    flags = {k: v for k, v in kwargs.items() if k not in layout
             and entry.aliases.get(k, k) in entry.options
             and entry.options[entry.aliases.get(k, k)].kind is not int}
    keywords = {k: v for k, v in kwargs.items() if k not in layout and k not in flags}
    names = {"workload": where, "fixed": f"{where}.args", "keywords": f"{where}.kwargs",
             "model": f"{where}.model", **{k: f"{where}.kwargs.{k}" for k in registry.LAYOUT}}
    reads = layout.get("expert_reads", ExpertReads.EXPECTED)
    return request.make(entry.name, options={**options, **flags},
                        model=m if isinstance(m, TransformerModel) else None, fixed=fixed,
                        keywords=keywords, names=names, tp=layout.get("tp", 1),
                        pp=layout.get("pp", 1), microbatches=layout.get("microbatches", 1),
                        expert_reads=reads if isinstance(reads, (str, ExpertReads)) else
                        str(reads))


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
