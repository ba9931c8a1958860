"""Units of claimed values: a base unit with an optional prefix, as a document prints it.

A claim states its value as the document prints it (``547`` with unit ``GFLOP``); the
engine's values are in base units (FLOP, B, s, ...). Decimal prefixes are powers of 10,
binary ones powers of 2, as everywhere in symroof.

>>> scale("GFLOP"), scale("KiB"), scale("ms"), scale("%")
(1000000000, 1024, 1/1000, 1/100)
>>> base("TB/s"), base("tokens/s")
('B/s', 'tokens/s')

Each base unit has a dimension, derived with SymPy from its parts: FLOP, MAC and OP
are work, B is information (bytes), s, h and days are time, and a count (tokens,
parameters, sequences...) is a plain number, so FLOP/token is work and B/s is
information per time. A compound unit's dimension is the quotient of its parts', so no
table of compound units can disagree with its parts. (SymPy's ``sympy.physics.units``
has information and time but no unit of work, and importing it costs about two seconds
on every claim run; the three base dimensions here are plain SymPy symbols, and the
algebra is SymPy's.) A claim's unit must fit the dimension of the quantity it reads:

>>> dimension_expr("TB/s"), dimension_expr("FLOP/token"), dimension_expr("tokens/s")
(information/time, work, 1/time)
>>> check_unit("TFLOP/s", "intensity", "ridge.toml:3: claim 'r' field 'unit'")
Traceback (most recent call last):
...
symroof.errors.SymroofError: ridge.toml:3: claim 'r' field 'unit': 'TFLOP/s' measures a compute rate, but the value is an intensity; expected a unit such as FLOP/B, OP/B (prefixes allowed: kFLOP/B, ...)
"""

from __future__ import annotations

import sympy as sp

from symroof.errors import SymroofError, suggest

__all__ = ["BASE_UNITS", "dimension_expr", "BASE_DIMENSIONS", "QUANTITY_UNITS", "UNIT_DIMENSIONS", "DIMENSIONS", "scale", "base",
           "split", "dimension", "check_unit", "DIMENSION_UNITS"]

#: Units a claim may state (before any prefix), each with what it measures.
BASE_UNITS = {
    "FLOP": "floating-point operations", "MAC": "multiply-accumulates",
    "OP": "operations (integer or mixed)", "B": "bytes", "s": "seconds", "h": "hours",
    "days": "days", "FLOP/B": "intensity", "OP/B": "operations per byte",
    "FLOP/s": "compute rate", "OP/s": "operation rate", "B/s": "bandwidth",
    "FLOP/token": "FLOPs per token", "B/token": "bytes per token",
    "B/parameter": "bytes per parameter", "tokens": "tokens", "tokens/s": "token rate",
    "parameters": "parameters", "values": "values", "elements": "elements",
    "sequences": "sequences", "layers": "layers", "rows": "rows",
    "ratio": "a dimensionless ratio", "x": "a speed-up or factor", "%": "a percentage",
    "-": "a dimensionless number",
}

#: The unit of each named engine quantity (a claim reading one directly must use it).
QUANTITY_UNITS = {
    "F": "FLOP", "F_weights": "FLOP", "F_attention": "FLOP", "Q": "B", "I": "FLOP/B",
    "tokens": "tokens", "time_s": "s", "compute_time_s": "s", "memory_time_s": "s",
    "time_serial_s": "s", "tokens_per_s": "tokens/s", "tokens_per_s_per_user": "tokens/s",
    "attainable": "FLOP/s", "peak": "FLOP/s", "bandwidth": "B/s", "ridge": "FLOP/B",
    "params": "parameters", "active_params": "parameters", "kv_bytes_per_token": "B/token",
    "weight_bytes_total": "B", "capacity": "sequences",
}

#: What each dimension is, in words.
DIMENSIONS = {
    "work": "a count of operations", "bytes": "a number of bytes", "time": "a time",
    "intensity": "an intensity", "rate": "a compute rate", "bandwidth": "a bandwidth",
    "per_time": "a rate per second", "number": "a plain number",
}

#: The unit the engine computes each dimension in (the reference's unit column).
DIMENSION_UNITS = {
    "work": "FLOP", "bytes": "B", "time": "s", "intensity": "FLOP/B", "rate": "FLOP/s",
    "bandwidth": "B/s", "per_time": "tokens/s", "number": "-",
}

_WORK, _INFORMATION, _TIME = sp.symbols("work information time", positive=True)

