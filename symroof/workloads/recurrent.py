"""The Mamba-2 (SSD) token mixer as a graph: prefill by the chunked scan or the sequential
recurrence, and a decode step that reads and writes a state of fixed size.

The existing vocabulary suffices, so there is no scan node: the chunked state-space dual
(SSD) is batched GEMMs around elementwise decays, and the recurrence is an elementwise
state update followed by a GEMM with C. What a decode step carries across steps (the
conv window and the SSM state) are ``kv_cache`` tensors, the kind a decode step reads
every step and memory counts per sequence (transformers keeps them in the same cache
object as attention's keys and values); their names (``conv_state_*``, ``ssm_state``)
tell them apart from K and V.

A layer of width ``D`` with ``H`` heads of ``P`` channels (``I = H P``), ``G`` groups of
B and C with state ``N``, a depthwise causal convolution of ``K`` taps and chunks of
``Q`` positions runs, per token:

- in-projection ``D -> 2I + 2GN + H`` (z, x, B, C, dt: one fused matrix, counted as its
  five column blocks), conv1d over the ``I + 2GN`` channels of x, B, C, SiLU;
- the SSD (``scan="chunked"``, the default): per chunk and head, the scores ``C B^T``
  (per group by default, as the reference kernels compute them; ``cb="head"`` as
  transformers' torch path repeats B and C per head), masked by the decays, times x
  (the diagonal blocks), the chunk's state ``B^T x`` (``P N`` per head), the states
  passed from chunk to chunk (``passing="sequential"``: an elementwise scan over the
  chunks, as the kernels do; ``"quadratic"``: every pair of chunks as one GEMM, as
  transformers' torch path does), and ``C h`` (the off-diagonal blocks); a ``causal``
  chunk kernel does half the Q x Q pairs (the options of attention: ``half``, ``exact``,
  ``none``);
- ``scan="sequential"``: the recurrence token by token: ``h = exp(dt A) h + dt x B^T``
  (elementwise, ``P N`` per head) and ``y = h C`` (a GEMM);
- the gated RMSNorm ``norm(y * silu(z))`` and the out-projection ``I -> D``.

What stays on chip (``fused=True``, default): the scan is one kernel that reads x, B, C
and dt and writes y; its scores, decays and states never cross (``fused=False``: every
intermediate is written and read, as eager PyTorch does). The short convolution is a
GEMM over its K-tap windows (a gather of the windows, kept on chip, and K multiply-adds
per output: a contraction, as PyTorch's FLOP counter counts ``conv1d``);
``conv_outputs="causal"`` (default) counts the S outputs kept, ``"padded"`` the S + K -
1 a padded ``conv1d`` computes before the slice (transformers; in decode, 2 outputs over
the K-wide state and the new input). The conv state holds the K newest inputs per
channel (the reference kernels' and transformers' layout), the SSM state H P N values
per sequence. A chunk size that does not divide the sequence pads the last chunk (the
reference implementations do); a chunk longer than the sequence is refused.

>>> from symroof.symbols import dim
>>> ssd_flops_per_token(dim("H"), dim("P"), dim("N"), dim("G"), dim("Q"))
G*N*Q + 4*H*N*P + H*P*Q
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Tensor, View, as_dim, as_expr
from symroof.options import Causal, OpsCounted, Saves
from symroof.symbols import b as _b
from symroof.workloads.attention import (ElementwiseFlops, causal_fraction, fuse_groups,
                                         op_groups)
from symroof.workloads.builder import Builder
# the mixers' widths and the scan conventions: data below the workloads (a model holds them,
# the builders here read them); ScanChoices and its options keep this public path
from symroof.workloads.mixers import (CbPer, ConvMixer, ConvOutputs, GatedDeltaNet,
                                      LightningAttention, Mamba1, Mamba2, Passing, Scan,
                                      ScanChoices, ShortConv)
from symroof.workloads.shape import HybridShape

__all__ = ["Scan", "CbPer", "Passing", "ConvOutputs", "ScanChoices", "SsmShape", "ConvShape",
           "mamba2_mixer", "short_conv_mixer", "mamba1_mixer", "Mamba1Shape", "DeltaShape",
           "deltanet_mixer", "deltanet_flops_per_token", "LightningShape", "lightning_mixer",
           "ssd_flops_per_token", "ssd_tile_bytes", "chunk_count", "STATE_NAMES",
           "ssm_splits", "ssd"]

#: Name parts of the tensors a recurrent layer carries across decode steps.
STATE_NAMES = ("conv_state", "ssm_state")

# The old names of the mixers' types here (each was a protocol copying a model class's
# fields), kept as aliases of the types themselves.
SsmShape = Mamba2
ConvShape = ConvMixer
Mamba1Shape = Mamba1
DeltaShape = GatedDeltaNet
LightningShape = LightningAttention


def ssd_flops_per_token(h: sp.Expr, p: sp.Expr, n: sp.Expr, g: sp.Expr,
                        q: sp.Expr) -> sp.Expr:
    """Contraction FLOPs of the chunked SSD per token (2 per multiply-add), with a causal
    chunk kernel (half the Q x Q pairs), scores per group and sequential state passing:
    ``C B^T`` (G Q N), the diagonal blocks (H Q P), the chunk states and ``C h``
    (2 H P N each)."""
    return sp.expand(g * q * n + h * q * p + 4 * h * p * n)


def ssd_tile_bytes(q: sp.Expr, p: sp.Expr, n: sp.Expr, b: sp.Expr) -> sp.Expr:
    """On-chip bytes of one head's chunk in a fused SSD kernel: the Q x Q scores and the
    P x N state in fp32, and the x, y (Q x P) and B, C (Q x N) blocks at ``b``."""
    return 4 * q**2 + 4 * p * n + (2 * q * p + 2 * q * n) * b


def chunk_count(seq: sp.Expr, chunk: sp.Expr) -> sp.Expr:
    """Chunks of ``chunk`` positions over ``seq`` (a last partial chunk is padded whole);
    a chunk longer than the sequence is refused."""
    if (chunk - seq).is_positive:
        raise SymroofError(f"ssm chunk_size {chunk}: larger than the sequence {seq} (give a "
                           "chunk size at most the prompt length)")
    if seq.is_number and chunk.is_number:
        return sp.ceiling(seq / chunk)
    return seq / chunk


def _shape(b: Builder) -> Mamba2:
    if not (isinstance(b.m, HybridShape) and isinstance(b.m.ssm, Mamba2)):
        raise SymroofError(f"model {b.m.name!r} ssm: a mamba2 layer group needs the model's "
                           "Mamba-2 widths (symroof.models.Mamba2)")
    return b.m.ssm


def _state_bytes(b: Builder, value: sp.Expr | None) -> sp.Expr:
    """Bytes per state value: ``value``, else the model's KV bytes."""
    return b.m.kv_bytes if value is None else value


