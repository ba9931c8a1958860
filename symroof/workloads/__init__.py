"""Workload builders: each returns an Analysis (``.flops``, ``.bytes``, ``.intensity``, ``.graph``).

The builders load on first use (PEP 562), so that :mod:`symroof.workloads.registry`, the
table of their names and options, is read without the graph library they need.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symroof.workloads.attention import attention
    from symroof.workloads.basic import conv2d, elementwise, gemm, gemv
    from symroof.workloads.transformer import decode, prefill, training

__all__ = ["gemm", "gemv", "elementwise", "conv2d", "attention", "prefill", "decode", "training"]

_HOME = {"gemm": "basic", "gemv": "basic", "elementwise": "basic", "conv2d": "basic",
         "attention": "attention", "prefill": "transformer", "decode": "transformer",
         "training": "transformer"}




class _Package(types.ModuleType):
    """The package module: importing ``symroof.workloads.attention`` (the module) must not
    put it in the place of ``attention`` (the builder), as the import system would."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _HOME and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'symroof.workloads' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"symroof.workloads.{home}"), name)
    globals()[name] = value  # once: the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
