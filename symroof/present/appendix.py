"""The appendix of a claim file: Markdown, LaTeX and JSON, from the checked results.

The document opens with front matter (the documents by title and file, the claim file's
declared ``date`` if it has one, the symroof version, how to read it, a table of
contents), then the errata: every claim whose status is in :data:`ERRATA_STATUSES`, one
row each with printed value, corrected value, severity and a link to the claim.

Errata are grouped by root cause, so one slip that propagates through ten figures is one
erratum with ten consequences. The claim-file author controls the grouping with one
optional claim field, ``cause`` (any text; claims with the same text are one erratum).
Without it, a claim whose note names another erratum's id (``(s001-we-bytes)``) joins
that claim's group; failing that, the erratum claims of one ``table`` are one group; and
a claim left over is its own group.

Severity is derived from the comparison: ``source`` where the figure is quoted from a
source (the claim has ``source``, or its status is ``cited``); ``rounding`` where the
printed figure is within two units of its own last printed digit of the derived value
(for an "about" figure, within twice its stated tolerance); ``substantive`` otherwise.

Then the claims, in the documents' own order under the documents' own section titles
(which carry their own numbers, so nothing is numbered again); claims that share a
``table`` are one table (printed | corrected | status) where the first of them stands;
charts follow the section named in their ``after``. A formula whose claim substitutes
named sub-expressions (``subs = {P = "12*L*D**2"}``) is shown rewritten in those names
first (:func:`symroof.notation.rewrite`), then the substitution, then the number. The
templates (``templates/report/appendix.*.j2``) place strings this module has formatted;
they do no arithmetic.

>>> from symroof.verify import parse_claims, run_claims, EXAMPLE
>>> outcome = run_claims(parse_claims(EXAMPLE, "example.toml"))
>>> claims_json(outcome)[0]["derived"], claims_json(outcome)[0]["status"]
(2730.6666666666665, 'match')
>>> "2,730.67 FLOP/B" in render_markdown(outcome, [], "symroof report example.toml")
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sympy as sp
from sympy.printing.latex import LatexPrinter

from symroof import notation
from symroof.errors import SymroofError
from symroof.precision import bytes_per_value
from symroof.present.claim_charts import RenderedChart
from symroof.present.commands import request_doc
# the text layer is appendix_text; its names (_MATH_COMMANDS, _quote...) are this module's too
from symroof.present.appendix_text import (_MATH_COMMANDS, _code, _escape, _id_pattern,
                                           _quote, prose)
from symroof.present.formula import _Latex as _FormulaLatex
from symroof.present.formula import latex
from symroof.present.numbers import json_number, text_number
from symroof.present.templates import render
from symroof.symbols import b as _b
from symroof.verify import Outcome, Result
from symroof.verify import compare as _compare
from symroof.verify.derivation import Derivation
from symroof.verify.named import BETA, PI
from symroof.verify.workers import compute
from symroof.version import __version__

__all__ = ["claims_json", "claims_text", "read_claims", "derivation_terms", "render_markdown", "render_latex", "prepare", "Prepared", "figure", "STATUSES",
           "ERRATA_STATUSES", "errata", "severity", "comparison"]

#: Statuses, in the order the summary lists them, with what each means.
STATUSES = {
    "match": "agrees with the document within its own rounding",
    "mismatch": "differs beyond the document's rounding; the note says what differs",
    "cited": "an empirical figure no formula yields, cited",
    "derived": "an exercise the document sets without an answer: symroof's answer",
    "error": "the claim as written could not be computed",
    "inconsistent": "the document gives different values for one quantity in different places",
}

#: Statuses that make a claim an erratum (listed first, grouped by root cause).
ERRATA_STATUSES = frozenset({"mismatch", "inconsistent"})

#: How the rounding rule of a claim compares, in the JSON's words.
_COMPARISON = {"exact": "equal", "sig": "within", "decimals": "within", "rel": "within",
               "abs": "within", "orders": "within", "less_than": "at most",
               "at_most": "at most", "greater_than": "at least", "at_least": "at least"}



def figure(value: sp.Expr) -> str:
    """A number for a reader: integers grouped (2,731), others to six significant figures
    (2,730.67), very large or small ones in scientific notation."""
    if value.is_Integer and abs(value) < 10**15:
        return f"{int(value):,}"
    if value != 0 and not (sp.Rational(1, 1000) <= abs(value) < 10**9):
        return text_number(value)
    return f"{float(value):,.6g}"


def _in_unit(value: sp.Expr | None, r: Result, flavour: str) -> str:
    """``value`` in the claim's unit, with the unit (escaped for ``flavour``)."""
    if value is None or value.free_symbols:
        return ""
    unit = r.claim.unit
    if unit in ("-", "ratio"):
        return figure(value / r.scale)
    shown = _escape(flavour)(unit)
    return f"{figure(value / r.scale)}{shown if unit == '%' else ' ' + shown}"