def mamba2_mixer(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr,
                 decode: bool) -> Tensor:
    """The Mamba-2 mixer on the normed input ``h`` (batch, seq, d_model); returns its
    output before the residual add."""
    s = _shape(b)
    c = s.choices
    g, m = b.g, b.m
    hd, p, n, grp = s.heads, s.head_dim, s.state, s.groups
    inner = hd * p
    if not (hd / grp).is_integer and (hd / grp).is_number:
        raise SymroofError(f"model {m.name!r} ssm n_groups {grp}: does not divide the "
                           f"{hd} heads")
    z = b.linear(h, "W_z", m.d_model, inner, "z_proj", s.proj_bias)
    x = b.linear(h, "W_x", m.d_model, inner, "x_proj", s.proj_bias)
    bm = b.linear(h, "W_B", m.d_model, grp * n, "B_proj", s.proj_bias)
    cm = b.linear(h, "W_C", m.d_model, grp * n, "C_proj", s.proj_bias)
    dt = b.linear(h, "W_dt", m.d_model, hd, "dt_proj", s.proj_bias)
    x = _conv(b, s, x, "x", inner, batch, seq, decode)
    bm = _conv(b, s, bm, "B", grp * n, batch, seq, decode)
    cm = _conv(b, s, cm, "C", grp * n, batch, seq, decode)
    # dt = softplus(dt + dt_bias); the decay exp(dt A) with A = -exp(A_log)
    dt = g.elementwise(dt, b.weight("dt_bias", (hd,)), b.weight("A_log", (hd,)),
                       name=b.n("dt_softplus"), flops_per_element=4)
    if decode:
        y = _step(b, s, x, bm, cm, dt, batch)
    elif c.scan is Scan.SEQUENTIAL:
        y = _sequential(b, s, x, bm, cm, dt, batch, seq)
    else:
        y = _chunked(b, s, x, bm, cm, dt, batch, seq)
    if s.gated_norm:  # y * silu(z), then an RMSNorm over each group's channels
        y = g.elementwise(y, z, b.weight("ssm_norm.weight", (inner,)), name=b.n("gated_norm"),
                          flops_per_element=b.fl.silu + b.fl.gate + b.fl.rmsnorm)
    else:
        y = g.elementwise(y, z, name=b.n("ssm_gate"), flops_per_element=b.fl.silu + b.fl.gate)
    return b.linear(y, "W_out", inner, m.d_model, "out_proj", s.proj_bias)


def _conv(b: Builder, s: ConvMixer, u: Tensor, part: str, width: sp.Expr, batch: sp.Expr,
          seq: sp.Expr, decode: bool, silu: bool = True) -> Tensor:
    """The depthwise causal conv1d over ``width`` channels as a GEMM over K-tap windows
    (the windows stay on chip), its bias and SiLU. Decode reads the conv state (the K
    newest inputs, the current one included, as the reference kernels and transformers
    keep it), convolves the newest window and writes the state back shifted by one;
    with ``conv_outputs="padded"`` it counts the 2 outputs transformers' update computes
    over the state and the new input (K + 1 positions) before keeping the last."""
    g, c, k = b.g, s.choices, s.conv_kernel
    kernel: list[str] = []
    padded = c.conv_outputs is ConvOutputs.PADDED
    if decode:
        sb = _state_bytes(b, s.conv_state_bytes)
        state = g.kv_cache(b.n(f"conv_state_{part}"), (batch, width, k), bytes_per_value=sb)
        rows = batch * (2 if padded else 1)
        win = g.move(state, u, name=b.n(f"conv_window_{part}"), shape=(width, rows, k))
        kernel.append(win.name)
        if c.state_write:
            new = g.move(win, name=b.n(f"conv_state_{part}_write"), shape=(batch, width, k),
                         kind=Kind.KV_CACHE, bytes_per_value=sb)
            g.output(new)
            kernel.append(new.name)
    else:
        rows = batch * (seq + k - 1 if padded else seq)
        win = g.move(u, name=b.n(f"conv_window_{part}"), shape=(width, rows, k))
        kernel.append(win.name)
    out = g.gemm(win, b.weight(f"conv_{part}.weight", (width, k, 1)), name=b.n(f"conv_{part}"))
    kernel.append(out.name)
    params = (b.weight(f"conv_{part}.bias", (width, 1, 1)),) if s.conv_bias else ()
    act = g.elementwise(out, *params, name=b.n(f"conv_{part}_act"),
                        flops_per_element=(b.fl.silu if silu else 0) + (1 if s.conv_bias else 0))
    kernel.append(act.name)
    rows_kept = batch * (1 if decode else seq)
    if sp.expand(rows - rows_kept) == 0:
        y = g.view(act, (batch, 1 if decode else seq, width), name=b.n(f"conv_{part}_out"))
    else:  # the padded outputs are computed and sliced off
        y = g.move(act, name=b.n(f"conv_{part}_out"), shape=(batch, seq, width),
                   read_fraction=rows_kept / rows)
    kernel.append(y.name)
    b.fusions.append((frozenset(kernel), None))
    return y


