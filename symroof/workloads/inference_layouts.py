"""The partitioning layouts of Pope et al. (2022), "Efficiently Scaling Transformer
Inference" (arXiv 2211.05102), beside plain tensor parallelism: which collectives one
feedforward layer runs on a mesh of chips, and the bytes each chip sends for them.

The paper's layouts differ in what stays put. In the *weight-stationary* layouts each
chip keeps its slice of the weights and the activations move; in the *weight-gathered*
layout the activations are split over the batch and stay put, and each layer's weights
are all-gathered to every chip before use. Each layout is written here as its schedule
of collectives, taken from the sources cited on each, and its bytes follow from the
ring counts the engine uses everywhere (:class:`symroof.passes.shard.CollectiveAlgorithm`
``ring``): over a group of ``k`` chips an all-gather or a reduce-scatter of ``n`` bytes
(the gathered / the unreduced tensor) sends ``(k-1)/k n`` from each chip, an all-reduce
``2(k-1)/k n``.

Notation, as in the sources: ``T`` tokens in the step (``B L``: batch times new
positions; ``B`` in decode), ``E`` the model width (d_model), ``F`` the feedforward
width (d_ff), ``n`` chips as a mesh ``X x YZ`` (2D weight-stationary splits E over X and
F over YZ), ``b`` bytes per value (of the activations that move; of the weights for
weight-gathered, which moves weights). A gated MLP (SwiGLU) has two input matrices whose
partial sums must both be reduced before the nonlinearity (``matrices=3``).

- ``tensor``: Megatron's tensor parallelism, the engine's :func:`symroof.passes.shard.shard`:
  activations replicated, W_in split over F by columns, W_out by rows, one all-reduce of
  ``T E b`` after the layer.
- ``1d_weight_stationary``: the same weight split; the activations between layers are
  split over E, all-gathered before the layer and reduce-scattered after it (the
  all-reduce cut in two around the layer boundary: the same bytes).
- ``2d_weight_stationary``: weights split over E (X) and F (YZ): all-gather of the input
  over YZ, all-reduce of the hidden activations over X, reduce-scatter of the output over
  YZ. Its bytes fall as ``1/sqrt(n)`` with the split chosen near ``X = sqrt(n E/F)``
  (gated: ``sqrt(n E/(2F))``); by default the divisor of ``n`` with the fewest bytes.
- ``weight_gathered`` (the paper's XYZ-weight-gathered): activations split over the batch
  on all ``n`` chips, weights stored split ``E_X F_YZ`` and all-gathered over all chips:
  ``(n-1)/n`` of every weight byte, whatever the batch.

>>> from symroof.symbols import B
>>> c = layout_communication("2d_weight_stationary", tokens=B, d_model=8192, d_ff=32768,
...                          chips=64, x=4, bytes_per_value=2)
>>> [k.name for k in c.collectives]
['all-gather input over YZ', 'all-reduce hidden over X', 'reduce-scatter output over YZ']
>>> c.sent
13824*B
>>> layout_communication("tensor", tokens=B, d_model=8192, d_ff=32768, chips=64,
...                      bytes_per_value=2).sent
32256*B
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim
from symroof.options import option
from symroof.symbols import b

__all__ = ["InferenceLayout", "LayoutCollective", "LayoutCommunication",
           "layout_communication", "two_d_splits", "accepting_layouts"]


class InferenceLayout(StrEnum):
    """A partitioning layout of a feedforward layer over ``n`` chips (see the module
    docstring); ``tensor`` is the engine's tensor parallelism."""

    TENSOR = "tensor"
    WS_1D = "1d_weight_stationary"
    WS_2D = "2d_weight_stationary"
    WEIGHT_GATHERED = "weight_gathered"