def _last_digit(r: Result) -> sp.Rational | None:
    """One unit of the printed figure's last digit, in the claim's unit (None: no figure)."""
    if r.claimed is None or r.claimed.free_symbols:
        return None
    printed = sp.Rational(r.claimed / r.scale)
    (rule, value), = r.claim.rounding.items()
    if rule == "decimals":
        return sp.Rational(1, 10 ** int(value))  # type: ignore[call-overload]
    if printed == 0:
        return sp.Integer(1)
    if rule == "sig":
        magnitude = len(str(abs(int(printed)))) - 1 if abs(printed) >= 1 else \
            -len(str(int(1 / abs(printed))))
        while sp.Integer(10) ** magnitude > abs(printed):
            magnitude -= 1
        return sp.Integer(10) ** (magnitude - int(value) + 1)  # type: ignore[call-overload]
    exponent = 0  # the digits as printed: the smallest power of ten the figure is a multiple of
    while exponent > -40 and (printed / sp.Integer(10) ** exponent).q != 1:
        exponent -= 1
    while exponent < 40 and (printed / sp.Integer(10) ** (exponent + 1)).q == 1:
        exponent += 1
    return sp.Integer(10) ** exponent


def severity(r: Result) -> str:
    """``source``, ``rounding`` or ``substantive`` (see the module docstring)."""
    if r.status == "cited" or r.claim.source:
        return "source"
    digit = _last_digit(r)
    if digit is None or r.derived is None or r.derived.free_symbols or r.claimed is None:
        return "substantive"
    printed = sp.Rational(r.claimed / r.scale)
    difference = abs(sp.Rational(str(sp.N(r.derived / r.scale, 30))) - printed)
    (rule, value), = r.claim.rounding.items()
    allowance = 2 * digit  # two units of the last printed digit
    if rule == "rel":  # "about": the stated tolerance is the rounding
        allowance = 2 * sp.Rational(repr(value)) * abs(printed)
    elif rule == "abs":
        allowance = 2 * sp.Rational(repr(value))
    return "rounding" if difference <= allowance else "substantive"


def _propagated(r: Result, claims: Mapping[str, Any]) -> sp.Rational:
    """The extra tolerance (in the claim's unit) from the rounding of printed inputs the
    document computed this figure from (the claim's ``propagated`` ids): their relative
    half-units add, as :mod:`symroof.verify.compare` applies them."""
    ids = getattr(r.claim, "propagated", ()) or ()
    if not ids or r.claimed is None or r.claimed.free_symbols:
        return sp.Integer(0)
    rel = sp.Integer(0)
    for cid in ids:
        other = claims.get(cid)
        if other is None or other.claimed is None or other.claimed == 0:
            continue
        half = _half_unit(sp.Rational(other.claimed), other.rounding)
        rel += abs(half / sp.Rational(other.claimed))
    return sp.Rational(abs(r.claimed / r.scale) * rel)


def _half_unit(printed: sp.Rational, rounding: Mapping[str, object]) -> sp.Rational:
    """Half a unit of the last printed digit under a ``sig`` or ``decimals`` rule, else 0."""
    (rule, value), = rounding.items()
    if rule == "decimals":
        return sp.Rational(1, 2 * 10 ** int(value))  # type: ignore[call-overload]
    if rule != "sig" or printed == 0:
        return sp.Integer(0)
    exponent = 0
    while sp.Integer(10) ** exponent > abs(printed):
        exponent -= 1
    while sp.Integer(10) ** (exponent + 1) <= abs(printed):
        exponent += 1
    return sp.Rational(1, 2) * sp.Integer(10) ** (exponent - int(value) + 1)  # type: ignore[call-overload]


def comparison(r: Result, claims: Mapping[str, Any] | None = None
               ) -> tuple[str, dict[str, object] | None]:
    """How the claim is compared, for a consumer to redo the verdict: the kind
    (``equal`` as printed, ``within`` a stated tolerance, ``at most``, ``at least``) and
    the tolerance: ``{"absolute": a}`` in the claim's unit (half a unit of the last
    printed digit, or the stated tolerance, widened by the rounding of printed inputs the
    document propagated), ``{"orders": x}``, ``{"strict": bool}`` for a bound, or None for
    an exact comparison."""
    (rule, value), = r.claim.rounding.items()
    kind = getattr(r, "comparison", "") or _COMPARISON.get(rule, rule)
    if rule == "exact":
        return kind, None
    if rule in ("less_than", "at_most", "greater_than", "at_least"):
        return kind, {"strict": rule in ("less_than", "greater_than")}
    if rule == "orders":
        return kind, {"orders": value}
    extra = _propagated(r, claims or {})
    printed = r.claimed / r.scale if r.claimed is not None else None
    if printed is None or printed.free_symbols:
        return kind, None
    base = {"abs": lambda: sp.Rational(repr(value)),
            "rel": lambda: sp.Rational(repr(value)) * abs(printed),
            "sig": lambda: _half_unit(sp.Rational(printed), r.claim.rounding),
            "decimals": lambda: _half_unit(sp.Rational(printed), r.claim.rounding)}[rule]()
    return kind, {"absolute": json_number(base + extra)}


