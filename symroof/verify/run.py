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

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof.budget import check_expr, check_number, substitute
from symroof.errors import SymroofError
from symroof.parse import parse_expr
from symroof.symbols import CANONICAL
from symroof.verify import units
from symroof.verify.charts import check_chart
from symroof.verify.compare import status, tolerance_text
from symroof.verify.grammar import dimension_of
from symroof.verify.recipe import Context, check_value, declare_each, evaluate
from symroof.verify.schema import Chart, Claim, ClaimFile, field_line

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


def _at(claim: Claim, ctx: Context, name: str) -> str:
    """``file:line: claim 'id' field 'name'``, the line being the field's own."""
    line = field_line(ctx.text, claim.line, name) if ctx.text else claim.line
    return f"{ctx.path}:{line}: claim {claim.id!r} field {name!r}"


def _subs(claim: Claim, ctx: Context, where: str,
          given: Mapping[str, Any] | None = None) -> dict[sp.Symbol, sp.Expr]:
    out: dict[sp.Symbol, sp.Expr] = {}
    table = {**CANONICAL, **ctx.declared}
    for name, value in (claim.subs if given is None else given).items():
        at = f"{where}.{name}"
        sym = ctx.symbol(name, at)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise SymroofError(f"{at}: expected a finite number or an expression, got "
                               f"{value!r}")
        parsed = (sp.Integer(value) if isinstance(value, int) else
                  sp.Rational(repr(value)) if isinstance(value, float) else
                  parse_expr(value, table, what=at))
        out[sym] = check_value(sym, parsed, at)
    return out


def derive(node: Any, subs_: Mapping[sp.Symbol, sp.Expr], ctx: Context,
           where: str) -> tuple[sp.Expr, sp.Expr]:
    """(the recipe's general formula, its value at ``subs_``), within the budget."""
    formula = evaluate(node, ctx, {}, where)
    if not isinstance(formula, sp.Expr):
        raise SymroofError(f"{where}: a claim derives one value, got {formula!r}")
    value = substitute(formula, dict(subs_), where) if subs_ else formula
    if value.has(sp.zoo, sp.nan):
        raise SymroofError(f"{where}: the value is undefined at the substitution (a division "
                           "by zero)")
    if not value.free_symbols and (value.has(sp.oo, -sp.oo) or value.is_real is False):
        raise SymroofError(f"{where}: the value is {value}, not a finite real number")
    return formula, check_number(value, where)


def _unused(subs_: Mapping[sp.Symbol, sp.Expr], used: set[sp.Basic], where: str) -> None:
    """A substitution for a symbol nothing uses is an error (a typo, or a wrong recipe)."""
    extra = sorted(str(s) for s in subs_ if s not in used)
    if extra:
        names = ", ".join(sorted(str(s) for s in used if isinstance(s, sp.Symbol))) or "none"
        raise SymroofError(f"{where}.{extra[0]}: the recipe does not use {extra[0]} (its "
                           f"symbols: {names})")


def _check_unit(claim: Claim, node: Any, ctx: Context, label: str = "") -> None:
    """The claim's unit fits the dimension of what ``node`` reads (where the recipe says)."""
    dim = dimension_of(node)
    if dim is not None:
        shown = f" (alternative {label!r})" if label else ""
        units.check_unit(claim.unit, dim, f"{_at(claim, ctx, 'unit')}{shown}")


def _check(claim: Claim, ctx: Context) -> Result:
    where = f"{ctx.path}:{claim.line}: claim {claim.id!r}"
    if claim.status == "cited":
        claimed = None if claim.claimed is None else claim.claimed * units.scale(claim.unit)
        return Result(claim, "cited", claimed=claimed)
    with _field(claim, ctx, "unit"):
        _check_unit(claim, claim.value, ctx)
        for alt in claim.alternatives:
            _check_unit(claim, alt.get("value"), ctx, str(alt.get("label")))
    with _field(claim, ctx, "subs"):
        subs_ = _subs(claim, ctx, _at(claim, ctx, "subs"))
    ctx.mentioned = set()
    with _field(claim, ctx, "value"):
        formula, value = derive(claim.value, subs_, ctx, _at(claim, ctx, "value"))
    used = set(formula.free_symbols) | ctx.mentioned
    claimed_f = None
    if claim.claimed_formula is not None:
        with _field(claim, ctx, "claimed_formula"):
            table = {**CANONICAL, **ctx.declared}
            claimed_f = parse_expr(claim.claimed_formula, table,
                                   what=_at(claim, ctx, "claimed_formula"))
            check_expr(claimed_f, _at(claim, ctx, "claimed_formula"))
            used |= claimed_f.free_symbols
    with _field(claim, ctx, "alternatives"):
        alternatives = tuple(_alternative(claim, a, subs_, ctx, used)
                             for a in claim.alternatives)
    with _field(claim, ctx, "subs"):
        _unused(subs_, used, _at(claim, ctx, "subs"))
    shown = formula if formula.free_symbols else None
    if claim.kind == "exercise":
        return Result(claim, "derived", shown, subs_, value, alternatives=alternatives)
    with _field(claim, ctx, "rounding"):
        if claimed_f is not None:
            claimed_at = substitute(claimed_f, subs_, _at(claim, ctx, "claimed_formula")) \
                if subs_ else claimed_f
            verdict = status(value, claimed_at, claim.rounding)
            return Result(claim, verdict, shown, subs_, value, claimed_formula=claimed_f,
                          tolerance=tolerance_text(claim.rounding), alternatives=alternatives)
        assert claim.claimed is not None  # the schema requires one of the two
        claimed = claim.claimed * units.scale(claim.unit)
        if value.free_symbols:
            names = ", ".join(sorted(s.name for s in value.free_symbols))
            raise SymroofError(f"{_at(claim, ctx, 'subs')}: the claimed figure is a number but "
                               f"the derived value still has {names}; give them in subs")
        return Result(claim, status(value, claimed, claim.rounding, units.scale(claim.unit)),
                      shown, subs_, value, claimed, tolerance=tolerance_text(claim.rounding),
                      alternatives=alternatives)


