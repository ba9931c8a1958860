"""The crossovers a hybrid (state-space + attention) model raises, solved.

- ``decode_bytes``: the context S at which a decode step of the hybrid moves as many
  bytes as one of the all-attention model of the same width (:func:`all_attention`:
  every Mamba-2 mixer replaced by the model's attention); past it the hybrid moves fewer.
- ``state_vs_kv``: the context at which one sequence's K and V (attention layers)
  weigh as much as its recurrent states (Mamba-2 layers).
- ``decode_intensity``: the decode step's intensity as the batch grows without bound,
  for the hybrid and for the all-attention model; the hybrid's stays finite as the
  context grows where the all-attention one falls as 1/S.
- ``chunk``: the chunk size Q at which the fused chunked scan (:func:`ssd`) reaches the
  ridge R = peak / bandwidth (compute-bound from there on).

Each comes as :func:`symroof.crossover` gives it: every positive solution with the
conditions under which it exists; with a chip, the ridge and ``b`` take its numbers.

>>> import symroof as sr
>>> from symroof.symbols import L, D, H, dim
>>> from symroof.models import hybrid, Mamba2
>>> from symroof.workloads.builder import LayerGroup
>>> A = dim("A")
>>> m = hybrid(layers=L, d_model=D, heads=H, ssm=Mamba2(heads=H, head_dim=2 * D / H,
...            state=dim("N")), groups=(LayerGroup(A), LayerGroup(L - A, mixer="mamba2")))
>>> import sympy
>>> [sympy.factor(x.value) for x in state_vs_kv(m)]   # (L - A) state / (A x 2 D): MHA
[-(A - L)*(D*N + 4*D + 4*N)/(A*D)]
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from symroof import hardware as _hardware
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.models.hybrid import HybridModel
from symroof.options import ExpertReads
from symroof.precision import Precision
from symroof.solve import Crossings, Crossover, crossover, limit
from symroof.symbols import B, S, b, dim
from symroof.workloads.builder import RECURRENT_MIXERS, LayerGroup
from symroof.workloads.recurrent import ssd
from symroof.workloads.transformer import decode

__all__ = ["HybridCrossovers", "NO_ATTENTION", "all_attention", "decode_bytes", "state_vs_kv",
           "decode_intensity", "chunk_crossover", "hybrid_crossovers", "RIDGE", "CHUNK"]

#: The ridge point (FLOPs per byte) of the chunk crossover, and the chunk size it solves for.
RIDGE = dim("R")
CHUNK = dim("Q")


#: Why a model without attention layers has no decode-bytes or state-vs-KV crossover: its
#: config gives no attention widths (a pure state-space LM's attention fields are
#: placeholders), so there is no all-attention model of the same widths and no K and V.
NO_ATTENTION = "no attention layers: no K and V, no attention widths to compare with"


def _hybrid(model: object, what: str, ssm: bool = False) -> HybridModel:
    if not isinstance(model, HybridModel) or (model.ssm is None if ssm else
                                               model.ssm_layers == 0):
        kind = "Mamba-2" if ssm else "recurrent"
        raise SymroofError(f"{what}: expected a hybrid model with {kind} layers "
                           f"(symroof.models.hybrid or a hybrid config.json), got "
                           f"{type(model).__name__}")
    return model


def all_attention(model: HybridModel) -> HybridModel:
    """The same widths with every recurrent mixer (:data:`RECURRENT_MIXERS`) replaced by
    the model's attention (a layer that ran both runs attention alone); MLPs and experts
    unchanged."""
    m = _hybrid(model, "all_attention")
    groups: list[LayerGroup] = []
    for g in m.groups:
        new = replace(g, mixer="attention" if g.mixer in RECURRENT_MIXERS else g.mixer)
        same = next((x for x in groups if x.prefix == new.prefix), None)
        if same is None:
            groups.append(new)
        else:
            groups[groups.index(same)] = replace(same, count=same.count + new.count)
    out = m.replace(name=f"{m.name}-all-attention", groups=tuple(groups))
    assert isinstance(out, HybridModel)  # replace keeps the class
    return out


def decode_bytes(model: HybridModel, *, batch: object = B,
                 expert_reads: ExpertReads | str = ExpertReads.EXPECTED) -> list[Crossover]:
    """Contexts S where a decode step of ``model`` moves as many bytes as one of
    :func:`all_attention` (weights, K and V, states; the seeds' decode traffic); none, with
    the reason, for a model without attention layers. A mixture of experts reads
    ``expert_reads`` of its experts (as :func:`symroof.workloads.decode`)."""
    m = _hybrid(model, "decode_bytes")
    if m.attention_layers == 0:
        return Crossings([], reason=NO_ATTENTION)
    mine = decode(m, batch, context=S, logits="none", expert_reads=expert_reads).bytes
    other = decode(all_attention(m), batch, context=S, logits="none",
                   expert_reads=expert_reads).bytes
    return crossover(mine, other, S)


def state_vs_kv(model: HybridModel) -> list[Crossover]:
    """Contexts S where one sequence's K and V equal its recurrent states (none, with the
    reason, for a model without attention layers)."""
    m = _hybrid(model, "state_vs_kv")
    if m.attention_layers == 0:
        return Crossings([], reason=NO_ATTENTION)
    return crossover(m.attention_kv_bytes(S), m.state_bytes_per_sequence, S)


def decode_intensity(model: HybridModel, *, context: object = S,
                     expert_reads: ExpertReads | str = ExpertReads.EXPECTED
                     ) -> tuple[sp.Expr, sp.Expr]:
    """The decode intensity as the batch B grows without bound, for ``model`` and for
    :func:`all_attention` (FLOPs over bytes per sequence: weights drop out). A mixture of
    experts reads ``expert_reads`` of its experts; where the limit of the expected reads
    is beyond the solver (many experts), ``"all"`` gives the same limit (every expert is
    read as B grows) in closed form."""
    m = _hybrid(model, "decode_intensity")
    mine, other = (limit(decode(x, B, context=context, logits="none",
                                expert_reads=expert_reads).intensity, B)
                   for x in (m, all_attention(m)))
    return mine, other


def chunk_crossover(model: HybridModel, *, ridge: object = RIDGE,
                    bytes_per_value: object | None = None) -> list[Crossover]:
    """Chunk sizes Q at which the fused chunked scan of ``model``'s Mamba-2 layers reaches
    intensity ``ridge`` (one sequence long enough that its traffic per token is fixed)."""
    m = _hybrid(model, "chunk_crossover", ssm=True)
    s = m.ssm
    assert s is not None
    seq = dim("S_scan")
    bv = m.activation_bytes if bytes_per_value is None else bytes_per_value
    c = s.choices
    scan: Analysis = ssd(seq, s.heads, s.head_dim, s.state, CHUNK, groups=s.groups, b=bv,
                         causal=c.causal, cb=c.cb, passing=c.passing, fused=c.fused)
    # per token, as the sequence grows: the kernel's per-head weights drop out
    flops, traffic = limit(scan.flops / seq, seq), limit(scan.bytes / seq, seq)
    return crossover(flops, as_expr(ridge, "chunk_crossover ridge") * traffic, CHUNK)


@dataclass(frozen=True)
class HybridCrossovers:
    """The four crossovers of one hybrid model (see the module docstring), symbolic or at
    a chip's numbers."""

    model: str
    decode_bytes: tuple[Crossover, ...]
    state_vs_kv: tuple[Crossover, ...]
    intensity_limit: sp.Expr
    attention_intensity_limit: sp.Expr
    chunk: tuple[Crossover, ...]