def _names(r: Result) -> tuple[dict[sp.Symbol, sp.Expr], dict[sp.Symbol, sp.Expr]]:
    """The claim's substitution split into named sub-expressions (``P = 12 L D²``) and
    numbers (``D = 4096``)."""
    names = {k: v for k, v in r.subs.items() if getattr(v, "free_symbols", None)}
    numbers = {k: v for k, v in r.subs.items() if k not in names}
    return names, numbers


def number_latex(value: sp.Expr) -> str:
    """A number as a reader writes it in a formula: a large one with few significant
    digits as ``494.7 \\times 10^{12}``, other large integers grouped (``8{,}484{,}257``),
    anything else as :func:`symroof.present.formula.latex` prints it.

    >>> print(number_latex(sp.Integer(494700000000000)), number_latex(sp.Integer(8484257)))
    494.7 \\times 10^{12} 8{,}484{,}257
    """
    if not value.is_Rational or abs(value) < 10**5:
        return latex(value)
    for power in range(3, 40, 3):
        if abs(value) < sp.Integer(10) ** (power + 3):
            mantissa = value / sp.Integer(10) ** power
            shown = f"{float(mantissa):.6g}"  # at most 4 significant digits, exactly
            if sp.Rational(shown) == mantissa and len(shown.replace(".", "").lstrip("-0")) <= 4:
                return f"{shown} \\times 10^{{{power}}}"
            break
    return f"{int(value):,}".replace(",", "{,}") if value.is_Integer else latex(value)


#: Display names of the roofline's own quantities (a claim that declares none is shown
#: as t = max(F/π, Q/β), with F and Q from its derivation and π, β its chip's, the
#: symbols a named form gives them: :data:`symroof.verify.named.PI`)
_F, _Q = sp.symbols("F Q", positive=True)
_PI, _BETA = PI, BETA

#: The units of a chip's names where a claim's model form uses them (its π and β)
_CHIP_UNITS = {_PI: "\\ \\mathrm{FLOP/s}", _BETA: "\\ \\mathrm{B/s}"}


def _roofline_names(r: Result) -> tuple[str, str]:
    """For a claim whose formula is the roofline's ``max`` with the chip's numbers folded
    in (``max(B P/494700000000000, ...)``), that formula in the roofline's own names and
    the names' values, as LaTeX; ("", "") where it is not exactly that. F and Q are
    shown in the model's names where the claim has them (:attr:`Result.named`)."""
    d = getattr(r, "derivation", None)
    named = getattr(r, "named", None)
    shown: tuple[sp.Expr, sp.Expr] | None = None
    if named is not None and named.flops is not None and named.bytes is not None:
        shown = (named.flops, named.bytes)
        flops = named.flops.xreplace(dict(named.names)).xreplace(dict(named.values))
        bytes_ = named.bytes.xreplace(dict(named.names)).xreplace(dict(named.values))
        d = Derivation((), flops, bytes_, "")
    if d is None or r.formula is None or not r.formula.has(sp.Max):
        return "", ""
    maxes = list(r.formula.atoms(sp.Max))
    if len(maxes) != 1 or len(maxes[0].args) != 2:
        return "", ""
    m = maxes[0]
    spec = r.claim.value.get("roofline") if isinstance(r.claim.value, Mapping) else None
    if isinstance(spec, Mapping) and _b not in r.formula.free_symbols:
        try:  # the roofline's own number format fixed b (bf16 unless the recipe says)
            width = bytes_per_value(str(spec.get("precision", "bf16")))
        except (SymroofError, ValueError):
            return "", ""
        d = dataclasses.replace(d, flops=d.flops.subs(_b, width), bytes=d.bytes.subs(_b, width))
        if shown is not None:
            shown = (shown[0].subs(_b, width), shown[1].subs(_b, width))
    found = _roofline_form(r.formula, m, d.flops, d.bytes)
    if found is None:
        return "", ""
    named_max, peak, bandwidth = found
    names = dict(named.names) if named is not None else {}
    f_shown, q_shown = (_named_latex(e, names) for e in shown) if shown is not None else \
        (latex(d.flops), latex(d.bytes))
    values = [f"F = {f_shown}", f"Q = {q_shown}",
              f"\\pi = {number_latex(peak)}\\ \\mathrm{{FLOP/s}}",
              f"\\beta = {number_latex(bandwidth)}\\ \\mathrm{{B/s}}"]
    return latex(named_max), ", ".join(values)


