"""The one table of decimal prefixes, and the choice of one for a number: what every
writer of quantities reads (:mod:`symroof.present.numbers` for the console, reports,
charts and the Try-it page; :class:`symroof.evaluate.Roofline`'s own text), below both.

>>> prefix(17.64e9), prefix(4.52e-3, bottom=-9), prefix(0.5)
(('G', 9), ('m', -3), ('', 0))
"""

from __future__ import annotations

from symroof.errors import SymroofError

__all__ = ["DECIMAL", "prefix"]

#: The decimal prefixes, largest first, with the power of ten of each (micro is µ; a
#: plain-text writer spells it u).
DECIMAL: tuple[tuple[str, int], ...] = (
    ("Y", 24), ("Z", 21), ("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3),
    ("", 0), ("m", -3), ("µ", -6), ("n", -9))


def prefix(value: float, *, top: int = 24, bottom: int = 0) -> tuple[str, int]:
    """The largest prefix of :data:`DECIMAL` from ``10**top`` down to ``10**bottom`` that
    keeps ``abs(value)`` at 1 or more, with its power; the one at ``bottom`` where none
    does (zero among them)."""
    for name, power in DECIMAL:
        if bottom <= power <= top and (abs(value) >= 10.0**power or power == bottom):
            return name, power
    raise SymroofError(f"prefix: no decimal prefix at 10**{bottom} (the table's: "
                       f"{', '.join(str(p) for _, p in DECIMAL)})")
