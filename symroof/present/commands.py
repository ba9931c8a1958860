"""What the ``symroof`` commands print: their records as text, LaTeX, Markdown or JSON.

Formulas in JSON are SymPy syntax (``str``), which :func:`symroof.parse.parse_expr` reads
back; formulas for people are in the textbook's shape and factor order.

>>> from symroof.symbols import n, b
>>> formula_line("I", 2*n/(3*b), "markdown")
'- $I = \\\\frac{2 n}{3 b}$'
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sympy as sp

from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.evaluate import Point, Roofline
from symroof.models import PRESETS
from symroof.models import get as get_model
from symroof.present.formula import latex, text
from symroof.present.numbers import json_number, text_number
from symroof.present.records import (gigabytes, memory_line, seconds, serving_lines, to_dict,
                                     to_text)
from symroof.request import Request
from symroof.serving import Capacity, ServingRow, Speculation
from symroof.solve import Crossover

__all__ = ["FORMATS", "formula", "formula_line", "dumps", "derive_json", "derive_lines",
           "request_doc",
           "limit_doc", "limit_lines", "crossover_doc", "crossover_lines", "at", "ServingRow",
           "memory_doc", "memory_lines", "capacity_doc", "capacity_lines", "SERVED"]


#: Workloads whose eval rows carry serving figures (latency, tokens/s, memory per device).
SERVED = frozenset({"decode", "prefill"})



#: Formats for formulas: plain text (SymPy syntax in textbook order), LaTeX, Markdown.
FORMATS = ("text", "latex", "markdown")


def formula(expr: sp.Expr, fmt: str) -> str:
    """``expr`` in ``fmt``: text, latex (math mode body) or markdown (``$...$``)."""
    if fmt == "text":
        return text(expr)
    if fmt == "latex":
        return latex(expr)
    if fmt == "markdown":
        return f"${latex(expr)}$"
    raise SymroofError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")


def formula_line(name: str, expr: sp.Expr, fmt: str) -> str:
    """``name = expr`` as one line of ``fmt``."""
    if fmt == "markdown":
        return f"- ${name} = {latex(expr)}$"
    if fmt == "latex":
        return f"{name} = {latex(expr)}"
    return f"{name} = {formula(expr, fmt)}"


def dumps(doc: object) -> str:
    """JSON text: sorted keys, one space indent; never NaN or Infinity."""
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)


def at(values: Mapping[sp.Symbol, sp.Expr]) -> str:
    """``M=1 N=3``: an assignment as a row label."""
    return " ".join(f"{k.name}={text_number(v)}" for k, v in values.items())


def _subs(values: Mapping[sp.Symbol, sp.Expr]) -> dict[str, object]:
    return {k.name: json_number(v) for k, v in values.items()}


# -- derive / eval -----------------------------------------------------------------


def _plain(value: object) -> Any:
    """A model field's value as JSON: numbers exact, symbols and enums by name."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (int, float, sp.Number)):
        return json_number(value)
    if isinstance(value, sp.Basic):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def model_fields(model: object) -> dict[str, Any] | None:
    """The fields that make a request's model, as JSON, where its name alone does not say
    (None for no model, a name, or a shipped preset as it ships): a claim file's model
    table, a configuration read from a file, or a preset with changed fields (then only
    the fields that differ from the preset's, with ``"preset": True``)."""
    if model is None or isinstance(model, str):
        return None
    name = getattr(model, "name", type(model).__name__)
    preset: object = None
    if name in PRESETS:
        try:
            preset = get_model(name)
        except SymroofError:
            preset = None
    if preset == model or not dataclasses.is_dataclass(model) or isinstance(model, type):
        return None
    same = type(preset) is type(model)
    fields = {f.name: _plain(getattr(model, f.name)) for f in dataclasses.fields(model)
              if f.name != "name" and not (same and getattr(preset, f.name) ==
                                           getattr(model, f.name))}
    return {**({"preset": True} if same else {}), **fields}


def request_doc(r: Request) -> dict[str, Any]:
    """The request a command ran, as JSON: what a reader needs to ask it again."""
    chip = r.chip if r.chip is None or isinstance(r.chip, str) else r.chip.name
    model = r.model if r.model is None or isinstance(r.model, str) else r.model.name
    fields = model_fields(r.model)
    n = r.numerics
    return {"workload": r.workload,
            "options": {k: v if isinstance(v, (bool, int)) else str(v) for k, v in r.options},
            "model": model, **({} if fields is None else {"model_fields": fields}),
            "layout": {"tp": r.layout.tp, "pp": r.layout.pp,
                       "microbatches": r.layout.microbatches,
                       "expert_reads": str(r.layout.expert_reads)},
            "numerics": {"weights": str(n.weights), "kv_cache": str(n.kv_cache),
                         "activations": str(n.activations), "peak": str(n.peak),
                         "b": str(n.values), "per_kind": n.per_kind},
            "hardware": chip, "unit": r.unit, "level": r.level, "link": r.link,
            "efficiency": json_number(r.efficiency), "reserve": json_number(r.reserve),
            "collective": r.collective, "latency": r.latency,
            "sets": {k.name: [json_number(v) for v in values] for k, values in r.sets},
            **({} if not r.fixed else {"fixed": {k.name: json_number(v) for k, v in r.fixed}}),
            **({} if not r.keywords else {"keywords": {k: json_number(v) for k, v in r.keywords}}),
            **({} if r.prompt is None else {"prompt": json_number(r.prompt)}),
            **({} if r.draft is None else {"draft": {
                "model": r.draft.model if isinstance(r.draft.model, str) else r.draft.model.name,
                "tokens": json_number(r.draft.tokens),
                "acceptance": json_number(r.draft.acceptance),
                "tp": json_number(r.draft.tp)}})}