#: Where each layout's collective schedule is written down (quoted in the docstrings of
#: the builders below).
SOURCES: dict[InferenceLayout, str] = {
    InferenceLayout.TENSOR: (
        "Megatron-LM (Shoeybi et al. 2019): column- then row-parallel GEMMs, one "
        "all-reduce after the MLP; symroof.passes.shard"),
    InferenceLayout.WS_1D: (
        "Pope et al. 2022 via Austin et al., How to Scale Your Model, inference.md "
        "(jax-ml/scaling-book 0819a7d), Appendix B: '1D weight-stationary sharding, a.k.a. "
        "Pure Megatron sharding, where activations are fully replicated after AllGather, "
        "and weights are fully sharded over the hidden F dimension'; its comms over a "
        "3-axis mesh, 'T_model parallel comms = 4BD / (3 W_ici)'"),
    InferenceLayout.WS_2D: (
        "Austin et al., How to Scale Your Model, inference.md (jax-ml/scaling-book "
        "0819a7d), Question 7 [2D model sharding], 'what the ESTI paper calls 2D "
        "weight-stationary sharding': 1. In[B, D_X] = AllGather_YZ(In[B, D_XYZ]); "
        "2. Tmp[B, F_YZ]{U.X} = In[B, D_X] *_D Win[D_X, F_YZ]; 3. Tmp[B, F_YZ] = "
        "AllReduce_X(Tmp); 4. Out[B, D_X]{U.YZ} = Tmp *_F W2[F_YZ, D_X]; 5. Out[B, "
        "D_XYZ] = ReduceScatter_YZ(Out); 'T_2D comms = 2BD/(2X W_ici) + 4BF/(YZ W_ici) "
        "+ 2BD/(2X W_ici)'"),
    InferenceLayout.WEIGHT_GATHERED: (
        "Pope et al. 2022 reference code, google-research/scaling_transformer_inference_"
        "efficiency/partitioning.py make_rules_weight_gathered: ('residual_batch', "
        "('x', 'y', 'z')), ('params_embed', 'x'), ('params_heads', ('y', 'z')), "
        "('heads', None): activations split over the batch on all chips, weights stored "
        "E_X F_YZ and gathered whole for the matmuls"),
}


@dataclass(frozen=True)
class LayoutCollective:
    """One collective of a layout: ``kind`` (all-gather, reduce-scatter, all-reduce)
    over a group of ``group`` chips of a tensor of ``payload`` bytes (gathered, or before
    the reduction), ``times`` per layer; ``sent`` is what each chip sends (ring)."""

    name: str
    kind: str
    group: sp.Expr
    payload: sp.Expr
    axes: int = 1          # mesh axes the group spans (a group over Y and Z spans two)

    @property
    def factor(self) -> sp.Expr:
        """Bytes each chip sends per byte of payload: (k-1)/k, or 2(k-1)/k."""
        k = self.group
        return (2 if self.kind == "all-reduce" else 1) * (k - 1) / k

    @property
    def sent(self) -> sp.Expr:
        """Bytes each chip sends."""
        return sp.expand(self.factor * self.payload)


@dataclass(frozen=True)
class LayoutCommunication:
    """A layout's collectives for one feedforward layer, and their bytes per chip."""

    layout: InferenceLayout
    chips: sp.Expr
    x: sp.Expr              # the E split (2D weight-stationary; 1 otherwise)
    collectives: tuple[LayoutCollective, ...]
    source: str

    @property
    def sent(self) -> sp.Expr:
        """Bytes each chip sends per feedforward layer."""
        return sp.expand(sp.Add(*(c.sent for c in self.collectives)))

    @property
    def yz(self) -> sp.Expr:
        """The F split: chips / x."""
        return self.chips / self.x


def layout_communication(layout: InferenceLayout | str, *, tokens: object, d_model: object,
                         d_ff: object, chips: object, x: object | None = None,
                         matrices: int = 2, bytes_per_value: object = b
                         ) -> LayoutCommunication:
    """The collectives of one feedforward layer under ``layout`` over ``chips`` chips
    (see the module docstring): ``tokens`` in the step, widths ``d_model`` (E) and
    ``d_ff`` (F), ``matrices`` 2 (W_in, W_out) or 3 (gated: W_gate, W_up, W_down).
    ``x`` is the E split of the 2D layout (default: the valid split with the fewest
    bytes, :func:`two_d_splits`)."""
    lay = option(InferenceLayout, layout, "layout")
    if matrices not in (2, 3):
        raise SymroofError(f"matrices: expected 2 (W_in, W_out) or 3 (gated), got {matrices!r}")
    t = as_dim(tokens, "tokens")
    e, f = as_dim(d_model, "d_model"), as_dim(d_ff, "d_ff")
    n = as_dim(chips, "chips")
    by = as_dim(bytes_per_value, "bytes_per_value")
    hidden = matrices - 1          # F-wide tensors that must be reduced: 1, or gate and up
    one = sp.Integer(1)
    cs: tuple[LayoutCollective, ...]
    if lay is InferenceLayout.WS_2D:
        xx = _two_d_x(x, e, f, n, hidden)
        return LayoutCommunication(lay, n, xx, _two_d(t, e, f, n, xx, hidden, by), SOURCES[lay])
    if x is not None and as_dim(x, "x") != 1:
        raise SymroofError(f"x: only the 2d_weight_stationary layout splits E (layout {lay})")
    if lay is InferenceLayout.TENSOR:
        cs = (LayoutCollective("all-reduce output", "all-reduce", n, t * e * by, axes=3),)
    elif lay is InferenceLayout.WS_1D:
        cs = (LayoutCollective("all-gather input", "all-gather", n, t * e * by, axes=3),
              LayoutCollective("reduce-scatter output", "reduce-scatter", n, t * e * by,
                               axes=3))
    else:
        q = t / n
        if q.is_number and not q.is_integer:
            raise SymroofError(f"layout weight_gathered: {t} tokens do not split over "
                               f"{n} chips (the batch is split); expected a multiple of {n}")
        cs = (LayoutCollective("all-gather weights", "all-gather", n,
                               matrices * e * f * by, axes=3),)
    return LayoutCommunication(lay, n, one, cs, SOURCES[lay])