def hybrid_crossovers(model: HybridModel, hardware: HardwareSpec | str | None = None, *,
                      precision: Precision | str = Precision.BF16,
                      batch: object = B,
                      expert_reads: ExpertReads | str = ExpertReads.EXPECTED
                      ) -> HybridCrossovers:
    """Every crossover of ``model``; with ``hardware``, ``b`` is the precision's bytes and
    the chunk crossover uses the chip's ridge at that precision. A mixture of experts
    reads ``expert_reads`` of its experts in each decode step."""
    m = _hybrid(model, "hybrid_crossovers")
    ridge: object = RIDGE
    values: dict[sp.Symbol, object] = {}
    if hardware is not None:
        spec = _hardware.resolve(hardware)
        prec = Precision.parse(precision)
        ridge = spec.ridge(prec.value)
        values = {b: prec.bytes}
    lim, att = decode_intensity(m, expert_reads=expert_reads)

    def at(xs: list[Crossover]) -> tuple[Crossover, ...]:  # (a reason survives as none)
        out = []
        for x in xs:  # a condition that the numbers decide is dropped, or drops the root
            conds = [c.xreplace(values) for c in x.conditions]
            if any(c is sp.false for c in conds):
                continue
            out.append(Crossover(x.var, x.value.xreplace(values),
                                 tuple(c for c in conds if c is not sp.true)))
        return tuple(out)

    return HybridCrossovers(
        m.name, at(decode_bytes(m, batch=batch, expert_reads=expert_reads)), at(state_vs_kv(m)),
        lim.subs(values), att.subs(values),
        at(chunk_crossover(m, ridge=ridge)) if m.ssm is not None else ())