def _kernel(g: Graph, tensors: list[Tensor]) -> frozenset[str]:
    """The ops that produce ``tensors``, as one fused kernel; views stay outside, so that
    the kernel reads the views of its inputs from memory and writes the tensor its
    output view shows (a view has no traffic of its own)."""
    return frozenset(op.name for op in (g.producer(t) for t in tensors)
                     if op is not None and not isinstance(op, View))


class _ChunkOps:
    """The tensors a chunked form builds, gathered for :func:`_kernel`: :meth:`keep` adds
    one; :meth:`view` reshapes a tensor to (or from) chunks, a view where the sizes agree,
    else a move reading what is kept (the last chunk padded, or cut off), and adds it."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.tensors: list[Tensor] = []

    def keep(self, t: Tensor) -> Tensor:
        self.tensors.append(t)
        return t

    def view(self, t: Tensor, shape: tuple[sp.Expr, ...], name: str) -> Tensor:
        g, size = self.b.g, sp.Mul(*shape)
        out = g.view(t, shape, name=self.b.n(name)) if sp.expand(t.numel - size) == 0 else \
            g.move(t, name=self.b.n(name), shape=shape, read_fraction=sp.Min(1, size / t.numel))
        return self.keep(out)


def _write_state(b: Builder, new: Tensor, shape: tuple[sp.Expr, ...], sb: sp.Expr,
                 ops: list[Tensor]) -> None:
    """A decode step's updated state written back to the cache (``state_write``), added
    to the step's ``ops``."""
    write = b.g.move(new, name=b.n("ssm_state_write"), shape=shape, kind=Kind.KV_CACHE,
                     bytes_per_value=sb)
    b.g.output(write)
    ops.append(write)


def short_conv_mixer(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr,
                     decode: bool) -> Tensor:
    """An LFM2 short-convolution block on the normed input ``h``: the in-projection
    D -> 3D (B, C, x; counted as three blocks), the gate B x, a depthwise causal conv of K
    taps over the D channels (a GEMM over its windows, as in Mamba-2; decode reads and
    writes a K-wide conv state), the gate C y, the out-projection D -> D."""
    if not (isinstance(b.m, HybridShape) and isinstance(b.m.short_conv, ShortConv)):
        raise SymroofError(f"model {b.m.name!r} short_conv: a shortconv layer group needs "
                           "the model's short convolution (symroof.models.ShortConv)")
    s = b.m.short_conv
    g, m = b.g, b.m
    d = m.d_model
    bg = b.linear(h, "W_B", d, d, "B_proj", s.conv_bias)
    cg = b.linear(h, "W_C", d, d, "C_proj", s.conv_bias)
    x = b.linear(h, "W_x", d, d, "x_proj", s.conv_bias)
    bx = g.elementwise(bg, x, name=b.n("B_gate"), flops_per_element=1)
    y = _conv(b, s, bx, "x", d, batch, seq, decode, silu=False)
    y = g.elementwise(cg, y, name=b.n("C_gate"), flops_per_element=1)
    return b.linear(y, "W_out", d, d, "out_proj", s.conv_bias)


def mamba1_mixer(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr,
                 decode: bool) -> Tensor:
    """A Mamba-1 mixer (selective scan, Jamba's): in-projection D -> 2I (x, z), the causal
    conv over I channels and SiLU, x_proj I -> R + 2N (dt's low rank, B, C; Jamba norms
    each), dt_proj R -> I with its bias, the recurrence over a state of N per channel
    (the sequential scan: there is no chunked form), D skip, the gate silu(z), and the
    out-projection I -> D. Falcon-Mamba's norms have no gains (``norm_weights``)."""
    if not (isinstance(b.m, HybridShape) and isinstance(b.m.mamba1, Mamba1)):
        raise SymroofError(f"model {b.m.name!r} mamba1: a mamba1 layer group needs the "
                           "model's Mamba-1 widths (symroof.models.Mamba1)")
    s = b.m.mamba1
    g, m = b.g, b.m
    i, n, r = s.inner, s.state, s.dt_rank
    z = b.linear(h, "W_z", m.d_model, i, "z_proj", s.proj_bias)
    x = b.linear(h, "W_x", m.d_model, i, "x_proj", s.proj_bias)
    x = _conv(b, s, x, "x", i, batch, seq, decode)
    dtr = b.linear(x, "W_dt_rank", i, r, "dt_rank_proj", False)
    bm = b.linear(x, "W_B", i, n, "B_proj", False)
    cm = b.linear(x, "W_C", i, n, "C_proj", False)
    if s.norms and s.norm_weights:
        dtr, bm, cm = b.rms(dtr, "dt_norm", r), b.rms(bm, "B_norm", n), b.rms(cm, "C_norm", n)
    elif s.norms:  # Falcon-Mamba: x / rms(x), no gain (one FLOP an element fewer)
        dtr, bm, cm = (g.elementwise(t, name=b.n(nm), flops_per_element=b.fl.rmsnorm - 1,
                                     saves=Saves.RMS_NORM)
                       for t, nm in ((dtr, "dt_norm"), (bm, "B_norm"), (cm, "C_norm")))
    dt = b.linear(dtr, "W_dt", r, i, "dt_proj", True)
    dt = g.elementwise(dt, name=b.n("dt_softplus"), flops_per_element=2)
    a = b.weight("A_log", (i, 1, n))  # a decay per channel and state
    # the selective scan is the Mamba-2 recurrence with I heads of one channel, one group
    w = Mamba2(heads=i, head_dim=1, state=n, groups=1, conv_kernel=s.conv_kernel, chunk=1,
               conv_bias=False, gated_norm=False, state_bytes=s.state_bytes,
               choices=s.choices)
    y = _step(b, w, x, bm, cm, dt, batch, a) if decode else \
        _sequential(b, w, x, bm, cm, dt, batch, seq, a)
    y = g.elementwise(y, z, name=b.n("ssm_gate"), flops_per_element=b.fl.silu + b.fl.gate)
    return b.linear(y, "W_out", i, m.d_model, "out_proj", s.proj_bias)


