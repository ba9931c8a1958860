"""Number formats: bytes per value by precision name (the names hardware files use).

>>> bytes_per_value("bf16"), bytes_per_value("int4")
(2, 1/2)
"""

from __future__ import annotations

from types import MappingProxyType

import sympy as sp

from symroof.errors import SymroofError, suggest

__all__ = ["PRECISIONS", "BYTES", "bytes_per_value"]

#: Precisions a hardware file may list peaks for, widest first.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4")

#: Storage bytes per value; tf32 is stored as fp32; fp4 and int4 pack two values per
#: byte (fp4's block scales are not counted).
BYTES = MappingProxyType({
    "fp64": sp.Integer(8), "fp32": sp.Integer(4), "tf32": sp.Integer(4),
    "bf16": sp.Integer(2), "fp16": sp.Integer(2), "fp8": sp.Integer(1),
    "int8": sp.Integer(1), "fp4": sp.Rational(1, 2), "int4": sp.Rational(1, 2),
})


def bytes_per_value(precision: str) -> sp.Rational:
    """Bytes one value of ``precision`` occupies."""
    try:
        return BYTES[precision]
    except (KeyError, TypeError):
        raise SymroofError(f"precision {precision!r}: expected one of {', '.join(BYTES)}"
                           f"{suggest(str(precision), BYTES)}") from None
