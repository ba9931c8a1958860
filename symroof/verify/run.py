"""Run a claim file: derive every claim's value with the engine and compare it.

Each result carries the general formula (the recipe's value before the claim's
substitution), the substitution, the derived value in the claim's unit, the claimed one,
and a status:

- ``match``: the derived value agrees with the claim within the document's own rounding;
- ``mismatch``: it does not (the claim's note says which assumption or arithmetic differs);
- ``cited``: an empirical figure no formula yields, shown as a citation;
- ``derived``: an exercise the document sets without printing an answer: symroof's answer;
- ``inconsistent``: the document prints different values for this one quantity in
  different places (``places``); ``findings`` lists each place, its value and the
  convention that yields it;
- ``error``: the claim as written could not be read or computed (named in ``message``).

A claim's ``assumptions`` (what the document states it assumes or ignores) are in force
while the deciding value is derived; what the engine models beyond them (communication)
is an alternative labelled "with communication". ``comparison`` says how the verdict was
made (equal as printed, within a tolerance, at most or at least a bound) and
``tolerance`` in words; :data:`symroof.verify.compare.ROUNDING_RULE` is the one rule.
``findings`` are the engine's own remarks beside the row (a row that does not fit the
chip's memory, the places of an inconsistency). A note may hold ``{derived}``,
``{claimed}``, ``{alt0}``, ``{with_communication}`` (with a format spec: ``{derived:.3g}``),
filled in the claim's unit from the values derived, so no prose number disagrees with them.

>>> from symroof.verify.schema import parse_claims, EXAMPLE
>>> (r,) = run_claims(parse_claims(EXAMPLE, "example.toml")).results
>>> r.status, r.derived, r.formula
('match', 8192/3, 2*n/(3*b))
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from symroof.budget import check_expr, check_number, substitute
from symroof.errors import SymroofError
from symroof.parse import parse_expr
from symroof.request import Request
from symroof.symbols import CANONICAL
from symroof.verify import units
from symroof.verify.charts import check_chart
from symroof.verify.compare import (comparison, half_unit, propagated_halfwidth, status,
                                    tolerance_text)
from symroof.verify.grammar import dimension_of
from symroof.verify.derivation import Derivation, derivation, workload_spec
from symroof.verify.named import Named, named_form, writes_numbers
from symroof.verify.recipe import (Context, _Heavy, check_value, declare_each, evaluate,
                                   formula_of, honour, workload)
from symroof.verify.schema import Chart, Claim, ClaimFile, field_line
from symroof.verify.workers import compute

__all__ = ["Result", "Alternative", "Outcome", "run_claims", "derive", "STATUSES",
           "WITH_COMMUNICATION", "fill_note", "chart_error"]

#: Every status a result may have.
STATUSES = ("match", "mismatch", "inconsistent", "cited", "derived", "error")

#: The label of the second line a claim that ignores communication gets.
WITH_COMMUNICATION = "with communication"


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
    findings: tuple[str, ...] = ()          # the engine's remarks beside the row
    comparison: str = ""                    # "equal", "within", "at most", "at least"
    derivation: Derivation | None = None    # the ops' F and Q and the step to the claim
    named: Named | None = None              # the formula in the model's names (presets)
    requests: tuple[Request, ...] = ()      # the registry workloads its recipe ran, as asked

    @property
    def assumptions(self) -> tuple[str, ...]:
        """What the document states it assumes or ignores: the verdict's basis."""
        return self.claim.assumptions

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
        return any(r.status in ("mismatch", "inconsistent", "error") for r in self.results)


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
    formula = formula_of(node, ctx, where)  # a recipe's rows share its one evaluation
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


def _check(claim: Claim, ctx: Context, claims: Mapping[str, Claim]) -> Result:
    ctx.ran = []
    result = _check_one(claim, ctx, claims)
    result = dataclasses.replace(result, requests=tuple(dict.fromkeys(ctx.ran)))
    findings = list(result.findings)
    if claim.fits is not None and result.status != "error":
        with _field(claim, ctx, "fits"):
            findings.append(_fits(claim, result.subs, ctx))
    with _field(claim, ctx, "note"):
        note = fill_note(claim.note, result)
    result = dataclasses.replace(result, claim=dataclasses.replace(claim, note=note),
                                 findings=tuple(findings),
                                 comparison=comparison(claim.rounding),
                                 derivation=_derivation(claim, result, ctx))
    return dataclasses.replace(result, named=_named(claim, result, ctx))


