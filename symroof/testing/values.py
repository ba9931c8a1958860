"""The value helpers: :func:`assert_close` and :func:`assert_matches_oracle` (a formula
against a brute-force counter at given sizes).
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from symroof.testing.bounded import _MAX_BITS, _bits, _near_power
from symroof.testing.shown import (_UNDEFINED, _as_expr, _describe, _name_clashes, _nonfinite,
                                   _show)
from symroof.testing.sampling import _violation
from symroof.testing.evaluation import _Undefined, _check_tol, _evaluate, _within

if TYPE_CHECKING:
    import sympy as sp

__all__ = ["assert_close", "assert_matches_oracle"]


def _as_number(x: object, role: str, fn: str) -> sp.Expr:
    """*x* as a SymPy number; a free symbol left in it, or a number too large, fails."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    value = _as_expr(x, role, fn)
    if value.free_symbols:
        names = ", ".join(sorted(map(str, value.free_symbols)))
        raise AssertionError(f"{fn}: {role} {_show(value)} still has free symbol(s) {names}; "
                             "substitute values first (expr.subs({...}))")
    if not value.is_Rational and not _nonfinite(value):   # exact rationals are cheap at any size
        bits = _bits(value, {})
        if bits > _MAX_BITS:
            raise AssertionError(f"{fn}: {role} {_show(value)} is too large to compare "
                                 f"numerically (it may be {_near_power(bits)})")
    try:
        value = value if value.is_number else value.doit()
    except Exception as exc:
        raise AssertionError(f"{fn}: {role} {_show(value)} cannot be evaluated "
                             f"({type(exc).__name__}: {exc})") from None
    if not value.is_number:
        raise AssertionError(f"{fn}: {role} {_show(value)} does not evaluate to a number")
    return value


