"""Where tensor parallelism splits each tensor of a graph: Megatron's layout, propagated.

A weight GEMM whose input is whole on every device is *column parallel* (its weight and
output split along N); one whose input is split along K is *row parallel* (its weight
split along K, its output a partial sum on every device, to be all-reduced). Attention's
GEMMs are batched over heads, so they stay split; elementwise ops and views keep the
split of their inputs. A partial sum flows on through ops that are linear in it (a bias
add, the sum of the routed and shared experts, the combine of the experts' outputs) and
is all-reduced before the first op that is not, or at the end of the graph. An
embedding table is split by rows (vocab parallel), so its lookup is a partial sum too.

Views that reorder heads cannot be followed by their shapes alone (the builder's
``q_heads`` view folds the query heads that share a KV head into rows); the builder's
names say which axes hold the heads (:data:`HEAD_VIEWS`). With more devices ``t`` than
KV heads ``G``, each device holds one KV head and each KV head is replicated on ``t/G``
devices. Names of weights the layout keeps whole on every device (the router, the latent
down-projections) are in :data:`REPLICATED`.

>>> from symroof.symbols import B, D
>>> from symroof.ir import Graph, as_dim
>>> g = Graph("mlp")
>>> h = g.gemm(g.input("x", (B, D)), g.weight("W_up", (D, 4 * D)), name="up")
>>> y = g.gemm(h, g.weight("W_down", (4 * D, D)), name="down")
>>> g.output(y)
>>> plan = tensor_parallel_plan(g, 4)
>>> dict(plan.splits["W_up"]), dict(plan.splits["W_down"]), plan.reduce
({1: 4}, {0: 4}, ('down',))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, Op, Reduce, Tensor, View,
                        as_dim)

__all__ = ["TensorParallelPlan", "tensor_parallel_plan", "HEAD_VIEWS", "REPLICATED",
           "KV_WEIGHTS", "split_size", "RECURRENT_AXES", "MAMBA1_AXES", "DELTA_AXES",
           "LIGHTNING_AXES", "recurrent_pins"]

#: Views and moves that fold or unfold head axes, by the builder's op name (prefixes such
#: as ``local.`` aside): ``"heads"`` puts the split on axis 1 (KV heads) as far as it
#: goes and the rest on axis 2 (the query heads folded into rows); ``"last"`` on the last
#: axis (heads merged into the width); ``"first"`` on axis 0 (heads first).
HEAD_VIEWS = MappingProxyType({
    "q_heads": "heads", "k_heads": "heads", "v_heads": "heads", "k_nope": "heads",
    "q_latent": "heads", "q_rope": "heads", "k_append": "heads", "v_append": "heads",
    "q": "heads", "k": "heads", "v": "heads",
    "o_heads": "last", "o": "last",
    "o_latent": "first", "q_nope": "first",
})

#: Weights kept whole on every device: the router and the shared expert's gate (small,
#: and every device needs their full output), latent attention's down-projections (the
#: latent and the rotary key are shared by all heads).
REPLICATED = frozenset({"W_router", "W_shared_gate", "W_dq", "W_dkv", "W_kr",
                        "W_fa", "W_ga"})  # Kimi's low-rank gates: down-projections whole

#: Weights whose columns are KV heads: split over min(t, G) devices, not t.
KV_WEIGHTS = frozenset({"W_k", "W_v"})

#: Where the recurrent layers' tensors split (symroof.workloads.recurrent), by their name
#: in the layer: their reshapes fold heads and groups in ways shapes cannot say (as
#: HEAD_VIEWS for attention). Mamba-2 splits over its groups and with them their heads (as
#: the reference implementation does: each group's B and C, heads and gated norm on one
#: device); a short convolution over its channels. Used as pins for tensors of the
#: ``mamba.``, ``parallel.`` and ``conv.`` layer groups.
RECURRENT_AXES = MappingProxyType({
    **{f"conv_window_{p}": 0 for p in "xBC"}, **{f"conv_{p}": 0 for p in "xBC"},
    **{f"conv_{p}.weight": 0 for p in "xBC"}, **{f"conv_{p}.bias": 0 for p in "xBC"},
    **{f"conv_{p}_act": 0 for p in "xBC"}, **{f"conv_{p}_out": 2 for p in "xBC"},
    **{f"conv_state_{p}": 1 for p in "xBC"}, **{f"conv_state_{p}_write": 1 for p in "xBC"},
    **{n: 2 for n in ("ssd_x", "ssd_B", "ssd_C", "ssd_dt", "ssd_cumsum", "ssd_decay_s",
                      "ssd_C_heads", "ssd_B_heads", "ssd_cb", "ssd_mask", "ssd_diag",
                      "ssd_B_decay", "ssd_states", "ssd_chunk_decay", "ssd_passing",
                      "ssd_start", "ssd_off", "ssd_out", "ssd_y", "scan_x", "scan_B",
                      "scan_C", "scan_dt", "scan_update", "scan_C_heads", "scan_out",
                      "scan_skip", "scan_y", "step_y")},
    **{n: 1 for n in ("ssd_states_cat", "ssd_chunk_sums", "ssm_state", "ssm_state_write",
                      "step_x", "step_B", "step_C", "step_dt", "step_update", "step_C_heads",
                      "step_out", "step_skip")},
    "D": 0,
})
#: Mamba-1 (selective scan) layers split their I channels as vLLM's MambaMixer does:
#: in_proj (z, x), the conv, dt_proj, A and D column-wise; x_proj row-wise, so dt's low
#: rank, B and C are partial sums all-reduced (whole on every device); out_proj row-wise.
#: The scan runs with one group of I "heads" of width 1: the channel axis is ``per``.
MAMBA1_AXES = MappingProxyType({
    **{k: v for k, v in RECURRENT_AXES.items() if k.startswith("conv_")},
    **{n: 3 for n in ("scan_x", "scan_dt", "scan_update", "scan_C_heads", "scan_out",
                      "scan_skip")},
    **{n: 2 for n in ("scan_y", "step_x", "step_dt", "step_update", "step_C_heads",
                      "step_out", "step_skip", "step_y", "ssm_state", "ssm_state_write")},
    "D": 1, "A_log": 0,
})
#: Gated DeltaNet layers split their key heads and with them their value heads, as vLLM's
#: Qwen3-Next GatedDeltaNet does (q, k, v, z, b, a projections and the conv by columns,
#: each head's state, gates and norm on one device, the out-projection by rows); Kimi
#: Delta Attention as vLLM's KimiDeltaAttention (f_a, g_a whole, f_b, g_b by columns).
DELTA_AXES = MappingProxyType({
    **{f"conv_window_{p}": 0 for p in "qkv"}, **{f"conv_{p}": 0 for p in "qkv"},
    **{f"conv_{p}.weight": 0 for p in "qkv"}, **{f"conv_{p}.bias": 0 for p in "qkv"},
    **{f"conv_{p}_act": 0 for p in "qkv"}, **{f"conv_{p}_out": 2 for p in "qkv"},
    **{f"conv_state_{p}": 1 for p in "qkv"}, **{f"conv_state_{p}_write": 1 for p in "qkv"},
    "dt_bias": 0, "A_log": 0, "decay": 2, "beta": 2,
    **{f"delta_{n}": 2 for n in (
        "q", "k", "v", "g", "beta", "cumsum", "decay_s", "k_heads", "q_heads", "k_beta",
        "v_beta", "kk", "qk", "T", "attn", "solve_v", "k_decay", "solve_k", "k_end",
        "update", "chunk_decay", "passing", "w_state", "v_new", "q_decay", "q_state",
        "intra", "out", "y", "heads", "merge")},
    "z_heads": 2, "gated_norm": 2, "step_y": 2,
    "decay_heads": 2, "delta_kb_scaled": 2, "delta_k_scaled": 2, "delta_q_scaled": 2,  # Kimi
    **{f"step_{n}": 1 for n in ("q", "k", "v", "g", "beta", "k_heads", "q_heads", "decay",
                                "read_k", "delta", "outer", "update", "read_q")},
    "ssm_state": 1, "ssm_state_write": 1,
})
#: Lightning attention layers split their heads, as vLLM's MiniMax linear attention does
#: (q, k, v and the output gate by columns, each head's state local, the out-projection by
#: rows). Its RMSNorm over all H d outputs runs on each device's share (vLLM all-reduces
#: the B x S sums of squares for it: a few bytes a token, not counted).
LIGHTNING_AXES = MappingProxyType({
    **{f"light_{n}": 2 for n in ("q", "k", "v", "qk", "decay", "intra", "k_decay", "update",
                                 "passing", "q_decay", "inter", "out", "y")},
    "lightning_norm": 2, "lightning_norm.weight": 0, "step_y": 2,
    **{f"step_{n}": 1 for n in ("q", "k", "v", "decay", "outer", "update", "read_q")},
    "ssm_state": 1, "ssm_state_write": 1,
})
#: Under quadratic state passing these are (batch, groups, per, c + 1, ...): axis 1.
_QUADRATIC = frozenset({"ssd_chunk_decay", "ssd_passing"})
_RECURRENT_GROUPS = ("mamba", "parallel", "conv")


def recurrent_pins(graph: Graph, tp: sp.Expr) -> dict[str, dict[int, sp.Expr]]:
    """The split of every recurrent-layer tensor of ``graph`` by :data:`RECURRENT_AXES`."""
    pins: dict[str, dict[int, sp.Expr]] = {}
    for t in graph.tensors:
        group, _, local = t.name.partition(".")
        if group not in (*_RECURRENT_GROUPS, "mamba1", "delta", "lightning"):
            continue
        for part in ("mlp.", "no_mlp.", "local.", "dense."):
            local = local.removeprefix(part)
        axis = {"mamba1": MAMBA1_AXES, "delta": DELTA_AXES, "lightning": LIGHTNING_AXES
                }.get(group, RECURRENT_AXES).get(local)
        if axis is None:
            continue
        if local in _QUADRATIC and len(t.shape) == 5:
            axis = 1
        pins[t.name] = {axis: tp}
    return pins


#: Elementwise ops linear in a partial sum without being a sum: the shared expert's
#: output times its sigmoid gate (Qwen2-MoE).
_SCALES = frozenset({"shared_scale"})

_ONE = sp.Integer(1)


@dataclass(frozen=True)
class TensorParallelPlan:
    """Where ``t``-way tensor parallelism splits a graph's tensors.

    - ``splits``: tensor name -> {axis: divisor} (absent: whole on every device);
    - ``reduce``: tensors all-reduced after their producer (partial sums);
    - ``gather``: graph outputs outside any repeated block that are split (logits),
      all-gathered at the end;
    - ``kv_heads``: G, the KV heads a device's attention reads from, if any;
    - ``assumptions``: divisibility the formulas rely on, KV heads replicated.
    """

    tp: sp.Expr
    splits: Mapping[str, Mapping[int, sp.Expr]]
    reduce: tuple[str, ...]
    gather: tuple[str, ...]
    kv_heads: sp.Expr | None = None
    assumptions: tuple[str, ...] = ()
    padded: Mapping[str, sp.Expr] = field(default_factory=dict)  # split axis sizes rounded up


def split_size(size: sp.Expr, divisor: sp.Expr, *, pad: bool = False) -> sp.Expr:
    """``size / divisor`` (rounded up where ``pad`` and both are numbers)."""
    if pad and size.is_number and divisor.is_number:
        return sp.ceiling(size / divisor)
    return size / divisor


class _Restart(Exception):
    """A partial sum met an op that needs it whole after another op had taken it as is."""

    def __init__(self, tensor: str) -> None:
        super().__init__(tensor)
        self.tensor = tensor


@dataclass
class _State:
    splits: dict[str, dict[int, sp.Expr]] = field(default_factory=dict)
    partial: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    padded: dict[str, sp.Expr] = field(default_factory=dict)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _base(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def tensor_parallel_plan(graph: Graph, tp: object, *, skip: frozenset[str] = frozenset(),
                         pins: Mapping[str, Mapping[int, object]] | None = None
                         ) -> TensorParallelPlan:
    """The split of every tensor of ``graph`` over ``tp`` devices (ops named in ``skip``
    are left out: a pipeline stage's removed ops). ``pins`` fixes the split of named
    tensors (axis -> divisor), for graphs the builder's names do not describe."""
    t = sp.Integer(tp) if isinstance(tp, int) else tp
    assert isinstance(t, sp.Expr)
    pins = {**recurrent_pins(graph, t), **(pins or {})}
    kv = _kv_heads(graph)
    reduce: set[str] = set()
    for _ in range(len(graph.tensors) + 1):
        try:
            st = _propagate(graph, t, kv, skip, reduce, pins or {})
            break
        except _Restart as again:
            reduce.add(again.tensor)
    else:  # pragma: no cover - each round adds a tensor, so the loop ends
        raise SymroofError(f"shard: graph {graph.name!r}: partial sums did not settle")
    gather = tuple(t_.name for t_ in graph.outputs if t_.name in st.splits
                   and st.splits[t_.name] and graph.block(t_) == "")
    reduce |= {t_.name for t_ in graph.outputs if t_.name in st.partial}
    if kv is not None and t.is_number and kv.is_number and t > kv:
        st.note(f"tp={t} exceeds the {kv} KV heads: each device holds 1 KV head, each KV "
                f"head is replicated on {t / kv} devices")
    order = {x.name: i for i, x in enumerate(graph.tensors)}
    return TensorParallelPlan(t, MappingProxyType({k: MappingProxyType(v)
                                                   for k, v in st.splits.items() if v}),
                              tuple(sorted(reduce, key=lambda n: (order.get(n, 0), n))),
                              gather, kv, tuple(st.notes), MappingProxyType(st.padded))


def _kv_heads(graph: Graph) -> sp.Expr | None:
    """G: axis 1 of the builder's KV tensors (``k_cache``, ``k_heads``, ``k``)."""
    for x in sorted(graph.tensors, key=lambda x: x.name):
        if _base(x.name) in ("k_cache", "k_heads", "k") and len(x.shape) == 4:
            return x.shape[1]
    return None


def _propagate(g: Graph, t: sp.Expr, kv: sp.Expr | None, skip: frozenset[str],
               reduce: set[str], pins: Mapping[str, Mapping[int, object]]) -> _State:
    st = _State()
    for name, axes in pins.items():
        st.splits[name] = {int(a): as_dim(d, f"shard pins[{name!r}][{a}]")
                           for a, d in axes.items()}
    for op in g.ops:
        if op.name in skip:
            continue
        for x in op.inputs:
            if _partial(st, x, reduce) and not _takes_partial(g, op, x, st, reduce):
                raise _Restart(x.name)
        rule = _RULES.get(type(op))
        if all(y.name in pins for y in op.outputs):  # the caller says where the split goes
            if any(_partial(st, x, reduce) for x in op.inputs):
                st.partial.update(y.name for y in op.outputs)
        elif rule is None:
            _other(g, op, st)
        else:
            rule(g, op, t, kv, st, reduce)  # type: ignore[operator]
    return st


def _split(st: _State, x: Tensor) -> dict[int, sp.Expr]:
    return st.splits.get(x.name, {})


def _partial(st: _State, x: Tensor, reduce: set[str]) -> bool:
    return x.name in st.partial and x.name not in reduce


def _takes_partial(g: Graph, op: Op, x: Tensor, st: _State, reduce: set[str]) -> bool:
    """Whether ``op`` is linear in the partial sum ``x`` and runs as often as it."""
    if sp.expand(g.count(op) - g.count(x)) != 0 or g.block(op) != g.block(x):
        return False
    if isinstance(op, (View, Move)):
        return True
    if not isinstance(op, Elementwise):
        return False
    others = [y for y in op.xs if y is not x and y.kind != Kind.WEIGHT]
    if _base(op.name) in _SCALES:
        return not any(_partial(st, y, reduce) for y in others)
    return op.linear and all(_partial(st, y, reduce) for y in others)


def _assign(st: _State, x: Tensor, axes: dict[int, sp.Expr]) -> dict[int, sp.Expr]:
    """The split of ``x``: given once (an input takes it from its first consumer)."""
    if x.name not in st.splits:
        st.splits[x.name] = {a: d for a, d in axes.items() if d != 1}
    return st.splits[x.name]


def _divides(st: _State, size: sp.Expr, d: sp.Expr, where: str, *, pad: bool = False) -> None:
    if d == 1:
        return
    q = size / d
    if q.is_number:
        if q.is_integer:
            return
        if pad:
            st.note(f"{where}: {size} rows padded to {d} x {sp.ceiling(q)} over {d} devices")
            return
        raise SymroofError(f"shard: {where}: {size} does not split evenly over {d} devices")
    if not q.is_integer:
        st.note(f"{d} divides {size}")


def _gemm(g: Graph, op: Gemm, t: sp.Expr, kv: sp.Expr | None, st: _State,
          reduce: set[str]) -> None:
    a, b = op.a, op.b
    ra, rb = len(a.shape), len(b.shape)
    am, ak = (ra - 1, ra - 2) if op.transpose_a else (ra - 2, ra - 1)
    bk, bn = (rb - 1, rb - 2) if op.transpose_b else (rb - 2, rb - 1)
    sa = {} if _partial(st, a, reduce) else _split(st, a)
    if b.name not in st.splits:
        want: dict[int, sp.Expr] = {i: d for i, d in sa.items() if i < min(ra, rb) - 2}
        if ak in sa:
            want[bk] = sa[ak]
        elif b.kind == Kind.WEIGHT and not sa:
            want[bn] = _column(st, b, t, kv, bn)
        _assign(st, b, want)
    sb = _split(st, b)
    dk_a, dk_b = sa.get(ak, _ONE), sb.get(bk, _ONE)
    if sp.expand(dk_a - dk_b) != 0:
        raise SymroofError(f"shard: gemm {op.name!r}: {a.name!r} and {b.name!r} are split "
                           f"differently on the contracted axis ({dk_a} vs {dk_b})")
    nb = max(ra, rb) - 2
    out: dict[int, sp.Expr] = {}
    for i in range(nb):
        da = sa.get(i) if ra - 2 > i else None
        db = sb.get(i) if rb - 2 > i else None
        if da is not None and db is not None and sp.expand(da - db) != 0:
            raise SymroofError(f"shard: gemm {op.name!r}: batch axis {i} of {a.name!r} and "
                               f"{b.name!r} split {da} and {db} ways")
        d = da if da is not None else db
        if d is not None:
            out[i] = d
    if am in sa:
        out[nb] = sa[am]
    if bn in sb:
        out[nb + 1] = sb[bn]
    st.splits[op.out.name] = out
    if dk_a != 1:
        st.partial.add(op.out.name)


def _column(st: _State, w: Tensor, t: sp.Expr, kv: sp.Expr | None, axis: int) -> sp.Expr:
    """How many ways a column-parallel weight splits: t, min(t, G) for K and V, or 1."""
    base = _base(w.name)
    if base in REPLICATED:
        return _ONE
    d = t
    if base in KV_WEIGHTS and kv is not None and t.is_number and kv.is_number and t > kv:
        d = kv
    _divides(st, w.shape[axis], d, f"weight {w.name!r} axis {axis}",
             pad=base in ("W_lm", "embed"))
    if base in ("W_lm", "embed") and d != 1:
        st.padded[w.name] = d
    return d


def _aligned(x: Tensor, out_rank: int, axes: Mapping[int, sp.Expr]) -> dict[int, sp.Expr]:
    """``x``'s split on the output's axes (broadcasting aligns trailing axes)."""
    off = out_rank - len(x.shape)
    return {a + off: d for a, d in axes.items()}


def _elementwise(g: Graph, op: Elementwise, t: sp.Expr, kv: sp.Expr | None, st: _State,
                 reduce: set[str]) -> None:
    rank = len(op.out.shape)
    out: dict[int, sp.Expr] = {}
    for x in op.xs:
        if x.name not in st.splits and x.kind != Kind.ACTIVATION:
            continue  # a gain, bias or sink: takes the output's split below
        for a, d in _aligned(x, rank, _split(st, x)).items():
            if a in out and sp.expand(out[a] - d) != 0:
                raise SymroofError(f"shard: elementwise {op.name!r}: inputs split "
                                   f"differently on axis {a}")
            out[a] = d
    for x in op.xs:
        if x.name not in st.splits and x.kind != Kind.ACTIVATION:
            off = rank - len(x.shape)
            _assign(st, x, {a - off: d for a, d in out.items()
                            if a >= off and x.shape[a - off] != 1})
    st.splits[op.out.name] = out
    if any(_partial(st, x, reduce) for x in op.xs):
        st.partial.add(op.out.name)


def _reduce(g: Graph, op: Reduce, t: sp.Expr, kv: sp.Expr | None, st: _State,
            reduce: set[str]) -> None:
    sx = _split(st, op.x)
    axis = op.axis % len(op.x.shape)
    keep = len(op.out.shape) == len(op.x.shape)
    st.splits[op.out.name] = {(a if keep or a < axis else a - 1): d
                              for a, d in sx.items() if a != axis}
    if axis in sx or _partial(st, op.x, reduce):
        st.partial.add(op.out.name)


def _gather(g: Graph, op: Gather, t: sp.Expr, kv: sp.Expr | None, st: _State,
            reduce: set[str]) -> None:
    table = op.table
    if table.name not in st.splits:  # vocab parallel: each device holds a block of rows
        _divides(st, table.shape[0], t, f"table {table.name!r}", pad=True)
        if t != 1:
            st.padded[table.name] = t
        _assign(st, table, {0: t})
    sx = _split(st, table)
    rank = len(op.out.shape)
    st.splits[op.out.name] = {rank - len(table.shape) + a: d for a, d in sx.items() if a > 0}
    if 0 in sx:
        st.partial.add(op.out.name)


def _reshape(g: Graph, op: View | Move, t: sp.Expr, kv: sp.Expr | None, st: _State,
             reduce: set[str]) -> None:
    xs = (op.x,) if isinstance(op, View) else op.xs
    found: dict[int, sp.Expr] | None = None
    for x in xs:
        sx = _split(st, x)
        if not sx:
            continue
        axes = _follow(st, op, x.shape, sx, op.out.shape)
        if found is not None and found != axes:
            raise SymroofError(f"shard: {type(op).__name__.lower()} {op.name!r}: inputs "
                               "split differently")
        found = axes
    st.splits[op.out.name] = found or {}
    if any(_partial(st, x, reduce) for x in xs):
        st.partial.add(op.out.name)


def _follow(st: _State, op: Op, src: tuple[sp.Expr, ...], axes: Mapping[int, sp.Expr],
            dst: tuple[sp.Expr, ...]) -> dict[int, sp.Expr]:
    """Where a reshape puts the split: by the builder's head views, the same axes for an
    unchanged shape, the same axis under an unchanged prefix; else an error."""
    rule = HEAD_VIEWS.get(_base(op.name))
    total = sp.Mul(*axes.values())
    if rule == "last":
        return {len(dst) - 1: total}
    if rule == "first":
        return {0: total}
    if rule == "heads":
        first = _absorb(st, total, dst[1], op.name)
        rest = total / first
        return {a: d for a, d in ((1, first), (2, rest)) if d != 1}
    if len(src) == len(dst) and all(sp.expand(x - y) == 0 for x, y in zip(src, dst)):
        return dict(axes)
    if all(a < len(dst) and all(sp.expand(src[i] - dst[i]) == 0 for i in range(a))
           for a in axes):
        return dict(axes)
    raise SymroofError(f"shard: {type(op).__name__.lower()} {op.name!r} reshapes a split "
                       f"tensor {tuple(src)} -> {tuple(dst)} in a way the pass cannot follow; "
                       "pin the split of its output with pins={name: {axis: divisor}}")


def _absorb(st: _State, f: sp.Expr, size: sp.Expr, where: str) -> sp.Expr:
    """The part of a split ``f`` an axis of ``size`` heads takes: f if it divides them,
    all of them (one head per device, the rest replicated) if they divide f."""
    if f == 1:
        return _ONE
    if f.is_number and size.is_number:
        if size % f == 0:
            return f
        if f % size == 0:
            return size
        raise SymroofError(f"shard: {where}: {f} devices neither divide the {size} heads "
                           "nor are a multiple of them")
    st.note(f"{f} divides {size}")
    return f


def _other(g: Graph, op: Op, st: _State) -> None:
    if any(_split(st, x) for x in op.inputs):
        raise SymroofError(f"shard: op {op.name!r}: no tensor-parallel rule for "
                           f"{type(op).__name__} with split inputs")
    for y in op.outputs:
        st.splits[y.name] = {}


_RULES = {Gemm: _gemm, Elementwise: _elementwise, Reduce: _reduce, Gather: _gather,
          View: _reshape, Move: _reshape}
