"""A hybrid model's token mixers as plain data: the widths of a Mamba-2, Mamba-1, gated
DeltaNet, lightning attention or short-convolution mixer, Zamba2's shared transformer
blocks, and the counting conventions of the recurrent layers (:class:`ScanChoices`).

These sit below the workloads, beside :mod:`symroof.workloads.shape` (the rest of a
model's data), so that :mod:`symroof.workloads.recurrent` and :mod:`symroof.workloads.zamba`
read the very types a model holds; ``symroof.models.HybridModel`` holds them and adds the
counts. Their public paths stay ``symroof.models`` (``Mamba2``, ``Mamba1``,
``GatedDeltaNet``, ``ShortConv``), ``symroof.models.hybrid`` (those and
``LightningAttention``, ``SharedBlocks``), ``symroof.workloads.recurrent`` (``ScanChoices``
and its options) and ``symroof.workloads.zamba`` (``SharedBlocks``).

>>> s = Mamba2(heads=8, head_dim=64, state=128)
>>> s.inner, s.conv_dim, s.choices.scan
(512, 768, <Scan.CHUNKED: 'chunked'>)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.options import Causal, option

__all__ = ["Scan", "CbPer", "Passing", "ConvOutputs", "ScanChoices", "Mamba2", "Mamba1",
           "GatedDeltaNet", "LightningAttention", "ShortConv", "SharedBlocks", "ConvMixer",
           "DECAY_GATES", "OUT_GATES"]


class Scan(StrEnum):
    """How prefill runs the state-space recurrence."""

    CHUNKED = "chunked"        # the SSD: GEMMs within chunks, a scan over chunk states
    SEQUENTIAL = "sequential"  # token by token: an elementwise update and h C per token


class CbPer(StrEnum):
    """Where the chunk scores C B^T are computed."""

    GROUP = "group"  # once per group of heads sharing B and C (the reference kernels)
    HEAD = "head"    # once per head, B and C repeated (transformers' torch path)


class Passing(StrEnum):
    """How the chunked scan passes states from chunk to chunk."""

    SEQUENTIAL = "sequential"  # an elementwise scan over the chunks (decay, add)
    QUADRATIC = "quadratic"    # all (c+1)^2 chunk pairs as one GEMM (transformers' torch path)


class ConvOutputs(StrEnum):
    """Which outputs of the causal conv1d are counted."""

    CAUSAL = "causal"  # the S outputs kept
    PADDED = "padded"  # the S + K - 1 a conv1d padded by K - 1 computes before the slice


@dataclass(frozen=True)
class ScanChoices:
    """The counting conventions of the recurrent layers (each a named option; defaults are
    the reference kernels'). ``chunk`` overrides the model's chunk size (a symbol: the
    chunk-size crossovers)."""

    scan: Scan = Scan.CHUNKED
    chunk: sp.Expr | None = None
    causal: Causal = Causal.HALF
    cb: CbPer = CbPer.GROUP
    passing: Passing = Passing.SEQUENTIAL
    conv_outputs: ConvOutputs = ConvOutputs.CAUSAL
    fused: bool = True
    state_write: bool = True  # a decode step writes its new states back (in place)

    def __post_init__(self) -> None:
        for f, enum in (("scan", Scan), ("causal", Causal), ("cb", CbPer),
                        ("passing", Passing), ("conv_outputs", ConvOutputs)):
            object.__setattr__(self, f, option(enum, getattr(self, f), f"ssm {f}"))
        for f in ("fused", "state_write"):
            if not isinstance(getattr(self, f), bool):
                raise SymroofError(f"ssm {f}: expected true or false, got {getattr(self, f)!r}")

    @classmethod
    def torch(cls) -> ScanChoices:
        """The conventions transformers' pure-PyTorch Mamba-2 path computes (the oracle's)."""
        return cls(causal=Causal.NONE, cb=CbPer.HEAD, passing=Passing.QUADRATIC,
                   conv_outputs=ConvOutputs.PADDED, fused=False)




def _check_mixer(mixer: Any, what: str, dims: Sequence[str], flags: Sequence[str],
                 taps: str = "conv_kernel") -> None:
    """Checks and converts a recurrent mixer's fields in place: each of ``dims`` a
    dimension, each of ``flags`` true or false, the state byte widths positive where given,
    at least 2 conv taps (``taps``: their name in the config) and ``choices`` a
    :class:`ScanChoices`; ``what`` names the mixer in the errors."""
    for f in dims:
        object.__setattr__(mixer, f, as_dim(getattr(mixer, f),
                                            f"{what} {taps if f == 'conv_kernel' else f}"))
    if mixer.conv_kernel.is_number and mixer.conv_kernel < 2:
        raise SymroofError(f"{what} {taps} {mixer.conv_kernel}: expected at least 2 taps")
    for f in flags:
        if not isinstance(getattr(mixer, f), bool):
            raise SymroofError(f"{what} {f}: expected true or false, got "
                               f"{getattr(mixer, f)!r}")
    for f in ("state_bytes", "conv_state_bytes"):
        if getattr(mixer, f, None) is None:
            continue
        v = as_expr(getattr(mixer, f), f"{what} {f}")
        if v.is_positive is False or (v.is_number and not v.is_positive):
            raise SymroofError(f"{what} {f}: expected positive bytes, got {v}")
        object.__setattr__(mixer, f, v)
    if not isinstance(mixer.choices, ScanChoices):
        raise SymroofError(f"{what} choices: expected a ScanChoices, got "
                           f"{type(mixer.choices).__name__}")


@dataclass(frozen=True)
class Mamba2:
    """A Mamba-2 mixer's widths: ``heads`` H of ``head_dim`` P channels (inner width
    I = H P), ``state`` N per channel, ``groups`` G of heads sharing B and C, a causal
    conv of ``conv_kernel`` K taps over the I + 2 G N channels of x, B, C, chunks of
    ``chunk`` Q positions, and the counting ``choices`` (:class:`ScanChoices`).
    ``state_bytes``: bytes per SSM state value, ``conv_state_bytes`` per conv state value
    (None: the model's ``kv_bytes``; Nemotron-H keeps its SSM state in fp32)."""

    heads: sp.Expr
    head_dim: sp.Expr
    state: sp.Expr
    groups: sp.Expr = sp.Integer(1)
    conv_kernel: sp.Expr = sp.Integer(4)
    chunk: sp.Expr = sp.Integer(256)
    conv_bias: bool = True
    proj_bias: bool = False
    gated_norm: bool = True
    state_bytes: sp.Expr | None = None
    conv_state_bytes: sp.Expr | None = None
    choices: ScanChoices = ScanChoices()

    def __post_init__(self) -> None:
        _check_mixer(self, "ssm", ("heads", "head_dim", "state", "groups", "conv_kernel",
                                   "chunk"), ("conv_bias", "proj_bias", "gated_norm"))
        if self.heads.is_number and self.groups.is_number and self.heads % self.groups:
            raise SymroofError(f"ssm n_groups {self.groups}: does not divide the "
                               f"{self.heads} SSM heads")

    @property
    def inner(self) -> sp.Expr:
        """I = H P, the width the mixer works at."""
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> sp.Expr:
        """Channels of the causal conv: I + 2 G N (x, B and C)."""
        return self.inner + 2 * self.groups * self.state


@dataclass(frozen=True)
class Mamba1:
    """A Mamba-1 (selective scan) mixer's widths, as Jamba's: ``inner`` I channels (each
    with a state of ``state`` N), ``dt_rank`` R, a causal conv of ``conv_kernel`` taps,
    RMSNorms on dt, B and C (``norms``; with gains when ``norm_weights``, else
    Falcon-Mamba's weightless x / rms(x)), and the conv conventions in ``choices``."""

    inner: sp.Expr
    state: sp.Expr = sp.Integer(16)
    dt_rank: sp.Expr = sp.Integer(256)
    conv_kernel: sp.Expr = sp.Integer(4)
    conv_bias: bool = True
    proj_bias: bool = False
    norms: bool = True
    state_bytes: sp.Expr | None = None
    conv_state_bytes: sp.Expr | None = None
    choices: ScanChoices = ScanChoices(scan=Scan.SEQUENTIAL)
    norm_weights: bool = True

    def __post_init__(self) -> None:
        _check_mixer(self, "mamba1", ("inner", "state", "dt_rank", "conv_kernel"),
                     ("conv_bias", "proj_bias", "norms", "norm_weights"))


@dataclass(frozen=True)
class GatedDeltaNet:
    """A gated DeltaNet mixer's widths (Qwen3-Next's linear attention): ``key_heads`` of
    ``key_dim`` for q and k, ``value_heads`` of ``value_dim`` for v and z (the state is
    key_dim x value_dim per value head), a causal conv of ``conv_kernel`` taps over q, k,
    v, chunks of ``chunk`` in prefill, and the conventions in ``choices``.

    The decay gate's shape is the named option ``decay``: ``"head"`` (default; Qwen3-Next,
    OLMo-Hybrid: one decay per value head and token, from a projection D -> H_v) or
    ``"channel"`` (Kimi Delta Attention: one per key channel of each value head, from a
    low-rank path D -> ``decay_rank`` -> H_v d_k plus a bias per channel). The output
    gate is a full projection D -> H_v d_v (``out_gate_rank`` None, default) or a
    low-rank path through ``out_gate_rank`` (Kimi), its activation ``out_gate`` SiLU
    (default) or sigmoid (Kimi).

    >>> kda = GatedDeltaNet(32, 128, 32, 128, decay="channel", decay_rank=128,
    ...                     out_gate_rank=128, out_gate="sigmoid")
    >>> kda.decay, kda.decay_rank
    ('channel', 128)
    """

    key_heads: sp.Expr
    key_dim: sp.Expr
    value_heads: sp.Expr
    value_dim: sp.Expr
    conv_kernel: sp.Expr = sp.Integer(4)
    chunk: sp.Expr = sp.Integer(64)
    conv_bias: bool = False
    state_bytes: sp.Expr | None = None
    conv_state_bytes: sp.Expr | None = None
    choices: ScanChoices = ScanChoices()
    decay: str = "head"                   # DECAY_GATES: the decay gate's shape
    decay_rank: sp.Expr | None = None     # the channel decay's low-rank width (Kimi: d_k)
    out_gate_rank: sp.Expr | None = None  # None: z a full projection; else low-rank (Kimi)
    out_gate: str = "silu"                # OUT_GATES: the output gate's activation

    def __post_init__(self) -> None:
        _check_mixer(self, "deltanet", ("key_heads", "key_dim", "value_heads", "value_dim",
                                        "conv_kernel", "chunk"), ("conv_bias",))
        _check_kda(self)
        if self.key_heads.is_number and self.value_heads.is_number and \
                self.value_heads % self.key_heads:
            raise SymroofError(f"deltanet linear_num_key_heads {self.key_heads}: does not "
                               f"divide the {self.value_heads} value heads")


#: A gated DeltaNet's decay gate shapes: one per value head (Qwen3-Next), one per key
#: channel of each value head (Kimi Delta Attention).
DECAY_GATES = ("head", "channel")
#: Activations of a gated DeltaNet's output gate: SiLU (Qwen3-Next), sigmoid (Kimi).
OUT_GATES = ("silu", "sigmoid")


def _check_kda(s: GatedDeltaNet) -> None:
    """The Kimi Delta Attention options of a :class:`GatedDeltaNet`: the decay's shape
    and rank, the output gate's rank and activation."""
    if s.decay not in DECAY_GATES:
        raise SymroofError(f"deltanet decay {s.decay!r}: expected one of "
                           f"{', '.join(DECAY_GATES)}")
    if s.out_gate not in OUT_GATES:
        raise SymroofError(f"deltanet out_gate {s.out_gate!r}: expected one of "
                           f"{', '.join(OUT_GATES)}")
    if (s.decay == "channel") != (s.decay_rank is not None):
        raise SymroofError("deltanet decay_rank: expected a width with decay='channel' (its "
                           "low-rank path) and none with decay='head'")
    for f in ("decay_rank", "out_gate_rank"):
        if getattr(s, f) is not None:
            object.__setattr__(s, f, as_dim(getattr(s, f), f"deltanet {f}"))


@dataclass(frozen=True)
class LightningAttention:
    """A lightning (linear) attention mixer's widths (MiniMax-Text-01's): ``heads`` of
    ``head_dim`` d for q, k and v (the state is d x d per head), blocks of ``chunk``
    positions in prefill, and the conventions in ``choices`` (``causal`` within a block,
    ``fused``, ``state_write``). Its decay rates are fixed per head and layer: no
    parameters."""

    heads: sp.Expr
    head_dim: sp.Expr
    chunk: sp.Expr = sp.Integer(256)
    state_bytes: sp.Expr | None = None
    choices: ScanChoices = ScanChoices()

    def __post_init__(self) -> None:
        for f in ("heads", "head_dim", "chunk"):
            object.__setattr__(self, f, as_dim(getattr(self, f),
                                               f"lightning {'block_size' if f == 'chunk' else f}"))
        if self.state_bytes is not None:
            v = as_expr(self.state_bytes, "lightning state_bytes")
            if v.is_positive is False or (v.is_number and not v.is_positive):
                raise SymroofError(f"lightning state_bytes: expected positive bytes, got {v}")
            object.__setattr__(self, "state_bytes", v)
        if not isinstance(self.choices, ScanChoices):
            raise SymroofError(f"lightning choices: expected a ScanChoices, got "
                               f"{type(self.choices).__name__}")


@dataclass(frozen=True)
class ShortConv:
    """An LFM2 short-convolution block's depthwise causal conv: ``conv_kernel`` K taps
    over the d_model channels (its conv state keeps K inputs per channel), biases on the
    projections and the conv with ``conv_bias``; ``choices`` carries the conv conventions
    (``conv_outputs``, ``state_write``)."""

    conv_kernel: sp.Expr = sp.Integer(3)
    conv_bias: bool = False
    conv_state_bytes: sp.Expr | None = None
    choices: ScanChoices = ScanChoices()

    def __post_init__(self) -> None:
        _check_mixer(self, "short_conv", ("conv_kernel",), ("conv_bias",), taps="L_cache")


#: The mixers with a causal conv, whose fields the conv part of a recurrent layer reads
#: (``conv_kernel``, ``conv_bias``, ``conv_state_bytes``, ``choices``); lightning attention
#: has none.
ConvMixer = Mamba2 | Mamba1 | GatedDeltaNet | ShortConv


@dataclass(frozen=True)
class SharedBlocks:
    """Zamba2's shared transformer blocks: ``mem_blocks`` M blocks alternating over the
    hybrid layers, per-use adapters of rank ``adapter_rank`` on Q, K, V when
    ``attention_adapter`` and on the MLP's gate/up projection when ``mlp_adapter``, rotary
    positions in the shared attention when ``rope``."""

    mem_blocks: sp.Expr = sp.Integer(1)
    adapter_rank: sp.Expr = sp.Integer(128)
    attention_adapter: bool = False
    mlp_adapter: bool = True
    rope: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mem_blocks", as_dim(self.mem_blocks, "zamba num_mem_blocks"))
        object.__setattr__(self, "adapter_rank", as_dim(self.adapter_rank,
                                                        "zamba adapter_rank"))
        for f in ("attention_adapter", "mlp_adapter", "rope"):
            if not isinstance(getattr(self, f), bool):
                raise SymroofError(f"zamba {f}: expected true or false, got "
                                   f"{getattr(self, f)!r}")


