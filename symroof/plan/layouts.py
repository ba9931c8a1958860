"""The layouts a plan considers, pruned symbolically, and each one's formulas.

A layout is a chip, a tensor x pipeline split of the model over ``tp x pp`` of them
(one replica), number formats per tensor kind, how MoE expert weights are read and
whether speculative decoding runs. Before any graph is built, a layout whose weights
alone do not fit is pruned from the bound ``weights / (tp pp) <= usable`` (sharding can
replicate a weight, never store less than an even share), so it is never evaluated.

Each surviving layout gets its formulas (:class:`Formulas`) from the decode and prefill
graphs, sharded: the decode step time as a formula in the batch ``B`` at the traffic's
context, with the efficiency factors applied (compute time over ``e_c``, memory and link
time over ``e_b``; ``pp`` stages one after another), the time to first token, the mean
prefill time per request, and the memory limit on ``B x S`` (the capacity formula).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.evaluate import Roofline, roofline
from symroof.models import TransformerModel
from symroof.ir import Kind
from symroof.options import ExpertReads, Logits
from symroof.plan.closed import MemoryLimit, memory_limit
from symroof.plan.inputs import (DecodeContext, Draft, Mode, Offer, Service, Traffic,
                                 numerics_name)
from symroof.precision import Numerics
from symroof.serving import (  # the verification pass and the round: one definition each
    Speculation, _verify_pass, expected_tokens)
from symroof.symbols import B, S
from symroof.workloads import decode, prefill
from symroof.workloads.parallel import valid_tp

__all__ = ["Layout", "Formulas", "Pruned", "layouts", "formulas", "step_time"]


@dataclass(frozen=True)
class Layout:
    """One way to serve the model (see the module docstring)."""

    chip: str
    tp: int
    pp: int
    numerics: Numerics
    expert_reads: ExpertReads = ExpertReads.ALL
    speculative: bool = False

    @property
    def devices(self) -> int:
        """Chips of one replica."""
        return self.tp * self.pp

    def __str__(self) -> str:
        parts = [self.chip, f"tp{self.tp}", f"pp{self.pp}", numerics_name(self.numerics)]
        if self.expert_reads != ExpertReads.ALL:
            parts.append(f"experts={self.expert_reads}")
        if self.speculative:
            parts.append("speculative")
        return " ".join(parts)


@dataclass(frozen=True)
class Pruned:
    """A layout never evaluated, and why."""

    layout: Layout
    reason: str


@dataclass(frozen=True)
class Formulas:
    """A layout's formulas (see the module docstring); times in seconds, bytes per
    device. ``step`` is the decode time per token of a sequence in ``B`` at ``context``
    (with speculative decoding: a round over the tokens it yields)."""

    layout: Layout
    context: int                 # the cache a decode step reads (positions)
    step: sp.Expr                # decode time per token, in B (context substituted)
    step_bs: sp.Expr             # the same in B and S
    ttft: sp.Expr                # the longest prompt's prefill
    prefill_s: sp.Expr           # prefill time per request, averaged over the traffic
    memory: MemoryLimit
    mean_output: float           # output tokens per request, averaged over the traffic
    tokens_per_round: sp.Expr = sp.Integer(1)   # speculative: expected tokens per target pass
    chunked: bool = False        # the step carries its share of the prefills (Mode.CHUNKED)


def step_time(r: Roofline, service: Service) -> sp.Expr:
    """A step's time from its roofline: ``pp (max(F/(peak e_c), Q/(bw e_b)) +
    link/e_b)`` (memory and compute overlap; the link does not; stages in turn)."""
    ec, eb = _efficiencies(service)
    one = sp.Max(r.compute_time_s / ec, r.memory_time_s / eb) + r.communication_time_s / eb
    return one * (r.microbatches + r.pp - 1)


def _efficiencies(service: Service) -> tuple[sp.Rational, sp.Rational]:
    """The achieved fractions (compute, bandwidth), exact."""
    return (sp.Rational(str(service.compute_efficiency)),
            sp.Rational(str(service.bandwidth_efficiency)))


def _reserve(service: Service) -> sp.Rational:
    """The share of memory kept back, exact."""
    return sp.Rational(str(service.reserve))


def _in(model: TransformerModel, n: Numerics) -> TransformerModel:
    """``model`` with the number formats of ``n``."""
    return model.with_precision(weights=n.weights, kv_cache=n.kv_cache, activations=n.activations)


def _traffic_mean(x: sp.Expr, traffic: Traffic) -> sp.Expr:
    """``x`` (in ``S``) averaged over the traffic's prompts."""
    return sp.Add(*(sp.Rational(w.numerator, w.denominator) * x.xreplace({S: p})
                    for p, _, w in traffic.classes))