def assert_close(value: object, expected: object, *, rel: float = 1e-9, abs: float = 0) -> None:
    """Assert ``|value - expected| <= max(rel * max(|value|, |expected|), abs)`` (math.isclose).

    nan, zoo, oo and -oo are close to nothing, themselves included.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    fn = "assert_close"
    _check_tol(rel, fn)
    _check_tol(abs, fn, "abs")
    v, e = _as_number(value, "value", fn), _as_number(expected, "expected", fn)
    ok = _within(v, e, rel, abs)
    if ok:
        return
    if _nonfinite(v) or _nonfinite(e):
        raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected): {_UNDEFINED}")
    if ok is None:
        raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected): a side "
                             "does not evaluate to a number")
    hint = "; comparing with 0 needs abs=..." if 0 in (v, e) and not abs else ""
    raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected), difference "
                         f"{_show((v - e).evalf(6))}, tolerance rel={rel}, abs={abs}{hint}")


class _Size(dict):
    """A size keyed by symbol names that also answers lookups by Symbol (``s[M]``)."""

    def __getitem__(self, key: object) -> Any:
        return super().__getitem__(getattr(key, "name", key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(getattr(key, "name", key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(getattr(key, "name", key), default)


def _read_size(size: object, by_name: Mapping[str, sp.Symbol],
               fn: str) -> tuple[_Size, dict[str, sp.Expr]]:
    """A size as (name -> value as given, name -> SymPy number), each value checked
    against the assumptions of its symbol (the formula's, or the key's own)."""
    import sympy as sp
    if not isinstance(size, Mapping):
        raise TypeError(f"{fn}: each size must be a dict of symbol name -> value, "
                        f"got {type(size).__name__}")
    given, keyed = _Size(), {}
    for k, v in size.items():
        if not isinstance(k, (str, sp.Symbol)):
            raise TypeError(f"{fn}: size keys must be symbol names or Symbols, got {k!r}")
        name = k if isinstance(k, str) else k.name
        if name in given:
            raise ValueError(f"{fn}: size {_show_size(size)} gives {name} twice")
        given[name] = v
        if isinstance(k, sp.Symbol):
            keyed[name] = k
    values = {}
    for name, v in given.items():
        num = _as_number(v, f"size value {name}", fn)
        if _nonfinite(num) or not num.is_finite:
            raise ValueError(f"{fn}: size {_show_size(size)} gives {name}={_show(v)}, "
                             "not a finite number")
        for s in (by_name.get(name), keyed.get(name)):
            broken = None if s is None else _violation(s, num)
            if s is not None and broken:
                raise ValueError(f"{fn}: size {_show_size(size)} gives {name}={_show(v)}, but "
                                 f"{name} is a {_describe(s)} symbol: {_show(v)} {broken}")
        values[name] = num
    return given, values


def _show_size(size: Mapping[Any, object]) -> str:
    """A size as a dict keyed by name, its values as given (huge integers shortened)."""
    def value(v: object) -> str:
        big = isinstance(v, int) and v.bit_length() > 600
        return _show(v) if big else repr(v)
    return "{" + ", ".join(f"{getattr(k, 'name', k)!r}: {value(v)}" for k, v in size.items()) + "}"


def assert_matches_oracle(formula: object, counter: Callable[[dict[Any, Any]], object],
                          sizes: Iterable[Mapping[Any, object]], *, rel: float = 0) -> None:
    """Assert *formula* equals a brute-force *counter* at every size (within *rel*).

    A size is a dict keyed by symbol names or by Symbols (either: symbols are matched by
    name), and its values must satisfy the symbols' assumptions (``M=-2`` is an error for
    a positive integer ``M``). ``counter`` gets each size as a fresh dict keyed by name
    (``{"M": 2, ...}``) that also answers lookups by Symbol (``size[M]``), and returns a
    number. Failures name the size and both values; an empty *sizes* is a failure too.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    import sympy as sp
    fn = "assert_matches_oracle"
    f = _as_expr(formula, "formula", fn)
    _check_tol(rel, fn)
    if not callable(counter):
        raise TypeError(f"{fn}: counter must be callable (size -> number), got {counter!r}")
    if isinstance(sizes, (str, bytes, Mapping)) or not isinstance(sizes, Iterable):
        raise TypeError(f"{fn}: sizes must be an iterable of dicts (one per size), got "
                        f"{type(sizes).__name__}" + (": wrap one size in a list"
                                                     if isinstance(sizes, Mapping) else ""))
    bad = _nonfinite(f)
    if bad:
        raise AssertionError(f"{fn}: formula {_show(f)} is or contains {bad}; {_UNDEFINED}")
    clashes = _name_clashes(f.free_symbols)
    if clashes:
        raise AssertionError(f"{fn}: formula {_show(f)}: {clashes[0]}")
    by_name = {s.name: s for s in f.free_symbols}
    who = getattr(counter, "__qualname__", repr(counter))
    checked, failures = 0, []
    for size in sizes:
        given, values = _read_size(size, by_name, fn)
        missing = sorted(set(by_name) - set(values))
        if missing:
            raise AssertionError(f"{fn}: size {_show_size(given)} gives no value for "
                                 f"{', '.join(missing)} (free in formula {_show(f)})")
        point = {s: values[name] for name, s in by_name.items()}
        bits = _bits(f, point)
        if bits > _MAX_BITS:
            raise AssertionError(f"{fn}: formula {_show(f)} is too large to compare numerically "
                                 f"at {_show_size(given)} (its values may be {_near_power(bits)})")
        try:
            fv: sp.Expr | None = _evaluate(f, point)
        except _Undefined as exc:   # SymPy refused a value, e.g. Max(2, zoo)
            fv = None
            failures.append(f"  at {_show_size(given)}: formula {_show(f)} is undefined ({exc})")
        else:
            if fv is None:
                raise AssertionError(f"{fn}: formula {_show(f)} does not evaluate to a number at "
                                     f"{_show_size(given)}")
        got = counter(_Size(given))
        if isinstance(got, bool) or not isinstance(got, (numbers.Number, sp.Expr)):
            raise TypeError(f"{fn}: counter {who} returned {type(got).__name__} for size "
                            f"{_show_size(given)}, expected a number")
        cv = _as_number(got, "counter result", fn)
        checked += 1
        if fv is None:
            continue
        ok = _within(fv, cv, rel, 0)
        if not ok:
            why = (f"; {_UNDEFINED}" if _nonfinite(fv) or _nonfinite(cv) else
                   " (not a number)" if ok is None else f" (difference {_show(fv - cv)})")
            failures.append(f"  at {_show_size(given)}: formula {_show(f)} = {_show(fv)}, "
                            f"counter {who} = {_show(cv)}{why}")
    if not checked:
        raise AssertionError(f"{fn}: no sizes given, nothing was checked")
    if failures:
        more = f"\n  ... and {len(failures) - 3} more" if len(failures) > 3 else ""
        raise AssertionError(f"formula does not match the oracle at {len(failures)} of {checked} "
                             f"sizes{' (rel=' + str(rel) + ')' if rel else ''}:\n"
                             + "\n".join(failures[:3]) + more)
