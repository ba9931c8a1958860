"""A claim's formula in the document's names, where its recipe folds a preset's numbers in.

A recipe that reads a preset model (``model = "llama-3-8b"``) derives a formula with the
model's shape multiplied into its coefficients (``524288 B S + 15009316864 B``). The
document writes the same formula in the model's names (``B (2 P + 4 L S D)``). This
module derives it a second time with the preset's *twin*: the same model with each
shape field a symbol (:func:`twin`: layers ``L``, width ``D``, heads ``H``, KV heads
``G``, FFN width ``d_ff``, vocabulary ``V``; where the preset keeps a relation the
documents write, the relation: ``d_ff = 4 D``, ``head_dim = D/H``, ``G = H``). The
named formula is kept only if it is exact: the twin's values substituted back give the
claim's formula (``cancel(named.xreplace(values) - formula) == 0``), so nothing shown can
differ from what decided the verdict. Where the twin's parameter count is a name the
formula carries (the seeds' ``P = 12 L D^2``), the formula is rewritten in ``P``
(:func:`symroof.notation.rewrite`).

Numbers a recipe writes have names too (:func:`chip`, :func:`arguments`; used where the
claim's formula is shown with a variable left in it): a chip's peak and bandwidth are the
seeds' ``π`` and ``β`` (its ridge ``π/β``), and a builder's number argument is the
builder's own parameter (``gemm(8192, 8192, K)`` is ``gemm(M, N, K)`` with ``M = N =
8192``). The same check keeps them only where exact.

>>> from symroof.models import get
>>> m, values = twin(get("seed-6.4b"))
>>> m.layers, m.d_model, m.d_ff, sorted(values.items(), key=str)
(L, D, 4*D, [(D, 4096), (H, 32), (L, 32)])
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sympy as sp

from symroof import notation
from symroof.budget import light
from symroof.errors import SymroofError
from symroof.models import TransformerModel
from symroof.symbols import D, G, H, L, P, V, d_ff, d_h
from symroof.verify.derivation import Derivation

__all__ = ["Named", "twin", "named_form", "H_KV", "PI", "BETA", "chip", "arguments",
           "writes_numbers"]

#: The KV heads of a grouped-query model (seed 001's ``n_kv_heads``; the claim file's G).
H_KV = G

#: A chip's peak (FLOP/s) and memory bandwidth (B/s) as seed 000 names them: the ridge
#: point is ``I* = π/β``.
PI, BETA = sp.Symbol("pi", positive=True), sp.Symbol("beta", positive=True)


@dataclass(frozen=True)
class Named:
    """A claim in the document's names: its ``formula`` (None where only its roofline's
    F and Q are named), the roofline's ``flops`` and ``bytes`` where it reads one, the
    ``derivation`` table's rows in names, with ``names`` (a name's formula over other
    names, ``P = 12 L D^2``) and ``values`` (the model's numbers)."""

    formula: sp.Expr | None
    names: tuple[tuple[sp.Symbol, sp.Expr], ...]
    values: tuple[tuple[sp.Symbol, sp.Expr], ...]
    flops: sp.Expr | None = None
    bytes: sp.Expr | None = None
    derivation: Derivation | None = None


def twin(m: TransformerModel) -> tuple[TransformerModel, dict[sp.Symbol, sp.Expr]]:
    """The model with its shape as symbols, and the numbers those symbols stand for.
    A field that is not a plain number (already a symbol) stays as it is."""
    values: dict[sp.Symbol, sp.Expr] = {}

    def name(value: sp.Expr, sym: sp.Symbol) -> sp.Expr:
        if isinstance(value, sp.Integer):
            values[sym] = value
            return sym
        return value

    changes: dict[str, sp.Expr] = {"layers": name(m.layers, L), "d_model": name(m.d_model, D),
                                   "heads": name(m.heads, H)}
    width, heads = changes["d_model"], changes["heads"]
    changes["kv_heads"] = heads if m.kv_heads == m.heads else name(m.kv_heads, H_KV)
    changes["head_dim"] = (width / heads if m.head_dim * m.heads == m.d_model
                           else name(m.head_dim, d_h))
    changes["d_ff"] = 4 * width if m.d_ff == 4 * m.d_model else name(m.d_ff, d_ff)
    if m.vocab is not None:
        changes["vocab"] = name(m.vocab, V)
    return m.replace(**changes), values


def chip(q: str, peak: sp.Expr, bandwidth: sp.Expr, value: sp.Expr
         ) -> tuple[sp.Expr, dict[sp.Symbol, sp.Expr]] | None:
    """A chip's quantity ``q`` (``peak``, ``bandwidth`` or ``ridge``, whose number is
    ``value``) in the seeds' names, with the numbers they stand for; None where ``q`` has
    no name or the names do not give exactly ``value``.

    >>> chip("ridge", sp.Integer(1000), sp.Integer(4), sp.Integer(250))
    (pi/beta, {pi: 1000, beta: 4})
    """
    named = {"peak": PI, "bandwidth": BETA, "ridge": PI / BETA}.get(q)
    if named is None or not (peak.is_Rational and bandwidth.is_Rational and peak > 0
                             and bandwidth > 0):
        return None
    values = {k: v for k, v in ((PI, peak), (BETA, bandwidth)) if k in named.free_symbols}
    return (named, values) if named.xreplace(values) == value else None


def arguments(symbols: Sequence[object], args: Sequence[object]
              ) -> tuple[list[object], dict[sp.Symbol, sp.Expr]]:
    """A builder's arguments with each whole number above 1 replaced by the builder's own
    parameter at its place (``symbols``, as :attr:`Entry.arguments` lists them; a tuple
    place pairs element by element), and the numbers those parameters stand for. A
    parameter that another argument already uses keeps its number (``gemm(K, 8192, 8)``
    names only ``N``); 0 and 1 stay (a GEMV's ``N = 1`` is the point, not a size).

    >>> M, N, K = sp.symbols("M N K", positive=True, integer=True)
    >>> arguments((M, N, K), [sp.Integer(8192), sp.Integer(8192), K])
    ([M, N, K], {M: 8192, N: 8192})
    >>> arguments((M, N, K), [K, sp.Integer(1), sp.Integer(8)])
    ([K, 1, 8], {})
    """
    used: set[sp.Basic] = set()
    for a in args:
        for x in (a if isinstance(a, tuple) else (a,)):
            if isinstance(x, sp.Basic):
                used |= x.free_symbols
    values: dict[sp.Symbol, sp.Expr] = {}

    def name(sym: object, arg: object) -> object:
        if isinstance(sym, tuple) and isinstance(arg, tuple) and len(sym) == len(arg):
            return tuple(name(s, a) for s, a in zip(sym, arg))
        if isinstance(sym, sp.Symbol) and isinstance(arg, sp.Integer) and arg > 1 and \
                sym not in used and sym not in values:
            values[sym] = arg
            return sym
        return arg
    return [name(s, a) for s, a in zip(symbols, args)] + list(args[len(symbols):]), values


def writes_numbers(node: object) -> bool:
    """Whether a recipe (or a workload table) reads a chip's peak, bandwidth or ridge, or
    gives a workload builder a whole number above 1 as an argument (what :func:`chip` and
    :func:`arguments` name).

    >>> writes_numbers({"let": {"I": {"workload": {"builder": "gemm", "args": [8, 8, "K"]}}}})
    True
    >>> writes_numbers({"workload": {"builder": "gemm", "args": [1, "N", "K"]}})
    False
    """
    if isinstance(node, Mapping):
        if "hardware" in node and not node.keys() & {"workload", "model"} and \
                node.get("q", "ridge") in ("peak", "bandwidth", "ridge"):  # not a roofline's
            return True
        if "builder" in node and isinstance(node.get("args"), list) and any(
                isinstance(a, int) and not isinstance(a, bool) and a > 1 for a in node["args"]):
            return True
        return any(writes_numbers(v) for v in node.values())
    return isinstance(node, list) and any(writes_numbers(v) for v in node)


def _exact(named: sp.Expr | None, folded: sp.Expr | None,
           values: Mapping[sp.Symbol, sp.Expr]) -> bool:
    return named is not None and folded is not None and \
        _cancels(named, folded, tuple(sorted(values.items(), key=str)))


@functools.lru_cache(maxsize=4096)  # claims of one workload ask the same question
def _cancels(named: sp.Expr, folded: sp.Expr,
             values: tuple[tuple[sp.Symbol, sp.Expr], ...]) -> bool:
    back = named.xreplace(dict(values))
    if not (light(back) and light(folded)):  # a named form is shown only where cheap
        return False
    return sp.cancel(back - folded) == 0


@functools.lru_cache(maxsize=1024)
def _in_p(named: sp.Expr, params: sp.Expr | None) -> sp.Expr:
    """``named`` rewritten in ``P`` where the twin's parameter count is one term (the
    seeds' ``12 L D^2``) and the formula carries it (each of its symbols: a formula
    without ``L`` is not written in ``P``, and the rewrite's search is not run); else
    ``named``."""
    if params is None or not params.free_symbols or isinstance(params, sp.Add) or \
            P in named.free_symbols or not params.free_symbols <= named.free_symbols:
        return named
    try:
        return notation.rewrite(named, {P: params}, where="named form")
    except SymroofError:
        return named


def named_form(formula: sp.Expr | None, named: sp.Expr | None,
               values: Mapping[sp.Symbol, sp.Expr], params: sp.Expr | None, *,
               roofline: tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr] | None = None,
               derivation: Derivation | None = None,
               folded: Derivation | None = None) -> Named | None:
    """What of a claim derived with twins can be shown, or None. Each part is kept only
    where it is exactly the folded one at ``values``: ``named`` against ``formula``,
    ``roofline`` (named F, named Q, folded F, folded Q) part by part, ``derivation``
    row by row against ``folded``. ``params`` is the twin's parameter count, used as
    the name ``P`` where the formula carries it."""
    if not values:
        return None
    shown = named if _exact(named, formula, values) and named != formula else None
    flops = bytes_ = None
    if roofline is not None and _exact(roofline[0], roofline[2], values) and \
            _exact(roofline[1], roofline[3], values):
        flops, bytes_ = roofline[0], roofline[1]
    table = None
    if derivation is not None and folded is not None and \
            [r.label for r in derivation.rows] == [r.label for r in folded.rows] and \
            all(_exact(a.flops, b.flops, values) and _exact(a.bytes, b.bytes, values)
                for a, b in zip(derivation.rows, folded.rows)) and \
            _exact(derivation.flops, folded.flops, values) and \
            _exact(derivation.bytes, folded.bytes, values):
        table = derivation
    if shown is None and flops is None and table is None:
        return None
    parts = [e for e in (shown, flops, bytes_) if e is not None]
    if table is not None:
        parts += [table.flops, table.bytes]
    in_p = [_in_p(e, params) for e in parts]
    names: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()
    if params is not None and any(P in e.free_symbols for e in in_p) and \
            not any(P in e.free_symbols for e in parts):  # P is the model's, not declared
        names = ((P, params),)
        parts = in_p
    it = iter(parts)
    shown = next(it) if shown is not None else None
    if flops is not None:
        flops, bytes_ = next(it), next(it)
    if table is not None:  # the sums in P too, where the rest is written in it
        table = dataclasses.replace(table, flops=next(it), bytes=next(it))
    used: set[sp.Basic] = set().union(*(e.free_symbols for e in parts)) if parts else set()
    if table is not None:
        for row in table.rows:
            used |= row.flops.free_symbols | row.bytes.free_symbols
    used |= {s for _, v in names for s in v.free_symbols}
    return Named(shown, names, tuple((k, v) for k, v in values.items() if k in used),
                 flops, bytes_, table)
