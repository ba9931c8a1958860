"""Serving estimates from the graphs: how many sequences fit, time to first token, where
4-bit weights stop paying, and speculative decoding.

Every figure comes from a decode or prefill graph (sharded with ``tp``/``pp``), its
roofline and its per-device memory (:mod:`symroof.device`); nothing here is a closed
form typed in.

- :func:`max_sequences`: sequences of ``context`` tokens whose KV cache fits beside the
  weights on each device: ``floor((capacity (1 - reserve) - weights) / KV per sequence)``,
  the memory package's count (:mod:`symroof.memory.capacity`), re-exported here.
- :func:`time_to_first_token`: the prefill of ``batch`` prompts, as one step.
- :func:`weight_quantization`: decode time with 16-bit weights over 4-bit weights (INT4
  weight-only: 4-bit bytes, 16-bit compute) as a formula in the batch, and the batches
  where each turns compute-bound, past which the 4-bit weights stop helping.
- :func:`speculative`: ``(1 - a^(k+1))/(1 - a)`` tokens per target pass for ``k`` drafted
  tokens accepted with probability ``a`` each, and the speedup once the draft model's own
  ``k`` steps and the target's verification of ``k + 1`` tokens are paid for.

>>> expected_tokens(4, sp.Rational(4, 5))    # (1 - 0.8^5) / 0.2
2101/625
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof import hardware
from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError
from symroof.evaluate import Point, Roofline, roofline
from symroof.hardware import HardwareSpec
from symroof.ir import Kind, as_dim, as_expr
from symroof.memory.capacity import Capacity, kv_cache_per_device, max_sequences
from symroof.models import TransformerModel
from symroof.options import ExpertReads, Logits, OpsCounted
from symroof.precision import Precision
from symroof.symbols import B, b
from symroof.workloads import decode, prefill
from symroof.workloads.attention import op_groups
from symroof.workloads.layers import forward
from symroof.workloads.parallel import check_layout
from symroof.workloads.transformer import serving_pipeline

__all__ = ["Capacity", "max_sequences", "time_to_first_token", "WeightGain",
           "weight_quantization", "expected_tokens", "Speculation", "speculative", "verify_pass",
           "kv_cache_per_device", "ServingRow"]


def _model(model: object, what: str) -> TransformerModel:
    """``model``, checked."""
    if not isinstance(model, TransformerModel):
        raise SymroofError(f"{what}: expected a transformer model, got {type(model).__name__}")
    return model


def _at_b(x: sp.Expr, precision: Precision) -> sp.Expr:
    return x.xreplace({b: precision.bytes})


def time_to_first_token(model: TransformerModel, hw: HardwareSpec | str, *, batch: object,
                        prompt: object, tp: object = 1, pp: object = 1,
                        microbatches: object = 1, precision: Precision | str = Precision.BF16,
                        efficiency: object = 1, link: str | None = None,
                        collective: str = "ring", latency: bool = True) -> Roofline:
    """The prefill of ``batch`` prompts of ``prompt`` tokens, whose ``step_time_s`` is the
    time to the first token (the logits of the last position only); ``collective`` and
    ``latency`` as :func:`symroof.evaluate.roofline` takes them."""
    m = _model(model, "time_to_first_token")
    p = Precision.parse(precision)
    pre = prefill(m, batch, prompt, logits=Logits.LAST, tp=tp, pp=pp,
                  microbatches=microbatches)
    free = pre.flops.free_symbols | pre.bytes.free_symbols
    return roofline(pre, hw, precision=p, efficiency=efficiency, link=link,
                    subs={b: p.bytes} if b in free else None, collective=collective,
                    latency=latency)


@dataclass(frozen=True)
class WeightGain:
    """Decode with ``wide`` weights against ``narrow`` ones (compute at the same peak).

    ``speedup`` is time(wide)/time(narrow) as a formula in B; ``narrow_compute`` and
    ``wide_compute`` are the batches at which each turns compute-bound (None: never, the
    KV cache keeps it memory-bound at this context). From ``wide_compute`` on, both run
    at the compute roof and the narrow weights gain nothing; ``limit`` is the speedup as
    B grows without bound.
    """

    wide: Precision
    narrow: Precision
    speedup: sp.Expr
    at_batch_1: sp.Expr
    narrow_compute: sp.Expr | None
    wide_compute: sp.Expr | None
    limit: sp.Expr


def _decode_terms(m: TransformerModel, context: object, tp: object, hw: HardwareSpec,
                  peak_precision: Precision) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """compute time, memory time and link time of a decode step, as formulas in B."""
    dec = decode(m, B, context, tp=tp)
    r = roofline(dec, hw, precision=peak_precision)
    return r.compute_time_s, r.memory_time_s, r.communication_time_s


def _compute_bound_from(compute: sp.Expr, memory: sp.Expr) -> sp.Expr | None:
    """The batch where F/peak reaches Q/bandwidth (both linear in B), if any: a real
    number (the batch is an integer, the crossing need not be)."""
    x = sp.Dummy("x", positive=True)
    found = [r for r in sp.solve(sp.Eq(compute, memory).xreplace({B: x}), x) if r.is_positive]
    return found[0] if found else None


def weight_quantization(model: TransformerModel, hw: HardwareSpec | str, *, context: object,
                        tp: object = 1, wide: Precision | str = Precision.BF16,
                        narrow: Precision | str = Precision.INT4,
                        kv_cache: Precision | str = Precision.BF16,
                        activations: Precision | str = Precision.BF16) -> WeightGain:
    """Where 4-bit (``narrow``) weights stop helping decode as the batch grows: the
    speedup over ``wide`` weights, with the KV cache, activations and the peak at
    ``kv_cache``/``activations`` (INT4 weight-only dequantizes to 16-bit compute)."""
    wide, narrow = Precision.parse(wide, "wide"), Precision.parse(narrow, "narrow")
    kv = Precision.parse(kv_cache, "kv_cache")
    act = Precision.parse(activations, "activations")
    spec = hardware.resolve(hw)
    spec.peak(act)  # a precision the chip has a peak for
    times = []
    for w in (wide, narrow):
        m = _model(model, "weight_quantization").with_precision(
            weights=w, kv_cache=kv, activations=act)
        times.append(_decode_terms(m, context, tp, spec, act))
    (cw, mw, lw), (cn, mn, ln) = times
    speedup = (sp.Max(cw, mw) + lw) / (sp.Max(cn, mn) + ln)
    limit = sp.limit((mw + lw) / (mn + ln), B, sp.oo) if _compute_bound_from(cw, mw) is None \
        else sp.Integer(1)
    return WeightGain(wide, narrow, speedup, speedup.subs(B, 1),
                      _compute_bound_from(cn, mn), _compute_bound_from(cw, mw), limit)


def expected_tokens(k: object, acceptance: object) -> sp.Expr:
    """Tokens a target pass yields with ``k`` drafted tokens, each accepted with
    probability ``a`` until the first rejection: ``(1 - a^(k+1))/(1 - a)`` (``k + 1`` at
    ``a = 1``; the target's own token included)."""
    kk = as_dim(k, "draft tokens")
    a = as_expr(acceptance, "acceptance")
    if a.is_number and not (0 <= a <= 1):
        raise SymroofError(f"acceptance: expected a probability 0 <= a <= 1, got {a}")
    if a == 1:
        return kk + 1
    return (1 - a ** (kk + 1)) / (1 - a)


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding against plain decoding of the target (times per step, s)."""

    draft_tokens: sp.Expr
    acceptance: sp.Expr
    tokens_per_pass: sp.Expr   # expected tokens per target pass
    target_step_s: sp.Expr     # one plain decode step of the target
    draft_step_s: sp.Expr      # one decode step of the draft model
    verify_s: sp.Expr          # the target's pass over k + 1 tokens per sequence

    @property
    def round_s(self) -> sp.Expr:
        """k draft steps and one verification."""
        return self.draft_tokens * self.draft_step_s + self.verify_s

    @property
    def speedup(self) -> sp.Expr:
        """Tokens per second with speculation over without."""
        return self.tokens_per_pass * self.target_step_s / self.round_s


def verify_pass(m: TransformerModel, batch: object, context: object, k: object,
                tp: object = 1, *, pp: object = 1,
                expert_reads: ExpertReads | str = ExpertReads.EXPECTED) -> Analysis:
    """The target's verification pass of speculative decoding: its weights read once for
    ``k + 1`` new tokens per sequence (the ``k`` drafted and its own), each attending to
    the cache (``context`` positions) and the drafted tokens; one device's share on
    ``tp`` x ``pp`` devices (:func:`speculative` times it; ``symroof plan`` too). A
    mixture of experts reads the experts its ``batch (k + 1)`` tokens route to
    (``expert_reads``, as a decode step of as many tokens)."""
    kk = as_dim(k, "draft tokens")
    t, p, mb = check_layout(m, tp=tp, pp=pp)
    g, fuse = forward(m, batch=batch, seq=kk + 1, context=as_dim(context, "context") + kk,
                      decode=True, expert_reads=expert_reads)
    g = serving_pipeline("verify", fuse, tp=t, pp=p, microbatches=mb).apply(g)
    kinds = {Kind.WEIGHT, Kind.KV_CACHE}
    return analyze(g, ops=op_groups(OpsCounted.CONTRACTIONS), traffic=kinds,
                   tokens=as_dim(batch, "batch") * (kk + 1))


_verify_pass = verify_pass  # the former private name, kept for callers of it


def speculative(target: TransformerModel, draft: TransformerModel, hw: HardwareSpec | str, *,
                batch: object, context: object, draft_tokens: object, acceptance: object,
                tp: object = 1, draft_tp: object = 1,
                precision: Precision | str = Precision.BF16,
                link: str | None = None, collective: str = "ring",
                latency: bool = True,
                expert_reads: ExpertReads | str = ExpertReads.EXPECTED) -> Speculation:
    """Speculative decoding of ``target`` with ``draft`` proposing ``draft_tokens`` per
    round (see the module docstring); every step is a roofline of its graph, its
    collectives run as ``collective`` with (by default) their ``latency``, a mixture of
    experts reading ``expert_reads`` of its experts in every step and the verification."""
    k = as_dim(draft_tokens, "draft tokens")
    per_pass = expected_tokens(k, acceptance)
    tg = _model(target, "speculative target")
    dr = _model(draft, "speculative draft")
    p = Precision.parse(precision)

    def step(a: Analysis) -> sp.Expr:
        free = a.flops.free_symbols | a.bytes.free_symbols
        return roofline(a, hw, precision=p, link=link,
                        subs={b: p.bytes} if b in free else None, collective=collective,
                        latency=latency).time_s

    return Speculation(k, as_expr(acceptance, "acceptance"), per_pass,
                       step(decode(tg, batch, context, tp=tp, expert_reads=expert_reads)),
                       step(decode(dr, batch, context, tp=draft_tp, expert_reads=expert_reads)),
                       step(verify_pass(tg, batch, context, k, tp, expert_reads=expert_reads)))


@dataclass(frozen=True)
class ServingRow:
    """A decode point with what was asked beside it: the time to first token (a prefill's
    roofline) and speculative decoding."""

    point: Point
    ttft: Roofline | None = None
    speculation: Speculation | None = None
