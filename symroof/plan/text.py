"""A plan as lines of text (``symroof plan``) and as a JSON-ready document.

Numbers are printed to 3-4 significant digits; formulas with their rational
coefficients as decimals (``evalf(4)``), so that a reader can check the binding limits
by hand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import sympy as sp

from symroof.plan.core import TAU, Binding, Config, Plan, decode_replicas
from symroof.plan.inputs import ChunkTTFT, Mode
from symroof.plan.layouts import Formulas, bubble
from symroof.symbols import S

__all__ = ["lines", "document", "describe", "formula"]


def formula(e: sp.Expr) -> str:
    """``e`` with its numbers as 4-digit decimals."""
    return sp.sstr(e.evalf(4)).replace("tau", "T")


def _ms(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


def describe(c: Config, currency: str | None = None) -> str:
    """One configuration on one line."""
    cost = "" if c.cost_per_million is None else \
        f", {c.cost_per_million:.3g} {currency or ''}/M tokens".replace(" /M", "/M")
    pre = "" if not c.prefill_chips else f" + {c.prefill_chips} for prefill"
    return (f"{c.layout}  B={c.batch}  {c.chips} chip{'' if c.chips == 1 else 's'} ({c.replicas:g} replica{'' if c.replicas == 1 else 's'}{pre}): "
            f"{c.tokens_per_user:.3g} tok/s/user (ITL {_ms(c.step_s)}), "
            f"{c.tokens_per_chip:.4g} tok/s/chip, TTFT {_ms(c.ttft_s)}, "
            f"memory {_gb(c.memory_bytes)}/{_gb(c.usable_bytes)} per device{cost}")


def _objectives(p: Plan) -> str:
    o, parts = p.objectives, []
    if o.ttft_s is not None:
        parts.append(f"TTFT <= {_ms(o.ttft_s)}")
    if o.itl_s is not None:
        parts.append(f"ITL <= {_ms(o.itl_s)}")
    if o.tokens_per_user is not None:
        parts.append(f"tokens/s per user >= {o.tokens_per_user:g}")
    return ", ".join(parts) or "none"


def _service(p: Plan) -> Iterator[str]:
    s = p.service
    where = {Mode.COLOCATED: "prefill on the decode replicas, between decode steps",
             Mode.DISAGGREGATED: "prefill on replicas of its own (same chip, its own split, "
                                 "searched), the prompt's KV cache sent to a decode replica "
                                 "over one link and added to TTFT",
             Mode.CHUNKED: "prefill in chunks riding every decode step: B/O prompts per "
                           "step, one roofline with the step, its weights read once; at most "
                           f"{s.chunk_tokens} prompt tokens a step (chunk_tokens); TTFT "
                           + ("ceil(P/C) t(B), a chunk per step (chunk_ttft=steps)"
                              if s.chunk_ttft == ChunkTTFT.STEPS else
                              "the prompt's own prefill (chunk_ttft=prefill)")}[s.mode]
    yield f"service model: {s.mode} ({where}); decode step at the {s.decode_context} " \
          f"context ({p.formulas[0].context if p.formulas else '-'} positions)"
    yield f"  efficiency: compute {s.compute_efficiency:g}, bandwidth {s.bandwidth_efficiency:g}" \
          f" (1 = the roofline bound); memory reserve {s.reserve:g}"
    for item in p.ignored:
        yield f"  ignores: {item}"


def _binding(b: Binding, c: Config, p: Plan) -> Iterator[str]:
    f = next(x for x in p.formulas if x.layout == c.layout)
    yield f"binding formulas ({c.layout}, context S = {b.context}):"
    yield f"  decode time per token t(B) = {formula(f.step)} s"
    lay = c.layout
    if lay.pp > 1:
        mb = lay.microbatches
        yield f"  pipeline: m = {mb} micro-batch{'es' if mb > 1 else ''} of B/m sequences " \
              f"through pp = {lay.pp} stages, m + pp - 1 = {mb + lay.pp - 1} stage times a " \
              f"step; bubble (pp-1)/(m+pp-1) = {bubble(lay.pp, mb)}"
    yield from _ttft_lines(f, p)
    if b.numeric_only:
        yield f"  no closed form for the batch ({b.numeric_only}): the scan decides"
    if b.itl is not None and p.objectives.itl_s is not None:
        at = b.itl.at(TAU, p.objectives.itl_s)
        yield f"  batch limited by ITL <= {_ms(p.objectives.itl_s)}: B <= {formula(b.itl.formula)}"
        yield f"    = {float(at.formula):.6g} at T = {p.objectives.itl_s:g} s, so B <= " \
              f"{b.batch_itl}" + (f"; needs {', '.join(formula(x) for x in b.itl.conditions)}"
                                  if b.itl.conditions else "")
    if b.user is not None and p.objectives.tokens_per_user is not None:
        x = p.objectives.tokens_per_user
        at = b.user.at(TAU, sp.Rational(1) / sp.Rational(str(x)))
        what = "t(B) + B p/O" if p.service.mode == Mode.COLOCATED else "t(B)"
        yield f"  batch limited by tokens/s per user >= {x:g} ({what} <= T = 1/{x:g} s): " \
              f"B <= {formula(b.user.formula)}"
        yield f"    = {float(at.formula):.6g}, so B <= {b.batch_user}"
    m = b.memory
    yield f"  by memory: B*S <= (usable - weights)/(KV bytes per position) = " \
          f"({_gb(float(m.usable))} - {_gb(float(m.weights))})/{float(m.per_token):g} B = " \
          f"{float(m.tokens):.6g}, so B <= {b.batch_memory} at S = {b.context}"
    if b.batch_load is not None:
        yield f"  by the load: B <= {b.batch_load} (a replica holds at most the {b.batch_load} users)"
    if b.batch_chips is not None and p.load.users is not None:
        count = next(o.count for o in p.offers if o.chip.name == c.layout.chip)
        yield f"  by the chips on offer: {p.load.users:g} users on at most " \
              f"{decode_replicas(f, count)} replicas" + \
              (" (beside one prefill replica)" if f.prefill_layout else "") + \
              f" need B >= {b.batch_chips}"
    if b.ttft is not None and b.batch_ttft is not None and p.objectives.ttft_s is not None:
        at = b.ttft.at(TAU, p.objectives.ttft_s)
        yield f"  batch limited by TTFT <= {_ms(p.objectives.ttft_s)} (the chunks' steps <= " \
              f"T): B <= {formula(b.ttft.formula)}"
        yield f"    = {float(at.formula):.6g} at T = {p.objectives.ttft_s:g} s, so B <= " \
              f"{b.batch_ttft}"
    if b.batch_chunk is not None:
        yield f"  by the chunk budget: B*P/O <= C, B <= {p.service.chunk_tokens}*" \
              f"{p.traffic.mean_output:g}/{p.traffic.mean_prompt:g}, so B <= {b.batch_chunk}"
    limits = (b.batch_itl, b.batch_user, b.batch_memory, b.batch_load, b.batch_ttft,
              b.batch_chunk)
    yield f"  binds: {b.binds} (the largest batch meeting every limit: "  \
          f"{min(x for x in limits if x is not None)})"


def _ttft_lines(f: Formulas, p: Plan) -> Iterator[str]:
    """How the TTFT of ``f`` is made (disaggregated: the prefill split and KV transfer;
    chunked: the decode steps the chunks ride)."""
    longest = p.traffic.longest_prompt
    pre = f.prefill_layout
    if pre is not None:
        yield f"  prefill replicas: tp{pre.tp} pp{pre.pp} ({pre.devices} chip" \
              f"{'' if pre.devices == 1 else 's'}; the fewest chip-seconds per request meeting " \
              f"TTFT of {pre.candidates} splits that fit)"
        yield f"  TTFT = prefill(P) + KV(P)/link = {formula(pre.prefill)} + " \
              f"{formula(pre.kv_bytes)}/{float(pre.link_bandwidth) / 1e9:g}e9 s (S = P, the " \
              f"link: {pre.link}, efficiency {p.service.bandwidth_efficiency:g})"
        yield f"    = {float(pre.prefill.xreplace({S: longest})) * 1e3:.4g} ms + " \
              f"{float(pre.transfer.xreplace({S: longest})) * 1e3:.4g} ms = {_ms(float(f.ttft))} " \
              f"at P = {longest}"
    elif f.first is not None:
        c = p.service.chunk_tokens
        full, rest = divmod(longest, c)
        parts = [f"{full} t_{c}(B)"] + ([f"t_{rest}(B)"] if rest else [])
        yield f"  TTFT = floor(P/C) t_C(B) + t_(P mod C)(B) = {' + '.join(parts)} (P = " \
              f"{longest}, C = {c}; t_x: a decode step carrying x prompt tokens) = " \
              f"{formula(f.first)} s"


def lines(p: Plan, *, front_rows: int = 12) -> Iterator[str]:
    """The plan as text (see the module docstring)."""
    chips = ", ".join(f"{o.count} x {o.chip.name}" + (
        "" if o.price_per_hour is None else f" at {o.price_per_hour:g} {p.currency or ''}/h")
                      for o in p.offers)
    yield f"plan: {p.model} on {chips}"
    yield f"workload: {p.traffic} tokens (prompt+output); load: {p.load}"
    yield f"objectives: {_objectives(p)}"
    yield from _service(p)
    yield f"space: {len(p.layouts)} layouts evaluated, {len(p.pruned)} pruned before " \
          f"evaluation; {p.points} configurations, {p.meeting} meet the objectives"
    for pr in p.pruned[:6]:
        yield f"  pruned {pr.layout}: {pr.reason}"
    if len(p.pruned) > 6:
        yield f"  ... and {len(p.pruned) - 6} more pruned"
    yield ""
    if p.best is None:
        yield "answer: no configuration meets the objectives"
        if p.closest is not None and p.shortfall is not None:
            what, ratio = p.shortfall
            yield f"  closest: {describe(p.closest, p.currency)}"
            yield f"  binding objective: {_shortfall(what, ratio, p)}"
    else:
        yield f"answer: yes; best: {describe(p.best, p.currency)}"
        yield "best per chip:"
        for c in p.best_per_chip:
            yield f"  {describe(c, p.currency)}"
    chosen = p.best or p.closest
    if p.binding is not None and chosen is not None:
        yield ""
        yield from _binding(p.binding, chosen, p)
    if p.front:
        yield ""
        yield f"Pareto front (tokens/s per user against tokens/s per chip), {len(p.front)} " \
              "configurations:"
        step = max(1, len(p.front) // front_rows)
        shown = list(p.front[::step])
        if shown[-1] is not p.front[-1]:
            shown.append(p.front[-1])
        for c in shown:
            yield f"  {c.tokens_per_user:9.3g} tok/s/user  {c.tokens_per_chip:9.4g} tok/s/chip  " \
                  f"{c.layout} B={c.batch}"


def _shortfall(what: str, ratio: float, p: Plan) -> str:
    o = p.objectives
    if what == "itl":
        return f"ITL <= {_ms(o.itl_s or 0)}: the closest takes {ratio:.3g}x that"
    if what == "ttft":
        return f"TTFT <= {_ms(o.ttft_s or 0)}: the closest takes {ratio:.3g}x that"
    if what == "tokens_per_user":
        return f"tokens/s per user >= {o.tokens_per_user:g}: the closest reaches 1/{ratio:.3g} of it"
    if what == "memory":
        return f"memory: the closest needs {ratio:.3g}x the memory free for its KV cache"
    return f"chips: the closest needs {ratio:.3g}x the chips on offer"


def _config_doc(c: Config) -> dict[str, Any]:
    lay = c.layout
    return {"chip": lay.chip, "tp": lay.tp, "pp": lay.pp, "microbatches": lay.microbatches,
            "weights": str(lay.numerics.weights), "kv_cache": str(lay.numerics.kv_cache),
            "activations": str(lay.numerics.activations), "expert_reads": str(lay.expert_reads),
            "speculative": lay.speculative, "batch": c.batch, "context": c.context,
            "chips": c.chips, "prefill_chips": c.prefill_chips, "itl_s": c.step_s, "tokens_per_user": c.tokens_per_user,
            "tokens_per_chip": c.tokens_per_chip, "ttft_s": c.ttft_s,
            "memory_bytes": c.memory_bytes, "usable_bytes": c.usable_bytes,
            "cost_per_million_tokens": c.cost_per_million}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def document(p: Plan) -> dict[str, Any]:
    """The plan as plain data (formulas in SymPy syntax)."""
    b = p.binding
    return {
        "model": p.model, "workload": [[pr, o, float(w)] for pr, o, w in p.traffic.classes],
        "load": {"users": p.load.users, "requests_per_s": p.load.requests_per_s},
        "objectives": {"ttft_s": p.objectives.ttft_s, "itl_s": p.objectives.itl_s,
                       "tokens_per_user": p.objectives.tokens_per_user},
        "service": {"mode": str(p.service.mode), "decode_context": str(p.service.decode_context),
                    "compute_efficiency": p.service.compute_efficiency,
                    "bandwidth_efficiency": p.service.bandwidth_efficiency,
                    "reserve": p.service.reserve, "chunk_tokens": p.service.chunk_tokens,
                    "chunk_ttft": str(p.service.chunk_ttft),
                    "kv_link_bandwidth": p.service.kv_link_bandwidth,
                    "ignores": list(p.ignored)},
        "currency": p.currency,
        "layouts": len(p.layouts), "pruned": [[str(x.layout), x.reason] for x in p.pruned],
        "points": p.points, "meeting": p.meeting,
        "best": None if p.best is None else _config_doc(p.best),
        "best_per_chip": [_config_doc(c) for c in p.best_per_chip],
        "front": [_config_doc(c) for c in p.front],
        "front_per_chip": {chip: [_config_doc(c) for c in f] for chip, f in p.front_per_chip},
        "closest": None if p.closest is None else _config_doc(p.closest),
        "shortfall": None if p.shortfall is None else
        {"objective": p.shortfall[0], "ratio": _finite(p.shortfall[1])},
        "binding": None if b is None else {
            "itl_batch_formula": None if b.itl is None else str(b.itl.formula),
            "tokens_per_user_batch_formula": None if b.user is None else str(b.user.formula),
            "objective_symbol": "tau",
            "batch_itl": b.batch_itl, "batch_tokens_per_user": b.batch_user,
            "memory_tokens": str(b.memory.tokens), "batch_memory": b.batch_memory,
            "batch_chips": b.batch_chips, "binds": b.binds, "context": b.context,
            "ttft_batch_formula": None if b.ttft is None else str(b.ttft.formula),
            "batch_ttft": b.batch_ttft, "batch_chunk": b.batch_chunk},
    }
