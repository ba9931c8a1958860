"""Memory footprints by part, and how many sequences fit on a chip: the memory package's
count (:mod:`symroof.memory`), kept importable under this module's old names.

>>> from symroof.models import get
>>> m = get("seed-6.4b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
>>> memory(m, batch=1, context=1024).kv_cache
536870912
"""

from __future__ import annotations

from symroof.memory.capacity import capacity
from symroof.memory.footprint import Footprint, memory, saved_activations

__all__ = ["Footprint", "memory", "capacity", "saved_activations"]
