"""``symroof plan``: will these chips serve this model under these objectives, with the
closed forms behind the answer (:func:`plan`, ``sr.plan``).

- :mod:`symroof.plan.inputs`: what a plan is asked (chips and prices, traffic, objectives,
  load, the model of the service), checked;
- :mod:`symroof.plan.closed`: the closed forms that bind (the largest batch meeting an
  inter-token latency, the memory limit on batch x context);
- :mod:`symroof.plan.layouts`: the layouts, pruned symbolically, and their formulas;
- :mod:`symroof.plan.search`: the numbers over the space, in blocks, on the compiled
  path (here, threads, processes or a Dask cluster);
- :mod:`symroof.plan.core`: the plan: best per chip, Pareto front, the closest
  configuration and its shortfall where none meets the objectives;
- :mod:`symroof.plan.text`: the plan as lines of text and as a JSON-ready document.
"""

from __future__ import annotations

from symroof.plan.closed import BatchLimit, MemoryLimit, itl_limit, memory_limit, minmax
from symroof.plan.core import Binding, Config, Plan, load_prices, plan
from symroof.plan.inputs import (ChunkTTFT, DecodeContext, Draft, Load, Mode, Objectives,
                                 Offer, Service, Traffic)
from symroof.plan.layouts import Formulas, Layout, PrefillLayout, Pruned

__all__ = ["plan", "Plan", "Config", "Binding", "load_prices", "Objectives", "Load",
           "Traffic", "Offer", "Service", "Mode", "DecodeContext", "ChunkTTFT", "Draft", "Layout",
           "PrefillLayout", "Pruned", "Formulas", "BatchLimit", "MemoryLimit", "itl_limit", "memory_limit",
           "minmax"]