#: The dimension of each part of a unit (what is left of a base unit split at ``/``);
#: a count of things is a plain number (1).
BASE_DIMENSIONS: dict[str, sp.Expr] = {
    "FLOP": _WORK, "MAC": _WORK, "OP": _WORK, "B": _INFORMATION,
    "s": _TIME, "h": _TIME, "days": _TIME,
    **{count: sp.Integer(1) for count in ("token", "tokens", "parameter", "parameters",
                                          "values", "elements", "sequences", "layers",
                                          "rows", "ratio", "x", "%", "-")},
}

# each named dimension of DIMENSIONS as SymPy's algebra writes it
_NAMED = {_WORK: "work", _INFORMATION: "bytes", _TIME: "time", _WORK / _INFORMATION: "intensity",
          _WORK / _TIME: "rate", _INFORMATION / _TIME: "bandwidth", 1 / _TIME: "per_time",
          sp.Integer(1): "number"}


def dimension_expr(unit: str) -> sp.Expr:
    """The dimension of ``unit`` (prefix allowed) as a SymPy expression in work,
    information and time: the quotient of its parts' dimensions."""
    return _base_dimension(split(unit)[1])


def _base_dimension(base_unit: str) -> sp.Expr:
    numerator, *denominators = base_unit.split("/")
    value = BASE_DIMENSIONS[numerator]
    for part in denominators:
        value = value / BASE_DIMENSIONS[part]
    return value


#: The dimension of each base unit, by name (derived from its parts, never written out).
UNIT_DIMENSIONS = {u: _NAMED[_base_dimension(u)] for u in BASE_UNITS}

_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
            "m": sp.Rational(1, 10**3), "u": sp.Rational(1, 10**6), "µ": sp.Rational(1, 10**6),
            "n": sp.Rational(1, 10**9)}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_SPECIAL = {"%": sp.Rational(1, 100), "h": sp.Integer(3600), "days": sp.Integer(86400)}
# a prefix is read only where it makes sense (no "kratio", no "ms" meaning milli-s... it does)
_PREFIXABLE = ("FLOP", "MAC", "OP", "B", "s", "FLOP/s", "OP/s", "B/s", "tokens", "tokens/s",
               "parameters", "values", "elements", "FLOP/B", "B/token", "FLOP/token")


def split(unit: str, where: str = "unit") -> tuple[sp.Expr, str]:
    """``(scale, base unit)`` of ``unit``; an unknown unit is a SymroofError naming it."""
    if not isinstance(unit, str) or not unit:
        raise SymroofError(f"{where}: expected a unit such as 'FLOP/B' or 'GB', got {unit!r}")
    if unit in BASE_UNITS:
        return sp.Integer(1), unit
    for table in (_BINARY, _DECIMAL):
        for prefix, factor in table.items():
            rest = unit[len(prefix):]
            if unit.startswith(prefix) and rest in _PREFIXABLE:
                return sp.Integer(factor) if isinstance(factor, int) else factor, rest
    known = list(BASE_UNITS)
    raise SymroofError(f"{where}: unknown unit {unit!r}{suggest(unit, known)}; expected a unit "
                       f"such as {', '.join(known[:8])}, ..., with an optional prefix "
                       "(k M G T P, Ki Mi Gi Ti, m u n)")


def scale(unit: str) -> sp.Expr:
    """Base units per one ``unit`` (``GB`` -> 10**9)."""
    factor, base_unit = split(unit)
    return factor * _SPECIAL.get(base_unit, sp.Integer(1))


def base(unit: str) -> str:
    """The base unit (``TB/s`` -> ``B/s``)."""
    return split(unit)[1]


def dimension(unit: str) -> str:
    """The dimension a unit measures (``TB/s`` -> ``bandwidth``)."""
    return UNIT_DIMENSIONS[base(unit)]


def check_unit(unit: str, dim: str, where: str) -> None:
    """A SymroofError at ``where`` unless ``unit`` measures ``dim``, naming the units
    that would fit."""
    if dimension(unit) == dim:
        return
    fits = [u for u, d in UNIT_DIMENSIONS.items() if d == dim]
    prefixed = next((u for u in fits if u in _PREFIXABLE), None)
    more = (f" (prefixes allowed: {'m' if prefixed == 's' else 'k'}{prefixed}, ...)"
            if prefixed else "")
    shown = DIMENSIONS[dimension(unit)]
    raise SymroofError(f"{where}: {unit!r} measures {shown.replace('a number of ', '')}, but "
                       f"the value is {DIMENSIONS[dim]}; expected a unit such as "
                       f"{', '.join(fits)}{more}")
