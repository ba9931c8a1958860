"""Number formats: :class:`Precision` (an enum with its bytes per value) and
:class:`Numerics` (the formats of one request, resolved once at the front door).

>>> bytes_per_value("bf16"), bytes_per_value("int4")
(2, 1/2)
>>> Precision.INT4.bytes, Precision.parse("fp8", "--kv-cache")
(1/2, <Precision.FP8: 'fp8'>)

The rule every front door shares (:meth:`Numerics.resolve`): the peak is the
activations' format, else the one ``precision``, else bf16; a per-kind format not given
is ``precision``'s, else bf16. INT4 weight-only serving is 4-bit weight bytes with 16-bit
compute:

>>> n = Numerics.resolve(weights="int4")
>>> n.weights, n.kv_cache, n.activations, n.peak, n.per_kind
(<Precision.INT4: 'int4'>, <Precision.BF16: 'bf16'>, <Precision.BF16: 'bf16'>, <Precision.BF16: 'bf16'>, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

import sympy as sp

from symroof.errors import SymroofError, suggest

__all__ = ["Precision", "Numerics", "DEFAULT", "PRECISIONS", "BYTES", "bytes_per_value"]


class Precision(StrEnum):
    """A number format hardware files list peaks for, widest first; its value is the name
    (``"bf16"``), so it prints, compares and serialises as the name does."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"  # stored as fp32
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"    # two values per byte (block scales not counted)
    INT4 = "int4"  # two values per byte

    @property
    def bytes(self) -> sp.Rational:
        """Storage bytes of one value."""
        return _BYTES[self]

    @classmethod
    def parse(cls, value: object, what: str = "precision") -> Precision:
        """``value`` (a member or its name) as a Precision; an error naming ``what`` and
        listing the formats otherwise."""
        if isinstance(value, cls):
            return value
        try:
            if not isinstance(value, str):
                raise TypeError(value)
            return cls(value)
        except (ValueError, TypeError):
            raise SymroofError(f"{what} {value}: unknown precision {value!r}; expected one of "
                               f"{', '.join(PRECISIONS)}{suggest(str(value), PRECISIONS)}"
                               ) from None


_BYTES: Mapping[Precision, sp.Rational] = MappingProxyType({
    Precision.FP64: sp.Integer(8), Precision.FP32: sp.Integer(4), Precision.TF32: sp.Integer(4),
    Precision.BF16: sp.Integer(2), Precision.FP16: sp.Integer(2), Precision.FP8: sp.Integer(1),
    Precision.INT8: sp.Integer(1), Precision.FP4: sp.Rational(1, 2),
    Precision.INT4: sp.Rational(1, 2),
})

#: The format of ``b`` and of the peak when a request names none.
DEFAULT = Precision.BF16

#: Precisions a hardware file may list peaks for, widest first (their names).
PRECISIONS = tuple(p.value for p in Precision)

#: Storage bytes per value by name; tf32 is stored as fp32; fp4 and int4 pack two values
#: per byte (fp4's block scales are not counted).
BYTES: Mapping[str, sp.Rational] = MappingProxyType({p.value: _BYTES[p] for p in Precision})


def bytes_per_value(precision: str) -> sp.Rational:
    """Bytes one value of ``precision`` (a name or a :class:`Precision`) occupies."""
    try:
        return BYTES[precision]
    except (KeyError, TypeError):
        raise SymroofError(f"precision {precision!r}: expected one of {', '.join(BYTES)}"
                           f"{suggest(str(precision), BYTES)}") from None


@dataclass(frozen=True)
class Numerics:
    """The number formats of one request, decided once (:meth:`resolve`) and passed down.

    ``weights``, ``kv_cache`` and ``activations`` are the formats of each tensor kind,
    ``peak`` the compute peak's; ``values`` is the format of the symbol ``b`` where a
    formula keeps it (a workload without per-kind tensors, or a model whose formats were
    not given). ``per_kind`` says whether the kinds were given, so that a model takes
    them (its formulas then carry numbers); otherwise it keeps ``b``. ``peak_from``
    names the option that set the peak ("activations", "precision" or "default"), for
    errors only.
    """

    weights: Precision = DEFAULT
    kv_cache: Precision = DEFAULT
    activations: Precision = DEFAULT
    peak: Precision = DEFAULT
    values: Precision = DEFAULT
    per_kind: bool = False
    peak_from: str = field(default="default", compare=False)

    @classmethod
    def resolve(cls, *, precision: Precision | str | None = None,
                weights: Precision | str | None = None,
                kv_cache: Precision | str | None = None,
                activations: Precision | str | None = None,
                names: Mapping[str, str] | None = None) -> Numerics:
        """The one rule: the peak is ``activations``' format (INT4 weight-only computes at
        the activations' 16 bits), else ``precision``, else bf16; each kind not given,
        and ``b``, are ``precision``'s, else bf16. ``names`` spell the options in errors
        (``{"precision": "--precision"}``).

        >>> Numerics.resolve(precision="fp8", activations="bf16").peak
        <Precision.BF16: 'bf16'>
        """
        spell = {k: k for k in ("precision", "weights", "kv_cache", "activations")}
        spell.update(names or {})
        given = {k: None if v is None else Precision.parse(v, spell[k])
                 for k, v in (("precision", precision), ("weights", weights),
                              ("kv_cache", kv_cache), ("activations", activations))}
        fill = given["precision"] or DEFAULT
        kinds = {k: given[k] or fill for k in ("weights", "kv_cache", "activations")}
        peak_from = "activations" if given["activations"] else \
            "precision" if given["precision"] else "default"
        return cls(kinds["weights"], kinds["kv_cache"], kinds["activations"],
                   given["activations"] or fill, fill,
                   any(given[k] for k in ("weights", "kv_cache", "activations")), peak_from)

    @classmethod
    def of(cls, precision: Numerics | Precision | str) -> Numerics:
        """One format for everything (the Python API's ``precision="bf16"``): b and the
        peak at it, a model's kinds left as they are."""
        if isinstance(precision, Numerics):
            return precision
        return cls.resolve(precision=precision)

    @property
    def b(self) -> sp.Rational:
        """Bytes per value of the symbol ``b`` where it stays free."""
        return self.values.bytes