def _chunked(b: Builder, s: Mamba2, x: Tensor, bm: Tensor, cm: Tensor, dt: Tensor,
             batch: sp.Expr, seq: sp.Expr) -> Tensor:
    """The SSD over chunks of Q positions (see the module docstring)."""
    g, c = b.g, s.choices
    q = s.chunk if c.chunk is None else c.chunk
    nc = chunk_count(seq, q)
    if not (seq.is_number and q.is_number):
        g.record(assumptions=(*g.provenance.assumptions,
                              f"ssm chunk {q} divides the sequence {seq}"))
    hd, p, n, grp = s.heads, s.head_dim, s.state, s.groups
    per = hd / grp
    lead = (batch, nc, grp)
    frac = causal_fraction(c.causal, q)
    ops = _ChunkOps(b)
    keep, v = ops.keep, ops.view

    x6 = v(x, (*lead, per, q, p), "ssd_x")
    b5 = v(bm, (*lead, 1, q, n), "ssd_B")
    c5 = v(cm, (*lead, 1, q, n), "ssd_C")
    # dt A and its running sum per chunk, (..., Q, 1); the backward pass needs a tensor
    # that a view reads to have no other reader, hence moves (on chip) for its copies
    da = da_l = keep(g.elementwise(v(dt, (*lead, per, q, 1), "ssd_dt"),
                                   name=b.n("ssd_cumsum"), flops_per_element=2))
    da_s = keep(g.move(da_l, name=b.n("ssd_decay_s"), shape=(*lead, per, 1, q)))
    ch = keep(g.move(c5, name=b.n("ssd_C_heads"), shape=(*lead, per, q, n)))
    bh = keep(g.move(b5, name=b.n("ssd_B_heads"), shape=(*lead, per, q, n)))
    if c.cb is CbPer.HEAD:
        cb = keep(g.gemm(ch, bh, transpose_b=True, work_fraction=frac, name=b.n("ssd_cb")))
    else:
        cb = keep(g.gemm(c5, b5, transpose_b=True, work_fraction=frac, name=b.n("ssd_cb")))
    # L[l, s] = exp(cum[l] - cum[s]) below the diagonal, times the scores
    mask = keep(g.elementwise(cb, da_l, da_s, name=b.n("ssd_mask"), shape=(*lead, per, q, q),
                              flops_per_element=3))
    y_diag = keep(g.gemm(mask, x6, work_fraction=frac, name=b.n("ssd_diag")))
    b_decay = keep(g.elementwise(bh, da_l, name=b.n("ssd_B_decay"), flops_per_element=2))
    states = keep(g.gemm(b_decay, x6, transpose_a=True, name=b.n("ssd_states")))  # (P x N)^T
    if c.passing is Passing.SEQUENTIAL:  # h_c = decay_c h_{c-1} + state_c, chunk by chunk
        last = keep(g.move(da, name=b.n("ssd_chunk_decay"), shape=(*lead, per, 1, 1),
                           read_fraction=1 / q))  # each chunk's total decay
        start = keep(g.elementwise(states, last, name=b.n("ssd_passing"), flops_per_element=2))
    else:  # every (source, target) pair of the c + 1 chunk states as one GEMM
        flat = keep(g.move(states, name=b.n("ssd_states_cat"),
                           shape=(batch, grp, per, nc + 1, n * p)))
        sums = keep(g.move(da, name=b.n("ssd_chunk_sums"),
                           shape=(batch, grp, per, nc + 1, nc + 1), read_fraction=1 / q))
        pairs = keep(g.elementwise(sums, name=b.n("ssd_chunk_decay"), flops_per_element=2))
        passed = keep(g.gemm(pairs, flat, name=b.n("ssd_passing")))
        start = keep(g.move(passed, name=b.n("ssd_start"), shape=(*lead, per, n, p),
                            read_fraction=nc / (nc + 1)))
    y_off = keep(g.gemm(ch, start, name=b.n("ssd_off")))
    d_skip = b.weight("D", (grp, per, 1, 1))
    y = keep(g.elementwise(y_diag, y_off, da_l, x6, d_skip, name=b.n("ssd_out"),
                           flops_per_element=4))  # y_off * decay + y_diag + D x
    out = v(y, (batch, seq, hd * p), "ssd_y")
    if c.fused:
        names = _kernel(g, ops.tensors)
        b.fusions.append((names, ssd_tile_bytes(q, p, n, x.bytes_per_value)))
    return out


def _sequential(b: Builder, s: Mamba2, x: Tensor, bm: Tensor, cm: Tensor, dt: Tensor,
                batch: sp.Expr, seq: sp.Expr, a: Tensor | None = None) -> Tensor:
    """The recurrence token by token: the state of every position is computed (on chip
    when fused) and contracted with that position's C."""
    g, c = b.g, s.choices
    hd, p, n, grp = s.heads, s.head_dim, s.state, s.groups
    per = hd / grp
    lead = (batch, seq, grp)
    ops = [g.view(x, (*lead, per, p, 1), name=b.n("scan_x")),
           g.view(bm, (*lead, 1, 1, n), name=b.n("scan_B")),
           g.view(cm, (*lead, 1, n, 1), name=b.n("scan_C")),
           g.view(dt, (*lead, per, 1, 1), name=b.n("scan_dt"))]
    xv, bv, cv, dv = ops
    state = g.elementwise(xv, bv, dv, *(() if a is None else (a,)), name=b.n("scan_update"),
                          shape=(*lead, per, p, n),
                          flops_per_element=3)  # exp(dt A) h + (dt x) B
    ch = g.move(cv, name=b.n("scan_C_heads"), shape=(*lead, per, n, 1))
    hc = g.gemm(state, ch, name=b.n("scan_out"))
    y = g.elementwise(hc, xv, b.weight("D", (grp, per, 1, 1)), name=b.n("scan_skip"),
                      flops_per_element=2)
    out = g.view(y, (batch, seq, hd * p), name=b.n("scan_y"))
    if c.fused:
        ops += [state, ch, hc, y, out]
        names = _kernel(g, ops)
        b.fusions.append((names, 4 * p * n))
    return out


