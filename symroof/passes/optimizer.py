"""The optimizer-step pass: per-parameter elementwise work over the optimizer's state.

It reads the gradients the backward pass recorded (``graph.provenance.training``), so it
runs after it. Mixed-precision Adam keeps fp32 master weights, momentum and variance:
12 bytes per parameter beside 2-byte weights and gradients (Rajbhandari et al., ZeRO).

>>> from symroof.symbols import M, N, K
>>> from symroof.ir import Graph
>>> from symroof.passes.backward import backward
>>> g = Graph("linear")
>>> g.output(g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="y"))
>>> [t.name for t in OptimizerStep().apply(backward(g)).outputs]
['y', 'd:W:y', "adam:W'", "W'"]
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Elementwise, Graph, Kind, Tensor

__all__ = ["Optimizer", "ADAM", "OptimizerStep"]


@dataclass(frozen=True)
class Optimizer:
    """An optimizer step as per-parameter elementwise work over its state."""

    name: str
    state_bytes: sp.Expr          # bytes of state per parameter
    flops_per_param: int          # FLOPs of one update per parameter
    source: str


#: Mixed-precision Adam: fp32 master weights, momentum and variance = 12 bytes per
#: parameter beside 2-byte weights and gradients (Rajbhandari et al., ZeRO, 2020).
ADAM = Optimizer("adam", sp.Integer(12), 12,
                 "m, v updates 7, bias-corrected step 5 FLOPs; state per ZeRO (2020)")


@dataclass(frozen=True)
class OptimizerStep:
    """Update every weight that has a gradient (a Graph -> Graph pass)."""

    optimizer: Optimizer = ADAM
    name: str = "optimizer_step"

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        training = graph.provenance.training
        if training is None:
            raise SymroofError(f"{self.name}: graph {graph.name!r} has no backward pass; "
                               "run symroof.passes.backward first")
        opt = self.optimizer
        g = graph.copy()
        for wname, gname in training.gradients.items():
            w, grad = g.node(wname), g.node(gname)
            assert isinstance(w, Tensor) and isinstance(grad, Tensor)
            cnt, blk = g.count(w), g.block(w)
            state = g.input(f"{opt.name}:{wname}", w.shape, kind=Kind.OPTIMIZER_STATE,
                            bytes_per_value=opt.state_bytes, count=cnt, block=blk)
            new = Tensor(f"{opt.name}:{wname}'", w.shape, Kind.OPTIMIZER_STATE, opt.state_bytes)
            g.add(Elementwise(f"{opt.name}_step:{wname}", (grad, state), new,
                              opt.flops_per_param), count=cnt, block=blk)
            w_new = Tensor(f"{wname}'", w.shape, Kind.WEIGHT, w.bytes_per_value)
            g.add(Elementwise(f"cast:{wname}", (new,), w_new, 1), count=cnt, block=blk)
            g.set_crossings(new, reads=0)  # the cast reads the new master weights in registers
            g.output(new, w_new)
        return g