@functools.lru_cache(maxsize=1024)  # the Markdown and the LaTeX ask for the same claims
def _roofline_form(formula: sp.Expr, m: sp.Max, flops: sp.Expr, bytes_: sp.Expr
                   ) -> tuple[sp.Expr, sp.Expr, sp.Expr] | None:
    """``formula`` with its ``max`` ``m`` written max(F/π, Q/β), and π and β, where
    ``flops``/``bytes_`` over m's arguments are positive numbers and the result is exact."""
    compute, memory = sorted(m.args, key=lambda a: sp.cancel(flops / a).is_number is not True)
    peak, bandwidth = sp.cancel(flops / compute), sp.cancel(bytes_ / memory)
    if not (peak.is_Rational and bandwidth.is_Rational and peak > 0 and bandwidth > 0):
        return None
    named = formula.xreplace({m: sp.Max(_F / _PI, _Q / _BETA)})
    back = named.xreplace({_F: flops, _Q: bytes_, _PI: peak, _BETA: bandwidth})
    if sp.cancel(back - formula) != 0:  # never shown unless exact
        return None
    return named, peak, bandwidth


def _in_names(r: Result) -> str:
    """The claim's formula rewritten in the names its claim declares, or else derived in
    its model's names (:attr:`Result.named`), as LaTeX; "" where no name applies."""
    names, _ = _names(r)
    if r.formula is None or not r.formula.free_symbols:
        return ""
    shown = _rewritten(r.formula, tuple(names.items())) if names else ""
    named = getattr(r, "named", None)
    if not shown and named is not None and named.formula is not None:
        shown = _named_latex(named.formula, dict(named.names))
    return shown


class _NamedPrinter(_FormulaLatex):
    """The formula printer's symbols (``d_ff`` as ``d_{\\mathrm{ff}}``, as the values
    print), in the order :func:`symroof.notation.ordered` chose (as
    :func:`symroof.notation.latex` prints)."""

    _print_Add = LatexPrinter._print_Add
    _print_Mul = LatexPrinter._print_Mul


def _named_latex(expr: sp.Expr, names: Mapping[sp.Symbol, sp.Expr]) -> str:
    """``expr`` in textbook order with ``names`` first (:func:`symroof.notation.ordered`)."""
    return _named_latex_of(expr, tuple(names))


@functools.lru_cache(maxsize=2048)  # the Markdown and the LaTeX print the same formulas
def _named_latex_of(expr: sp.Expr, names: tuple[sp.Symbol, ...]) -> str:
    return str(_NamedPrinter({"order": "none"}).doprint(notation.ordered(expr, names, ())))


def _model_names(r: Result) -> tuple[dict[sp.Symbol, sp.Expr], dict[sp.Symbol, sp.Expr]]:
    """The names and numbers the claim's model form uses (``P = 12 L D^2``; ``L = 32``),
    where the appendix shows that form; empty otherwise."""
    named = getattr(r, "named", None)
    if named is None:
        return {}, {}
    return dict(named.names), dict(named.values)


@functools.lru_cache(maxsize=1024)  # the Markdown and the LaTeX ask for the same claims
def _rewritten(formula: sp.Expr, names: tuple[tuple[sp.Symbol, sp.Expr], ...]) -> str:
    try:
        named = notation.rewrite(formula, dict(names), where="claim")
    except SymroofError:
        return ""
    return "" if named == formula else _named_latex(named, dict(names))


def _errata_groups(results: Sequence[Result]) -> list[list[Result]]:
    """The erratum claims grouped by root cause (see the module docstring), each group
    in document order, groups in the order their first claim appears."""
    errata = [r for r in results if r.status in ERRATA_STATUSES]
    ids = {r.claim.id for r in errata}
    parent = {i: i for i in ids}

    def root(i: str) -> str:
        while parent[i] != i:
            i = parent[i]
        return i

    def join(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb, key=order.__getitem__)] = min(ra, rb, key=order.__getitem__)

    order = {r.claim.id: n for n, r in enumerate(errata)}
    by_cause: dict[str, str] = {}
    explicit = set()
    for r in errata:
        cause = getattr(r.claim, "cause", None)
        if cause:
            explicit.add(r.claim.id)
            join(by_cause.setdefault(str(cause), r.claim.id), r.claim.id)
    for r in errata:
        if r.claim.id in explicit:
            continue
        for other in re.findall(r"[A-Za-z0-9][\w.-]*\w", r.claim.note):
            if other in ids and other != r.claim.id:
                join(other, r.claim.id)
    tables: dict[str, str] = {}
    for r in errata:
        if r.claim.table is not None and r.claim.id not in explicit:
            join(tables.setdefault(r.claim.table["id"], r.claim.id), r.claim.id)
    groups: dict[str, list[Result]] = {}
    for r in errata:
        groups.setdefault(root(r.claim.id), []).append(r)
    return list(groups.values())