class _ClaimError(SymroofError):
    """An error already named by file, line, claim and field."""


@contextlib.contextmanager
def _field(claim: Claim, ctx: Context, name: str) -> Iterator[None]:
    """Every exception inside becomes a SymroofError naming the file, the line, the claim
    and ``name``, the field being read (a library's own message, such as a dimension's
    domain, says what was expected)."""
    try:
        yield
    except _ClaimError:
        raise
    except SymroofError as err:
        message = str(err)
        if not message.startswith(f"{ctx.path}:"):
            message = f"{_at(claim, ctx, name)}: {message}"
        raise _ClaimError(message) from None
    except (Exception, RecursionError) as err:  # noqa: BLE001 - one claim never stops the rest
        raise _ClaimError(f"{_at(claim, ctx, name)}: internal error ({type(err).__name__}: "
                          f"{_brief(err)}); please report it") from None


def _brief(err: BaseException) -> str:
    text = str(err)
    return text if len(text) <= 200 else text[:197] + "..."


def _alternative(claim: Claim, alt: Mapping[str, Any], base: Mapping[sp.Symbol, sp.Expr],
                 ctx: Context, used: set[sp.Basic]) -> Alternative:
    label = str(alt["label"])
    where = f"{_at(claim, ctx, 'alternatives')} alternative {label!r}"
    try:
        with _field(claim, ctx, "alternatives"):
            extra_given = alt.get("subs", {})
            if not isinstance(extra_given, Mapping):
                raise SymroofError(f"{where} subs: expected a table of symbol = value")
            unknown = set(alt) - {"label", "value", "subs"}
            if unknown:
                raise SymroofError(f"{where}: unknown key {sorted(unknown)[0]!r}; an "
                                   "alternative takes label, value, subs")
            extra = _subs(claim, ctx, f"{where} subs", extra_given)
            ctx.mentioned = set()
            formula, value = derive(alt["value"], {**base, **extra}, ctx, where)
            mine = formula.free_symbols | ctx.mentioned
            used |= mine
            _unused(extra, mine, f"{where} subs")
            verdict = None
            if claim.claimed is not None and not value.free_symbols:
                unit = units.scale(claim.unit)
                verdict = status(value, claim.claimed * unit, claim.rounding, unit)
            return Alternative(label, value, verdict)
    except SymroofError as err:
        return Alternative(label, None, None, str(err))


def run_claims(source: ClaimFile) -> Outcome:
    """Check every claim of ``source``; one claim's error never stops the others (any
    exception a claim raises becomes its error, naming the file, line and field)."""
    declared, refused = declare_each(source.symbols, f"{source.path}: [symbols]")
    ctx = Context(declared, source.path, source.text, refused=refused)
    results = []
    for claim in source.claims:
        if claim.error is not None:
            results.append(Result(claim, "error", message=claim.error))
            continue
        try:
            with _field(claim, ctx, "value"):
                results.append(_check(claim, ctx))
        except SymroofError as err:
            results.append(Result(claim, "error", message=str(err)))
    drawable, errors = _charts(source, results)
    if len(drawable) != len(source.charts):
        source = dataclasses.replace(source, charts=drawable)
    return Outcome(source, tuple(results) + errors)


def _charts(source: ClaimFile, results: list[Result]) -> tuple[tuple[Chart, ...],
                                                              tuple[Result, ...]]:
    """The charts that can be drawn, and an error result for each other one (a chart's
    error never stops the claims or the other charts from being reported)."""
    by_id = {r.claim.id: r for r in results}
    documents = {d.id for d in source.documents}
    drawable: list[Chart] = []
    errors: list[Result] = []
    seen: set[str] = set()
    for chart in source.charts:
        where = f"{source.path}:{chart.line}: chart {chart.id!r}"
        try:
            try:
                check_chart(chart.spec, by_id, documents, where)
                if chart.id in seen:
                    raise SymroofError(f"{where} field 'id': duplicate chart id")
            except SymroofError:
                raise
            except Exception as err:  # noqa: BLE001 - one chart never stops the report
                raise SymroofError(f"{where}: internal error ({type(err).__name__}: "
                                   f"{_brief(err)}); please report it") from None
        except SymroofError as err:
            doc = chart.spec.get("document") if isinstance(chart.spec, Mapping) else None
            errors.append(Result(Claim(id=f"chart:{chart.id}", line=chart.line,
                                       document=doc if isinstance(doc, str) and doc in documents
                                       else "",
                                       section="Charts that could not be drawn",
                                       error=str(err)), "error", message=str(err)))
            continue
        seen.add(chart.id)
        drawable.append(chart)
    return tuple(drawable), tuple(errors)
