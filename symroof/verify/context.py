"""The context a claim file's recipes are evaluated in, and the leaves of a recipe.

:class:`Context` holds the names a claim file declares and the caches its claims share;
the bounds (every value within the budget's limits, heavy algebra in the guarded child)
and the leaves (an expression, a table, a count) are what every recipe node reads with.
:mod:`symroof.verify.recipe` is the interpreter over them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof.analysis import Analysis
from symroof.budget import check_expr, check_number, guarded, light, substitute
from symroof.errors import SymroofError, suggest
from symroof.evaluate import symbol_map
from symroof.models import TransformerModel
from symroof.parse import FUNCTIONS, parse_expr
from symroof.request import Request
from symroof.symbols import CANONICAL, dim, quantity
from symroof.verify.grammar import SPEC_KEYS, check_keys

__all__ = ["Context", "declare", "declare_each", "check_value"]


@dataclass
class Context:
    """The names a claim file declares, and caches shared by its claims."""

    declared: Mapping[str, sp.Symbol]
    path: str = "<claims>"
    text: str = ""  # the claim file's text, to name the line of a field
    workloads: dict[str, Analysis] = field(default_factory=dict)
    # the Request each cached registry workload ran (symroof.request), by the same key,
    # and those the claim being checked ran, in order (a remembered formula replays its own)
    requests: dict[str, Request] = field(default_factory=dict)
    ran: list[Request] = field(default_factory=list)
    models: dict[str, TransformerModel] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)  # bad [symbols] entries: why
    light_only: bool = False  # a structural node's first try: a heavy leaf goes to the guard
    in_guard: bool = False    # in the guarded child: everything runs here
    mentioned: set[sp.Basic] = field(default_factory=set)  # symbols the recipe's inputs use
    assumptions: frozenset[str] = frozenset()  # the claim's stated assumptions, in force
    # presets replaced by their twins (symroof.verify.named), and with twin_numbers also
    # chips (pi, beta) and builders' number arguments; each twin met: the numbers its
    # symbols stand for and its parameter count (None for a chip's or a number's; a cached
    # model or workload logs the twins its build met, and meets them again when the cache
    # answers)
    twins: bool = False
    twin_numbers: bool = False
    twin_seen: list[tuple[dict[sp.Symbol, sp.Expr], sp.Expr | None]] = field(
        default_factory=list)
    twin_log: dict[str, list[tuple[dict[sp.Symbol, sp.Expr], sp.Expr | None]]] = field(
        default_factory=dict)
    twin_context: Context | None = None  # the twins' own context and caches, made once
    number_twin_context: Context | None = None  # the same with twin_numbers
    named: dict[str, Any] = field(default_factory=dict)  # a recipe's named form, once
    # a claim's recipe evaluated, once per recipe and assumptions (a table's rows differ
    # only in subs): its value, the symbols its inputs use and the Requests it ran (see
    # formula_of)
    formulas: dict[str, tuple[Any, frozenset[sp.Basic], tuple[Request, ...]]] = field(
        default_factory=dict)
    graph_symbols: dict[Analysis, frozenset[sp.Basic]] = field(default_factory=dict)

    def with_twins(self, numbers: bool = False) -> Context:
        """This file's context for deriving with twins (one per file: caches shared);
        ``numbers``: chips and builders' number arguments named too."""
        if numbers:
            if self.number_twin_context is None:  # the twins' models and workloads shared
                t = self.with_twins()             # (builds keys a named number's apart)
                self.number_twin_context = Context(
                    self.declared, self.path, self.text, workloads=t.workloads,
                    requests=t.requests, models=t.models, refused=self.refused, twins=True,
                    twin_numbers=True, twin_log=t.twin_log, graph_symbols=t.graph_symbols)
            return self.number_twin_context
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
        value, mentioned, ran = guarded(where, _in_guard, fn, node, ctx, env, where)
        ctx.mentioned |= mentioned
        ctx.ran += ran
        return value
    return run


def _in_guard(fn: Callable[..., Any], node: Mapping[str, Any], ctx: Context,
              env: Mapping[str, Any], where: str) -> tuple[Any, set[sp.Basic], list[Request]]:
    ctx.in_guard = True  # the child's copy of the context
    ran = len(ctx.ran)
    return fn(node, ctx, env, where), ctx.mentioned, ctx.ran[ran:]


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