def errata(outcome: Outcome, flavour: str = "md") -> list[dict[str, Any]]:
    """The errata table's groups: a cause, then one row per claim (printed, corrected,
    severity, status, anchor)."""
    esc = _escape(flavour)
    ids = _id_pattern([r.claim.id for r in outcome.results])
    out = []
    for n, group in enumerate(_errata_groups(outcome.results), 1):
        first = group[0]
        cause = getattr(first.claim, "cause", None) or ""
        out.append({"n": n, "cause": prose(str(cause), flavour, ids), "rows": [{
            "id": esc(r.claim.id) if flavour == "tex" else r.claim.id,
            "anchor": r.claim.id.replace(".", "-"),
            "quantity": esc(r.claim.quantity or f"claim {r.claim.id}"),
            "printed": _printed(r, flavour), "corrected": _shown(r.derived, r, flavour),
            "severity": severity(r), "status": r.status} for r in group]})
    return out


def _shown(value: sp.Expr | None, r: Result, flavour: str) -> str:
    if value is not None and value.free_symbols:  # a formula: show the formula
        return f"${latex(value)}$"
    return _in_unit(value, r, flavour)


def _printed(r: Result, flavour: str) -> str:
    claimed = r.claimed if r.claimed is not None else r.claimed_formula
    return _shown(claimed, r, flavour)


def derivation_terms(r: Result, most: int = 6) -> list[tuple[sp.Expr, sp.Expr | None]]:
    """A mismatch's general formula split into its additive terms, each with its value at
    the claim's substitution, largest first; past ``most`` the rest are summed (term
    None). Empty unless the formula is a sum of at least two terms that all become
    numbers there."""
    formula = r.formula
    if r.status != "mismatch" or formula is None or not isinstance(formula, sp.Add) or \
            len(formula.args) > 200:
        return []
    values: list[tuple[sp.Expr, sp.Expr | None]] = []
    for term in formula.args:
        value = term.xreplace(dict(r.subs)) if r.subs else term
        if value.free_symbols or not value.is_number:
            return []
        values.append((value, term))
    values.sort(key=lambda vt: (-abs(vt[0]), str(vt[1])))
    if len(values) > most:
        values = values[:most] + [(sp.Add(*(v for v, _ in values[most:])), None)]
    return values


def _claim_item(r: Result, flavour: str, ids: re.Pattern[str] | None = None) -> dict[str, Any]:
    esc = _escape(flavour)
    c = r.claim
    names, numbers = _names(r)
    in_names, named_values = _in_names(r), ""
    if not in_names:
        in_names, named_values = _roofline_names(r)
    model_names, model_values = _model_names(r)
    if in_names and (model_names or model_values):  # the model's names: say what they are
        names = {**model_names, **names}
        numbers = {**model_values, **numbers}
        if named_values and model_names:
            named_values += ", " + ", ".join(f"{latex(k)} = {latex(v)}"
                                             for k, v in model_names.items())
    subs = ", ".join(f"{latex(k)} = {latex(v)}" for k, v in {**names, **numbers}.items())
    chips = set(model_values) & set(_CHIP_UNITS)  # a chip's figures in the model form
    claimed = (_in_unit(r.claimed, r, flavour) if r.claimed is not None else
               latex(r.claimed_formula) if r.claimed_formula is not None else "")
    return {
        "id": esc(c.id) if flavour == "tex" else c.id, "anchor": c.id.replace(".", "-"),
        "quantity": esc(c.quantity or f"claim {c.id}"),   # a claim that failed validation
        "quote": _quote(c.quote, flavour) if c.quote else "", "status": r.status, "kind": c.kind,
        # in the roofline's names the folded form says nothing more (and reads worse)
        "formula": (latex(r.formula) if r.formula is not None and not named_values and
                    not (in_names and (model_names or model_values)) else ""),
        "in_names": in_names,
        "names": named_values or ", ".join(f"{latex(k)} = {latex(v)}" for k, v in names.items()),
        # a long list of values may break after a comma in print (TeX breaks inline
        # math only at operators)
        "numbers": (", \\allowbreak " if flavour == "tex" else ", ").join(
            f"{latex(k)} = {number_latex(v)}{_CHIP_UNITS[k] if k in chips else ''}"
            for k, v in numbers.items()),
        "derived_formula": (latex(r.derived) if r.derived is not None and r.derived.free_symbols
                            else ""),
        "subs": subs, "derived": _in_unit(r.derived, r, flavour),
        "claimed": claimed, "claimed_is_formula": r.claimed_formula is not None,
        "tolerance": esc(r.tolerance), "note": prose(c.note, flavour, ids),
        "source": esc(c.source),
        "assumptions": [esc(str(a)) for a in getattr(c, "assumptions", ()) or ()],
        "findings": [prose(str(f), flavour, ids) for f in getattr(r, "findings", ()) or ()],
        "message": esc(r.message), "derivation": _derivation(r, flavour),
        "condition": _condition(r),
        "terms": [{"value": _in_unit(v, r, flavour), "term": latex(t) if t is not None else ""}
                  for v, t in derivation_terms(r)],
        "alternatives": [{"label": esc(a.label),
                          "value": (_in_unit(a.derived, r, flavour) if a.derived is not None and not
                                    a.derived.free_symbols else
                                    f"${latex(a.derived)}$" if a.derived is not None else ""),
                          "status": a.status or "", "message": esc(a.message)}
                         for a in r.alternatives],
    }


