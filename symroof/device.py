"""The link a device sends over, and the sequences a run carries; what one device holds
is the memory package's count (:mod:`symroof.memory`), re-exported here under its old
names (``MemoryParts``, ``DeviceMemory``, ``memory_parts``, ``device_memory``,
``fraction``).

>>> from symroof.hardware import get
>>> choose_link(get("h100-sxm")).name
'nvlink'
"""

from __future__ import annotations

import weakref

import sympy as sp

from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec, Link
from symroof.ir import Kind
from symroof.memory.fit import DeviceMemory, device_memory, fraction
from symroof.memory.parts import MemoryParts, memory_parts

__all__ = ["MemoryParts", "DeviceMemory", "memory_parts", "device_memory", "choose_link",
           "entry_sequences", "fraction"]


def choose_link(spec: HardwareSpec, name: str | None = None, *, why: str = "tp > 1") -> Link:
    """The link collectives run over: ``name``, else the fastest per direction."""
    links = dict(spec.interconnects)
    if not links:
        raise SymroofError(f"{why}: {spec.name} lists no interconnect (add an "
                           "[interconnect.<name>] table with its bandwidth to the chip file)")
    if name is not None:
        if name not in links:
            raise SymroofError(f"link {name!r}: {spec.name} has no such interconnect; "
                               f"expected one of {', '.join(links)}")
        return links[name]
    return max(links.values(), key=lambda link: (link.per_direction, link.name))


_SEQUENCES: weakref.WeakKeyDictionary[object, tuple[sp.Expr | None]] = \
    weakref.WeakKeyDictionary()


def entry_sequences(graph: object) -> sp.Expr | None:
    """Sequences of a run: the leading axis of the activations (sequences, tokens, width)
    entering a graph's first repeated block (None for a graph without one; found once per
    graph)."""
    found = _SEQUENCES.get(graph)
    if found is None:
        found = (_entry_sequences(graph),)
        _SEQUENCES[graph] = found
    return found[0]


def _entry_sequences(graph: object) -> sp.Expr | None:
    g = graph
    found = sorted((t for t in g.tensors if not g.block(t)  # type: ignore[attr-defined]
                    and t.kind == Kind.ACTIVATION and len(t.shape) == 3
                    and any(g.block(c) for c in g.consumers(t))),  # type: ignore[attr-defined]
                   key=lambda t: t.name)
    return found[0].shape[0] if found else None