def _two_d(t: sp.Expr, e: sp.Expr, f: sp.Expr, n: sp.Expr, xx: sp.Expr, hidden: int,
           by: sp.Expr) -> tuple[LayoutCollective, ...]:
    """The 2D weight-stationary schedule with E split ``xx`` ways and F ``n / xx``."""
    yz = n / xx
    return (LayoutCollective("all-gather input over YZ", "all-gather", yz, t * e / xx * by,
                             axes=2),
            LayoutCollective("all-reduce hidden over X", "all-reduce", xx,
                             hidden * t * f / yz * by),
            LayoutCollective("reduce-scatter output over YZ", "reduce-scatter", yz,
                             t * e / xx * by, axes=2))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _count(value: object, what: str) -> int:
    """A positive integer (a number, not a symbol)."""
    d = as_dim(value, what)
    if not (d.is_Integer and d > 0):
        raise SymroofError(f"{what}: expected a positive integer, got {value!r}")
    return int(d)


def two_d_splits(chips: object, d_model: object, splits_f: object = None) -> tuple[int, ...]:
    """The E splits ``x`` of a 2D weight-stationary mesh of ``chips``: ``x`` divides
    ``chips`` and ``d_model``, and ``splits_f(chips // x)`` (default: always) holds for
    the F split (heads and widths)."""
    n, e = _count(chips, "chips"), _count(d_model, "d_model")
    if splits_f is not None and not callable(splits_f):
        raise SymroofError(f"splits_f: expected a function of the F split, got {splits_f!r}")
    ok = splits_f if callable(splits_f) else (lambda _yz: True)
    return tuple(x for x in _divisors(n) if e % x == 0 and ok(n // x))


def _two_d_x(x: object | None, e: sp.Expr, f: sp.Expr, n: sp.Expr, hidden: int) -> sp.Expr:
    if x is not None:
        xx = as_dim(x, "x")
        if xx.is_number and n.is_number and (n / xx).is_integer is False:
            raise SymroofError(f"x {xx}: does not divide the {n} chips")
        return xx
    if not (n.is_number and e.is_number and f.is_number):
        raise SymroofError("x: a symbolic mesh needs its E split x (2d_weight_stationary)")
    one = sp.Integer(1)  # the bytes scale with the tokens and b: the split is chosen per one

    def bytes_at(xx: int) -> sp.Expr:
        return sp.Add(*(c.sent for c in _two_d(one, e, f, n, sp.Integer(xx), hidden, one)))

    return sp.Integer(min(two_d_splits(int(n), int(e)), key=lambda xx: (bytes_at(xx), xx)))


def accepting_layouts(chips: object, *, heads: object, d_model: object,
                      splits_heads: object = None) -> tuple[str, ...]:
    """The Pope et al. layouts that run on ``chips`` chips where plain tensor parallelism
    does not: ``2d_weight_stationary`` with an E split that leaves a split of the heads
    (``splits_heads(yz)``, default ``heads % yz == 0``), and ``weight_gathered`` (any
    count: the batch is split, a multiple of the chips)."""
    n, h = _count(chips, "chips"), _count(heads, "heads")
    if splits_heads is not None and not callable(splits_heads):
        raise SymroofError(f"splits_heads: expected a function of the F split, got "
                           f"{splits_heads!r}")
    ok = splits_heads if callable(splits_heads) else (lambda yz: h % yz == 0)
    out = []
    meshes = [x for x in two_d_splits(n, d_model, ok) if 1 < x < n]
    if meshes:
        out.append("2d_weight_stationary (" + ", ".join(
            f"{x}x{n // x}" for x in meshes) + ")")
    out.append(f"weight_gathered (a batch that is a multiple of {n})")
    return tuple(out)
