"""Formulas on the Try-it page in the seed's notation: ``2P + 4LSD``, not ``12884901888*B``.

The page computes with the engine's expressions (printed as JavaScript by
:mod:`symroof.present.page_js`) and shows a reader the same formulas in named quantities.
A display form is written once, as text in the seed's notation; :func:`parse` reads it
(single-letter names from a fixed table, implicit multiplication, ``²``) into a SymPy
expression, and :func:`notation` checks that substituting the named quantities gives the
engine's formula exactly (``cancel(display.subs(names) - formula) == 0``), so a shown
formula can never disagree with the number next to it.

>>> from symroof.symbols import B, S, L, D, P, b
>>> parse("B(2P + 4LSD)") == B * (2 * P + 4 * L * S * D)
True
>>> parse("(12D/S + 2)/b") == (12 * D / S + 2) / b
True
>>> notation("2S²D", 8192 * S**2, {D: 4096}).text
'2S²D'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from symroof import symbols as s
from symroof.errors import SymroofError

__all__ = ["Notation", "notation", "parse", "NAMES"]

#: The letters a display form may use, as the seed writes them (``h`` is the head count).
NAMES: Mapping[str, sp.Symbol] = {
    "B": s.B, "S": s.S, "L": s.L, "D": s.D, "P": s.P, "M": s.M, "N": s.N, "K": s.K,
    "b": s.b, "n": s.n, "h": s.H}
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z])|(²)|([-+/()]))")


@dataclass(frozen=True)
class Notation:
    """A formula as the seed writes it: its text and the expression the text means."""

    text: str
    expr: sp.Expr


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SymroofError(f"page notation {text!r}: cannot read {text[pos:]!r}")
        out.append(m.group(m.lastindex or 0))
        pos = m.end()
    return out


def parse(text: str) -> sp.Expr:
    """``text`` (sums, differences, quotients, implicit products, ``²``) as SymPy.

    Juxtaposition binds tighter than ``/``, as in the seed: ``2n/(3b)`` is 2n over 3b.
    """
    tokens = _tokens(text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise SymroofError(f"page notation {text!r}: ends too soon")
        pos += 1
        return tokens[pos - 1]

    def atom() -> sp.Expr:
        t = take()
        if t == "(":
            e = expr()
            if take() != ")":
                raise SymroofError(f"page notation {text!r}: unbalanced parentheses")
            return e
        if t.isdigit():
            return sp.Integer(t)
        if t in NAMES:
            return NAMES[t]
        raise SymroofError(f"page notation {text!r}: unexpected {t!r}")

    def factor() -> sp.Expr:
        base = atom()
        return base**2 if peek() == "²" and take() else base

    def product() -> sp.Expr:
        out = factor()
        while peek() is not None and peek() not in ("+", "-", "/", ")"):
            out = out * factor()
        return out

    def term() -> sp.Expr:
        out = product()
        while peek() == "/":
            take()
            out = out / product()
        return out

    def expr() -> sp.Expr:
        out = term()
        while peek() in ("+", "-"):
            out = out + term() if take() == "+" else out - term()
        return out

    result = expr()
    if pos != len(tokens):
        raise SymroofError(f"page notation {text!r}: unexpected {tokens[pos]!r}")
    return result


def notation(text: str, formula: sp.Expr, names: Mapping[sp.Symbol, sp.Expr]) -> Notation:
    """``text`` checked against the engine's ``formula``: substituting ``names`` into what
    it says (in the order given) must give ``formula`` exactly."""
    display = parse(text)
    value = display
    for symbol, meaning in names.items():
        value = value.subs(symbol, meaning)
    if sp.cancel(value - formula) != 0:
        raise SymroofError(f"page notation {text!r} is not the engine's {formula} "
                           f"(with {', '.join(f'{k} = {v}' for k, v in names.items())})")
    return Notation(text, display)
