"""``sr.plan``: which configurations serve a model under objectives and a load, the best
per chip, the Pareto front, and the closed forms that bind the best.

>>> from symroof.plan import plan
>>> p = plan("llama-3-8b", {"a100-80gb": 1}, workload=[(1000, 200)],
...          objectives={"itl_s": 0.02}, load={"users": 16}, pp=(1,))
>>> p.best.layout.tp, p.best.batch >= 16, p.best.step_s <= 0.02
(1, True, True)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof import hardware
from symroof.errors import SymroofError
from symroof.models import TransformerModel
from symroof.options import ExpertReads, option
from symroof.plan.closed import BatchLimit, MemoryLimit, NotPiecewiseLinear, itl_limit
from symroof.plan.inputs import (IGNORED, ChunkTTFT, DecodeContext, Draft, Load, Mode,
                                 Objectives, Offer, Service, Traffic, parse_numerics,
                                 parse_prices)
from symroof.plan.layouts import (Formulas, Layout, PrefillLayout, Pruned, formulas, layouts,
                                  prefill_layout)
from symroof.plan.search import Block, BlockResult, pareto, run_blocks, split
from symroof.precision import Numerics
from symroof.symbols import B, quantity

__all__ = ["Config", "Binding", "Plan", "plan", "TAU", "load_prices",
           "decode_replicas"]

#: The objective a batch limit is solved for, kept symbolic until it is evaluated.
TAU = quantity("tau")


@dataclass(frozen=True)
class Config:
    """One configuration: a layout at a batch, with its figures (floats; times in s,
    bytes per device)."""

    layout: Layout
    batch: int
    context: int
    step_s: float
    tokens_per_user: float
    tokens_per_chip: float
    chips: int
    ttft_s: float
    memory_bytes: float        # weights + KV cache per device at this batch
    usable_bytes: float
    cost_per_million: float | None
    prefill_chips: int = 0     # disaggregated: the prefill replicas' chips (in ``chips``)

    @property
    def replicas(self) -> float:
        """Decode replicas."""
        return (self.chips - self.prefill_chips) / self.layout.devices


@dataclass(frozen=True)
class Binding:
    """The closed forms behind a configuration's batch: the ITL limit (B <= B*(tau),
    evaluated at the objective), the tokens-per-user limit, the memory limit on B x S,
    and the chips limit (users need ``ceil(users / B)`` replicas); ``binds`` names the
    one that sets the batch."""

    itl: BatchLimit | None
    user: BatchLimit | None
    memory: MemoryLimit
    context: int
    batch_itl: int | None
    batch_user: int | None
    batch_memory: int
    batch_chips: int | None        # the least batch the chips on offer allow (users)
    batch_load: int | None         # users: a replica never holds more sequences than users
    binds: str
    numeric_only: str | None = None   # why no closed form (then the scan decides)
    ttft: BatchLimit | None = None    # chunked: the chunks' steps <= TTFT objective
    batch_ttft: int | None = None
    batch_chunk: int | None = None    # chunked: B <= C O / P (the chunk budget)


@dataclass(frozen=True)
class Plan:
    """A plan's answer (see :func:`plan`)."""

    model: str
    traffic: Traffic
    objectives: Objectives
    load: Load
    service: Service
    offers: tuple[Offer, ...]
    currency: str | None
    layouts: tuple[Layout, ...]
    pruned: tuple[Pruned, ...]
    points: int
    meeting: int
    best: Config | None
    best_per_chip: tuple[Config, ...]
    front: tuple[Config, ...]
    front_per_chip: tuple[tuple[str, tuple[Config, ...]], ...]   # each chip's own front
    closest: Config | None
    shortfall: tuple[str, float] | None   # the closest's binding objective and its ratio
    binding: Binding | None               # for the best (else the closest) configuration
    formulas: tuple[Formulas, ...]

    @property
    def ignored(self) -> tuple[str, ...]:
        """What the service model leaves out."""
        return IGNORED


