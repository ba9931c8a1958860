"""Records as dicts (for JSON) and as text (for terminals): one place for each record type.

>>> from symroof import hardware
>>> to_dict(hardware.get("h100-sxm"))["ridges"][2]["ops_per_byte"]
'19788/67'
>>> print(to_text(Convention()))
FLOPs: two_per_mac, all ops; traffic: all tensors
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

import sympy as sp

from symroof.cost import Convention
from symroof.device import DeviceMemory
from symroof.errors import SymroofError
from symroof.evaluate import Roofline
from symroof.footprint import Footprint
from symroof.hardware import UNITS, HardwareSpec
from symroof.ir import Kind
from symroof.models import TransformerModel
from symroof.present.numbers import exact_fields, json_number, quantity, si, text_number

__all__ = ["to_dict", "to_text", "serving_lines", "seconds", "memory_line", "gigabytes"]

_OPS = {"int8": "OP/s", "int4": "OP/s"}


@singledispatch
def to_dict(record: object) -> dict[str, Any]:
    """A JSON-ready dict of ``record`` (exact numbers as ints or ``"p/q"`` strings)."""
    raise SymroofError(f"to_dict: no dict form for {type(record).__name__}")


@singledispatch
def to_text(record: object) -> str:
    """A few lines of plain text describing ``record``."""
    raise SymroofError(f"to_text: no text form for {type(record).__name__}")


# -- hardware ---------------------------------------------------------------------


@to_dict.register
def _hardware_dict(spec: HardwareSpec) -> dict[str, Any]:
    mm = spec.main_memory
    return {
        "name": spec.name, "display_name": spec.display_name,
        "ops_per_mac": spec.ops_per_mac, "main_memory": mm, "notes": spec.notes,
        "peaks": [{"unit": p.unit, "precision": p.precision, "source": p.source,
                   **exact_fields("ops_per_s", p.rate)} for p in spec.peaks],
        "levels": [{"name": m.name, "source": m.source,
                    **exact_fields("bandwidth_bytes_per_s", m.bandwidth),
                    **exact_fields("capacity_bytes", m.capacity)} for m in spec.levels],
        "interconnects": [{"name": k, "source": v.source, "direction": v.direction,
                           **exact_fields("bandwidth_bytes_per_s", v.bandwidth),
                           **exact_fields("per_direction_bytes_per_s", v.per_direction)}
                          for k, v in spec.interconnects.items()],
        "ridges": [{"unit": p.unit, "precision": p.precision, "level": mm,
                    **exact_fields("ops_per_byte", spec.ridge(p.precision, p.unit),
                                   always_float=True)}
                   for p in spec.peaks],
    }


@to_text.register
def _hardware_text(spec: HardwareSpec) -> str:
    mac = "2 operations" if spec.ops_per_mac == 2 else "1 operation"
    lines = [f"{spec.name}: {spec.display_name}",
             f"  peaks count a MAC as {mac}; main memory: {spec.main_memory}"]
    for unit in UNITS:
        rates = [f"{p.precision} {si(p.rate, _OPS.get(p.precision, 'FLOP/s'), 12)}"
                 for p in spec.peaks if p.unit == unit]
        if rates:
            lines.append(f"  {unit} peak: " + ", ".join(rates))
    for m in spec.levels:
        parts = [si(m.bandwidth, "B/s") if m.bandwidth is not None else "",
                 si(m.capacity, "B") if m.capacity is not None else ""]
        lines.append(f"  memory {m.name}: " + ", ".join(x for x in parts if x))
    lines += [f"  interconnect {k}: {si(v.bandwidth, 'B/s')}"
              + (f" (both directions; {si(v.per_direction, 'B/s')} each way)"
                 if v.direction == "both" else " each way")
              for k, v in spec.interconnects.items()]
    lines.append(f"  ridge vs {spec.main_memory} (ops/byte): " + ", ".join(
        f"{p} {float(spec.ridge(p)):.4g}" for p in spec.precisions()))
    if spec.notes:
        lines.append(f"  note: {spec.notes}")
    return "\n".join(lines)


# -- conventions, models, footprints -------------------------------------------------


@to_text.register
def _convention_text(conv: Convention) -> str:
    ops = "all ops" if conv.all_ops else "+".join(sorted(conv.ops))
    memory = frozenset(Kind) - {Kind.COMMUNICATION}
    kinds = "all tensors" if conv.all_traffic else "all memory traffic" \
        if conv.traffic == memory else "+".join(sorted(conv.traffic))
    return f"FLOPs: {conv.flop_count.value}, {ops}; traffic: {kinds}"


@to_text.register
def _model_text(m: TransformerModel) -> str:
    attn = "MHA" if m.kv_heads == m.heads else "MQA" if m.kv_heads == 1 else "GQA"
    lat = m.latent
    if lat is not None:
        attn = (f"MLA: latent {lat.kv_rank} + rotary key {lat.rope_dim} cached, q rank "
                f"{lat.q_rank}, v_head_dim {lat.v_dim}")
    experts = "" if m.experts == 1 else f" experts={m.experts} (top-{m.experts_per_token})"
    if m.experts != 1 and m.expert_d_ff is not None:
        experts += f" expert_d_ff={m.expert_d_ff}"
    if m.shared_d_ff is not None:
        experts += f" shared_d_ff={m.shared_d_ff}" + (" (gated)" if m.shared_gate else "")
    if m.dense_layers != 0:
        experts += f" dense_layers={m.dense_layers}"
    window = "" if m.window is None else \
        f" window={m.window} on {m.windowed_layers} of {m.layers} layers"
    active = "" if m.experts == 1 else f" active_params={text_number(m.active_params)}"
    return (f"{m.name}: L={m.layers} D={m.d_model} heads={m.heads} "
            f"kv_heads={m.kv_heads} ({attn}) head_dim={m.head_dim} d_ff={m.d_ff} "
            f"mlp={m.mlp}{experts}{window} vocab={m.vocab} params={text_number(m.params)}"
            f"{active}")


@to_dict.register
def _footprint_dict(fp: Footprint) -> dict[str, Any]:
    return {"weights": json_number(fp.weights), "kv_cache": json_number(fp.kv_cache),
            "activations": json_number(fp.activations), "gradients": json_number(fp.gradients),
            "optimizer_state": json_number(fp.optimizer_state), "total": json_number(fp.total)}


# -- rooflines ------------------------------------------------------------------------


@to_dict.register
def _device_memory_dict(fp: DeviceMemory) -> dict[str, Any]:
    return {"weights": json_number(fp.weights), "kv_cache": json_number(fp.kv_cache),
            "activations": json_number(fp.activations),
            "communication": json_number(fp.communication), "total": json_number(fp.total),
            "capacity": json_number(fp.capacity), "reserve": json_number(fp.reserve),
            "usable": json_number(fp.usable), "fits": fp.fits}


@to_dict.register
def _roofline_dict(r: Roofline) -> dict[str, Any]:
    mem = r.memory
    return {"hardware": r.hardware, "precision": r.precision, "level": r.level,
            "peak_flop_per_s": json_number(r.peak),
            "bandwidth_bytes_per_s": json_number(r.bandwidth),
            "ridge": json_number(r.ridge), "attainable_flop_per_s": json_number(r.attainable),
            "compute_time_s": json_number(r.compute_time_s),
            "memory_time_s": json_number(r.memory_time_s),
            "time_s": json_number(r.time_s), "time_serial_s": json_number(r.time_serial_s),
            "bound": r.bound, "tokens_per_s": json_number(r.tokens_per_s),
            "communication_bytes": json_number(r.communication),
            "communication_time_s": json_number(r.communication_time_s),
            "time_overlapped_s": json_number(r.time_overlapped_s), "limiter": r.limiter,
            "link": r.link, "link_bytes_per_s_per_direction": json_number(r.link_bandwidth),
            "link_latency_s": json_number(r.link_latency_s), "collective": r.collective,
            "tp": json_number(r.tp), "pp": json_number(r.pp),
            "microbatches": json_number(r.microbatches), "bubble": json_number(r.bubble),
            "efficiency": json_number(r.efficiency), "step_time_s": json_number(r.step_time_s),
            "sequences": json_number(r.sequences),
            "tokens_per_sequence": json_number(r.tokens_per_sequence),
            "tokens_per_s_per_user": json_number(r.tokens_per_s_per_user),
            "flops_per_token": json_number(None if r.tokens is None else r.flops / r.tokens),
            "fits": r.fits,
            "memory_bytes": None if mem is None else json_number(mem.total),
            "memory_capacity_bytes": None if mem is None else json_number(mem.capacity),
            "memory": None if mem is None else to_dict(mem)}


@to_text.register
def _roofline_text(r: Roofline) -> str:
    return (f"on {r.hardware} ({r.precision}, {r.level}): ridge {text_number(r.ridge)} FLOP/B, "
            f"{r.bound or 'bound depends on free symbols'}; time {quantity(r.time_s, 's')} "
            f"(no overlap {quantity(r.time_serial_s, 's')}), "
            f"attainable {quantity(r.attainable, 'FLOP/s')}")


def seconds(x: sp.Expr) -> str:
    """A time for people: ``5.24 ms``, ``30 us``, ``1.2 s`` (:func:`quantity`)."""
    return quantity(x, "s")


def _gb(x: sp.Expr | None) -> str:
    """Bytes with a decimal prefix, four figures: ``17.64 GB`` (memory sizes side by side
    read best in one kind of prefix)."""
    return "unknown" if x is None else quantity(x, "B")


def serving_lines(r: Roofline) -> list[str]:
    """The serving figures of a decode or prefill roofline: the layout and its link,
    latency and tokens/s, memory per device and whether it fits."""
    out: list[str] = []
    if r.tp != 1 or r.pp != 1:
        link = "" if r.link is None or r.link_bandwidth is None else \
            f" over {r.link} ({si(r.link_bandwidth, 'B/s')} per direction)"
        pipe = "" if r.pp == 1 else (f", pp {r.pp} x {r.microbatches} micro-batch"
                                     f"{'es' if r.microbatches != 1 else ''} (bubble "
                                     f"{text_number(r.bubble)})")
        alg = "" if r.collective == "ring" else f" ({r.collective} collectives)"
        lat = "" if r.link_latency_s == 0 else \
            f", {seconds(r.link_latency_s)} of it collective latency"
        out.append(f"tp {r.tp}{pipe}{link}{alg}: sends {_gb(r.communication)} in "
                   f"{seconds(r.communication_time_s)}{lat} (not overlapped; all overlapped "
                   f"{seconds(r.time_overlapped_s)})")
    per = r.tokens_per_sequence
    eff = "" if r.efficiency == 1 else f" at efficiency {text_number(r.efficiency)}"
    if per is not None and per == 1:
        out.append(f"decode{eff}: ITL {seconds(r.step_time_s)}, "
                   f"{text_number(r.tokens_per_s_per_user)} tokens/s per user, "
                   f"{text_number(r.tokens_per_s)} tokens/s in total")
    elif r.tokens_per_s is not None:
        users = "" if r.tokens_per_s_per_user is None else \
            f", {text_number(r.tokens_per_s_per_user)} tokens/s per sequence"
        out.append(f"prefill{eff}: {seconds(r.step_time_s)} (time to first token), "
                   f"{text_number(r.tokens_per_s)} tokens/s{users}")
    if r.memory is not None:
        out.append("memory per device: " + memory_line(r.memory))
    return out


def memory_line(m: DeviceMemory) -> str:
    """``weights 17.64 GB + KV cache ... = 17.81 GB of 80 GB: fits``."""
    verdict = {True: "fits", False: "does NOT fit", None: "fit unknown"}[m.fits]
    cap = "" if m.usable is None else f" of {_gb(m.usable)}" + (
        "" if m.reserve == 0 else f" ({text_number(1 - m.reserve)} of {_gb(m.capacity)})")
    return (f"weights {_gb(m.weights)} + KV cache {_gb(m.kv_cache)} "
            f"+ activations {_gb(m.activations)}"
            + ("" if m.communication == 0 else f" + buffers {_gb(m.communication)}")
            + f" = {_gb(m.total)}{cap}: {verdict}")


def gigabytes(x: sp.Expr | None) -> str:
    """Bytes with a decimal prefix, four figures (``17.64 GB``)."""
    return _gb(x)