def _derivation(claim: Claim, result: Result, ctx: Context) -> Derivation | None:
    """The claim's derivation table (None where its recipe reads no workload at its top,
    or the claim could not be computed); the workload is the recipe's own, cached."""
    if result.status == "error" or claim.value is None:
        return None
    where = _at(claim, ctx, "value")
    try:
        return derivation(claim.value, lambda spec: workload(spec, ctx, {}, where))
    except SymroofError:  # the verdict stands without its table
        return None


def _reads_preset(node: object) -> bool:
    if isinstance(node, Mapping):
        return any((k == "model" and (isinstance(v, str) or
                                      isinstance(v, Mapping) and "preset" in v))
                   or _reads_preset(v) for k, v in node.items())
    return isinstance(node, list) and any(_reads_preset(v) for v in node)


def _named(claim: Claim, result: Result, ctx: Context) -> Named | None:
    """The claim derived again with its presets' twins, in their names
    (:mod:`symroof.verify.named`); None where the recipe reads no preset, or no part of
    the twin form is exactly the folded one (the verdict stands without it). Where the
    formula keeps a variable and its recipe writes a chip's figure or a builder's number
    argument, those are named too, if that gives a form that names them; else the
    presets' form stands."""
    if result.status == "error" or result.formula is None:
        return None
    numbers = bool(result.formula.free_symbols) and writes_numbers(claim.value)
    if not numbers and not _reads_preset(claim.value):
        return None
    # claims of one recipe (a table's rows, which differ only in subs) have one named form
    key = json.dumps([claim.value, sorted(claim.assumptions)], sort_keys=True, default=str)
    if numbers:
        full = ctx.with_twins(numbers=True)
        if key not in full.named:
            found = _named_form(claim, result, ctx, full)
            if found is None and _reads_preset(claim.value):
                found = _named_preset(claim, result, ctx, key)
            full.named[key] = found
        shown: Named | None = full.named[key]
        return shown
    return _named_preset(claim, result, ctx, key)


def _named_preset(claim: Claim, result: Result, ctx: Context, key: str) -> Named | None:
    twins = ctx.with_twins()
    if key not in twins.named:
        twins.named[key] = _named_form(claim, result, ctx, twins)
    found: Named | None = twins.named[key]
    return found


def _words(node: object) -> set[str]:
    """Every identifier a recipe's keys and texts write (the names a claim uses)."""
    if isinstance(node, Mapping):
        return set().union(*(_words(k) | _words(v) for k, v in node.items()))
    if isinstance(node, list):
        return set().union(*(_words(v) for v in node))
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", node)) if isinstance(node, str) else set()


def _named_form(claim: Claim, result: Result, ctx: Context, twins: Context) -> Named | None:
    folded = result.formula
    if folded is None:
        return None
    twins.twin_seen, twins.mentioned, twins.ran = [], set(), []  # this claim's alone
    twins.assumptions = frozenset(claim.assumptions)
    where = _at(claim, ctx, "value")
    named = roofline = table = None
    try:  # the verdict stands without a named form: nothing here may end the claim
        top = workload_spec(claim.value)
        if top is not None:  # a workload (or a roofline's) at the top: its twin only
            a = workload(top[0], twins, {}, where)
            d = result.derivation
            table = derivation(claim.value, lambda spec: a)
            if "roofline" in claim.value:
                if d is not None:
                    roofline = (a.flops, a.bytes, d.flops, d.bytes)
            elif "let" in claim.value and twins.twin_numbers:  # then a chip's algebra
                named = evaluate(claim.value, twins, {}, where)
            else:
                named = a.quantities.get(str(claim.value.get("q", "I")))
        else:
            inner = _roofline_formula(claim.value)
            if inner is not None:  # the roofline's algebra: its F and Q in names
                if twins.twin_numbers:  # its chip is already shown as max(F/π, Q/β)
                    return None
                f = evaluate(inner["F"], twins, {}, where)
                q = evaluate(inner["Q"], twins, {}, where)
                mentioned = ctx.mentioned
                try:
                    roofline = (f, q, formula_of(inner["F"], ctx, where),
                                formula_of(inner["Q"], ctx, where))
                finally:
                    ctx.mentioned = mentioned
            else:
                named = evaluate(claim.value, twins, {}, where)
    except (SymroofError, _Heavy, RecursionError):
        return None
    finally:
        twins.assumptions = frozenset()
    seen = twins.twin_seen
    values: dict[sp.Symbol, sp.Expr] = {}
    for v, _ in seen:
        if any(values.get(k, x) != x for k, x in v.items()):
            return None  # two presets of different shapes: no one set of names
        values.update(v)
    models = [p for _, p in seen if p is not None]
    params = models[0] if models and all(p == models[0] for p in models) else None
    if not isinstance(named, sp.Expr):
        named = None
    numbers = {k for v, p in seen if p is None for k in v}
    if twins.twin_numbers:  # a number's name must be new to the claim, and shown
        words = _words(claim.value) | {str(s) for s in folded.free_symbols}
        if not numbers or any(k.name in words for k in numbers):
            return None
    found = named_form(folded, named, values, params, roofline=roofline,
                       derivation=table, folded=result.derivation)
    if twins.twin_numbers and found is not None and \
            not any(k in numbers for k, _ in found.values):
        return None  # nothing named that the presets' form does not
    return found