def load_prices(path: str, chips: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """A price TOML (``currency = "USD"`` and a ``[price]`` table of chip = price per
    chip hour), checked against the chips given."""
    from symroof.files import parse_toml, read_text  # the file readers, at the boundary

    table = parse_toml(read_text(path, "prices"), path, "prices: ")
    cur = table.get("currency")
    if cur is not None and not isinstance(cur, str):
        raise SymroofError(f"{path} currency: expected a name such as \"USD\", got {cur!r}")
    return parse_prices(table, chips, origin=path), cur


def _model(model: object) -> TransformerModel:
    if isinstance(model, TransformerModel):
        return model
    from symroof.request import load_model  # the front door's model reader, one definition

    if not isinstance(model, str):
        raise SymroofError(f"model: expected a preset name, a config.json or a model, got "
                           f"{type(model).__name__}")
    return load_model(model)


def _offers(chips: Mapping[Any, object] | Sequence[Offer],
            prices: Mapping[str, float] | None) -> tuple[Offer, ...]:
    if isinstance(chips, Mapping):
        specs = [(hardware.resolve(k), v) for k, v in chips.items()]
        names = [s.name for s, _ in specs]
        found = parse_prices({"price": dict(prices)}, names) if prices else {}
        out = tuple(Offer(s, n, found.get(s.name)) for s, n in specs)  # type: ignore[arg-type]
    else:
        out = tuple(chips)
        if not all(isinstance(o, Offer) for o in out):
            raise SymroofError("chips: expected a mapping of chip to count, or Offers")
    if not out:
        raise SymroofError("chips: expected at least one chip")
    if len({o.chip.name for o in out}) != len(out):
        raise SymroofError("chips: a chip is given twice")
    return out


def _mapping(value: object, cls: type, what: str) -> Any:
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise SymroofError(f"{what}: expected a {cls.__name__} or a mapping, got "
                           f"{type(value).__name__}")
    try:
        return cls(**value)
    except TypeError as err:
        raise SymroofError(f"{what}: {err}") from None


def _block(i: int, f: Formulas, offer: Offer, traffic: Traffic, objectives: Objectives,
           load: Load, service: Service, max_batch: int) -> Block:
    top = max(1, min(max_batch, f.memory.batch(f.context)))
    if f.chunk_batch is not None:  # the chunk budget carries B P / O prompt tokens a step
        top = max(1, min(top, f.chunk_batch))
    if load.users is not None:  # a replica never holds more sequences than there are users
        top = max(1, min(top, int(load.users)))
    pre = f.prefill_layout
    return Block(i, f.step_bs, 1, top, (f.context,), f.layout.devices,
                 0.0 if f.chunked else float(f.prefill_s),  # chunked: inside the step
                 traffic.mean_output, service.mode != Mode.DISAGGREGATED,
                 float(f.memory.tokens),
                 float(f.ttft), (objectives.ttft_s, objectives.itl_s, objectives.tokens_per_user),
                 load.users, load.requests_per_s, offer.count, offer.price_per_hour,
                 f.layout.microbatches, f.first_bs, 0 if pre is None else pre.devices)


def _config(row: Sequence[float], f: Formulas, offer: Offer) -> Config:
    batch, context, step, per_user, per_chip, chips, prefill_chips = row
    mem = f.memory
    used = mem.weights + int(batch) * mem.per_token * int(context)
    cost = None if offer.price_per_hour is None else \
        offer.price_per_hour / (per_chip * 3600) * 1e6
    mb = f.layout.microbatches
    ttft = float(f.ttft) if f.first is None else \
        float(f.first.xreplace({B: mb * math.ceil(batch / mb)}))
    return Config(f.layout, int(batch), int(context), step, per_user, per_chip, int(chips),
                  ttft, float(used), float(mem.usable), cost,
                  int(prefill_chips))


def _rank(c: Config) -> tuple[float, ...]:
    """Best first: lowest cost (where priced), most tokens/s per chip, fewest chips."""
    return (c.cost_per_million if c.cost_per_million is not None else 0.0,
            -c.tokens_per_chip, c.chips, -c.tokens_per_user)


def decode_replicas(f: Formulas, count: int) -> int:
    """The decode replicas of ``f``'s layout that ``count`` chips hold (disaggregated: one
    prefill replica kept beside them)."""
    spare = count - (f.prefill_layout.devices if f.prefill_layout else 0)
    return spare // f.layout.devices


def binding(f: Formulas, objectives: Objectives, load: Load, service: Service,
            offer: Offer) -> Binding:
    """The closed forms that bind ``f``'s layout (see :class:`Binding`)."""
    why = None
    lim_itl = lim_user = lim_ttft = None
    b_itl = b_user = b_ttft = None
    mb = f.layout.microbatches

    def whole(n: int | None) -> int | None:  # a batch of whole micro-batches: round down
        return None if n is None else n // mb * mb

    try:
        if objectives.itl_s is not None:
            lim_itl = itl_limit(f.step, TAU)
            b_itl = whole(lim_itl.at(TAU, objectives.itl_s).batch)
        if objectives.ttft_s is not None and f.first is not None:
            lim_ttft = itl_limit(f.first, TAU)
            b_ttft = whole(lim_ttft.at(TAU, objectives.ttft_s).batch)
        if objectives.tokens_per_user is not None:
            user = f.step + B * f.prefill_s / sp.Rational(str(f.mean_output)) \
                if service.mode == Mode.COLOCATED else f.step  # chunked: t(B) holds them
            lim_user = itl_limit(user, TAU)
            b_user = whole(lim_user.at(TAU, sp.Rational(1) / sp.Rational(
                str(objectives.tokens_per_user))).batch)
    except NotPiecewiseLinear as err:
        why = str(err)
    b_mem = f.memory.batch(f.context)
    b_chips = None
    if load.users is not None:
        per_replica = decode_replicas(f, offer.count)
        b_chips = math.ceil(load.users / per_replica) if per_replica else None
    b_load = None if load.users is None else int(load.users)
    limits = {"ITL": b_itl, "tokens/s per user": b_user, "memory": b_mem, "load": b_load,
              "TTFT": b_ttft, "chunk budget": f.chunk_batch}
    given = {k: v for k, v in limits.items() if v is not None}
    binds = min(given, key=lambda k: given[k]) if given else "memory"
    return Binding(lim_itl, lim_user, f.memory, f.context, b_itl, b_user, b_mem, b_chips,
                   b_load, binds, why, lim_ttft, b_ttft, f.chunk_batch)


def plan(model: str | TransformerModel, chips: Mapping[Any, object] | Sequence[Offer], *,
         workload: Sequence[Sequence[object]] | Traffic,
         objectives: Objectives | Mapping[str, float | None],
         load: Load | Mapping[str, float | None],
         prices: Mapping[str, float] | None = None, currency: str | None = None,
         precisions: Sequence[str | Numerics] = ("bf16",), tp: Sequence[int] | None = None,
         pp: Sequence[int] = (1, 2, 4, 8), microbatches: Sequence[int] | None = None,
         expert_reads: Sequence[ExpertReads | str] = (ExpertReads.ALL,),
         draft: Draft | None = None, service: Service | Mapping[str, object] = Service(),
         max_batch: int = 4096, executor: str = "serial", workers: int | None = None,
         scheduler: str | None = None, block_points: int = 1 << 16) -> Plan:
    """The configurations that serve ``model`` on ``chips`` ({chip: count available})
    for ``workload`` ([(prompt, output[, weight])]) under ``objectives`` (``ttft_s``,
    ``itl_s``, ``tokens_per_user``) at ``load`` (``users`` or ``requests_per_s``):
    every layout of the space (tp x pp x micro-batches x precision x expert reads x
    speculative decoding; ``microbatches`` None: 1 and pp) not pruned, at every batch from 1 to the memory limit (at most
    ``max_batch``), on the compiled path in blocks (``executor``, or a Dask
    ``scheduler``). ``prices`` are per chip hour (costs in ``currency``).
    """
    m = _model(model)
    traffic = workload if isinstance(workload, Traffic) else Traffic.of(workload)
    obj = _mapping(objectives, Objectives, "objectives")
    ld = _mapping(load, Load, "load")
    svc = _mapping(service, Service, "service")
    svc = Service(Mode(svc.mode), DecodeContext(svc.decode_context), svc.compute_efficiency,
                  svc.bandwidth_efficiency, svc.reserve, svc.chunk_tokens,
                  ChunkTTFT(svc.chunk_ttft), svc.kv_link_bandwidth)
    offers = _offers(chips, prices)
    if not isinstance(max_batch, int) or isinstance(max_batch, bool) or max_batch < 1:
        raise SymroofError(f"max_batch: expected a positive integer, got {max_batch!r}")
    nums = [p if isinstance(p, Numerics) else parse_numerics(p) for p in precisions]
    if not nums:
        raise SymroofError("precisions: expected at least one")
    reads = [option(ExpertReads, e, "expert_reads") for e in expert_reads]
    for what, values in (("pp", pp), ("microbatches", microbatches or ())):
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SymroofError(f"{what} {v!r}: expected a positive integer")
    kept, pruned = layouts(m, offers, nums, tp=tp, pp=pp, expert_reads=reads, draft=draft,
                           service=svc, microbatches=microbatches)
    by_chip = {o.chip.name: o for o in offers}
    pre: dict[Layout, PrefillLayout | None] = {}
    if svc.mode == Mode.DISAGGREGATED:  # the prefill replicas' own split, per decode layout
        cache: dict[tuple[object, ...], sp.Expr] = {}
        for lay in kept:
            pre[lay] = prefill_layout(m, lay, by_chip[lay.chip], traffic, svc, pp=pp,
                                      ttft_s=obj.ttft_s, cache=cache)
        pruned += [Pruned(lay, "no prefill replica fits on the chips beside it")
                   for lay in kept if pre[lay] is None]
        kept = [lay for lay in kept if pre[lay] is not None]
    fs = tuple(formulas(m, lay, by_chip[lay.chip], traffic, svc, draft, pre.get(lay))
               for lay in kept)
    if svc.mode == Mode.CHUNKED and fs and fs[0].chunk_batch == 0:  # one budget for all
        raise SymroofError(f"service chunk_tokens {svc.chunk_tokens}: the chunk budget holds "
                           f"no sequence (B <= C O/P = {svc.chunk_tokens} x "
                           f"{traffic.mean_output:g}/{traffic.mean_prompt:g} < 1); expected "
                           "a larger chunk")
    blocks = [b for i, f in enumerate(fs)
              for b in split(_block(i, f, by_chip[f.layout.chip], traffic, obj, ld, svc,
                                    max_batch), block_points)]
    results = run_blocks(blocks, executor=executor, workers=workers, scheduler=scheduler)
    return _assemble(m, traffic, obj, ld, svc, offers, currency, kept, pruned, fs, results)


def _assemble(m: TransformerModel, traffic: Traffic, obj: Objectives, ld: Load, svc: Service,
              offers: tuple[Offer, ...], currency: str | None, kept: list[Layout],
              pruned: list[Pruned], fs: tuple[Formulas, ...],
              results: list[BlockResult]) -> Plan:
    import numpy as np  # the plan's rows, once the blocks are back

    by_chip = {o.chip.name: o for o in offers}

    def config(i: int, row: Sequence[float]) -> Config:
        return _config(row, fs[i], by_chip[fs[i].layout.chip])

    meeting = [config(r.layout, r.best) for r in results if r.best is not None]
    best = min(meeting, key=_rank) if meeting else None
    per_chip: dict[str, Config] = {}
    for c in sorted(meeting, key=_rank):
        per_chip.setdefault(c.layout.chip, c)
    rows = [(r.layout, row) for r in results for row in r.front]
    def front_of(chosen: list[tuple[int, tuple[float, ...]]]) -> tuple[Config, ...]:
        if not chosen:
            return ()
        table = np.array([[*row, i] for i, row in chosen])
        return tuple(config(int(r[-1]), tuple(r[:-1])) for r in pareto(table))

    front = front_of(rows)
    chip_fronts = ((o.chip.name, front_of([(i, row) for i, row in rows
                                           if fs[i].layout.chip == o.chip.name]))
                   for o in offers)
    per_chip_front = tuple((chip, cf) for chip, cf in chip_fronts if cf)
    closest = shortfall = None
    if best is None and results:
        r = min(results, key=lambda x: x.closest_ratio)
        closest = config(r.layout, r.closest)
        shortfall = (r.closest_binding, r.closest_ratio)
    chosen = best or closest
    bind = None
    if chosen is not None:
        f = next(x for x in fs if x.layout == chosen.layout)
        bind = binding(f, obj, ld, svc, by_chip[chosen.layout.chip])
    return Plan(m.name, traffic, obj, ld, svc, offers, currency, tuple(kept), tuple(pruned),
                sum(r.points for r in results), sum(r.meeting for r in results), best,
                tuple(per_chip.values()), front, per_chip_front, closest, shortfall, bind, fs)


def plan_from_files(prices_path: str | None, chip_names: Sequence[str]
                    ) -> tuple[dict[str, float] | None, str | None]:
    """Prices from ``prices_path`` (None: no prices)."""
    if prices_path is None:
        return None, None
    if not os.path.exists(prices_path):
        raise SymroofError(f"--prices {prices_path}: no such file")
    return load_prices(prices_path, chip_names)
