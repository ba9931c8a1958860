"""symroof: closed-form roofline formulas for neural-network workloads.

>>> import symroof as sr
>>> from symroof.symbols import n
>>> sr.workloads.gemm(n, n, n).intensity
2*n/(3*b)
"""

from __future__ import annotations

from symroof import hardware, symbols, workloads
from symroof.analysis import Analysis, Workload, analyze
from symroof.cost import Convention, Cost, FlopCount
from symroof.errors import SymroofError
from symroof.evaluate import Roofline, evaluate, roofline
from symroof.ir import Elementwise, Gather, Gemm, Graph, Kind, Move, OpGroup, Reduce, Tensor, View

__all__ = [
    "Analysis", "Workload", "analyze", "Convention", "Cost", "FlopCount", "SymroofError",
    "Roofline", "evaluate", "roofline", "Graph", "Tensor", "Kind", "OpGroup", "Gemm",
    "Elementwise", "Reduce", "Gather", "Move", "View", "hardware", "symbols", "workloads",
]
__version__ = "0.1.0"