def _roofline_formula(node: object) -> Mapping[str, Any] | None:
    """The first roofline_formula table in a recipe (its F and Q are nodes)."""
    if isinstance(node, Mapping):
        if isinstance(node.get("roofline_formula"), Mapping):
            rf = node["roofline_formula"]
            return rf if "F" in rf and "Q" in rf else None
        for v in node.values():
            found = _roofline_formula(v)
            if found is not None:
                return found
    if isinstance(node, list):
        for v in node:
            found = _roofline_formula(v)
            if found is not None:
                return found
    return None


def _number(value: sp.Expr | None, claim: Claim) -> float | None:
    if value is None or value.free_symbols:
        return None
    return float(value / units.scale(claim.unit))


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(:[^{}]*)?\}")
_NOTE_MATH = re.compile(r"(\$[^$\n]+\$)")


def fill_note(note: str, result: Result) -> str:
    """``note`` with ``{derived}``, ``{claimed}``, ``{altN}`` and ``{with_communication}``
    filled in the claim's unit (a format spec such as ``:.3g`` is applied; the default
    is 4 significant figures). Braces inside the note's ``$...$`` math are TeX's
    (``$d_{\\mathrm{ff}}$``), not placeholders."""
    values: dict[str, float | None] = {"derived": _number(result.derived, result.claim),
                                       "claimed": _number(result.claimed, result.claim)}
    for i, alt in enumerate(result.alternatives):
        values[f"alt{i}"] = _number(alt.derived, result.claim)
        if alt.label == WITH_COMMUNICATION:
            values["with_communication"] = values[f"alt{i}"]

    def fill(m: re.Match[str]) -> str:
        name, spec = m.group(1), (m.group(2) or ":.4g")[1:]
        if name not in values:
            raise SymroofError(f"note placeholder {{{name}}}: expected one of "
                               f"{', '.join(sorted(values))}")
        v = values[name]
        if v is None:
            raise SymroofError(f"note placeholder {{{name}}}: no number was derived for it")
        try:
            return _plain(format(v, spec))
        except ValueError as err:
            raise SymroofError(f"note placeholder {{{name}}}: bad format {spec!r} ({err})")
    parts = _NOTE_MATH.split(note)  # odd parts are $...$ math, left as they are
    return "".join(p if i % 2 else _PLACEHOLDER.sub(fill, p) for i, p in enumerate(parts))


def _plain(text: str) -> str:
    """A formatted number as a document prints it: ``1.104e+04`` as ``11,040``, and
    ``6.442e+09`` as ``6.442e9``."""
    m = re.fullmatch(r"(-?[0-9.]+)e([+-])0*([0-9]+)", text)
    if not m:
        return text
    mantissa, sign, exp = m.groups()
    if sign == "+" and int(exp) < 6:
        return f"{float(text):,.0f}"
    return f"{mantissa}e{'-' if sign == '-' else ''}{exp}"


