"""symroof: closed-form roofline formulas for neural-network workloads.

>>> import symroof as sr
>>> from symroof.symbols import n
>>> sr.workloads.gemm(n, n, n).intensity
2*n/(3*b)
"""

from __future__ import annotations

from symroof import hardware, models, passes, symbols, workloads
from symroof.analysis import Analysis, Workload, analyze
from symroof.cost import Convention, Cost
from symroof.display import display
from symroof.errors import SymroofError
from symroof.evaluate import Roofline, evaluate, roofline, sweep
from symroof.footprint import Footprint, capacity, memory
from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, OpGroup, Reduce, Role,
                        Tensor, View)
from symroof.options import (Causal, DecodeTraffic, ExpertReads, FlopCount, LatentDecode, Logits,
                             Lowering, OpsCounted, QkNorm, Unfused, WindowKernel, WindowSpan)
from symroof.present.formula import latex, text
from symroof.version import __version__
from symroof.solve import (Crossover, Curve, Regime, crossover, crossover_curve, leading_term,
                           limit, regimes, sensitivity, theta)
from symroof.atlas import Atlas, Family, atlas, family
from symroof.present import notebook as _notebook  # registers the rich displays in Jupyter

__all__ = [
    "Analysis", "Workload", "analyze", "Convention", "Cost", "FlopCount", "SymroofError",
    "Roofline", "evaluate", "roofline", "sweep", "Footprint", "memory", "capacity",
    "Graph", "Tensor", "Kind", "Role", "OpGroup", "Gemm", "Elementwise", "Reduce", "Gather", "Move",
    "View", "limit", "leading_term", "crossover", "Crossover", "crossover_curve", "Curve",
    "regimes", "Regime", "sensitivity", "theta", "display", "latex", "text",
    "hardware", "models", "passes", "symbols", "workloads", "__version__",
    "Causal", "DecodeTraffic", "Logits", "Lowering", "OpsCounted", "Unfused", "WindowKernel",
    "WindowSpan", "LatentDecode", "ExpertReads", "QkNorm",
    "atlas", "Atlas", "family", "Family",
]
