"""The layouts a plan considers, pruned symbolically, and each one's formulas.

A layout is a chip, a tensor x pipeline split of the model over ``tp x pp`` of them
(one replica) with the micro-batches a decode step runs through its stages, number
formats per tensor kind, how MoE expert weights are read and whether speculative
decoding runs. Before any graph is built, a layout whose weights
alone do not fit is pruned from the bound ``weights / (tp pp) <= usable`` (sharding can
replicate a weight, never store less than an even share), so it is never evaluated.

Each surviving layout gets its formulas (:class:`Formulas`) from the decode and prefill
graphs, sharded: the decode step time as a formula in the batch ``B`` at the traffic's
context, with the efficiency factors applied (compute time over ``e_c``, memory and link
time over ``e_b``; ``m`` micro-batches of ``B/m`` sequences through ``pp`` stages take
``m + pp - 1`` stage times, the bubble ``(pp - 1)/(m + pp - 1)``), the time to first
token, the mean prefill time per request, and the memory limit on ``B x S`` (the
capacity formula).

Disaggregated serving (:func:`prefill_layout`) gives the prefill replicas a split of
their own, searched: on the same chip and formats, every ``tp' x pp'`` whose weights and
one longest prompt's KV cache fit (an even share per device) beside one decode replica
on the chips offered; the one chosen meets the TTFT objective with the fewest
chip-seconds per request ``tp' pp' p'`` (none meets it: the least TTFT). Its TTFT is
``p'(P) + KV(P)/(link e_b)``: the prompt's KV cache (all layers, ``KV(P)`` bytes) sent
over one link to a decode replica after the prefill.

Chunked prefill (``Service.chunk_tokens`` C, ``Service.chunk_ttft``): a decode step
carries at most C prompt tokens, so the prompts' share ``B P/O`` tokens per step bounds
the batch, ``B <= C O / P`` (means over the traffic); with ``chunk_ttft=steps`` (the
default) the longest prompt ``P_max``'s chunks ride ``ceil(P_max/C)`` decode steps, each
carrying its chunk: ``TTFT = floor(P_max/C) t_C(B) + t_r(B)``, ``t_x(B)`` a decode step
carrying ``x`` prompt tokens (``x/P`` of a mean prompt's prefill in its roofline) and
``r = P_max mod C`` (no term where it is 0).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import sympy as sp

from symroof.device import choose_link
from symroof.errors import SymroofError
from symroof.evaluate import Roofline, roofline
from symroof.models import TransformerModel
from symroof.ir import Kind
from symroof.options import Bubble, ExpertReads, Logits
from symroof.plan.closed import MemoryLimit, memory_limit
from symroof.plan.inputs import (ChunkTTFT, DecodeContext, Draft, Mode, Offer, Service,
                                 Traffic, numerics_name)
from symroof.precision import Numerics
from symroof.serving import (  # the verification pass and the round: one definition each
    Speculation, expected_tokens, verify_pass)
from symroof.symbols import B, S
from symroof.training.layout import bubble as pipeline_bubble
from symroof.workloads import decode, prefill
from symroof.workloads.parallel import valid_tp

__all__ = ["Layout", "Formulas", "Pruned", "PrefillLayout", "layouts", "formulas",
           "prefill_layout", "kv_link", "step_time", "bubble"]


@dataclass(frozen=True)
class Layout:
    """One way to serve the model (see the module docstring)."""

    chip: str
    tp: int
    pp: int
    numerics: Numerics
    expert_reads: ExpertReads = ExpertReads.ALL
    speculative: bool = False
    microbatches: int = 1      # a decode step's micro-batches through the pp stages

    @property
    def devices(self) -> int:
        """Chips of one replica."""
        return self.tp * self.pp

    def __str__(self) -> str:
        parts = [self.chip, f"tp{self.tp}", f"pp{self.pp}" + (
            f" mb{self.microbatches}" if self.microbatches > 1 else ""),
            numerics_name(self.numerics)]
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


def bubble(pp: int, microbatches: int) -> sp.Expr:
    """The idle share of a pipelined step: ``(pp - 1)/(m + pp - 1)``, the pipeline bubble
    of the whole step (:func:`symroof.training.layout.bubble`, ``of="total"``).

    >>> bubble(4, 1), bubble(4, 4)
    (3/4, 3/7)
    """
    return pipeline_bubble(pp, microbatches, Bubble.TOTAL)


@dataclass(frozen=True)
class PrefillLayout:
    """Disaggregated serving: the prefill replicas' split (see the module docstring),
    with its prefill time and the KV transfer, formulas in the prompt length ``S``."""

    tp: int
    pp: int
    prefill: sp.Expr             # one prompt's prefill (s)
    transfer: sp.Expr            # its KV cache over the link (s)
    kv_bytes: sp.Expr            # the KV cache sent (bytes, all layers)
    link_bandwidth: sp.Rational  # bytes/s, before the bandwidth efficiency
    link: str                    # where that figure comes from
    candidates: int              # splits that fit and were compared

    @property
    def devices(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True)
class Formulas:
    """A layout's formulas (see the module docstring); times in seconds, bytes per
    device. ``step`` is the decode time per token of a sequence in ``B`` at ``context``
    (with speculative decoding: a round over the tokens it yields)."""

    layout: Layout
    context: int                 # the cache a decode step reads (positions)
    step_bs: sp.Expr             # decode time per token, in B and S
    ttft: sp.Expr                # the longest prompt's prefill
    prefill_s: sp.Expr           # prefill time per request, averaged over the traffic
    memory: MemoryLimit
    mean_output: float           # output tokens per request, averaged over the traffic
    tokens_per_round: sp.Expr = sp.Integer(1)   # speculative: expected tokens per target pass
    chunked: bool = False        # the step carries its share of the prefills (Mode.CHUNKED)
    ttft_steps: int = 0          # chunked: decode steps the longest prompt's chunks ride
    first_bs: sp.Expr | None = None          # chunked: the TTFT in B and S
    chunk_batch: int | None = None           # chunked: B <= C O / P (the chunk budget)
    prefill_layout: PrefillLayout | None = None   # disaggregated: the prefill replicas'

    @property
    def step(self) -> sp.Expr:
        """Decode time per token in ``B``: :attr:`step_bs` at :attr:`context`."""
        return self.step_bs.xreplace({S: self.context})

    @property
    def first(self) -> sp.Expr | None:
        """Chunked: the TTFT in ``B``, :attr:`first_bs` at :attr:`context`."""
        return None if self.first_bs is None else self.first_bs.xreplace({S: self.context})


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
            service: Service = Service(), microbatches: Sequence[int] | None = None
            ) -> tuple[list[Layout], list[Pruned]]:
    """Every layout of the space, and those pruned before any graph is built (a chip
    without a peak at the activations' format; weights that cannot fit, see the module
    docstring). ``microbatches``: the micro-batch counts tried with ``pp > 1`` (None:
    1 and pp); speculative decoding runs with one micro-batch."""
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
                    mbs = (1,) if p == 1 else tuple(dict.fromkeys(microbatches or (1, p)))
                    for er, mb, spec_on in itertools.product(
                            expert_reads if model.experts != 1 else (ExpertReads.ALL,), mbs,
                            (False, True) if draft is not None and service.mode != Mode.CHUNKED
                            else (False,)):
                        if spec_on and mb != 1:
                            continue  # speculative decoding: one micro-batch
                        lay = Layout(spec.name, t, p, n, er, spec_on, mb)
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
                           microbatches=lay.microbatches,
                           expert_reads=lay.expert_reads), spec,  # type: ignore[arg-type]
                    precision=lay.numerics.peak, reserve=_reserve(service))


def _prefill_time(m: TransformerModel, tp: int, pp: int, lay: Layout, offer: Offer,
                  service: Service) -> tuple[sp.Expr, Roofline, sp.Expr]:
    """One prompt of ``S`` tokens prefilled on ``tp x pp`` devices: its time, roofline and
    weight bytes (per device)."""
    pre = prefill(m, 1, S, logits=Logits.LAST, tp=tp, pp=pp, expert_reads=lay.expert_reads)
    pr = roofline(pre, offer.chip, precision=lay.numerics.peak, footprint=False)
    return step_time(pr, service), pr, pre.cost.bytes_by_kind.get(Kind.WEIGHT, sp.Integer(0))


def kv_link(offer: Offer, service: Service) -> tuple[sp.Rational, str]:
    """The KV transfer's link bandwidth (bytes/s) and where it comes from (see
    :class:`~symroof.plan.inputs.Service`)."""
    if service.kv_link_bandwidth is not None:
        return sp.Rational(str(service.kv_link_bandwidth)), "service kv_link_bandwidth"
    if not offer.chip.interconnects:
        raise SymroofError(f"service kv_link_bandwidth: {offer.chip.name} lists no interconnect "
                           "to send the prompt's KV cache over; give the link's bandwidth "
                           "(--kv-link-bandwidth)")
    link = choose_link(offer.chip, why="disaggregated KV transfer")
    return link.per_direction, f"{offer.chip.name} {link.name}, one direction"


def prefill_layout(model: TransformerModel, lay: Layout, offer: Offer, traffic: Traffic,
                   service: Service, *, pp: Sequence[int] = (1, 2, 4, 8),
                   ttft_s: float | None = None,
                   cache: dict[tuple[object, ...], sp.Expr] | None = None
                   ) -> PrefillLayout | None:
    """Disaggregated serving: the prefill replicas' split for decode layout ``lay`` (see
    the module docstring), or None where none fits beside a decode replica."""
    m = _in(model, lay.numerics)
    cap = offer.chip.capacity()
    assert cap is not None  # an Offer has a capacity
    usable = cap * (1 - _reserve(service))
    longest = traffic.longest_prompt
    kv_bytes = m.kv_cache_bytes(S)
    bw, where = kv_link(offer, service)
    transfer = kv_bytes / (bw * _efficiencies(service)[1])
    cache = {} if cache is None else cache
    rows = []
    for t in valid_tp(m):
        for p in pp:
            if p > int(m.layers) or t * p + lay.devices > offer.count:
                continue
            if (m.weight_bytes_total + kv_bytes.xreplace({S: longest})) / (t * p) > usable:
                continue  # weights and the prompt's cache, an even share, do not fit
            key = (offer.chip.name, lay.numerics, lay.expert_reads, t, p, service)
            if key not in cache:
                cache[key] = _prefill_time(m, t, p, lay, offer, service)[0]
            pre = cache[key]
            ttft = float((pre + transfer).xreplace({S: longest}))
            per_request = t * p * float(_traffic_mean(pre, traffic))
            rows.append((ttft_s is not None and ttft > ttft_s * (1 + 1e-12), per_request,
                         ttft, t, p, pre))
    if not rows:
        return None
    _, _, _, t, p, pre = min(rows, key=lambda r: (r[0], r[2]) if r[0] else r[:3])
    return PrefillLayout(t, p, pre, transfer, kv_bytes, bw, where, len(rows))


def formulas(model: TransformerModel, lay: Layout, offer: Offer, traffic: Traffic,
             service: Service, draft: Draft | None = None,
             prefill_on: PrefillLayout | None = None) -> Formulas:
    """The formulas of one layout (see the module docstring); ``prefill_on``: the
    prefill replicas' split where serving is disaggregated (:func:`prefill_layout`)."""
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
        vr = roofline(verify_pass(m, B, S, k, lay.tp, pp=lay.pp), spec, precision=n.peak)
        acc = sp.Rational(str(draft.acceptance))
        run = Speculation(k, acc, expected_tokens(k, acc), step_bs, step_time(dr, service),
                          step_time(vr, service))
        tokens, step_bs = run.tokens_per_pass, run.round_s / run.tokens_per_pass
        assert dr.memory is not None  # the draft sits beside each device's stage
        weights += dr.memory.weights
        kv += dr.memory.kv_cache.xreplace({B: 1})
    mem = memory_limit(r.memory.usable, weights, kv, S)

    if prefill_on is not None:  # disaggregated: the prefill replicas' own split
        ttft = (prefill_on.prefill + prefill_on.transfer).xreplace({S: traffic.longest_prompt})
        return Formulas(lay, context, step_bs, ttft,
                        _traffic_mean(prefill_on.prefill, traffic), mem, traffic.mean_output,
                        tokens, prefill_layout=prefill_on)
    pre_s, pr, pre_weights = _prefill_time(m, lay.tp, lay.pp, lay, offer, service)
    ttft = pre_s.xreplace({S: traffic.longest_prompt})
    mean = _traffic_mean(pre_s, traffic)
    if service.mode != Mode.CHUNKED:
        return Formulas(lay, context, step_bs, ttft, mean, mem, traffic.mean_output, tokens)
    step_bs = _chunked_step(r, pr, pre_weights, traffic, service,
                            B / sp.Rational(str(traffic.mean_output)))
    c = service.chunk_tokens
    budget = math.floor(c * traffic.mean_output / traffic.mean_prompt * (1 + 1e-12))
    if service.chunk_ttft != ChunkTTFT.STEPS:
        return Formulas(lay, context, step_bs, ttft, mean, mem, traffic.mean_output, tokens,
                        True, chunk_batch=budget)
    full, rest = divmod(traffic.longest_prompt, c)
    mean_prompt = sp.Rational(str(traffic.mean_prompt))

    def carrying(n: int) -> sp.Expr:  # a decode step with n of the prompt's tokens
        return _chunked_step(r, pr, pre_weights, traffic, service, sp.Integer(n) / mean_prompt)

    first_bs = full * carrying(c) + (carrying(rest) if rest else sp.Integer(0))
    return Formulas(lay, context, step_bs, sp.Integer(0), mean, mem, traffic.mean_output,
                    tokens, True, full + (1 if rest else 0), first_bs, budget)


