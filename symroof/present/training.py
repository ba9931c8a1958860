"""Training for people: the papers' textbook forms (``sbh(34 + 5as/h)``,
``(2 + 2 + K)Ψ/N_d``) and what ``symroof train`` prints (memory per device by part,
whether it fits, FLOPs per step, the bubble, days for a token budget).

>>> from symroof.symbols import S, B, D, H, t
>>> from symroof.training.forms import factor_out, zero_form
>>> paper_text(factor_out(10*S*B*D + 24*S*B*D/t + 5*H*S**2*B/t, S*B*D))
'sbh(10 + 24/t + 5as/(ht))'
>>> paper_text(zero_form(2)), paper_text(zero_form(3))
('2Ψ + (2 + K)Ψ/N_d', '(2 + 2 + K)Ψ/N_d')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from symroof.present.numbers import grouped, json_number, scientific, text_number
from symroof.symbols import B, D, H, K, L, S, V, t
from symroof.training.forms import N_D, PSI, Factored
from symroof.training.plan import TrainingPlan

__all__ = ["paper_text", "KORTHIKANTI", "train_lines", "train_json"]

#: Korthikanti et al.'s letters for symroof's symbols (s b h a t L), and ZeRO's.
KORTHIKANTI: Mapping[sp.Symbol, str] = {S: "s", B: "b", D: "h", H: "a", t: "t", L: "L",
                                        V: "v", PSI: "Ψ", N_D: "N_d", K: "K"}
#: The order letters are written in within a product (sbh, 5as/(ht)).
_ORDER = ("a", "s", "b", "h", "t", "p", "L", "v", "K", "Ψ", "N_d")


def _key(name: str) -> tuple[int, str]:
    return (_ORDER.index(name), "") if name in _ORDER else (len(_ORDER), name)


def _term(e: sp.Expr, names: Mapping[sp.Symbol, str]) -> str:
    """A monomial (or a product with one sum in it) written as the papers do."""
    coeff, factors = e.as_coeff_mul()
    sums = [f for f in factors if f.is_Add]
    num: list[tuple[str, int]] = []
    den: list[tuple[str, int]] = []
    for f in factors:
        if f.is_Add:
            continue
        base, power = f.as_base_exp()
        name = names.get(base, str(base))
        (num if power > 0 else den).append((name, abs(int(power))))
    sign = "-" if coeff < 0 else ""
    c = abs(sp.Rational(coeff))

    def letters(items: list[tuple[str, int]]) -> str:
        return "".join(n + (f"^{p}" if p != 1 else "") for n, p in sorted(items, key=lambda x: _key(x[0])))

    top = "".join(f"({_sum(s, names)})" for s in sums) + letters(num)
    top = (str(c.p) if c.p != 1 or not top else "") + top
    bottom = (str(c.q) if c.q != 1 else "") + letters(den)
    if not bottom:
        return sign + top
    many = len(den) + (c.q != 1) > 1
    return f"{sign}{top}/{'(' + bottom + ')' if many else bottom}"


def _sum(e: sp.Expr, names: Mapping[sp.Symbol, str]) -> str:
    def order(x: sp.Expr) -> tuple[int, int]:
        """A positive constant first (34 + 5as/h), a negative one last (p - 1), then by
        how many letters a term has (10 + 24/t + 5as/(ht))."""
        if x.is_number:
            return (0 if x > 0 else 2, 0)
        return (1, sum(abs(int(p)) for _, p in (f.as_base_exp() for f in x.as_coeff_mul()[1])))

    terms = sorted(sp.Add.make_args(e), key=order)
    out = ""
    for i, term in enumerate(terms):
        text = _term(term, names)
        if i == 0:
            out = text
        elif text.startswith("-"):
            out += " - " + text[1:]
        else:
            out += " + " + text
    return out


def paper_text(form: Factored | sp.Expr, names: Mapping[sp.Symbol, str] = KORTHIKANTI) -> str:
    """A textbook form in the papers' letters, products juxtaposed: ``sbh(34 + 5as/h)``."""
    if isinstance(form, Factored):
        inner = _sum(form.inner, names)
        head = _term(form.factor, names)
        return f"{head}({inner})" if form.inner.is_Add else _term(form.factor * form.inner, names)
    if form.is_Add:
        return _sum(form, names)
    return _term(form, names)


def _gb(value: sp.Expr) -> str:
    """Bytes in decimal gigabytes, one decimal: ``53.5 GB``."""
    return f"{grouped(value / 10**9, 1)} GB"


def _pct(value: sp.Expr) -> str:
    return f"{grouped(100 * value, 1)}%"