#: A qualitative claim's bound of 1 on a ratio, as the relation the condition states
_RELATIONS = {"less_than": "<", "at_most": "\\le", "greater_than": ">", "at_least": "\\ge"}


def _condition(r: Result) -> str:
    """A qualitative claim ("decode is memory-bound": intensity over the ridge below 1) as
    the condition it states, in math, with the derived side filled in
    (``0.0752 < 1``); "" for any other claim. Whether it holds is the claim's status."""
    (rule, _), = r.claim.rounding.items()
    if (rule not in _RELATIONS or r.claim.unit not in ("-", "ratio") or r.claimed != 1
            or r.derived is None or r.derived.free_symbols):
        return ""
    return f"{number_latex(sp.Float(r.derived, 6)) if not r.derived.is_Integer else r.derived}" \
        f" {_RELATIONS[rule]} 1"


def _derivation(r: Result, flavour: str) -> dict[str, Any] | None:
    """The claim's derivation table (:mod:`symroof.verify.derivation`) as LaTeX math
    cells: each row's ops, F and Q, their sums, and the step to the claim."""
    d = getattr(r, "derivation", None)
    if d is None:
        return None
    named = getattr(r, "named", None)
    if named is not None and named.derivation is not None:  # in the model's names
        d = named.derivation
    names = dict(named.names) if named is not None else {}
    code = _escape(flavour) if flavour == "tex" else _code

    def shown(e: sp.Expr) -> str:
        return _named_latex(e, names) if names else latex(e)
    return {"rows": [{"label": code(row.label), "F": shown(row.flops), "Q": shown(row.bytes)}
                     for row in d.rows],
            "F": shown(d.flops), "Q": shown(d.bytes), "step": _escape(flavour)(d.step)}


def _table_item(rows: list[Result], flavour: str, ids: re.Pattern[str] | None = None
                ) -> dict[str, Any]:
    """A table of the document as one table: a line per printed figure (row, column,
    printed, corrected, status), with the unit in the header where all share it."""
    esc = _escape(flavour)
    first = rows[0].claim.table
    assert first is not None
    units = {r.claim.unit for r in rows}
    unit = units.pop() if len(units) == 1 else ""

    def value(v: sp.Expr | None, r: Result) -> str:
        if v is not None and v.free_symbols:
            return f"${latex(v)}$"
        if unit and v is not None:
            return figure(v / r.scale)
        return _in_unit(v, r, flavour)

    def claimed(r: Result) -> sp.Expr | None:
        return r.claimed if r.claimed is not None else r.claimed_formula

    columns = list(dict.fromkeys(r.claim.table["column"] for r in rows if r.claim.table))
    title = next((r.claim.table["title"] for r in rows
                  if r.claim.table and r.claim.table.get("title")), "") or \
        f"Table: {', '.join(columns)}"  # no caption declared: what its columns hold
    claims = [_claim_item(r, flavour, ids) for r in rows]
    for before, item in zip(claims, claims[1:]):
        if item["quote"] == before["quote"] or item["quote"] == before.get("quote_shown"):
            item["quote_shown"], item["quote"] = item["quote"], ""  # one quote, said once
    return {"type": "table", "id": esc(first["id"]) if flavour == "tex" else first["id"],
            "anchor": first["id"].replace(".", "-"), "title": esc(title),
            "grid": _grid(rows, columns, flavour),
            "unit": "" if unit in ("", "-", "ratio") else esc(unit),
            "one_column": len(columns) == 1, "column": esc(first["column"]),
            "rows": [{"row": esc(r.claim.table["row"]) if r.claim.table else "",
                      "column": esc(r.claim.table["column"]) if r.claim.table else "",
                      "anchor": r.claim.id.replace(".", "-"),
                      "printed": value(claimed(r), r) or "--",
                      "corrected": value(r.derived, r), "status": r.status} for r in rows],
            "claims": claims}


def _grid(rows: list[Result], columns: list[str], flavour: str) -> dict[str, Any] | None:
    """An exercise's answers (a table whose every claim is ``derived``) as the grid the
    exercise asks for: one line per row, one column per asked quantity, the unit in the
    column's header where its answers share one; None for any other table."""
    esc = _escape(flavour)
    cells = {(r.claim.table["row"], r.claim.table["column"]): r for r in rows if r.claim.table}
    if len(columns) < 2 or len(cells) != len(rows) or any(r.status != "derived" for r in rows):
        return None
    header = []
    for column in columns:
        units = {r.claim.unit for (_, c), r in cells.items() if c == column}
        unit = units.pop() if len(units) == 1 else ""
        header.append({"name": esc(column), "unit": "" if unit in ("", "-", "ratio") else
                       _escape(flavour)(unit), "shared": bool(unit)})
    lines = []
    for row in dict.fromkeys(r.claim.table["row"] for r in rows if r.claim.table):
        line = []
        for column, head in zip(columns, header):
            r = cells.get((row, column))
            if r is None or r.derived is None:
                line.append({"value": "", "anchor": ""})
                continue
            shown = (f"${latex(r.derived)}$" if r.derived.free_symbols else
                     figure(r.derived / r.scale) if head["shared"] else _in_unit(r.derived, r, flavour))
            line.append({"value": shown, "anchor": r.claim.id.replace(".", "-")})
        lines.append({"row": esc(row), "cells": line})
    return {"columns": header, "rows": lines}