def _step(b: Builder, s: Mamba2, x: Tensor, bm: Tensor, cm: Tensor, dt: Tensor,
          batch: sp.Expr, a: Tensor | None = None) -> Tensor:
    """One decode step: the state (batch, heads, P, N) is read, updated and written back."""
    g, c = b.g, s.choices
    hd, p, n, grp = s.heads, s.head_dim, s.state, s.groups
    per = hd / grp
    sb = _state_bytes(b, s.state_bytes)
    shape = (batch, grp, per, p, n)
    old = g.kv_cache(b.n("ssm_state"), shape, bytes_per_value=sb)
    ops = [g.view(x, (batch, grp, per, p, 1), name=b.n("step_x")),
           g.view(bm, (batch, grp, 1, 1, n), name=b.n("step_B")),
           g.view(cm, (batch, grp, 1, n, 1), name=b.n("step_C")),
           g.view(dt, (batch, grp, per, 1, 1), name=b.n("step_dt"))]
    xv, bv, cv, dv = ops
    new = g.elementwise(old, xv, bv, dv, *(() if a is None else (a,)),
                        name=b.n("step_update"), flops_per_element=3)
    ch = g.move(cv, name=b.n("step_C_heads"), shape=(batch, grp, per, n, 1))
    hc = g.gemm(new, ch, name=b.n("step_out"))
    y = g.elementwise(hc, xv, b.weight("D", (grp, per, 1, 1)), name=b.n("step_skip"),
                      flops_per_element=2)
    out = g.view(y, (batch, 1, hd * p), name=b.n("step_y"))
    ops += [new, ch, hc, y, out]
    if c.state_write:
        _write_state(b, new, shape, sb, ops)
    if c.fused:
        names = _kernel(g, ops)
        b.fusions.append((names, 4 * p * n))
    return out


def ssm_splits(m: object, tp: int) -> bool:
    """Whether ``tp`` devices split a model's recurrent layers evenly: Mamba-2 heads and
    groups, Mamba-1 channels, gated DeltaNet key (and value) heads, lightning heads (True
    for a model without them)."""
    if not isinstance(m, HybridShape):
        return True
    m1, dn, lt = m.mamba1, m.deltanet, m.lightning
    widths = ([m1.inner] if m1 is not None else []) + \
        ([dn.key_heads, dn.value_heads] if dn is not None else []) + \
        ([lt.heads] if lt is not None else [])
    if any(w.is_number and int(w) % tp for w in widths):
        return False
    s = m.ssm
    if s is None:
        return True
    return all(not v.is_number or int(v) % tp == 0 for v in (s.heads, s.groups))


def deltanet_mixer(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr,
                   decode: bool) -> Tensor:
    """A gated DeltaNet mixer (Qwen3-Next): projections of q, k (H_k d_k), v, z (H_v d_v)
    and the gates b, a (H_v); a causal conv over q, k, v and SiLU; the decay
    g = -exp(A) softplus(a + dt_bias) and beta = sigmoid(b); the gated delta rule over a
    state of d_k x d_v per value head, S = exp(g) S + beta k (v - exp(g) S^T k)^T,
    o = S^T q (decode: one step; prefill: chunks of Q in the WY form, see
    :func:`deltanet_flops_per_token`); a gated RMSNorm over each head's d_v with z; the
    out-projection H_v d_v -> D.

    Kimi Delta Attention (``decay="channel"``): no z and a projections; the decay is
    g = -exp(A) softplus(f + dt_bias) per key channel, f from the low-rank path
    D -> r -> H_v d_k (``decay_rank``); the output gate comes through D -> r' -> H_v d_v
    (``out_gate_rank``) with a sigmoid (``out_gate``); the state is decayed per row."""
    if not (isinstance(b.m, HybridShape) and isinstance(b.m.deltanet, GatedDeltaNet)):
        raise SymroofError(f"model {b.m.name!r} deltanet: a deltanet layer group needs the "
                           "model's gated DeltaNet widths (symroof.models.GatedDeltaNet)")
    s = b.m.deltanet
    g, m = b.g, b.m
    hk, dk, hv, dv = s.key_heads, s.key_dim, s.value_heads, s.value_dim
    q = b.linear(h, "W_q", m.d_model, hk * dk, "q_proj", False)
    k = b.linear(h, "W_k", m.d_model, hk * dk, "k_proj", False)
    v = b.linear(h, "W_v", m.d_model, hv * dv, "v_proj", False)
    if s.out_gate_rank is None:
        z = b.linear(h, "W_z", m.d_model, hv * dv, "z_proj", False)
    else:  # Kimi: g_a_proj, g_b_proj
        z = b.linear(b.linear(h, "W_ga", m.d_model, s.out_gate_rank, "g_a_proj", False),
                     "W_gb", s.out_gate_rank, hv * dv, "g_b_proj", False)
    beta = b.linear(h, "W_b", m.d_model, hv, "b_proj", False)
    channel = s.decay == "channel"
    if channel:  # Kimi: f_a_proj, f_b_proj (a decay per key channel of each value head)
        assert s.decay_rank is not None  # GatedDeltaNet checks it
        a = b.linear(b.linear(h, "W_fa", m.d_model, s.decay_rank, "f_a_proj", False),
                     "W_fb", s.decay_rank, hv * dk, "f_b_proj", False)
    else:
        a = b.linear(h, "W_a", m.d_model, hv, "a_proj", False)
    q = _conv(b, s, q, "q", hk * dk, batch, seq, decode)
    k = _conv(b, s, k, "k", hk * dk, batch, seq, decode)
    v = _conv(b, s, v, "v", hv * dv, batch, seq, decode)
    if channel:  # per head: A; per key channel: dt_bias
        a = g.view(a, (batch, seq, hv, dk), name=b.n("decay_heads"))
        gate = g.elementwise(a, b.weight("dt_bias", (hv, dk)), b.weight("A_log", (hv, 1)),
                             name=b.n("decay"), flops_per_element=4)
    else:
        gate = g.elementwise(a, b.weight("dt_bias", (hv,)), b.weight("A_log", (hv,)),
                             name=b.n("decay"), flops_per_element=4)
    beta = g.elementwise(beta, name=b.n("beta"), flops_per_element=2)
    step = _delta_step if decode else _delta_chunked
    y = step(b, s, q, k, v, gate, beta, batch, seq)
    y = g.view(y, (batch, seq, hv, dv), name=b.n("delta_heads"))
    y = g.elementwise(y, g.view(z, (batch, seq, hv, dv), name=b.n("z_heads")),
                      b.weight("delta_norm.weight", (dv,)), name=b.n("gated_norm"),
                      flops_per_element=(b.fl.silu if s.out_gate == "silu" else b.fl.silu - 1)
                      + b.fl.gate + b.fl.rmsnorm)  # a sigmoid: SiLU less its product
    y = g.view(y, (batch, seq, hv * dv), name=b.n("delta_merge"))
    return b.linear(y, "W_out", hv * dv, m.d_model, "out_proj", False)