def _stage(plan: TrainingPlan) -> str:
    peak = plan.memory.peak
    layers = plan.model.layers / plan.layout.pp
    if peak.stage == "only":
        return "one stage"
    return (f"{peak.stage} pipeline stage: {text_number(layers)} layers, "
            f"{text_number(peak.in_flight)} micro-batches in flight")


def train_lines(plan: TrainingPlan) -> list[str]:
    """``symroof train``'s text output."""
    lay, mem = plan.layout, plan.memory
    peak = mem.peak
    sp_text = ", sequence parallel" if lay.sequence_parallel else ""
    lines = [
        f"training {plan.model.name} on {text_number(lay.devices)} x "
        f"{plan.hardware.display_name}, {plan.precision}, recompute {plan.recompute.value}",
        f"layout: tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, ZeRO {lay.zero}{sp_text}; "
        f"micro-batch {plan.micro_batch} x {plan.seq} tokens, {lay.micro_batches} "
        f"micro-batches per step ({text_number(plan.sequences_per_step)} sequences)",
        f"memory per GPU ({_stage(plan)}):",
    ]
    for name, value in (("weights", peak.weights), ("gradients", peak.gradients),
                        ("optimizer state", peak.optimizer_state),
                        ("activations", peak.activations)):
        lines.append(f"  {name:16s} {_gb(value)}")
    verdict = {True: "fits", False: "does not fit", None: "undecided"}[plan.fits]
    lines.append(f"  {'total':16s} {_gb(peak.total)} of "
                 f"{_gb(plan.capacity)}: {verdict}")
    for other in mem.stages:
        if other is not peak:
            lines.append(f"  ({other.stage} stage: {_gb(other.total)})")
    lines.append(f"activations per layer and micro-batch: {grouped(mem.per_layer / 10**6, 1)} MB")
    model_f, hw_f = plan.model_flops_per_step, plan.hardware_flops_per_step
    extra = hw_f / model_f - 1
    lines.append(f"FLOPs per step: model {scientific(model_f, 3)}, hardware "
                 f"{scientific(hw_f, 3)} (recomputation +{_pct(extra)})")
    if lay.pp != 1:
        frac = plan.bubble()
        lines.append(f"pipeline bubble: (p - 1)/m = {lay.pp - 1}/{lay.micro_batches} = "
                     f"{_pct(frac)} of the ideal step time")
    if plan.time is not None:
        tm = plan.time
        lines.append(f"time: {scientific(tm.tokens, 3)} tokens at MFU {_pct(tm.mfu)} "
                     f"(HFU {_pct(tm.hfu)}): {grouped(tm.days, 1)} days "
                     f"({scientific(tm.seconds, 3)} s)")
    return lines


def train_json(plan: TrainingPlan) -> dict[str, Any]:
    """``symroof train --json``: every figure as a number, bytes in bytes."""
    lay = plan.layout
    stages = [{"stage": s.stage, "in_flight": json_number(s.in_flight),
               "params": json_number(s.params), "weights_bytes": json_number(s.weights),
               "gradients_bytes": json_number(s.gradients),
               "optimizer_state_bytes": json_number(s.optimizer_state),
               "activations_bytes": json_number(s.activations),
               "total_bytes": json_number(s.total)} for s in plan.memory.stages]
    doc: dict[str, Any] = {
        "model": plan.model.name, "hardware": plan.hardware.name, "precision": plan.precision,
        "recompute": plan.recompute.value,
        "layout": {"tp": json_number(lay.tp), "pp": json_number(lay.pp),
                   "dp": json_number(lay.dp), "zero": lay.zero,
                   "sequence_parallel": lay.sequence_parallel,
                   "micro_batches": json_number(lay.micro_batches),
                   "devices": json_number(lay.devices)},
        "micro_batch": json_number(plan.micro_batch), "seq": json_number(plan.seq),
        "stages": stages, "peak_stage": plan.memory.peak.stage,
        "capacity_bytes": json_number(plan.capacity), "fits": plan.fits,
        "activations_per_layer_bytes": json_number(plan.memory.per_layer),
        "model_flops_per_step": json_number(plan.model_flops_per_step),
        "hardware_flops_per_step": json_number(plan.hardware_flops_per_step),
        "bubble": json_number(plan.bubble()),
    }
    if plan.time is not None:
        tm = plan.time
        doc["time"] = {"tokens": json_number(tm.tokens), "mfu": json_number(tm.mfu),
                       "hfu": json_number(tm.hfu), "seconds": json_number(tm.seconds),
                       "days": json_number(tm.days)}
    return doc
