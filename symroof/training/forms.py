"""Textbook forms of the training formulas: the shapes the papers print them in.

The engine keeps expressions expanded; a form only rearranges one. :func:`factor_out`
takes a common factor out of a sum (activation bytes per layer as
``sbh(34 + 5as/h)``: the factor ``S B D`` in symroof's names, Korthikanti et al.'s
``s b h``); :func:`zero_form` writes ZeRO's per-device model state as Rajbhandari et
al. print it, ``(2 + 2 + K)Psi/N_d``, in the symbols :data:`PSI` and :data:`N_D`. The
printers are in :mod:`symroof.present.training`.

>>> from symroof.symbols import S, B, D, H
>>> f = factor_out(34 * S * B * D + 5 * H * S**2 * B, S * B * D)
>>> f.inner
34 + 5*H*S/D
>>> zero_form(3).args[0].args, sp.expand(zero_form(3))      # (2 + 2 + K) Psi / N_d
((2, 2, K), K*Psi/N_d + 4*Psi/N_d)
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_expr
from symroof.symbols import B, D, K, S, dim

__all__ = ["Factored", "factor_out", "per_layer_form", "zero_form", "PSI", "N_D"]

#: ZeRO's symbols: parameters (Psi) and the data-parallel degree (N_d); K is symroof's K.
PSI, N_D = dim("Psi"), dim("N_d")


@dataclass(frozen=True)
class Factored:
    """``factor * inner``, kept apart for printing; ``expr`` is the product."""

    factor: sp.Expr
    inner: sp.Expr

    @property
    def expr(self) -> sp.Expr:
        """The product, as one expression."""
        return sp.expand(self.factor * self.inner)


def factor_out(expr: object, factor: object) -> Factored:
    """``expr`` as ``factor * (inner)``, ``inner`` expanded (``34 + 5*H*S/D``)."""
    e, f = as_expr(expr, "factor_out expr"), as_expr(factor, "factor_out factor")
    if f == 0:
        raise SymroofError("factor_out: the factor is 0")
    inner = sp.expand(sp.cancel(e / f))
    if sp.cancel(f * inner - e) != 0:  # an identity; kept as the form's guarantee
        raise AssertionError(f"factor_out: {f} * ({inner}) is not {e}")
    return Factored(f, inner)


def per_layer_form(per_layer: object) -> Factored:
    """Activation bytes of one layer and micro-batch over ``s b h`` (``S B D``)."""
    return factor_out(per_layer, S * B * D)


def zero_form(stage: int, k: object = K) -> sp.Expr:
    """Bytes of model state per device with ZeRO ``stage`` (0: none) as printed in
    Rajbhandari et al. (2020), Figure 1: 2-byte weights and gradients, K bytes of
    optimizer state per parameter (12 for mixed-precision Adam)."""
    kk = as_expr(k, "zero_form k")
    two = sp.Integer(2)
    if stage == 0:
        return sp.Mul(sp.Add(two, two, kk, evaluate=False), PSI, evaluate=False)
    if stage == 1:
        return sp.Add(two * PSI, two * PSI, sp.Mul(kk, PSI, 1 / N_D, evaluate=False),
                      evaluate=False)
    if stage == 2:
        return sp.Add(two * PSI, sp.Mul(sp.Add(two, kk, evaluate=False), PSI, 1 / N_D,
                                         evaluate=False), evaluate=False)
    if stage == 3:
        return sp.Mul(sp.Add(two, two, kk, evaluate=False), PSI, 1 / N_D, evaluate=False)
    raise SymroofError(f"zero stage: expected 0, 1, 2 or 3, got {stage!r}")