def _chunked_step(r: Roofline, pr: Roofline, pre_weights: sp.Expr, traffic: Traffic,
                  service: Service, prompts: sp.Expr) -> sp.Expr:
    """A decode step that carries ``prompts`` prompts' worth of prefill (each micro-batch
    its share), as one roofline, so the prompts' FLOPs fill the memory-bound step and
    their weights are the step's own: ``(m + pp - 1) (max((F_d + n F_p)/(peak e_c),
    (Q_d + n (Q_p - W_p))/(bw e_b)) + (link_d + n link_p)/e_b)`` with ``n`` the prompts
    per micro-batch, prompt figures averaged over the traffic. The steady step carries
    ``B/O`` prompts (each step yields B tokens; a request wants O); a step carrying a
    chunk of ``x`` tokens of a prompt carries ``x/P`` (``P`` the mean prompt)."""
    ec, eb = _efficiencies(service)
    share = prompts / r.microbatches
    flops = r.flops + share * _traffic_mean(pr.flops, traffic)
    moved = r.bytes + share * _traffic_mean(pr.bytes - pre_weights, traffic)
    link = r.communication_time_s + share * _traffic_mean(pr.communication_time_s, traffic)
    return (sp.Max(flops / (r.peak * ec), moved / (r.bandwidth * eb)) + link / eb) * \
        (r.microbatches + r.pp - 1)
