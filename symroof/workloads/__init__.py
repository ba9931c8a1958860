"""Workload builders: each returns an Analysis (``.flops``, ``.bytes``, ``.intensity``, ``.graph``)."""

from __future__ import annotations

from symroof.workloads.attention import attention
from symroof.workloads.basic import conv2d, elementwise, gemm, gemv
from symroof.workloads.transformer import decode, prefill, training

__all__ = ["gemm", "gemv", "elementwise", "conv2d", "attention", "prefill", "decode", "training"]
