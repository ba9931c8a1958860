"""The shape of a recipe: which keys each kind of node and each table inside one takes,
and the dimension of the value a node reads (for checking a claim's unit).

The interpreter (:mod:`symroof.verify.recipe`) computes; this module only says what a
well-formed recipe looks like, so that an unknown key is an error naming the keys that
are allowed instead of a key silently ignored.

>>> check_keys({"workload": {}, "q": "I", "bogus": 1}, NODE_KEYS["workload"], "x")
Traceback (most recent call last):
...
symroof.errors.SymroofError: x: unknown key 'bogus'; a workload node takes workload, q, subs
>>> dimension_of({"hardware": "h100-sxm", "q": "ridge"})
'intensity'
>>> dimension_of({"limit": {"workload": {"builder": "gemm"}, "q": "I"}, "var": "n"})
'intensity'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from symroof.errors import SymroofError, suggest

__all__ = ["NODE_KEYS", "SPEC_KEYS", "check_keys", "dimension_of", "QUANTITY_DIMENSIONS"]

#: The keys each kind of node takes (``subs`` is allowed on every node).
NODE_KEYS: Mapping[str, tuple[str, ...]] = {
    "let": ("let", "expr"), "expr": ("expr",), "workload": ("workload", "q"),
    "model": ("model", "q"),
    "hardware": ("hardware", "q", "precision", "unit", "level", "ops_per_mac"),
    "memory": ("memory", "q"), "capacity": ("capacity",), "roofline": ("roofline", "q"),
    "roofline_formula": ("roofline_formula", "q"), "limit": ("limit", "var", "to"),
    "crossover": ("crossover", "index"), "curve": ("curve", "q", "index"),
    "theta": ("theta", "small"), "sensitivity": ("sensitivity", "var"),
    "operation": ("operation", "args", "kwargs"), "min": ("min",), "max": ("max",),
    "over_hardware": ("over_hardware", "node", "reduce"),
}

#: The keys of the tables inside a node.
SPEC_KEYS: Mapping[str, tuple[str, ...]] = {
    "workload": ("builder", "model", "args", "kwargs", "options", "tile", "fuse", "convention"),
    "graph": ("graph", "tile", "fuse", "convention"),
    "model": ("preset", "transformer", "replace", "bytes", "weights", "kv_cache", "activations"),
    "memory": ("model", "batch", "context", "training"),
    "capacity": ("model", "hardware", "context", "tp", "precision"),
    "roofline": ("workload", "hardware", "precision", "subs", "devices", "unit", "level",
                 "latency"),
    "roofline_formula": ("F", "Q", "peak", "bandwidth", "tokens"),
    "crossover": ("lhs", "rhs", "var"), "curve": ("lhs", "rhs", "x", "y"),
}


def check_keys(table: Mapping[str, Any], allowed: Iterable[str], where: str,
               what: str = "") -> None:
    """A SymroofError naming the first key of ``table`` not in ``allowed`` (``subs`` is
    allowed on a node, so it is listed)."""
    known = list(allowed)
    node = what == "" and bool(known) and known[0] in NODE_KEYS
    if node:
        known.append("subs")
    for key in table:
        if key not in known:
            kind = f"a {known[0]} node" if node else (what or "this table")
            raise SymroofError(f"{where}: unknown key {key!r}{suggest(str(key), known)}; "
                               f"{kind} takes {', '.join(known)}")


# -- dimensions ----------------------------------------------------------------------
# A dimension is a name from symroof.verify.units.DIMENSIONS. Counts (tokens, parameters,
# sequences, layers) are plain numbers there, so FLOP per token is a FLOP count. A theta
# node has none: it drops constant factors (bytes per value among them).

_WORK, _BYTES, _TIME = "work", "bytes", "time"

#: The dimension of each quantity a node reads by ``q``.
QUANTITY_DIMENSIONS: Mapping[str, Mapping[str, str]] = {
    "workload": {"F": _WORK, "F_weights": _WORK, "F_attention": _WORK, "Q": _BYTES,
                 "I": "intensity", "tokens": "number", "op_F": _WORK, "op_Q": _BYTES,
                 "op_Qr": _BYTES, "op_Qw": _BYTES, "Q_": _BYTES},
    "model": {"params": "number", "kv_bytes_per_token": _BYTES, "weight_bytes_total": _BYTES,
              "layers": "number", "d_model": "number", "heads": "number", "kv_heads": "number",
              "head_dim": "number", "d_ff": "number", "vocab": "number"},
    "hardware": {"peak": "rate", "ridge": "intensity", "bandwidth": "bandwidth",
                 "capacity": _BYTES},
    "memory": {k: _BYTES for k in ("weights", "kv_cache", "activations", "gradients",
                                   "optimizer_state", "total")},
    "roofline": {"time_s": _TIME, "compute_time_s": _TIME, "memory_time_s": _TIME,
                 "time_serial_s": _TIME, "tokens_per_s": "per_time",
                 "tokens_per_s_per_user": "per_time", "attainable": "rate", "peak": "rate",
                 "bandwidth": "bandwidth", "ridge": "intensity", "intensity": "intensity",
                 "flops": _WORK, "bytes": _BYTES, "margin": "number"},
}
_DEFAULT_Q = {"workload": "I", "model": "params", "hardware": "ridge", "memory": "kv_cache",
              "roofline": "time_s", "roofline_formula": "time_s"}


def dimension_of(node: object) -> str | None:
    """The dimension of the value ``node`` reads, where the recipe says (a named quantity,
    or a limit, minimum or maximum of nodes that agree); None where it does not (an
    expression, a solution for a variable)."""
    if not isinstance(node, Mapping):
        return None
    kind = next((k for k in NODE_KEYS if k in node), None)
    if kind in ("workload", "model", "hardware", "memory", "roofline", "roofline_formula"):
        q = node.get("q", _DEFAULT_Q[kind])
        if not isinstance(q, str):
            return None
        table = QUANTITY_DIMENSIONS["roofline" if kind == "roofline_formula" else kind]
        if kind == "workload" and q not in table:
            q = q.partition(":")[0] if ":" in q else ("Q_" if q.startswith("Q_") else q)
        return table.get(q)
    if kind == "capacity":
        return "number"
    if kind == "limit":
        return dimension_of(node.get("limit"))
    if kind == "sensitivity":  # d ln f / d ln x
        return "number"
    if kind in ("min", "max"):
        items = node.get(kind)
        found = {dimension_of(x) for x in items} if isinstance(items, list) and items else {None}
        return found.pop() if len(found) == 1 else None
    if kind == "over_hardware":
        return dimension_of(node.get("node"))
    return None