def deltanet_flops_per_token(hv: sp.Expr, dk: sp.Expr, dv: sp.Expr, q: sp.Expr) -> sp.Expr:
    """Contraction FLOPs of the chunked gated delta rule per token (2 per multiply-add),
    per value head, with causal kernels doing half of each chunk's Q x Q pairs: the
    scores k_beta k^T and q k^T (Q d_k each), the triangular solves for the corrected
    values and keys (Q d_v + Q d_k), the intra-chunk output (Q d_v), and the state read
    twice and updated once (6 d_k d_v)."""
    return sp.expand(hv * (3 * q * dk + 2 * q * dv + 6 * dk * dv))


def _delta_chunked(b: Builder, s: GatedDeltaNet, q: Tensor, k: Tensor, v: Tensor, gate: Tensor,
                   beta: Tensor, batch: sp.Expr, seq: sp.Expr) -> Tensor:
    """The chunked (WY) gated delta rule. The loop over chunks is a recurrence; as a graph
    each chunk's state is contracted at its size (the update k^T v_new, the reads w S and
    q S) and passed on elementwise, which counts every FLOP and byte of the loop."""
    g, c = b.g, s.choices
    qc = s.chunk if c.chunk is None else c.chunk
    if qc == 1:
        raise SymroofError("deltanet chunk_size 1: expected at least 2 (or the recurrent form)")
    nc = chunk_count(seq, qc)
    hk, dk, hv, dv = s.key_heads, s.key_dim, s.value_heads, s.value_dim
    per = hv / hk
    lead = (batch, nc, hk)
    frac = causal_fraction(c.causal, qc)
    ops = _ChunkOps(b)
    keep, v_ = ops.keep, ops.view

    channel = s.decay == "channel"  # Kimi: the decay per key channel (width gw)
    gw = dk if channel else sp.Integer(1)
    q6 = v_(q, (*lead, 1, qc, dk), "delta_q")
    k6 = v_(k, (*lead, 1, qc, dk), "delta_k")
    v6 = v_(v, (*lead, per, qc, dv), "delta_v")
    gd = v_(gate, (*lead, per, qc, gw), "delta_g")
    bt = v_(beta, (*lead, per, qc, 1), "delta_beta")
    cum = keep(g.elementwise(gd, name=b.n("delta_cumsum"), flops_per_element=2))
    kh = keep(g.move(k6, name=b.n("delta_k_heads"), shape=(*lead, per, qc, dk)))
    qh = keep(g.move(q6, name=b.n("delta_q_heads"), shape=(*lead, per, qc, dk)))
    kb = keep(g.elementwise(kh, bt, name=b.n("delta_k_beta"), flops_per_element=1))
    vb = keep(g.elementwise(v6, bt, name=b.n("delta_v_beta"), flops_per_element=1))
    if channel:
        # a decay per channel does not factor out of a pair's dot product: the kernels
        # (FLA's chunk_kda) scale q, k_beta by exp(G_i) and k by exp(-G_j) per channel
        # before the same two score GEMMs, then mask
        kq, kk = (keep(g.elementwise(t, cum, name=b.n(f"delta_{n}_scaled"),
                                     flops_per_element=2)) for t, n in ((kb, "kb"), (kh, "k")))
        qq = keep(g.elementwise(qh, cum, name=b.n("delta_q_scaled"), flops_per_element=2))
    else:
        kq, kk, qq = kb, kh, qh
    # the scores per value head (k_beta carries beta; q and k repeated to the value heads,
    # as Qwen3-Next does before its kernels)
    a_sys = keep(g.gemm(kq, kk, transpose_b=True, work_fraction=frac, name=b.n("delta_kk")))
    qk = keep(g.gemm(qq, kk, transpose_b=True, work_fraction=frac, name=b.n("delta_qk")))
    if channel:  # the decays are in the scores already: the masks only
        t_sys = keep(g.elementwise(a_sys, name=b.n("delta_T"), flops_per_element=1))
        attn = keep(g.elementwise(qk, name=b.n("delta_attn"), flops_per_element=1))
    else:
        cum_s = keep(g.move(cum, name=b.n("delta_decay_s"), shape=(*lead, per, 1, qc)))
        t_sys = keep(g.elementwise(a_sys, cum, cum_s, name=b.n("delta_T"),
                                   flops_per_element=3))
        attn = keep(g.elementwise(qk, cum, cum_s, name=b.n("delta_attn"),
                                  shape=(*lead, per, qc, qc), flops_per_element=3))
    # (I + T)^-1 applied to v_beta and to the decayed k_beta: forward substitutions over
    # the strictly lower T, Q(Q-1)/2 multiply-adds per column ("exact"), Q^2/2 ("half"),
    # a dense Q x Q product ("none"); transformers' torch path calls
    # torch.linalg.solve_triangular, which PyTorch's FLOP counter does not count
    half = {Causal.NONE: sp.Integer(1), Causal.HALF: sp.Rational(1, 2)}.get(
        c.causal, (qc - 1) / (2 * qc))
    u = keep(g.gemm(t_sys, vb, work_fraction=half, name=b.n("delta_solve_v")))
    kbd = keep(g.elementwise(kb, cum, name=b.n("delta_k_decay"), flops_per_element=2))
    w = keep(g.gemm(t_sys, kbd, work_fraction=half, name=b.n("delta_solve_k")))
    # the chunk loop: the state each chunk starts from, read by w and q, updated by k^T v
    kd = keep(g.elementwise(kh, cum, name=b.n("delta_k_end"), flops_per_element=2))
    upd = keep(g.gemm(kd, u, transpose_a=True, name=b.n("delta_update")))  # (d_k x d_v)
    last = keep(g.move(cum, name=b.n("delta_chunk_decay"), shape=(*lead, per, gw, 1),
                       read_fraction=1 / qc))
    start = keep(g.elementwise(upd, last, name=b.n("delta_passing"), flops_per_element=2))
    ws = keep(g.gemm(w, start, name=b.n("delta_w_state")))
    v_new = keep(g.elementwise(u, ws, name=b.n("delta_v_new"), flops_per_element=1))
    qd = keep(g.elementwise(qh, cum, name=b.n("delta_q_decay"), flops_per_element=2))
    inter = keep(g.gemm(qd, start, name=b.n("delta_q_state")))
    intra = keep(g.gemm(attn, v_new, work_fraction=frac, name=b.n("delta_intra")))
    o = keep(g.elementwise(inter, intra, name=b.n("delta_out"), flops_per_element=1))
    out = v_(o, (batch, seq, hv * dv), "delta_y")
    if c.fused:
        b.fusions.append((_kernel(g, ops.tensors), None))
    return out


