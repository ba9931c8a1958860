"""The IR: frozen tensor and op nodes, a Graph of them with multiplicities, and the
typed provenance that builders and passes record.

>>> from symroof.symbols import B, D
>>> g = Graph("mlp")
>>> h = g.gemm(g.input("x", (B, D)), g.weight("W1", (D, 4 * D)), name="up")
>>> h.shape, g.provenance.fused
((B, 4*D), ())
"""

from __future__ import annotations

from symroof.ir.collective import Collective, CollectiveKind
from symroof.ir.graph import Graph, require_graph
from symroof.ir.nodes import (Elementwise, Gather, Gemm, Kind, Move, Node, Op, OpGroup, Reduce,
                              Role, Tensor, View, as_dim, as_expr, fmt_shape, node, prod,
                              same_dim)
from symroof.ir.pattern import GEMM_EPILOGUE, Pattern, Step
from symroof.ir.provenance import FusedGroup, Provenance, Training

__all__ = [
    "Kind", "Role", "OpGroup", "Node", "Tensor", "Op", "Gemm", "Elementwise", "Reduce",
    "Gather", "Move", "View", "Graph", "require_graph", "Provenance", "FusedGroup", "Training",
    "as_expr", "as_dim", "prod", "same_dim", "fmt_shape", "node", "Pattern", "Step",
    "GEMM_EPILOGUE", "Collective", "CollectiveKind",
]
