"""Workload builders: each returns an Analysis (``.flops``, ``.bytes``, ``.intensity``, ``.graph``)."""

from __future__ import annotations

from symroof.workloads.basic import conv2d, elementwise, gemm, gemv

__all__ = ["gemm", "gemv", "elementwise", "conv2d"]
