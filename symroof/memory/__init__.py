"""The one memory count: parts of an analysis -> fit on a chip with a reserve -> how
many sequences fit.

- :mod:`~symroof.memory.parts`: what a workload's graph keeps in memory (weights, KV
  cache, the largest kernel's activations, one collective's buffer), per device when the
  graph is sharded;
- :mod:`~symroof.memory.fit`: those parts at values against a chip's capacity less a
  reserve (:class:`DeviceMemory`, the roofline's ``memory``);
- :mod:`~symroof.memory.capacity`: sequences of a context that fit beside the weights
  (:func:`max_sequences`; ``sr.capacity`` and ``symroof capacity`` print it);
- :mod:`~symroof.memory.footprint`: a model's footprint by part, serving or training.

``symroof.device``, ``symroof.footprint`` and ``symroof.serving`` re-export these under
their old names. Names load on first use, so that the roofline (which reads the fit)
does not import the workloads the capacity count builds.

>>> from symroof.memory import max_sequences
>>> max_sequences.__module__
'symroof.memory.capacity'

``sr.memory`` stays the footprint function (:func:`symroof.memory.footprint.memory`),
as it always was; ``from symroof.memory import ...`` reaches the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the names below load on first use
    from symroof.memory.capacity import Capacity, capacity, kv_cache_per_device, max_sequences
    from symroof.memory.fit import DeviceMemory, device_memory, fits, fraction
    from symroof.memory.footprint import Footprint, memory, saved_activations
    from symroof.memory.parts import MemoryParts, memory_parts

_WHERE = {
    "MemoryParts": "parts", "memory_parts": "parts",
    "DeviceMemory": "fit", "device_memory": "fit", "fraction": "fit", "fits": "fit",
    "Capacity": "capacity", "max_sequences": "capacity", "kv_cache_per_device": "capacity",
    "capacity": "capacity",
    "Footprint": "footprint", "memory": "footprint", "saved_activations": "footprint",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'symroof.memory' has no attribute {name!r}")
    return getattr(importlib.import_module(f"symroof.memory.{where}"), name)
