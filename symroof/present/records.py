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

from symroof.cost import Convention
from symroof.errors import SymroofError
from symroof.evaluate import Roofline
from symroof.footprint import Footprint
from symroof.hardware import UNITS, HardwareSpec
from symroof.models import TransformerModel
from symroof.present.numbers import exact_fields, json_number, si, text_number

__all__ = ["to_dict", "to_text"]

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
        "interconnects": [{"name": k, "source": v.source,
                           **exact_fields("bandwidth_bytes_per_s", v.bandwidth)}
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
    kinds = "all tensors" if conv.all_traffic else "+".join(sorted(conv.traffic))
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
    return (f"{m.name}: L={m.layers} D={m.d_model} heads={m.heads} "
            f"kv_heads={m.kv_heads} ({attn}) head_dim={m.head_dim} d_ff={m.d_ff} "
            f"mlp={m.mlp}{experts}{window} vocab={m.vocab}")


@to_dict.register
def _footprint_dict(fp: Footprint) -> dict[str, Any]:
    return {"weights": json_number(fp.weights), "kv_cache": json_number(fp.kv_cache),
            "activations": json_number(fp.activations), "gradients": json_number(fp.gradients),
            "optimizer_state": json_number(fp.optimizer_state), "total": json_number(fp.total)}


# -- rooflines ------------------------------------------------------------------------


@to_dict.register
def _roofline_dict(r: Roofline) -> dict[str, Any]:
    return {"hardware": r.hardware, "precision": r.precision, "level": r.level,
            "peak_flop_per_s": json_number(r.peak),
            "bandwidth_bytes_per_s": json_number(r.bandwidth),
            "ridge": json_number(r.ridge), "attainable_flop_per_s": json_number(r.attainable),
            "compute_time_s": json_number(r.compute_time_s),
            "memory_time_s": json_number(r.memory_time_s),
            "time_s": json_number(r.time_s), "time_serial_s": json_number(r.time_serial_s),
            "bound": r.bound, "tokens_per_s": json_number(r.tokens_per_s)}


@to_text.register
def _roofline_text(r: Roofline) -> str:
    return (f"on {r.hardware} ({r.precision}, {r.level}): ridge {text_number(r.ridge)} FLOP/B, "
            f"{r.bound or 'bound depends on free symbols'}; time {text_number(r.time_s)} s "
            f"(no overlap {text_number(r.time_serial_s)} s), "
            f"attainable {text_number(r.attainable)} FLOP/s")
