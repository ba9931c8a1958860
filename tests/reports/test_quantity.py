"""The one formatter of quantities (symroof.present.numbers.quantity): its text read back
gives the value to its significant figures, the prefix is the largest that keeps the
number at 1 or more, and the console's other printers of sizes and times are it."""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.errors import SymroofError
from symroof.present.numbers import PREFIXES, TIME_UNITS, quantity
from symroof.present.page_format import PREFIXES as PAGE_PREFIXES
from symroof.present.records import gigabytes, seconds

_POWER = {p: e for p, e in PREFIXES} | {"": 0}
_TIME = {("us" if u == "µs" else u): -e for u, e in TIME_UNITS}


def read_back(text: str, unit: str) -> tuple[float, int]:
    """The value a text stands for, and the power of ten of its prefix (independent of
    the formatter: a table lookup on the unit's spelling)."""
    number, shown = text.split(" ")
    if unit == "s":
        power = _TIME[shown]
    else:
        assert shown.endswith(unit), text
        power = _POWER[shown[:-len(unit)]]
    return float(number) * 10.0**power, power


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-12, max_value=1e20), st.sampled_from(["B", "FLOP/s", "s"]))
def test_text_reads_back_to_four_significant_figures(value, unit):
    text = quantity(value, unit)
    back, power = read_back(text, unit)
    assert math.isclose(back, value, rel_tol=5e-4), (value, text)
    number = float(text.split(" ")[0])
    if unit == "s":
        assert number >= 0.9995 or text.endswith(" ns"), text
    else:
        assert number >= 0.9995 or power == 0, text   # the largest prefix keeping it >= 1
        assert number < 1000 or power == 18, text   # never "1000 GB"


@pytest.mark.parametrize("value, unit, style, expected", [
    (17.6431e9, "B", "text", "17.64 GB"),
    (0.00451968, "s", "text", "4.52 ms"),
    (2.5e-6, "s", "text", "2.5 us"),
    (2.5e-6, "s", "html", "2.5&#8239;µs"),
    (2.5e-6, "s", "latex", r"2.5\,\mathrm{\mu s}"),
    (2.5e-6, "s", "pgf", r"2.5\,$\mu$s"),
    (989.4e12, "FLOP/s", "latex", r"989.4\,\mathrm{TFLOP/s}"),
    (512, "B", "text", "512 B"),
])
def test_styles(value, unit, style, expected):
    assert quantity(value, unit, style=style) == expected


def test_the_console_printers_and_the_page_use_it():
    assert gigabytes(sp.Integer(16_060_000_000)) == quantity(16.06e9, "B") == "16.06 GB"
    assert seconds(sp.Rational(452, 100_000)) == quantity(0.00452, "s") == "4.52 ms"
    assert PAGE_PREFIXES is PREFIXES


def test_a_formula_keeps_its_symbols_and_bad_values_are_named():
    assert quantity(sp.Symbol("B") * 2, "s") == "2*B s"
    with pytest.raises(SymroofError, match="quantity style"):
        quantity(1, "B", style="rtf")
    with pytest.raises(SymroofError, match="not a finite real number"):
        quantity(float("nan"), "B")


def test_a_value_beyond_a_float_is_written_from_its_exact_digits():
    """A time of 10**400 s (a fuzzed --set M=1e300) prints as its digits, never 'inf s'."""
    assert quantity(sp.Integer(10)**400 * 3, "s") == "3.0000e+400 s"
    assert quantity(sp.Rational(1, 10**400), "B") == "1.0000e-400 B"


@pytest.mark.parametrize("value, unit, expected", [
    (999.96e9, "B", "1 TB"), (0.99999, "s", "1 s"), (999.99e-6, "s", "1 ms"),
    (999.94e9, "B", "999.9 GB")])
def test_a_value_that_rounds_up_to_the_next_prefix_takes_it(value, unit, expected):
    assert quantity(value, unit) == expected


def test_one_prefix_table_below_the_roofline_and_the_writers():
    """present.numbers' prefixes and units of time, and the Roofline's own text, are read
    from symroof.units.DECIMAL; each writer picks the prefix the same way (an exact power
    of ten takes its own prefix: 1e-6 s is 1 us in both)."""
    import importlib

    from symroof import units
    from symroof.present import numbers

    evaluate = importlib.import_module("symroof.evaluate")   # the module (sr.evaluate: a function)

    assert numbers.PREFIXES == tuple((p, k) for p, k in units.DECIMAL if k > 0)
    assert numbers.TIME_UNITS == (("s", 0), ("ms", 3), ("µs", 6), ("ns", 9))
    assert [units.prefix(x, top=15, bottom=-9) for x in (2e16, 1e-6, 9.99e-7, 0.0, 5e-12)] \
        == [("P", 15), ("µ", -6), ("n", -9), ("n", -9), ("n", -9)]
    assert numbers.quantity(1e-6, "s") == "1 us" == evaluate._si(sp.Float(1e-6), "s")
    assert evaluate._si(sp.Rational(4586, 10**6), "s") == "4.586 ms"
    assert evaluate._si(sp.Integer(11) * 10**14, "FLOP") == "1.1 PFLOP"
    assert numbers.quantity(11e14, "FLOP") == "1.1 PFLOP"
    assert numbers.quantity(2e27, "FLOP") == "2000 YFLOP"