def _delta_step(b: Builder, s: GatedDeltaNet, q: Tensor, k: Tensor, v: Tensor, gate: Tensor,
                beta: Tensor, batch: sp.Expr, seq: sp.Expr) -> Tensor:
    """One decode step: the state (batch, H_v, d_k, d_v) is decayed, read with k,
    corrected with beta (v - S^T k), read with q, and written back."""
    g, c = b.g, s.choices
    hk, dk, hv, dv = s.key_heads, s.key_dim, s.value_heads, s.value_dim
    per = hv / hk
    sb = _state_bytes(b, s.state_bytes)
    shape = (batch, hk, per, dk, dv)
    old = g.kv_cache(b.n("ssm_state"), shape, bytes_per_value=sb)
    ops = [g.view(q, (batch, hk, 1, 1, dk), name=b.n("step_q")),
           g.view(k, (batch, hk, 1, 1, dk), name=b.n("step_k")),
           g.view(v, (batch, hk, per, 1, dv), name=b.n("step_v")),
           g.view(gate, (batch, hk, per, dk if s.decay == "channel" else 1, 1),
                  name=b.n("step_g")),  # Kimi: a decay per row (key channel) of the state
           g.view(beta, (batch, hk, per, 1, 1), name=b.n("step_beta"))]
    qv, kv, vv, gv, bv = ops
    kh = g.move(kv, name=b.n("step_k_heads"), shape=(batch, hk, per, 1, dk))
    qh = g.move(qv, name=b.n("step_q_heads"), shape=(batch, hk, per, 1, dk))
    decayed = g.elementwise(old, gv, name=b.n("step_decay"), flops_per_element=1)
    mem = g.gemm(kh, decayed, name=b.n("step_read_k"))            # k^T S: 2 d_k d_v
    delta = g.elementwise(vv, mem, bv, name=b.n("step_delta"), flops_per_element=2)
    outer = g.gemm(kh, delta, transpose_a=True, name=b.n("step_outer"))  # k delta^T
    new = g.elementwise(decayed, outer, name=b.n("step_update"), flops_per_element=1)
    o = g.gemm(qh, new, name=b.n("step_read_q"))                  # q^T S: 2 d_k d_v
    out = g.view(o, (batch, 1, hv * dv), name=b.n("step_y"))
    ops += [kh, qh, decayed, mem, delta, outer, new, o, out]
    if c.state_write:
        _write_state(b, new, shape, sb, ops)
    if c.fused:
        b.fusions.append((_kernel(g, ops), None))
    return out


def lightning_mixer(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr,
                    decode: bool) -> Tensor:
    """Lightning attention (MiniMax-Text-01's linear attention): q, k, v = SiLU of a
    projection D -> H d each; a state of d x d per head, decayed by a fixed rate per head
    (no parameters: a buffer of slopes); prefill in blocks of Q positions: within a block
    the scores q k^T times the decays, then by v (Q x Q pairs per head, the causal
    convention), across blocks q times the state carried in and the state updated by
    k^T v (d x d); decode one step: S = r S + k^T v, o = q S; an RMSNorm over the H d
    outputs, times sigmoid of a gate projection D -> H d; the out-projection H d -> D."""
    if not (isinstance(b.m, HybridShape) and isinstance(b.m.lightning, LightningAttention)):
        raise SymroofError(f"model {b.m.name!r} lightning: a lightning layer group needs the "
                           "model's lightning attention widths "
                           "(symroof.models.LightningAttention)")
    s = b.m.lightning
    g, m = b.g, b.m
    hd, d = s.heads, s.head_dim
    qkv = []
    for part in "qkv":
        t = b.linear(h, f"W_{part}", m.d_model, hd * d, f"{part}_proj", False)
        qkv.append(g.elementwise(t, name=b.n(f"{part}_act"), flops_per_element=b.fl.silu))
    q, k, v = qkv
    step = _lightning_step if decode else _lightning_blocks
    y = step(b, s, q, k, v, batch, seq)
    y = b.rms(y, "lightning_norm", hd * d)
    gate = b.linear(h, "W_out_gate", m.d_model, hd * d, "out_gate_proj", False)
    y = g.elementwise(y, gate, name=b.n("out_gate"), flops_per_element=b.fl.gate + 4)
    return b.linear(y, "W_out", hd * d, m.d_model, "out_proj", False)