def _tables(outcome: Outcome) -> dict[str, list[Result]]:
    """The rows of each table, by the table's id, in the file's order."""
    tables: dict[str, list[Result]] = {}
    for r in outcome.results:
        if r.claim.table is not None:
            tables.setdefault(r.claim.table["id"], []).append(r)
    return tables


@dataclasses.dataclass(frozen=True)
class Prepared:
    """Each claim's entry (a table's, for the table's first row) in each flavour, by the
    claim's place in ``outcome.results``: the algebra and typesetting of every block,
    done once for both renderings (:func:`prepare`)."""

    outcome: Outcome
    entries: Mapping[tuple[str, int], dict[str, Any]]


def prepare(outcome: Outcome, flavours: Sequence[str] = ("md", "tex"), *,
            workers: int | None = None) -> Prepared:
    """The entries of every claim and table of ``outcome`` in each of ``flavours``, for
    :func:`render_markdown` and :func:`render_latex` (``prepared=``). Each entry depends
    on its claim alone, so ``workers`` processes compute them side by side
    (:func:`symroof.verify.workers.compute`; ``None``: the idle cores, at most one per
    ``PER_WORKER`` claims); the entries are the same for any number."""
    ids = _id_pattern([r.claim.id for r in outcome.results])
    tables = _tables(outcome)
    heads = [i for i, r in enumerate(outcome.results)
             if r.claim.table is None or tables[r.claim.table["id"]][0] is r]

    def entries(i: int) -> list[dict[str, Any]]:
        r = outcome.results[i]
        if r.claim.table is None:
            return [{"type": "claim", **_claim_item(r, f, ids)} for f in flavours]
        return [_table_item(tables[r.claim.table["id"]], f, ids) for f in flavours]

    section = lambda i: (outcome.results[i].claim.document,  # noqa: E731 - neighbours
                         outcome.results[i].claim.section)
    done = compute(entries, heads, workers, key=section)
    return Prepared(outcome, {(f, i): item for i, items in zip(heads, done)
                              for f, item in zip(flavours, items)})


def context(outcome: Outcome, charts: Sequence[RenderedChart], command: str,
            flavour: str, prepared: Prepared | None = None) -> dict[str, Any]:
    """Everything the appendix templates place, formatted for ``flavour`` (md or tex);
    ``prepared`` holds the claims' entries already made (:func:`prepare`)."""
    esc = _escape(flavour)
    src = outcome.source
    ids = _id_pattern([r.claim.id for r in outcome.results])
    tables = _tables(outcome)
    if prepared is not None and prepared.outcome is not outcome:
        raise SymroofError("prepared: made for another outcome (prepare(outcome) again)")
    made = prepared.entries if prepared is not None else {}
    documents = []
    for doc in src.documents:
        sections: list[dict[str, Any]] = []
        by_title: dict[str, dict[str, Any]] = {}
        entry_of: dict[str, dict[str, Any]] = {}  # claim id -> its entry (its table's)
        for at, r in enumerate(outcome.results):
            if r.claim.document != doc.id and not (r.status == "error" and not r.claim.document
                                                   and doc is src.documents[0]):
                continue
            title = r.claim.section or "Claims that could not be read"
            if title not in by_title:
                by_title[title] = {"title": esc(title), "entries": [], "charts": []}
                sections.append(by_title[title])
            items = by_title[title]["entries"]
            table = r.claim.table
            if (flavour, at) in made:
                items.append(dict(made[flavour, at]))
            elif table is None:
                items.append({"type": "claim", **_claim_item(r, flavour, ids)})
            elif tables[table["id"]][0] is r:
                items.append(_table_item(tables[table["id"]], flavour, ids))
            entry_of[r.claim.id] = items[-1]
        follows: dict[int, list[dict[str, Any]]] = {}
        for ch in charts:
            if ch.document != doc.id:
                continue
            shown = {"type": "chart", "id": ch.id, "title": esc(ch.title),
                     "svg_path": f"charts/{ch.id}.svg", "pgfplots": ch.pgfplots}
            if ch.after in entry_of:  # a chart names the claim it illustrates: beside it
                follows.setdefault(id(entry_of[ch.after]), []).append(shown)
                continue
            target = by_title.get(ch.after) or (sections[-1] if sections else None)
            if target is not None:
                target["charts"].append(shown)
        for section in sections:
            section["entries"] = [e for entry in section["entries"]
                                  for e in (entry, *follows.get(id(entry), ()))]
        for n, section in enumerate(sections, 1):
            section["anchor"] = f"d{doc.id}-{n}"
        documents.append({"id": doc.id, "title": esc(doc.title),
                          "file": esc(doc.file) if flavour == "tex" else _code(doc.file),
                          "anchor": f"d{doc.id}", "sections": sections})
    counts = outcome.counts
    code = _escape(flavour) if flavour == "tex" else _code
    return {"title": esc(src.title), "description": esc(src.description),
            "source": code(src.path), "command": code(command), "total": len(outcome.results),
            "version": __version__, "date": esc(str(getattr(src, "date", "") or "")),
            "counts": [{"status": s, "n": counts[s], "meaning": esc(STATUSES[s])}
                       for s in STATUSES if s in counts],
            "statuses": [{"status": s, "meaning": esc(m)} for s, m in STATUSES.items()],
            "rounding_rule": esc(getattr(_compare, "ROUNDING_RULE", "")),
            "errata": errata(outcome, flavour),
            "out_of_scope": [{"document": esc(f"Seed {o.document}"),
                              "section": esc(o.section), "quote": _quote(o.quote, flavour),
                              "reason": prose(o.reason, flavour, ids)}
                             for o in getattr(src, "out_of_scope", ())],
            "n_errata": sum(r.status in ERRATA_STATUSES for r in outcome.results),
            "documents": documents}


