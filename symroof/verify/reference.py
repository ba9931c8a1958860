"""The claim-file reference, generated from the code's own tables so that it cannot drift.

Every recipe node (:data:`symroof.verify.grammar.NODE_KEYS`), every quantity a node reads
by ``q`` (:data:`symroof.verify.recipe.QUANTITY_NAMES`, with its unit from
:mod:`symroof.verify.units`), every claim field, rounding rule, status, unit, workload
builder, operation and assumption. The words for each name are in the tables below; the
names themselves come from the interpreter, and a test fails when a name has no line
here (or a line names nothing). ``symroof report --reference`` prints :func:`reference`,
and the docs site includes the same text.

>>> text = reference()
>>> text.splitlines()[0]
'# Claim file reference'
>>> "| `ridge` | FLOP/B | peak / bandwidth" in text
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping

from symroof.parse import FUNCTIONS
from symroof.verify import units
from symroof.verify.compare import RULES
from symroof.verify.grammar import NODE_KEYS, QUANTITY_DIMENSIONS, SPEC_KEYS
from symroof.verify.recipe import (ASSUMPTIONS, BUILDERS, CONSTANTS, OPERATIONS,
                                   QUANTITY_NAMES)
from symroof.verify.run import STATUSES
from symroof.verify.schema import CLAIM_FIELDS

__all__ = ["reference", "NODES", "QUANTITIES", "ROUNDING", "STATUS", "DEFAULT_Q"]

#: What each kind of recipe node computes (keyed as NODE_KEYS).
NODES: Mapping[str, str] = {
    "let": "binds names to nodes (`let = {x = node}`), then `expr` uses them",
    "expr": "an expression over the canonical symbols, the file's [symbols] and let names: "
            "numbers, `+ - * / **`, parentheses, the functions listed under the table and "
            "`oo` (infinity)",
    "workload": "a workload's quantity `q`: `{builder = ..., args = [...]}` or "
                "`{graph = [rows]}`, optionally tiled, fused or under another convention",
    "model": "a model's quantity `q`: a preset name, `{preset = ..., weights = \"int4\"}` or "
             "`{transformer = {layers = ..., d_model = ..., heads = ...}}`",
    "hardware": "a chip's figure `q` from its hardware file, at `precision` (default bf16), "
                "`unit` (matrix, vector), memory `level`, and `ops_per_mac` (1 or 2)",
    "memory": "one part `q` of what serving or training a model holds in memory, at "
              "`batch` and `context`",
    "capacity": "how many sequences of `context` tokens fit on `hardware` beside the weights "
                "(over `tp` devices)",
    "roofline": "the roofline of a workload on a chip: its field `q` (a time, a rate...); "
                "`devices = n` is ideal tensor parallelism over n chips",
    "roofline_formula": "the roofline's algebra on given F, Q, peak, bandwidth (and tokens): "
                        "its field `q`",
    "limit": "the limit of a node as `var` (a name or a list of names) goes to `to` "
             "(default `oo`)",
    "crossover": "the positive solution `index` (from 0) of `lhs = rhs` in `var`",
    "curve": "the curve where `lhs = rhs` in the (x, y) plane: its expression y(x) or the "
             "invariant that stays constant along it",
    "theta": "the leading-order (Theta) form of a node, dropping `small` pairs [x, y] "
             "with x << y",
    "sensitivity": "the elasticity d ln f / d ln `var` of a node",
    "operation": "a named operation from the list below, with `args` and `kwargs`, or a "
                 "named constant",
    "min": "the least of a list of nodes",
    "max": "the greatest of a list of nodes",
    "over_hardware": "a node evaluated once per chip (`\"$hw\"` in the node names it), "
                     "reduced with `reduce` (min or max)",
}

#: The ``q`` a node reads when none is given.
DEFAULT_Q: Mapping[str, str] = {
    "workload": "I", "model": "params", "hardware": "ridge", "memory": "kv_cache",
    "roofline": "time_s", "roofline_formula": "time_s", "curve": "expr",
}

_ROOFLINE_Q = {
    "time_s": "max(F/peak, Q/bandwidth) plus the communication time (memory and compute "
              "overlap)",
    "compute_time_s": "F / peak: the time at the flat roof",
    "memory_time_s": "Q / bandwidth: the time on the slope",
    "time_serial_s": "F/peak + Q/bandwidth + communication: no overlap",
    "tokens_per_s": "tokens per second over all sequences",
    "tokens_per_s_per_user": "tokens per second each sequence gets (1 / inter-token latency)",
    "attainable": "min(peak, bandwidth x I): the FLOP/s the roofline allows",
    "peak": "the chip's peak at the precision (times `devices`)",
    "bandwidth": "the memory level's bandwidth (times `devices`)",
    "ridge": "peak / bandwidth: the intensity where the roofs meet",
    "intensity": "I = F / Q of the workload",
    "flops": "F, the workload's FLOPs",
    "bytes": "Q, the workload's counted bytes",
    "margin": "how far from the ridge: ridge/I when memory-bound, I/ridge otherwise",
}

#: What each quantity name means, per kind of node (keyed as QUANTITY_NAMES).
QUANTITIES: Mapping[str, Mapping[str, str]] = {
    "workload": {
        "F": "FLOPs of one run", "Q": "bytes moved, as the convention counts them",
        "I": "intensity F / Q", "F_weights": "FLOPs of contractions with a weight operand",
        "F_attention": "FLOPs of contractions of two activations (QK^T and PV)",
        "tokens": "tokens one run processes (workloads that have them)",
        "Q_weight": "bytes of weights", "Q_activation": "bytes of activations",
        "Q_kv_cache": "bytes of the KV cache", "Q_gradient": "bytes of gradients",
        "Q_optimizer_state": "bytes of optimizer state",
        "Q_communication": "bytes sent between devices",
        "op_F:<op>": "FLOPs of the op named <op>", "op_Q:<op>": "bytes of the op named <op>",
        "op_Qr:<op>": "bytes the op <op> reads", "op_Qw:<op>": "bytes the op <op> writes",
    },
    "model": {
        "params": "parameters", "kv_bytes_per_token": "KV-cache bytes one token adds",
        "weight_bytes_total": "bytes of all weights at the model's precision",
        "layers": "layers", "d_model": "hidden size", "heads": "attention heads",
        "kv_heads": "key/value heads", "head_dim": "size of one head", "d_ff": "MLP width",
        "vocab": "vocabulary size",
    },
    "hardware": {
        "peak": "dense peak, operations per second", "ridge": "peak / bandwidth",
        "bandwidth": "bandwidth of the memory level", "capacity": "capacity of the memory level",
    },
    "memory": {
        "weights": "the weights", "kv_cache": "the KV cache of batch x context tokens",
        "activations": "the activations", "gradients": "the gradients (training)",
        "optimizer_state": "the optimizer's state (training)", "total": "the sum of the parts",
    },
    "roofline": _ROOFLINE_Q,
    "roofline_formula": _ROOFLINE_Q,
    "curve": {"expr": "y as a function of x along the curve (no unit of its own)",
              "invariant": "the product of powers of x and y constant along a power-law curve"},
}

#: What each rounding rule means (keyed as symroof.verify.compare.RULES).
ROUNDING: Mapping[str, str] = {
    "exact": "`exact = true`: equal exactly (formulas: their difference cancels to 0); the default",
    "sig": "`sig = k`: printed with k significant figures: within half a unit of the last one",
    "decimals": "`decimals = k`: printed with k decimals: within half of 10^-k",
    "rel": "`rel = r` (\"about\", \"~\"): within r of the claimed value, relatively",
    "abs": "`abs = a`: within a (in the claim's unit)",
    "orders": "`orders = x` (\"an order of magnitude\"): within x decades",
    "less_than": "`less_than = true`: the claim is an upper bound (derived < claimed)",
    "at_most": "`at_most = true`: the claim is an upper bound (derived <= claimed)",
    "greater_than": "`greater_than = true`: a lower bound (derived > claimed)",
    "at_least": "`at_least = true`: a lower bound (derived >= claimed)",
}

#: What each status means (keyed as symroof.verify.run.STATUSES).
STATUS: Mapping[str, str] = {
    "match": "the derived value agrees with the claim within the document's own rounding",
    "mismatch": "it does not (the report shows both numbers and the derivation's terms)",
    "inconsistent": "the document prints different values for one quantity in different "
                    "places (`places`)",
    "cited": "an empirical figure quoted from a `source` (`status = \"cited\"`); a recipe, "
             "if given, checks the source's own inputs",
    "derived": "an exercise (`kind = \"exercise\"`) with no printed answer: symroof's answer",
    "error": "the claim as written could not be read or computed; the message names the "
             "file, line, claim and field",
}


def _row(*cells: str) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(head)
    return [_row(*head), _row(*(["---"] * len(head))), *(_row(*r) for r in rows), ""]


def _first_line(fn: Callable[..., object]) -> str:
    doc = inspect.getdoc(fn) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _signature(name: str, fn: Callable[..., object]) -> str:
    """``gemm(M, N, K, *, b, batch, flop_count)``: the names a recipe's args and kwargs
    (or options) fill; a model builder's first argument is the node's ``model``."""
    params = list(inspect.signature(fn).parameters.values())
    plain = [p.name for p in params if p.kind is not p.KEYWORD_ONLY]
    named = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    return f"{name}({', '.join(plain + (['*'] + named if named else []))})"


def _unit(kind: str, q: str) -> str:
    """The unit a quantity's value has (the claim's unit must measure the same)."""
    table = QUANTITY_DIMENSIONS.get("roofline" if kind == "roofline_formula" else kind, {})
    key = q.partition(":")[0] if ":" in q else ("Q_" if q.startswith("Q_") and kind ==
                                                "workload" else q)
    dim = table.get(key)
    if dim is None:
        return "-" if kind != "curve" else "(a formula)"
    unit = units.QUANTITY_UNITS.get(q)
    if unit is None or units.dimension(unit) != dim:
        unit = units.DIMENSION_UNITS[dim]
    return unit


def reference() -> str:
    """The claim-file reference as Markdown (what ``symroof report --reference`` prints)."""
    out = ["# Claim file reference", "",
           "Generated from symroof's own tables (`symroof report --reference` prints it).", "",
           "## Claim fields", ""]
    out += _table(("field", "meaning"), ((f"`{k}`", v) for k, v in CLAIM_FIELDS.items()))
    out += ["## Recipe nodes", "",
            "A recipe (a claim's `value`) is a number, an expression string, or a table "
            "with exactly one of these keys. Every node also takes `subs = {...}`.", ""]
    out += _table(("node", "keys", "default q", "computes"),
                  ((f"`{k}`", ", ".join(keys), DEFAULT_Q.get(k, "-"), NODES[k])
                   for k, keys in NODE_KEYS.items()))
    out += [f"Functions an expression may call: {', '.join(f'`{f}`' for f in FUNCTIONS)}.",
            "", "Tables inside nodes take these keys:", ""]
    out += _table(("table", "keys"), ((f"`{k}`", ", ".join(v)) for k, v in SPEC_KEYS.items()))
    out += ["## Quantities (`q`)", "",
            "The claim's `unit` must measure the same dimension as the quantity's unit "
            "(any prefix: GFLOP, TB/s, ms); `<op>` is an op's name in the workload.", ""]
    for kind, names in QUANTITY_NAMES.items():
        out += [f"### `{kind}` node", ""]
        out += _table(("q", "unit", "meaning"),
                      ((f"`{q}`", _unit(kind, q), QUANTITIES[kind][q]) for q in names))
    out += ["## Workload builders", ""]
    out += _table(("builder", "signature", "what"),
                  ((f"`{k}`", f"`{_signature(k, e.builder)}`", _first_line(e.builder))
                   for k, e in BUILDERS.items()))
    out += ["## Operations and constants", ""]
    out += _table(("operation", "what"), ((f"`{k}`", _first_line(fn))
                                          for k, fn in OPERATIONS.items()))
    out += _table(("constant", "value"), ((f"`{k}`", str(v)) for k, v in CONSTANTS.items()))
    out += ["## Assumptions", "", "A claim's `assumptions` may list these:", ""]
    out += _table(("assumption", "how the recipe honours it"),
                  ((f"`{k}`", v) for k, v in ASSUMPTIONS.items()))
    out += ["## Units", "",
            "Decimal prefixes k M G T P E (and m u n for seconds), binary Ki Mi Gi Ti.", ""]
    out += _table(("unit", "measures", "dimension"),
                  ((f"`{u}`", what, units.DIMENSIONS[units.UNIT_DIMENSIONS[u]])
                   for u, what in units.BASE_UNITS.items()))
    out += ["## Rounding rules", "", "A claim's `rounding` is a table with one rule:", ""]
    out += _table(("rule", "meaning"), ((f"`{r}`", ROUNDING[r]) for r in RULES))
    out += ["## Statuses", ""]
    out += _table(("status", "meaning"), ((f"`{s}`", STATUS[s]) for s in STATUSES))
    return "\n".join(out).rstrip("\n") + "\n"