def layouts(model: TransformerModel, offers: Sequence[Offer], precisions: Sequence[Numerics], *,
            tp: Sequence[int] | None = None, pp: Sequence[int] = (1, 2, 4, 8),
            expert_reads: Sequence[ExpertReads] = (ExpertReads.ALL,), draft: Draft | None = None,
            service: Service = Service()) -> tuple[list[Layout], list[Pruned]]:
    """Every layout of the space, and those pruned before any graph is built (a chip
    without a peak at the activations' format; weights that cannot fit, see the module
    docstring)."""
    keep, pruned = [], []
    splits = valid_tp(model)
    for offer in offers:
        spec = offer.chip
        cap = spec.capacity()
        assert cap is not None  # an Offer has a capacity
        usable = cap * (1 - _reserve(service))  # as DeviceMemory.usable, before any graph
        for n in precisions:
            weights = _in(model, n).weight_bytes_total
            for t in (tp or splits):
                if t not in splits:
                    raise SymroofError(f"tp {t}: does not split {model.name} ({model.heads} "
                                       f"heads, {model.kv_heads} KV heads); expected one of "
                                       f"{', '.join(map(str, splits))}")
                for p in pp:
                    if p > int(model.layers):
                        continue
                    if t * p > offer.count:
                        continue  # more chips than are on offer
                    for er in (expert_reads if model.experts != 1 else (ExpertReads.ALL,)):
                        for spec_on in ((False, True) if draft is not None and p == 1
                                        and service.mode != Mode.CHUNKED else (False,)):
                            lay = Layout(spec.name, t, p, n, er, spec_on)
                            try:
                                spec.peak(str(n.peak))
                            except SymroofError:
                                pruned.append(Pruned(lay, f"{spec.name} has no {n.peak} peak"))
                                continue
                            if weights / (t * p) > usable:
                                pruned.append(Pruned(lay, f"weights alone need "
                                                     f"{float(weights / (t * p)) / 1e9:.1f} GB "
                                                     f"> {float(usable) / 1e9:.1f} GB per device"))
                                continue
                            keep.append(lay)
    return keep, pruned


def _decode_roofline(m: TransformerModel, lay: Layout, spec: object, batch: object,
                     context: object, service: Service) -> Roofline:
    return roofline(decode(m, batch, context, tp=lay.tp, pp=lay.pp,
                           expert_reads=lay.expert_reads), spec,  # type: ignore[arg-type]
                    precision=lay.numerics.peak, reserve=_reserve(service))


def formulas(model: TransformerModel, lay: Layout, offer: Offer, traffic: Traffic,
             service: Service, draft: Draft | None = None) -> Formulas:
    """The formulas of one layout (see the module docstring)."""
    n = lay.numerics
    m = _in(model, n)
    spec = offer.chip
    context = traffic.final_context if service.decode_context == DecodeContext.FINAL \
        else traffic.mean_context
    r = _decode_roofline(m, lay, spec, B, S, service)
    step_bs = step_time(r, service)
    assert r.memory is not None and r.memory.usable is not None  # an offer has a capacity
    weights, kv = r.memory.weights, r.memory.kv_cache.xreplace({B: 1})
    tokens = sp.Integer(1)
    if lay.speculative:
        assert draft is not None  # a speculative layout comes with a draft
        dm = _in(draft.model, n)
        dtp = lay.tp if lay.tp in valid_tp(dm) else 1
        dr = roofline(decode(dm, B, S, tp=dtp), spec, precision=n.peak)
        k = sp.Integer(draft.tokens)
        vr = roofline(_verify_pass(m, B, S, k, lay.tp), spec, precision=n.peak)
        acc = sp.Rational(str(draft.acceptance))
        run = Speculation(k, acc, expected_tokens(k, acc), step_bs, step_time(dr, service),
                          step_time(vr, service))
        tokens, step_bs = run.tokens_per_pass, run.round_s / run.tokens_per_pass
        assert dr.memory is not None
        weights += dr.memory.weights
        kv += dr.memory.kv_cache.xreplace({B: 1})
    mem = memory_limit(r.memory.usable, weights, kv, S)

    pre = prefill(m, 1, S, logits=Logits.LAST, tp=lay.tp, pp=lay.pp,
                  expert_reads=lay.expert_reads)
    pr = roofline(pre, spec, precision=n.peak, footprint=False)
    pre_s = step_time(pr, service)
    ttft = pre_s.xreplace({S: traffic.longest_prompt})
    mean = _traffic_mean(pre_s, traffic)
    chunked = service.mode == Mode.CHUNKED
    if chunked:
        step_bs = _chunked_step(r, pr, pre.cost.bytes_by_kind.get(Kind.WEIGHT, sp.Integer(0)),
                                traffic, service)
    return Formulas(lay, context, step_bs.xreplace({S: context}), step_bs, ttft, mean, mem,
                    traffic.mean_output, tokens, chunked)


def _chunked_step(r: Roofline, pr: Roofline, pre_weights: sp.Expr, traffic: Traffic,
                  service: Service) -> sp.Expr:
    """A decode step that carries its share of the prefills: ``B/O`` requests' prompts
    per step (each step yields B tokens; a request wants O), as one roofline, so the
    prompts' FLOPs fill the memory-bound step and their weights are the step's own:
    ``pp (max((F_d + (B/O) F_p)/(peak e_c), (Q_d + (B/O) (Q_p - W_p))/(bw e_b)) +
    (link_d + (B/O) link_p)/e_b)``, prompt figures averaged over the traffic."""
    ec, eb = _efficiencies(service)
    share = B / sp.Rational(str(traffic.mean_output))
    flops = r.flops + share * _traffic_mean(pr.flops, traffic)
    moved = r.bytes + share * _traffic_mean(pr.bytes - pre_weights, traffic)
    link = r.communication_time_s + share * _traffic_mean(pr.communication_time_s, traffic)
    return (sp.Max(flops / (r.peak * ec), moved / (r.bandwidth * eb)) + link / eb) * \
        (r.microbatches + r.pp - 1)
