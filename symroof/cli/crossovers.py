"""``symroof crossovers``: the crossovers a hybrid (recurrent + attention) model raises.

``symroof crossovers --model nemotron-h.json --hardware h100-sxm --set B=8 --set S=8192``
prints, from :func:`symroof.atlas.hybrid.hybrid_crossovers`, each crossover as a formula
with the conditions under which it exists, and its number at ``--set``:

- the context S past which a decode step moves fewer bytes than the all-attention model
  of the same widths (``decode_bytes``);
- the context S at which one sequence's K and V weigh as much as its recurrent states
  (``state_vs_kv``);
- the decode intensity as the batch grows without bound, hybrid and all-attention, with
  their limits as S grows (``decode_intensity``);
- the chunk size Q at which the fused chunked scan of the Mamba-2 layers reaches the
  ridge (``chunk``; only for models with Mamba-2 layers).

Without ``--hardware`` the formulas keep ``b`` (bytes per value) and the ridge ``R``;
with it, ``b`` is ``--precision``'s bytes and ``R`` the chip's ridge at that precision.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sympy as sp

from symroof.cli.base import Command, Output
from symroof.cli.common import add_format, check_format, choices, parse_sets
from symroof.errors import SymroofError
from symroof.models.hybrid import HybridModel
from symroof.options import ExpertReads
from symroof.precision import DEFAULT, Precision
from symroof.present.commands import dumps, formula
from symroof.present.numbers import json_number, text_number
from symroof.request import load_model
from symroof.solve import Crossover, limit
from symroof.symbols import B, S

__all__ = ["COMMANDS"]

#: What each crossover equates, as the output names it.
_WHAT = {
    "decode_bytes": "decode-step bytes = those of the all-attention model of the same widths "
                    "(the hybrid moves fewer at larger S)",
    "state_vs_kv": "one sequence's K and V bytes = its recurrent-state bytes",
    "chunk": "the fused chunked scan's intensity = the ridge R (compute-bound at larger Q)",
}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a hybrid model: config.json (or a folder "
                   "holding one) of a hybrid family, or a preset")
    p.add_argument("--hardware", default=None, metavar="CHIP",
                   help="a chip name or file: b and the ridge R take its numbers")
    p.add_argument("--precision", default=None,
                   help=f"number format of b and of the chip's peak (default {DEFAULT})")
    p.add_argument("--set", action="append", metavar="NAME=V",
                   help="B (sequences) and S (context) the numbers are taken at (one value "
                   "each)")
    p.add_argument("--expert-reads", dest="expert_reads", default=ExpertReads.EXPECTED.value,
                   choices=choices(ExpertReads),
                   help="a mixture of experts: routed experts a decode step reads (default "
                   "expected: E(1 - (1 - k/E)^B) under uniform routing; all: every expert, "
                   "the same limit as B grows, in closed form where the expected one is "
                   "beyond the solver)")
    add_format(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _model(text: str) -> HybridModel:
    m = load_model(text)
    if not isinstance(m, HybridModel) or m.ssm_layers == 0:
        raise SymroofError(f"--model {text}: expected a hybrid model with recurrent layers (a "
                           f"config.json of a state-space or hybrid family), got "
                           f"{type(m).__name__} {m.name!r} without recurrent layers")
    return m


def _values(items: Sequence[str]) -> dict[sp.Symbol, sp.Expr]:
    values: dict[sp.Symbol, sp.Expr] = {}
    for k, v in parse_sets(items, {B, S}, workload="crossovers").items():
        if len(v) != 1:
            raise SymroofError(f"--set {k.name}: crossovers takes one value per symbol, got "
                               f"{len(v)}")
        values[k] = v[0]
    return values


def _at(expr: sp.Expr, values: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    """``expr`` at ``values`` when that leaves a number, else None."""
    v = expr.xreplace(dict(values))
    return v if v.is_number else None


def _json_at(expr: sp.Expr, values: Mapping[sp.Symbol, sp.Expr]) -> object:
    """``expr`` at ``values``' S as a JSON number (None without S or a number there)."""
    v = _at(expr, {S: values[S]}) if S in values else None
    return None if v is None else json_number(v)


def _solution_doc(c: Crossover, values: Mapping[sp.Symbol, sp.Expr]) -> dict[str, Any]:
    doc: dict[str, Any] = {"var": str(c.var), "formula": str(c.value),
                           "conditions": [str(x) for x in c.conditions],
                           "number": None if c.value.free_symbols else json_number(c.value)}
    if values and c.value.free_symbols:
        v = c.at({k: x for k, x in values.items() if k != c.var})
        doc["at"] = None if v is None or not v.is_number else json_number(v)
    return doc


def _solution_lines(c: Crossover, values: Mapping[sp.Symbol, sp.Expr],
                    fmt: str) -> Iterable[str]:
    shown = formula(c.value, fmt)
    num = "" if c.value.free_symbols or text_number(c.value) == sp.sstr(c.value) \
        else f" = {text_number(c.value)}"
    yield f"  {c.var} = {shown}{num}"
    for x in c.conditions:
        yield f"    when {formula(x, fmt)}"
    if values and c.value.free_symbols:
        used = {k: v for k, v in values.items() if k != c.var and k in c.value.free_symbols}
        v = c.at(used) if used else None
        if v is None and used:
            yield f"    at {_point(used)}: none (a condition fails)"
        elif v is not None and v.is_number:
            yield f"    at {_point(used)}: {c.var} = {text_number(v)}"


