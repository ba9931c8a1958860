"""The charts of a claim file, checked against the claims' results before any is drawn.

A ``[[chart]]`` that cannot be drawn (an unknown field, a chip without the peak it asks
for, a point whose claim has no number, a curve whose formula is undefined on its range)
is an error of its own, named by file, line, chart id and field; the other charts and
every claim are still reported. Drawing is :mod:`symroof.present.claim_charts`' job;
this module only decides what it may be given.

>>> check_chart({"id": "c", "kind": "pie"}, {}, {"000"}, "f.toml:3: chart 'c'")
Traceback (most recent call last):
...
symroof.errors.SymroofError: f.toml:3: chart 'c' field 'kind': expected "roofline" or "curve", got 'pie'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import sympy as sp

from symroof import hardware
from symroof.budget import substitute
from symroof.errors import SymroofError, suggest

__all__ = ["CHART_KEYS", "check_chart", "numeric_result", "sample_xs", "SAMPLES"]

#: The fields of each kind of chart.
CHART_KEYS = {
    "roofline": ("id", "kind", "document", "after", "title", "hardware", "precisions",
                 "points"),
    "curve": ("id", "kind", "document", "after", "title", "x", "y", "x_title", "y_title",
              "claim", "label", "curves", "levels", "from", "to", "marks", "regions"),
}
#: Points at which a curve's formula is checked and drawn (log-spaced: smooth at any size
#: the report uses).
SAMPLES = 48
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


class _Result(Protocol):  # the fields of symroof.verify.run.Result read here
    @property
    def status(self) -> str: ...
    @property
    def derived(self) -> sp.Expr | None: ...
    @property
    def formula(self) -> sp.Expr | None: ...
    @property
    def subs(self) -> Mapping[sp.Symbol, sp.Expr]: ...


def check_chart(spec: Mapping[str, Any], results: Mapping[str, _Result], documents: set[str],
                where: str) -> None:
    """A SymroofError naming ``where`` and the field unless ``spec`` can be drawn."""
    def at(name: str) -> str:
        return f"{where} field {name!r}"

    if not isinstance(spec, Mapping):
        raise SymroofError(f"{where}: expected a table of chart fields")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in CHART_KEYS:
        raise SymroofError(f"{at('kind')}: expected \"roofline\" or \"curve\", got {kind!r}")
    for key in spec:
        if key not in CHART_KEYS[kind]:
            raise SymroofError(f"{at(str(key))}: unknown field{suggest(str(key), CHART_KEYS[kind])}"
                               f"; a {kind} chart takes {', '.join(CHART_KEYS[kind])}")
    cid = spec.get("id")
    if not isinstance(cid, str) or not _ID.fullmatch(cid):
        raise SymroofError(f"{at('id')}: expected an id of letters, digits, - _ . (it names "
                           f"the chart's file), got {cid!r}")
    for name in ("document", "after", "title", "label", "x_title", "y_title"):
        if name in spec and not isinstance(spec[name], str):
            raise SymroofError(f"{at(name)}: expected a string, got {spec[name]!r}")
    if "document" in spec and spec["document"] not in documents:
        raise SymroofError(f"{at('document')}: no [[document]] with id {spec['document']!r}")
    if kind == "roofline":
        _roofline(spec, results, at)
    else:
        _curve(spec, results, at)


_R = TypeVar("_R", bound=_Result)


def numeric_result(results: Mapping[str, _R], claim_id: object,
                   where: str) -> tuple[_R, sp.Expr]:
    """The result of claim ``claim_id`` and its derived value, which must be a number."""
    if not isinstance(claim_id, str) or claim_id not in results:
        raise SymroofError(f"{where}: no claim {claim_id!r} in this file")
    r = results[claim_id]
    if r.derived is None or r.derived.free_symbols:
        raise SymroofError(f"{where}: claim {claim_id!r} has no numeric derived value "
                           f"(status {r.status})")
    return r, r.derived


def sample_xs(lo: sp.Rational, hi: sp.Rational) -> list[float]:
    """The :data:`SAMPLES` x values, log-spaced from ``lo`` to ``hi``, at which a curve is
    checked and drawn."""
    return [float(lo * (hi / lo) ** sp.Rational(i, SAMPLES - 1)) for i in range(SAMPLES)]


def _number(results: Mapping[str, _Result], claim_id: object, where: str) -> float:
    """A claim's derived value as a positive finite float (charts have log axes)."""
    return _positive(numeric_result(results, claim_id, where)[1],
                     f"{where}: claim {claim_id!r}'s value")


