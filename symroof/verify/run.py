"""Run a claim file: derive every claim's value with the engine and compare it.

Each result carries the general formula (the recipe's value before the claim's
substitution), the substitution, the derived value in the claim's unit, the claimed one,
and a status:

- ``match``: the derived value agrees with the claim within the document's own rounding;
- ``mismatch``: it does not (the claim's note says which assumption or arithmetic differs);
- ``cited``: an empirical figure no formula yields, shown as a citation;
- ``derived``: an exercise the document sets without printing an answer: symroof's answer;
- ``error``: the claim as written could not be read or computed (named in ``message``).

>>> from symroof.verify.schema import parse_claims, EXAMPLE
>>> (r,) = run_claims(parse_claims(EXAMPLE, "example.toml")).results
>>> r.status, r.derived, r.formula
('match', 8192/3, 2*n/(3*b))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof.errors import SymroofError
from symroof.parse import parse_expr
from symroof.symbols import CANONICAL
from symroof.verify import units
from symroof.verify.compare import status, tolerance_text
from symroof.verify.recipe import Context, declare, evaluate
from symroof.verify.schema import Claim, ClaimFile, field_line

__all__ = ["Result", "Alternative", "Outcome", "run_claims", "derive"]


@dataclass(frozen=True)
class Alternative:
    """The same figure under another convention or input."""

    label: str
    derived: sp.Expr | None
    status: str | None
    message: str = ""


@dataclass(frozen=True)
class Result:
    """One claim checked: what was claimed, what the engine derives, and the verdict."""

    claim: Claim
    status: str
    formula: sp.Expr | None = None          # the recipe's value before the substitution
    subs: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)
    derived: sp.Expr | None = None          # in base units (FLOP, B, s, ...)
    claimed: sp.Expr | None = None          # the claimed number in base units
    claimed_formula: sp.Expr | None = None
    tolerance: str = ""
    alternatives: tuple[Alternative, ...] = ()
    message: str = ""                       # the error, for status "error"

    @property
    def scale(self) -> sp.Expr:
        """Base units per one of the claim's unit."""
        return units.scale(self.claim.unit)

    @property
    def derived_in_unit(self) -> sp.Expr | None:
        """The derived value in the claim's own unit (GFLOP, ms, %)."""
        return None if self.derived is None or self.derived.free_symbols else \
            self.derived / self.scale


@dataclass(frozen=True)
class Outcome:
    """Every result of a claim file, in the file's order."""

    source: ClaimFile
    results: tuple[Result, ...]

    @property
    def counts(self) -> dict[str, int]:
        """How many results have each status."""
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    @property
    def failed(self) -> bool:
        """A mismatch or an error: a check of a document fails."""
        return any(r.status in ("mismatch", "error") for r in self.results)


def _subs(claim: Claim, ctx: Context, where: str) -> dict[sp.Symbol, sp.Expr]:
    out: dict[sp.Symbol, sp.Expr] = {}
    table = {**CANONICAL, **ctx.declared}
    for name, value in claim.subs.items():
        sym = ctx.symbol(name, f"{where} field 'subs'")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise SymroofError(f"{where} field 'subs'.{name}: expected a finite number, got "
                               f"{value!r}")
        out[sym] = (sp.Integer(value) if isinstance(value, int) else
                    sp.Rational(repr(value)) if isinstance(value, float) else
                    parse_expr(value, table, what=f"{where} subs.{name}"))
    return out


def derive(node: Any, subs_: Mapping[sp.Symbol, sp.Expr], ctx: Context,
           where: str) -> tuple[sp.Expr, sp.Expr]:
    """(the recipe's general formula, its value at ``subs_``)."""
    formula = evaluate(node, ctx, {}, where)
    if not isinstance(formula, sp.Expr):
        raise SymroofError(f"{where} field 'value': a claim derives one value, got {formula!r}")
    value = formula.xreplace(dict(subs_)) if subs_ else formula
    if value.has(sp.zoo, sp.nan):
        raise SymroofError(f"{where}: the value is undefined at the substitution (a division "
                           "by zero)")
    return formula, value


def _check(claim: Claim, ctx: Context) -> Result:
    where = f"{ctx.path}:{claim.line}: claim {claim.id!r}"
    if claim.status == "cited":
        claimed = None if claim.claimed is None else claim.claimed * units.scale(claim.unit)
        return Result(claim, "cited", claimed=claimed)
    subs_ = _subs(claim, ctx, where)
    line = field_line(ctx.text, claim.line, "value") if ctx.text else claim.line
    formula, value = derive(claim.value, subs_, ctx,
                            f"{ctx.path}:{line}: claim {claim.id!r} field 'value'")
    shown = formula if formula.free_symbols else None
    alternatives = tuple(_alternative(claim, a, subs_, ctx, where) for a in claim.alternatives)
    if claim.kind == "exercise":
        return Result(claim, "derived", shown, subs_, value, alternatives=alternatives)
    if claim.claimed_formula is not None:
        table = {**CANONICAL, **ctx.declared}
        claimed_f = parse_expr(claim.claimed_formula, table, what=f"{where} claimed_formula")
        verdict = status(value, claimed_f.xreplace(subs_) if subs_ else claimed_f,
                         claim.rounding)
        return Result(claim, verdict, shown, subs_, value, claimed_formula=claimed_f,
                      tolerance=tolerance_text(claim.rounding), alternatives=alternatives)
    assert claim.claimed is not None  # the schema requires one of the two
    claimed = claim.claimed * units.scale(claim.unit)
    if value.free_symbols:
        names = ", ".join(sorted(s.name for s in value.free_symbols))
        raise SymroofError(f"{where}: the claimed figure is a number but the derived value "
                           f"still has {names}; give them in subs")
    return Result(claim, status(value, claimed, claim.rounding, units.scale(claim.unit)), shown,
                  subs_, value, claimed,
                  tolerance=tolerance_text(claim.rounding), alternatives=alternatives)


def _alternative(claim: Claim, alt: Mapping[str, Any], base: Mapping[sp.Symbol, sp.Expr],
                 ctx: Context, where: str) -> Alternative:
    label = str(alt["label"])
    try:
        extra = _subs(Claim(id=claim.id, line=claim.line, subs=dict(alt.get("subs", {}))),
                      ctx, where)
        _, value = derive(alt["value"], {**base, **extra}, ctx, f"{where} alternative {label!r}")
        verdict = None
        if claim.claimed is not None and not value.free_symbols:
            unit = units.scale(claim.unit)
            verdict = status(value, claim.claimed * unit, claim.rounding, unit)
        return Alternative(label, value, verdict)
    except SymroofError as err:
        return Alternative(label, None, None, str(err))


def run_claims(source: ClaimFile) -> Outcome:
    """Check every claim of ``source``; one claim's error never stops the others."""
    ctx = Context(declare(source.symbols, f"{source.path}: [symbols]"), source.path, source.text)
    results = []
    for claim in source.claims:
        if claim.error is not None:
            results.append(Result(claim, "error", message=claim.error))
            continue
        try:
            results.append(_check(claim, ctx))
        except SymroofError as err:
            results.append(Result(claim, "error", message=str(err)))
    return Outcome(source, tuple(results))