def _point(values: Mapping[sp.Symbol, sp.Expr]) -> str:
    return " ".join(f"{k.name}={text_number(v)}" for k, v in values.items())


class _Result:
    """What the command computed, for its text and JSON forms."""

    def __init__(self, args: argparse.Namespace) -> None:
        from symroof import hardware  # the chip tables, only once a chip is named
        from symroof.atlas.hybrid import hybrid_crossovers  # the solver, after the checks

        self.model = _model(args.model)
        self.values = _values(args.set or [])
        self.precision = Precision.parse(args.precision or DEFAULT, "--precision")
        self.chip = None if args.hardware is None else hardware.resolve(args.hardware)
        self.ridge: sp.Expr | None = None
        if self.chip is not None:
            self.ridge = self.chip.ridge(self.precision.value)
        elif args.precision is not None:
            raise SymroofError(f"--precision {args.precision}: sets b and the ridge of "
                               "--hardware; give a chip too")
        self.x = hybrid_crossovers(self.model, self.chip, precision=self.precision,
                                   expert_reads=args.expert_reads)
        self.limits = {name: limit(expr, S) for name, expr in
                       (("hybrid", self.x.intensity_limit),
                        ("all_attention", self.x.attention_intensity_limit))}

    def header(self) -> str:
        m = self.model
        head = (f"hybrid crossovers of {m.name}: {text_number(m.layers)} layers, "
                f"{text_number(m.ssm_layers)} recurrent, {text_number(m.attention_layers)} "
                "with attention")
        if self.chip is not None and self.ridge is not None:
            head += (f"; on {self.chip.name} at {self.precision.value} (b = "
                     f"{text_number(sp.Integer(1) * self.precision.bytes)}, ridge R = "
                     f"{text_number(self.ridge)} FLOP/B)")
        return head

    def intensities(self) -> dict[str, sp.Expr]:
        out = {"hybrid": self.x.intensity_limit}
        if self.model.attention_layers != 0:
            out["all_attention"] = self.x.attention_intensity_limit
        return out

    def lines(self, fmt: str) -> Iterable[str]:
        from symroof.atlas.hybrid import NO_ATTENTION  # loaded by __init__ already

        yield self.header()
        for key, sols in (("decode_bytes", self.x.decode_bytes),
                          ("state_vs_kv", self.x.state_vs_kv)):
            yield ""
            yield f"{key}: {_WHAT[key]}"
            if not sols:
                yield (f"  none: {NO_ATTENTION}" if self.model.attention_layers == 0
                       else "  no positive S")
            for c in sols:
                yield from _solution_lines(c, self.values, fmt)
        yield ""
        yield "decode_intensity: the decode step's FLOP/B as B -> oo (weights drop out)"
        names = {"hybrid": "hybrid", "all_attention": "all-attention"}
        for key, expr in self.intensities().items():
            yield f"  {names[key]}: I = {formula(expr, fmt)}"
            yield f"    -> {formula(self.limits[key], fmt)} as S -> oo"
            v = _at(expr, {S: self.values[S]}) if S in self.values else None
            if v is not None:
                bound = ""
                if self.ridge is not None:
                    bound = " (memory-bound)" if v < self.ridge else " (compute-bound)"
                yield f"    at S={text_number(self.values[S])}: {text_number(v)}{bound}"
        if self.model.ssm is not None:
            yield ""
            yield f"chunk: {_WHAT['chunk']}"
            if not self.x.chunk:
                yield "  no positive Q (the scan stays memory-bound at every chunk size)"
            for c in self.x.chunk:
                yield from _solution_lines(c, self.values, fmt)
            if self.x.chunk and self.x.chunk[0].value.is_number:
                q = self.model.ssm.chunk
                side = "memory" if q < self.x.chunk[0].value else "compute"
                yield f"    the model's chunk {text_number(q)}: {side}-bound in the scan"

    def doc(self) -> dict[str, Any]:
        m = self.model
        v = self.values
        return {
            "model": m.name, "layers": json_number(m.layers),
            "recurrent_layers": json_number(m.ssm_layers),
            "attention_layers": json_number(m.attention_layers),
            "hardware": None if self.chip is None else self.chip.name,
            "precision": None if self.chip is None else self.precision.value,
            "ridge": None if self.ridge is None else json_number(self.ridge),
            "subs": {k.name: json_number(x) for k, x in v.items()},
            "decode_bytes": [_solution_doc(c, v) for c in self.x.decode_bytes],
            "state_vs_kv": [_solution_doc(c, v) for c in self.x.state_vs_kv],
            "decode_intensity": {
                key: {"formula": str(expr), "as_S_to_oo": str(self.limits[key]),
                      "at": _json_at(expr, v)}
                for key, expr in self.intensities().items()},
            "chunk": None if m.ssm is None else [_solution_doc(c, v) for c in self.x.chunk],
        }


def _run(args: argparse.Namespace, out: Output) -> int:
    fmt = check_format(args)
    result = _Result(args)
    if args.json:
        out(dumps(result.doc()))
        return 0
    for line in result.lines(fmt):
        out(line)
    return 0


COMMANDS = (Command("crossovers", "a hybrid model's crossovers: decode bytes, state vs KV, "
                    "decode intensity, scan chunk", _configure, _run),)