def derive_json(name: str, wl: Analysis, points: Iterable[Point | ServingRow], *,
                request: Request | None = None) -> dict[str, Any]:
    """``symroof derive|eval --json``: the formulas, one row per point, and the request
    that made them."""
    doc: dict[str, Any] = {"workload": name, "convention": to_text(wl.convention),
                           "flops": str(wl.flops), "bytes": str(wl.bytes),
                           "intensity": str(wl.intensity), "rows": []}
    if request is not None:
        doc["request"] = request_doc(request)
    if wl.assumptions:
        doc["assumptions"] = list(wl.assumptions)
    for row in points:
        p = row.point if isinstance(row, ServingRow) else row
        item: dict[str, Any] = {"subs": _subs(p.values), "flops": json_number(p.flops),
                                "bytes": json_number(p.bytes),
                                "intensity": json_number(p.intensity)}
        if p.roofline is not None:
            item.update(to_dict(p.roofline))
            if name in SERVED:   # the serving figure the text prints, named
                key = "itl_s" if name == "decode" else "ttft_s"
                item[key] = json_number(p.roofline.step_time_s)
        if isinstance(row, ServingRow):
            item.update(_extras(row))
        doc["rows"].append(item)
    return doc


def _extras(row: ServingRow) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if row.ttft is not None:
        out["ttft_s"] = json_number(row.ttft.step_time_s)
        out["ttft_prompt_tokens"] = json_number(row.ttft.tokens_per_sequence)
    sp_ = row.speculation
    if sp_ is not None:
        out["speculative"] = {
            "draft_tokens": json_number(sp_.draft_tokens),
            "acceptance": json_number(sp_.acceptance),
            "tokens_per_target_pass": json_number(sp_.tokens_per_pass),
            "target_step_s": json_number(sp_.target_step_s),
            "draft_step_s": json_number(sp_.draft_step_s),
            "verify_s": json_number(sp_.verify_s), "round_s": json_number(sp_.round_s),
            "speedup": json_number(sp_.speedup)}
    return out


def derive_lines(name: str, wl: Analysis, points: Iterable[Point | ServingRow],
                 fmt: str) -> Iterable[str]:
    """``symroof derive|eval``: the formulas, then a line (and a roofline line) per point;
    a decode or prefill row adds its serving figures."""
    yield f"{name}  ({to_text(wl.convention)})"
    for sym, expr in (("F", wl.flops), ("Q", wl.bytes), ("I", wl.intensity)):
        yield "  " + formula_line(sym, expr, fmt)
    for note in wl.assumptions:
        yield f"  assuming {note}"
    for row in points:
        p = row.point if isinstance(row, ServingRow) else row
        if p.values:
            yield (f"  at {at(p.values)}: F = {text_number(p.flops)} FLOP, "
                   f"Q = {text_number(p.bytes)} B, I = {text_number(p.intensity)} FLOP/B")
        if p.roofline is None:
            continue
        yield "    " + to_text(p.roofline)
        if name in SERVED:
            yield from ("    " + line for line in serving_lines(p.roofline))
        if isinstance(row, ServingRow):
            yield from ("    " + line for line in _extra_lines(row))


def _extra_lines(row: ServingRow) -> Iterable[str]:
    if row.ttft is not None:
        yield (f"time to first token ({text_number(row.ttft.tokens_per_sequence)}-token "
               f"prompts, prefilled together): {seconds(row.ttft.step_time_s)}")
    s = row.speculation
    if s is not None:
        yield (f"speculative, {s.draft_tokens} drafted at acceptance "
               f"{text_number(s.acceptance)}: {text_number(s.tokens_per_pass)} tokens per "
               f"target pass; round {seconds(s.round_s)} ({s.draft_tokens} draft steps of "
               f"{seconds(s.draft_step_s)} + verify {seconds(s.verify_s)}) against "
               f"{seconds(s.target_step_s)} a token: speedup {text_number(s.speedup)}x")


# -- memory, capacity ------------------------------------------------------------------


def _layout(r: Roofline) -> str:
    return f"tp {r.tp}, pp {r.pp}" + ("" if r.microbatches == 1
                                      else f" x {r.microbatches} micro-batches")