def _positive(value: object, where: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise SymroofError(f"{where}: expected a positive finite number (charts have log "
                           f"axes), got {value}")
    return number


def _list(spec: Mapping[str, Any], name: str, at: Any) -> Sequence[Any]:
    items = spec.get(name, [])
    if not isinstance(items, list):
        raise SymroofError(f"{at(name)}: expected a list, got {items!r}")
    return items


def _roofline(spec: Mapping[str, Any], results: Mapping[str, _Result], at: Any) -> None:
    names = spec.get("hardware")
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SymroofError(f"{at('hardware')}: expected a chip name or a list of chip names, "
                           f"got {spec.get('hardware')!r}")
    try:
        chips = [hardware.get(n) for n in names]
    except SymroofError as err:
        raise SymroofError(f"{at('hardware')}: {err}") from None
    chip = chips[0]
    precisions = _list(spec, "precisions", at) or ["bf16"]
    for p in precisions:
        if not isinstance(p, str):
            raise SymroofError(f"{at('precisions')}: expected precision names, got {p!r}")
    try:
        chip.peak(precisions[0])
        _positive(chip.bandwidth(), f"{at('hardware')}: {chip.name}'s bandwidth")
    except SymroofError as err:
        raise SymroofError(f"{at('precisions')}: {err}") from None
    if not any(q.precision in precisions for c in chips for q in c.peaks):
        raise SymroofError(f"{at('precisions')}: {chip.name} lists no peak for "
                           f"{', '.join(precisions)}")
    for i, p in enumerate(_list(spec, "points", at)):
        where = f"{at('points')}[{i}]"
        if not isinstance(p, Mapping) or set(p) - {"label", "claim", "hardware"}:
            raise SymroofError(f"{where}: expected {{label = ..., claim = ...}}, got {p!r}")
        if "hardware" in p and p["hardware"] not in names:
            raise SymroofError(f"{where}.hardware: expected one of the chart's chips "
                               f"{names}, got {p['hardware']!r}")
        if "label" in p and not isinstance(p["label"], str):
            raise SymroofError(f"{where}.label: expected a string, got {p['label']!r}")
        _number(results, p.get("claim"), where)


def _curve(spec: Mapping[str, Any], results: Mapping[str, _Result], at: Any) -> None:
    drawn = ([spec["claim"]] if "claim" in spec else [])
    for i, c in enumerate(_list(spec, "curves", at)):
        if not isinstance(c, Mapping) or set(c) - {"claim", "label"} or "claim" not in c \
                or not isinstance(c.get("label", ""), str):
            raise SymroofError(f"{at('curves')}[{i}]: expected {{claim = ..., label = ...}}, "
                               f"got {c!r}")
        drawn.append(c["claim"])
    if not drawn:
        raise SymroofError(f"{at('claim')}: a curve chart draws a claim's formula: give claim "
                           f"or curves")
    for name in ("x", "y"):
        if not isinstance(spec.get(name), str):
            raise SymroofError(f"{at(name)}: expected a symbol's name, got {spec.get(name)!r}")
    for k in ("from", "to"):
        if k in spec and (isinstance(spec[k], bool) or not isinstance(spec[k], (int, float))):
            raise SymroofError(f"{at(k)}: expected a number, got {spec[k]!r}")
    lo, hi = (_positive(spec.get(k, d), at(k)) for k, d in (("from", 1), ("to", 1000)))
    if not lo < hi:
        raise SymroofError(f"{at('to')}: expected more than from ({lo:g}), got {hi:g}")
    for claim_id in drawn:
        _formula(spec, results, at, claim_id, lo, hi)
    for i, m in enumerate(_list(spec, "levels", at)):
        where = f"{at('levels')}[{i}]"
        if not isinstance(m, Mapping) or set(m) - {"claim", "label"} \
                or not isinstance(m.get("label", ""), str):
            raise SymroofError(f"{where}: expected {{claim = ..., label = ...}}, got {m!r}")
        _number(results, m.get("claim"), where)
    for i, m in enumerate(_list(spec, "marks", at)):
        where = f"{at('marks')}[{i}]"
        if not isinstance(m, Mapping) or set(m) - {"claim", "x", "label"} \
                or not isinstance(m.get("label", ""), str):
            raise SymroofError(f"{where}: expected {{claim = ..., x = ..., label = ...}}, "
                               f"got {m!r}")
        if isinstance(m.get("x", 1), (bool, str)):
            raise SymroofError(f"{where}.x: expected a number, got {m['x']!r}")
        _positive(m.get("x", 1), f"{where}.x")
        _number(results, m.get("claim"), where)
        claimed = getattr(results[m["claim"]], "claimed", None)
        if claimed is not None:
            _positive(claimed, f"{where}: claim {m['claim']!r}'s printed value")
    for i, g in enumerate(_list(spec, "regions", at)):
        where = f"{at('regions')}[{i}]"
        if not isinstance(g, Mapping) or set(g) != {"label", "x", "y"} \
                or not isinstance(g["label"], str):
            raise SymroofError(f"{where}: expected {{label = ..., x = ..., y = ...}}, got {g!r}")
        for k in ("x", "y"):
            if isinstance(g[k], (bool, str)):
                raise SymroofError(f"{where}.{k}: expected a number, got {g[k]!r}")
            _positive(g[k], f"{where}.{k}")


def _formula(spec: Mapping[str, Any], results: Mapping[str, _Result], at: Any,
             claim_id: object, lo: float, hi: float) -> None:
    """The claim's formula is positive and finite along the chart's range."""
    r = results.get(claim_id) if isinstance(claim_id, str) else None
    if r is None or r.formula is None:
        raise SymroofError(f"{at('claim')}: claim {claim_id!r} has no formula to draw")
    x_name = spec["x"]
    fixed = {k: v for k, v in r.subs.items() if k.name != x_name}
    y_of = substitute(r.formula, fixed, at("claim"))
    free = y_of.free_symbols
    if len(free) != 1 or next(iter(free)).name != x_name:
        raise SymroofError(f"{at('x')}: the formula of {claim_id!r} must depend on {x_name} "
                           f"alone once its other values are set; it has "
                           f"{sorted(map(str, free))}")
    x = next(iter(free))
    for point in sample_xs(sp.Rational(repr(lo)), sp.Rational(repr(hi))):
        value = substitute(y_of, {x: sp.Rational(repr(point))}, at("claim"))
        _positive(value, f"{at('claim')}: the formula of {claim_id!r} at {x_name} = {point:g}")