def render_markdown(outcome: Outcome, charts: Sequence[RenderedChart], command: str,
                    prepared: Prepared | None = None) -> str:
    """The appendix as Markdown (math in ``$...$`` and ``$$...$$``); ``prepared`` holds
    the claims' entries made already (:func:`prepare`)."""
    return render("report/appendix.md.j2", **context(outcome, charts, command, "md", prepared))


def render_latex(outcome: Outcome, charts: Sequence[RenderedChart], command: str,
                 prepared: Prepared | None = None) -> str:
    """The appendix as a LaTeX document (pdflatex; pgfplots charts inline); ``prepared``
    holds the claims' entries made already (:func:`prepare`)."""
    return render("report/appendix.tex.j2", **context(outcome, charts, command, "tex", prepared))


def claims_json(outcome: Outcome) -> list[dict[str, object]]:
    """One object per claim with the keys id, document (the file the claim quotes; files
    written before this key was named said ``seed``, and :func:`read_claims` reads both),
    quote, quantity, claimed, derived,
    formula, unit, status, note (numbers in the claim's unit), then assumptions (the
    document's stated assumptions the verdict is computed under), comparison (``equal``,
    ``within``, ``at most``, ``at least``) and tolerance (see :func:`comparison`), so that a
    consumer can redo each verdict of ``match`` or ``mismatch`` from the JSON alone; and
    requests, the registry workloads the claim's recipe ran, each as ``--json`` prints a
    command's request (the provenance: what to ask :func:`symroof.request.make` again)."""
    files = {d.id: d.file for d in outcome.source.documents}
    claims = {r.claim.id: r.claim for r in outcome.results}
    out: list[dict[str, object]] = []
    for r in outcome.results:
        c = r.claim
        kind, tolerance = comparison(r, claims)
        number = r.derived is not None and not r.derived.free_symbols
        formula = r.formula if r.formula is not None else (
            r.derived if r.derived is not None and r.derived.free_symbols else None)
        out.append({
            "id": c.id, "document": files.get(c.document, ""), "quote": c.quote,
            "quantity": c.quantity,
            "claimed": json_number(r.claimed / r.scale) if r.claimed is not None else None,
            "derived": json_number(r.derived / r.scale) if number else None,
            "formula": str(formula) if formula is not None else None,
            "unit": c.unit, "status": r.status,
            "note": r.message if r.status == "error" else c.note,
            "assumptions": [str(a) for a in r.assumptions],
            "tolerance": tolerance, "comparison": kind,
            # the registry workloads the recipe ran, as `--json` prints a command's request:
            # enough to ask each again (symroof.request.make)
            "requests": [request_doc(q) for q in r.requests]})
    return out


def read_claims(text: str, name: str = "claims JSON") -> list[dict[str, object]]:
    """A claims JSON file's objects (as :func:`claims_json` writes them), reading the old
    key ``seed`` as ``document``.

    >>> read_claims('[{"id": "x", "seed": "000.txt"}]')
    [{'id': 'x', 'document': '000.txt'}]
    """
    try:
        items = json.loads(text)
    except ValueError as err:
        raise SymroofError(f"{name}: not JSON ({err})") from None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise SymroofError(f"{name}: expected a list of claim objects")
    return [{("document" if k == "seed" and "document" not in i else k): v
             for k, v in i.items()} for i in items]


def claims_text(outcome: Outcome) -> str:
    """:func:`claims_json` as JSON text: the agreed key order, UTF-8 as it is, never NaN."""
    return json.dumps(claims_json(outcome), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
