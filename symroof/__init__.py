"""symroof: closed-form roofline formulas for neural-network workloads.

>>> import symroof as sr
>>> from symroof.symbols import n
>>> sr.workloads.gemm(n, n, n).intensity
2*n/(3*b)

Every name below is imported on first use (PEP 562), so ``import symroof`` and the
command line start without SymPy's and networkx's import cost until a command needs
them; ``from symroof import X``, ``sr.X`` and ``__all__`` work as if imported eagerly,
and so does ``sr.<module>`` for any module of the package.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from symroof.version import __version__

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each on first use
    from symroof import hardware, models, passes, symbols, workloads
    from symroof.analysis import Analysis, Workload, analyze
    from symroof.cost import Convention, Cost
    from symroof.display import display
    from symroof.errors import SymroofError
    from symroof.compiled import sweep
    from symroof.evaluate import Roofline, evaluate, roofline
    from symroof.memory.capacity import capacity
    from symroof.memory.footprint import Footprint, memory
    from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, OpGroup, Reduce, Role,
                            Tensor, View)
    from symroof.options import (Causal, DecodeTraffic, ExpertReads, FlopCount, LatentDecode,
                                 Logits, Lowering, OpsCounted, QkNorm, Unfused, WindowKernel,
                                 WindowSpan)
    from symroof.present.formula import latex, text
    from symroof.notation import rewrite
    from symroof.regimes import Regime, regimes
    from symroof.solve import (Crossover, Curve, crossover, crossover_curve, leading_term,
                               limit, sensitivity, theta)
    from symroof.atlas import Atlas, Family, atlas
    from symroof.atlas.family import family
    from symroof.plan import plan

__all__ = [
    "Analysis", "Workload", "analyze", "Convention", "Cost", "FlopCount", "SymroofError",
    "Roofline", "evaluate", "roofline", "sweep", "Footprint", "memory", "capacity",
    "Graph", "Tensor", "Kind", "Role", "OpGroup", "Gemm", "Elementwise", "Reduce", "Gather", "Move",
    "View", "limit", "leading_term", "crossover", "Crossover", "crossover_curve", "Curve",
    "regimes", "Regime", "sensitivity", "theta", "display", "latex", "text",
    "hardware", "models", "passes", "symbols", "workloads", "__version__",
    "Causal", "DecodeTraffic", "Logits", "Lowering", "OpsCounted", "Unfused", "WindowKernel",
    "WindowSpan", "LatentDecode", "ExpertReads", "QkNorm",
    "atlas", "Atlas", "family", "Family", "rewrite", "plan",
]

#: The module each re-exported name comes from (the same table as the imports above;
#: tests/project/test_lazy_import.py checks that they agree).
_FROM: dict[str, tuple[str, ...]] = {
    "symroof.analysis": ("Analysis", "Workload", "analyze"),
    "symroof.atlas": ("Atlas", "Family", "atlas", "family"),
    "symroof.cost": ("Convention", "Cost"),
    "symroof.display": ("display",),
    "symroof.errors": ("SymroofError",),
    "symroof.compiled": ("sweep",),  # evaluate.sweep's meaning, compiled once per formula
    "symroof.evaluate": ("Roofline", "evaluate", "roofline"),
    "symroof.memory.capacity": ("capacity",),
    "symroof.memory.footprint": ("Footprint", "memory"),
    "symroof.ir": ("Elementwise", "Gather", "Gemm", "Graph", "Kind", "Move", "OpGroup",
                   "Reduce", "Role", "Tensor", "View"),
    "symroof.options": ("Causal", "DecodeTraffic", "ExpertReads", "FlopCount", "LatentDecode",
                        "Logits", "Lowering", "OpsCounted", "QkNorm", "Unfused",
                        "WindowKernel", "WindowSpan"),
    "symroof.notation": ("rewrite",),  # a formula in a document's named quantities
    "symroof.plan": ("plan",),  # will these chips serve this model: the planner
    "symroof.present.formula": ("latex", "text"),
    "symroof.regimes": ("Regime", "regimes"),
    "symroof.solve": ("Crossover", "Curve", "crossover", "crossover_curve",
                      "leading_term", "limit", "sensitivity", "theta"),
}
_WHERE = {name: module for module, names in _FROM.items() for name in names}

#: Functions named like a module of the package (``sr.evaluate`` is the function, as it
#: always was): importing the module must not put the module in the function's place.
_SHADOWED = frozenset({"atlas", "display", "evaluate", "memory", "plan", "regimes"})


class _Package(types.ModuleType):
    """The package module: the import system sets each submodule it loads as an
    attribute of its package, which for the names in ``_SHADOWED`` would replace the
    function; those stay the functions."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """A re-exported name or a module of the package, imported on first use."""
    if name.startswith("_"):
        raise AttributeError(f"module 'symroof' has no attribute {name!r}")
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where), name)
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'symroof' has no attribute {name!r}") from None
    globals()[name] = value
    _register_displays()
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _register_displays() -> None:
    """Register the notebook renderers (symroof.present.notebook) once a name of the
    package is used, unless a module of the package is still being imported: the
    renderers import most of the library, which such a module may be part of."""
    if "symroof.present.notebook" in sys.modules or any(
            getattr(getattr(m, "__spec__", None), "_initializing", False)
            for k, m in list(sys.modules.items()) if k.startswith("symroof.")):
        return
    importlib.import_module("symroof.present.notebook")


if "IPython" in sys.modules:  # a notebook: its displays work from the first result on
    _register_displays()