def memory_doc(model: str, found: Sequence[tuple[Mapping[sp.Symbol, sp.Expr], Roofline]]
               ) -> dict[str, Any]:
    """``symroof memory --json``: the footprint per device, one row per point."""
    rows = []
    for values, r in found:
        assert r.memory is not None  # roofline always measures it
        rows.append({"subs": _subs(values), "tp": json_number(r.tp), "pp": json_number(r.pp),
                     "microbatches": json_number(r.microbatches), "fits": r.fits,
                     "memory_bytes": json_number(r.memory.total),
                     "memory_capacity_bytes": json_number(r.memory.capacity),
                     **to_dict(r.memory)})
    return {"model": model, "hardware": found[0][1].hardware if found else None, "rows": rows}


def memory_lines(model: str, found: Sequence[tuple[Mapping[sp.Symbol, sp.Expr], Roofline]]
                 ) -> Iterable[str]:
    """``symroof memory``: the model, then a footprint line per point."""
    yield f"model: {model}"
    for values, r in found:
        assert r.memory is not None
        yield (f"  at {at(values)} on {r.hardware} ({_layout(r)}), per device: "
               f"{memory_line(r.memory)}")


def capacity_doc(model: str, chip: str, pairs: Sequence[tuple[sp.Expr, Capacity]]
                 ) -> dict[str, Any]:
    """``symroof capacity --json``: sequences that fit, one row per context."""
    return {"model": model, "hardware": chip, "rows": [
        {"context": json_number(ctx), "sequences": json_number(c.sequences),
         "exact": json_number(c.exact), "tp": json_number(c.tp), "pp": json_number(c.pp),
         "capacity_bytes": json_number(c.capacity), "reserve": json_number(c.reserve),
         "usable_bytes": json_number(c.usable), "weights_bytes": json_number(c.weights),
         "free_bytes": json_number(c.free), "kv_bytes_per_sequence": json_number(c.per_sequence)}
        for ctx, c in pairs]}


def capacity_lines(model: str, chip: str, pairs: Sequence[tuple[sp.Expr, Capacity]]
                   ) -> Iterable[str]:
    """``symroof capacity``: the room for caches on each device, then a line per context."""
    yield f"model: {model}"
    for ctx, c in pairs:
        reserve = "" if c.reserve == 0 else f" x (1 - {text_number(c.reserve)})"
        yield (f"  context {text_number(ctx)} on {chip} (tp {c.tp}, pp {c.pp}), per device: "
               f"{gigabytes(c.capacity)}{reserve} - weights {gigabytes(c.weights)} = "
               f"{gigabytes(c.free)} for KV caches of {gigabytes(c.per_sequence)} a sequence: "
               f"{text_number(c.sequences)} sequences ({text_number(c.exact)})")
    yield ("  counts weights and KV caches only; activations, the runtime and fragmentation "
           "take what --reserve keeps back")


# -- solve ----------------------------------------------------------------------------


def limit_doc(of: str, var: str, to: str, result: sp.Expr,
              fixed: Mapping[sp.Symbol, sp.Expr], value: sp.Expr | None) -> dict[str, Any]:
    """``symroof solve limit --json``."""
    doc: dict[str, Any] = {"kind": "limit", "of": of, "var": var, "to": to,
                           "result": str(result), "display": text(result)}
    if fixed:
        doc["subs"] = _subs(fixed)
        doc["value"] = json_number(value)
    return doc


def limit_lines(of: str, var: str, to: str, result: sp.Expr,
                fixed: Mapping[sp.Symbol, sp.Expr], value: sp.Expr | None,
                fmt: str) -> Iterable[str]:
    """``symroof solve limit``."""
    yield f"lim {var}->{to} of {of} = {formula(result, fmt)}"
    if fixed and value is not None:
        yield f"  at {at(fixed)}: {text_number(value)}"


def crossover_doc(lhs: str, rhs: str, var: str, fixed: Mapping[sp.Symbol, sp.Expr],
                  solutions: Sequence[Crossover]) -> dict[str, Any]:
    """``symroof solve crossover --json``."""
    return {"kind": "crossover", "lhs": lhs, "rhs": rhs, "var": var, "subs": _subs(fixed),
            "solutions": [{"value": str(c.value), "display": text(c.value),
                           "conditions": [str(x) for x in c.conditions],
                           "number": None if c.value.free_symbols else json_number(c.value)}
                          for c in solutions]}


def crossover_lines(lhs: str, rhs: str, var: str, solutions: Sequence[Crossover],
                    fmt: str) -> Iterable[str]:
    """``symroof solve crossover``: each solution with its number and conditions."""
    if not solutions:
        reason = getattr(solutions, "reason", "")   # symroof.solve.Crossings says why
        yield f"{lhs} = {rhs}: {reason or f'no positive {var}'}"
    for c in solutions:
        cond = (f"  (when {' and '.join(formula(x, fmt) for x in c.conditions)})"
                if c.conditions else "")
        shown = formula(c.value, fmt)
        num = "" if c.value.free_symbols or text_number(c.value) == text(c.value) \
            else f" = {text_number(c.value)}"
        yield f"{lhs} = {rhs} at {var} = {shown}{num}{cond}"
