"""Tensor and pipeline parallelism for the transformer workloads: which degrees a model
allows, and its graph sharded by them.

``tp`` must divide the query heads, and either divide the KV heads or be a multiple of
them (one KV head per device, replicated); every split width (d_ff, the experts' and the
shared expert's) must split evenly. ``pp`` is at most the layers. A bad degree is an
error that lists the valid ones.

>>> from symroof.models import get
>>> check_layout(get("llama-3-70b"), tp=6)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symroof.errors.SymroofError: tp 6: does not split llama-3-70b (64 heads, 8 KV heads); expected one \
of 1, 2, 4, 8, 16, 32, 64; layouts of Pope et al. (2022) that run on 6 chips: weight_gathered ...
"""

from __future__ import annotations

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph, as_expr
from symroof.passes.shard import Shard
from symroof.workloads.builder import routed_d_ff
from symroof.workloads.inference_layouts import accepting_layouts
from symroof.workloads.recurrent import ssm_splits
from symroof.workloads.shape import HybridShape, ModelShape

__all__ = ["check_layout", "valid_tp", "shard_model_graph"]


def _degree(value: object, what: str) -> sp.Expr:
    expr = as_expr(value, what) if not isinstance(value, str) else None
    if expr is None or (expr.is_number and not (expr.is_integer and expr.is_positive)) or \
            expr.is_positive is False:
        raise SymroofError(f"{what}: expected a positive integer, got {value!r}")
    return expr


def _splits(m: ModelShape, t: int) -> bool:
    """Whether ``t`` devices split every head and width of ``m`` evenly."""
    h, g = int(m.heads), int(m.kv_heads)
    if h % t or (g % t and t % g):
        return False
    widths = [m.d_ff, routed_d_ff(m)] + ([m.shared_d_ff] if m.shared_d_ff is not None else [])
    return all(not w.is_number or int(w) % t == 0 for w in widths) and ssm_splits(m, t)


def _other_layouts(m: ModelShape, t: int) -> str:
    """The inference layouts (:mod:`symroof.workloads.inference_layouts`) that accept
    ``t`` chips for ``m``: a 2D weight-stationary mesh whose F split splits the heads and
    widths as tensor parallelism must, and weight-gathered."""
    e = int(m.d_model) if m.d_model.is_number else 1   # a symbolic width: no 2D mesh named
    return "; ".join(accepting_layouts(t, heads=int(m.heads), d_model=e,
                                       splits_heads=lambda yz: _splits(m, yz)))


def valid_tp(m: ModelShape) -> tuple[int, ...]:
    """Every tensor-parallel degree that splits ``m`` evenly (numeric heads only)."""
    return tuple(t for t in range(1, int(m.heads) + 1) if _splits(m, t))


def check_layout(m: ModelShape, *, tp: object = 1, pp: object = 1,
                 microbatches: object = 1, names: tuple[str, str, str] = (
                     "tp", "pp", "microbatches")) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(tp, pp, microbatches)`` checked against ``m``; ``names`` are how errors name
    them (``--tp`` on the command line)."""
    t, p, mb = (_degree(v, n) for v, n in zip((tp, pp, microbatches), names))
    if t.is_number and m.heads.is_number and m.kv_heads.is_number and not _splits(m, int(t)):
        raise SymroofError(f"{names[0]} {t}: does not split {m.name} ({m.heads} heads, "
                           f"{m.kv_heads} KV heads); expected one of "
                           f"{', '.join(map(str, valid_tp(m)))}; layouts of Pope et al. "
                           f"(2022) that run on {t} chips: {_other_layouts(m, int(t))}")
    if p.is_number and m.layers.is_number and p > m.layers:
        raise SymroofError(f"{names[1]} {p}: more stages than the {m.layers} layers of "
                           f"{m.name}; expected 1 to {m.layers}")
    _refuse_zamba(m, t, p, names)
    if mb != 1 and p == 1:
        raise SymroofError(f"{names[2]} {mb}: micro-batches need pipeline stages "
                           f"({names[1]} > 1)")
    return t, p, mb


def _refuse_zamba(m: ModelShape, t: sp.Expr, p: sp.Expr, names: tuple[str, str, str]) -> None:
    """Zamba2's shared blocks (:mod:`symroof.workloads.zamba`) are not sharded."""
    if not isinstance(m, HybridShape) or m.zamba is None:
        return
    if p != 1:
        raise SymroofError(f"{names[1]} {p}: not modelled for {m.name} (Zamba2): every hybrid "
                           "layer reads the token embeddings, a second input the pipeline "
                           "stages would have to pass on; expected 1")
    if t != 1:
        raise SymroofError(f"{names[0]} {t}: not modelled for {m.name} (Zamba2): splitting the "
                           "shared blocks, their per-use adapters and the Mamba-2 layers "
                           "(transformers 5.24 has no tensor-parallel plan for it); "
                           "expected 1")


def shard_model_graph(g: Graph, m: ModelShape, *, tp: object = 1, pp: object = 1,
                      microbatches: object = 1) -> Graph:
    """``g``, a forward graph of ``m``, sharded by the checked layout."""
    t, p, mb = check_layout(m, tp=tp, pp=pp, microbatches=microbatches)
    return Shard(t, p, mb).apply(g)