def _fits(claim: Claim, subs_: Mapping[sp.Symbol, sp.Expr], ctx: Context) -> str:
    """The feasibility finding of ``claim.fits``: does ``need`` fit in ``capacity``?"""
    assert claim.fits is not None
    where = _at(claim, ctx, "fits")
    values = []
    for key in ("need", "capacity"):
        ctx.mentioned = set()
        _, v = derive(claim.fits[key], subs_, ctx, f"{where}.{key}")
        if v.free_symbols:
            raise SymroofError(f"{where}.{key}: expected a number at the claim's subs, got {v}")
        values.append(v)
    need, cap = values
    what = claim.fits["what"]
    gb = sp.Integer(10) ** 9
    if need > cap:
        return (f"does not run as stated: {what} needs {float(need / gb):.4g} GB, more than "
                f"the {float(cap / gb):.4g} GB available")
    return f"fits: {what} needs {float(need / gb):.4g} GB of {float(cap / gb):.4g} GB"


def _places(claim: Claim, verdict: str, value: sp.Expr) -> tuple[str, tuple[str, ...]]:
    """``inconsistent`` with its findings when the places print different values."""
    if not claim.places or claim.claimed is None:
        return verdict, ()
    printed = [claim.claimed] + [sp.Rational(repr(p["claimed"])) if isinstance(
        p["claimed"], float) else sp.Integer(p["claimed"]) for p in claim.places]
    if len(set(printed)) == 1:
        return verdict, ()
    unit = claim.unit
    derived = _number(value, claim)
    lines = [f"{claim.section}: \"{claim.quote}\" prints {float(claim.claimed):g} {unit} "
             f"({verdict} with the derived {derived:.4g})" if derived is not None else
             f"{claim.section}: \"{claim.quote}\" prints {float(claim.claimed):g} {unit}"]
    for p, v in zip(claim.places, printed[1:]):
        lines.append(f"{p.get('section', claim.section)}: \"{p['quote']}\" prints {float(v):g} "
                     f"{unit} ({p['convention']})")
    return "inconsistent", tuple(lines)


def _propagated(claim: Claim, claims: Mapping[str, Claim], ctx: Context) -> sp.Expr:
    """The extra tolerance from the rounding of the printed inputs the document used."""
    if not claim.propagated or claim.claimed is None:
        return sp.Integer(0)
    inputs = []
    for cid in claim.propagated:
        other = claims.get(cid)
        if other is None or other.claimed is None:
            raise SymroofError(f"{_at(claim, ctx, 'propagated')}: no claim {cid!r} with a "
                               "printed number")
        inputs.append((other.claimed, half_unit(other.claimed, other.rounding)))
    return propagated_halfwidth(claim.claimed * units.scale(claim.unit), inputs)