def _lightning_blocks(b: Builder, s: LightningAttention, q: Tensor, k: Tensor, v: Tensor,
                      batch: sp.Expr, seq: sp.Expr) -> Tensor:
    """The blocked prefill (a last partial block padded whole, as :func:`chunk_count`):
    the intra-block scores and output at the causal convention, the inter-block read of
    the carried state and its update, every block at its size."""
    g, c = b.g, s.choices
    qc = s.chunk if c.chunk is None else c.chunk
    nc = chunk_count(seq, qc)
    hd, d = s.heads, s.head_dim
    lead = (batch, nc, hd)
    frac = causal_fraction(c.causal, qc)
    ops = _ChunkOps(b)
    keep, v_ = ops.keep, ops.view

    q5, k5, v5 = (v_(t, (*lead, qc, d), f"light_{p}") for t, p in ((q, "q"), (k, "k"),
                                                                    (v, "v")))
    scores = keep(g.gemm(q5, k5, transpose_b=True, work_fraction=frac,
                         name=b.n("light_qk")))
    scores = keep(g.elementwise(scores, name=b.n("light_decay"), flops_per_element=1))
    intra = keep(g.gemm(scores, v5, work_fraction=frac, name=b.n("light_intra")))
    kd = keep(g.elementwise(k5, name=b.n("light_k_decay"), flops_per_element=1))
    upd = keep(g.gemm(kd, v5, transpose_a=True, name=b.n("light_update")))  # (d x d)
    start = keep(g.elementwise(upd, name=b.n("light_passing"), flops_per_element=2))
    qd = keep(g.elementwise(q5, name=b.n("light_q_decay"), flops_per_element=1))
    inter = keep(g.gemm(qd, start, name=b.n("light_inter")))
    o = keep(g.elementwise(inter, intra, name=b.n("light_out"), flops_per_element=1))
    out = v_(o, (batch, seq, hd * d), "light_y")
    if c.fused:
        b.fusions.append((_kernel(g, ops.tensors), None))
    return out


def _lightning_step(b: Builder, s: LightningAttention, q: Tensor, k: Tensor, v: Tensor,
                    batch: sp.Expr, seq: sp.Expr) -> Tensor:
    """One decode step over the (batch, H, d, d) state: decayed, plus k^T v, read by q,
    written back."""
    g, c = b.g, s.choices
    hd, d = s.heads, s.head_dim
    sb = _state_bytes(b, s.state_bytes)
    shape = (batch, hd, d, d)
    old = g.kv_cache(b.n("ssm_state"), shape, bytes_per_value=sb)
    qv = g.view(q, (batch, hd, 1, d), name=b.n("step_q"))
    kv = g.view(k, (batch, hd, 1, d), name=b.n("step_k"))
    vv = g.view(v, (batch, hd, 1, d), name=b.n("step_v"))
    decayed = g.elementwise(old, name=b.n("step_decay"), flops_per_element=1)
    outer = g.gemm(kv, vv, transpose_a=True, name=b.n("step_outer"))   # k^T v: 2 d^2
    new = g.elementwise(decayed, outer, name=b.n("step_update"), flops_per_element=1)
    o = g.gemm(qv, new, name=b.n("step_read_q"))                       # q S: 2 d^2
    out = g.view(o, (batch, 1, hd * d), name=b.n("step_y"))
    ops = [qv, kv, vv, decayed, outer, new, o, out]
    if c.state_write:
        _write_state(b, new, shape, sb, ops)
    if c.fused:
        b.fusions.append((_kernel(g, ops), None))
    return out


@dataclass(frozen=True)
class _ScanOnly:
    """What the builder reads from a model when it builds the scan alone."""

    name: str
    weight_bytes: sp.Expr
    kv_bytes: sp.Expr


def ssd(seq: object, heads: object, head_dim: object, state: object, chunk: object, *,
        groups: object = 1, batch: object = 1, b: object = _b,
        causal: Causal | str = Causal.HALF, cb: CbPer | str = CbPer.GROUP,
        passing: Passing | str = Passing.SEQUENTIAL, fused: bool = True) -> Analysis:
    """The chunked SSD kernel alone over ``batch x seq`` tokens: it reads x, B, C and dt
    (and the per-head D) and writes y, at ``b`` bytes per value; with the default fused
    kernel nothing else crosses, so its intensity grows with the chunk size. ``causal``,
    ``cb``, ``passing`` and ``fused`` are :class:`ScanChoices`' conventions.

    >>> from symroof.symbols import dim
    >>> Q = dim("Q")
    >>> ssd(dim("S"), dim("H"), dim("P"), dim("N"), Q).flops
    4*H*N*P*S + H*P*Q*S + N*Q*S
    """
    choices = ScanChoices(causal=causal, cb=cb, passing=passing,  # type: ignore[arg-type]
                          fused=fused)
    bt, sq = as_dim(batch, "ssd batch"), as_dim(seq, "ssd seq")
    hd, p, n, grp, q = (as_dim(v, f"ssd {f}") for v, f in (
        (heads, "heads"), (head_dim, "head_dim"), (state, "state"), (groups, "groups"),
        (chunk, "chunk")))
    if hd.is_number and grp.is_number and hd % grp:
        raise SymroofError(f"ssd groups {grp}: does not divide the {hd} heads")
    w = Mamba2(heads=hd, head_dim=p, state=n, groups=grp, chunk=q, conv_bias=False,
               gated_norm=False, choices=choices)
    bv = as_expr(b, "ssd b")
    g = Graph("ssd")
    bld = Builder(g, cast(Any, _ScanOnly("ssd", bv, bv)), ElementwiseFlops())
    bld.prefix = ""
    inner = w.heads * w.head_dim
    x = g.input("x", (bt, sq, inner), bytes_per_value=bv)
    bm = g.input("B", (bt, sq, w.groups * w.state), bytes_per_value=bv)
    cm = g.input("C", (bt, sq, w.groups * w.state), bytes_per_value=bv)
    dt = g.input("dt", (bt, sq, w.heads), bytes_per_value=bv)
    g.output(_chunked(bld, w, x, bm, cm, dt, bt, sq))
    return analyze(fuse_groups(g, bld.fusions), tokens=bt * sq,
                   ops=op_groups(OpsCounted.CONTRACTIONS))