def _check_one(claim: Claim, ctx: Context, claims: Mapping[str, Claim]) -> Result:
    where = f"{ctx.path}:{claim.line}: claim {claim.id!r}"
    if claim.status == "cited" and claim.value is None:
        claimed = None if claim.claimed is None else claim.claimed * units.scale(claim.unit)
        return Result(claim, "cited", claimed=claimed)
    if claim.status == "cited":  # a faithful quotation: the source's own inputs checked
        checked = _check_one(dataclasses.replace(claim, status=None), ctx, claims)
        if checked.status == "match" or checked.derived_in_unit is None:
            finding = f"the source's own inputs give the figure it reports ({checked.status})"
        else:
            finding = (f"the source's own inputs give {_plain(format(float(checked.derived_in_unit), '.4g'))} "
                       f"{claim.unit}, not the {float(claim.claimed or 0):g} it reports: the "
                       f"source's own inconsistency ({claim.source})")
        return dataclasses.replace(checked, status="cited",
                                   findings=checked.findings + (finding,))
    with _field(claim, ctx, "assumptions"):
        honour(claim.value, claim.assumptions, _at(claim, ctx, "assumptions"))
    with _field(claim, ctx, "propagated"):
        extra = _propagated(claim, claims, ctx)
    with _field(claim, ctx, "unit"):
        _check_unit(claim, claim.value, ctx)
        for alt in claim.alternatives:
            _check_unit(claim, alt.get("value"), ctx, str(alt.get("label")))
    with _field(claim, ctx, "subs"):
        subs_ = _subs(claim, ctx, _at(claim, ctx, "subs"))
    ctx.mentioned = set()
    with _field(claim, ctx, "value"):
        ctx.assumptions = frozenset(claim.assumptions)
        try:
            formula, value = derive(claim.value, subs_, ctx, _at(claim, ctx, "value"))
        finally:
            ctx.assumptions = frozenset()
    used = set(formula.free_symbols) | ctx.mentioned
    beyond: tuple[Alternative, ...] = ()
    if "ignores communication" in claim.assumptions:
        with _field(claim, ctx, "value"):
            ctx.mentioned = set()
            _, richer = derive(claim.value, subs_, ctx, _at(claim, ctx, "value"))
        verdict_c = None
        if claim.claimed is not None and not richer.free_symbols:
            unit_c = units.scale(claim.unit)
            verdict_c = status(richer, claim.claimed * unit_c, claim.rounding, unit_c)
        beyond = (Alternative(WITH_COMMUNICATION, richer, verdict_c),)
    claimed_f = None
    if claim.claimed_formula is not None:
        with _field(claim, ctx, "claimed_formula"):
            table = {**CANONICAL, **ctx.declared}
            claimed_f = parse_expr(claim.claimed_formula, table,
                                   what=_at(claim, ctx, "claimed_formula"))
            check_expr(claimed_f, _at(claim, ctx, "claimed_formula"))
            used |= claimed_f.free_symbols
    with _field(claim, ctx, "alternatives"):
        alternatives = beyond + tuple(_alternative(claim, a, subs_, ctx, used)
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
        verdict = status(value, claimed, claim.rounding, units.scale(claim.unit), extra)
        verdict, findings = _places(claim, verdict, value)
        tolerance = tolerance_text(claim.rounding) + (
            f", plus the propagated rounding of {', '.join(claim.propagated)}"
            if claim.propagated else "")
        return Result(claim, verdict, shown, subs_, value, claimed, tolerance=tolerance,
                      alternatives=alternatives, findings=findings)


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


def _neighbours(claim: Claim) -> tuple[str, str, object]:
    return claim.document, claim.section, (claim.table or {}).get("id")


def run_claims(source: ClaimFile, *, workers: int | None = None) -> Outcome:
    """Check every claim of ``source``; one claim's error never stops the others (any
    exception a claim raises becomes its error, naming the file, line and field).

    The claims are independent, so ``workers`` processes check them side by side
    (:mod:`symroof.verify.workers`; the outcome is the same for any number). ``None``
    takes the idle cores (``workers.available()``), at most one per ``workers.PER_WORKER``
    claims; 1 checks them all in this process.
    """
    declared, refused = declare_each(source.symbols, f"{source.path}: [symbols]")
    ctx = Context(declared, source.path, source.text, refused=refused)
    claims = {c.id: c for c in source.claims if c.error is None}

    def one(claim: Claim) -> Result:
        if claim.error is not None:
            return Result(claim, "error", message=claim.error)
        try:
            with _field(claim, ctx, "value"):
                return _check(claim, ctx, claims)
        except SymroofError as err:
            return Result(claim, "error", message=str(err))

    # a section's claims (a table's rows) tend to share workloads: kept together
    results = compute(one, source.claims, workers, key=_neighbours)
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
            check_chart(chart.spec, by_id, documents, where)
            if chart.id in seen:
                raise SymroofError(f"{where} field 'id': duplicate chart id")
        except SymroofError as err:
            errors.append(chart_error(chart, str(err), documents))
        except Exception as err:  # noqa: BLE001 - one chart never stops the report
            errors.append(chart_error(chart, f"{where}: internal error ({type(err).__name__}: "
                                             f"{_brief(err)}); please report it", documents))
        else:
            seen.add(chart.id)
            drawable.append(chart)
    return tuple(drawable), tuple(errors)


def chart_error(chart: Chart, message: str, documents: Collection[str]) -> Result:
    """The error result ``chart:<id>`` of a chart that cannot be drawn, under its document
    when it names one of ``documents``."""
    doc = chart.spec.get("document") if isinstance(chart.spec, Mapping) else None
    return Result(Claim(id=f"chart:{chart.id}", line=chart.line,
                        document=doc if isinstance(doc, str) and doc in documents else "",
                        section="Charts that could not be drawn", error=message),
                  "error", message=message)
