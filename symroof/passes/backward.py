"""The backward pass: a forward graph plus the ops that compute its gradients.

Each GEMM gains a data-gradient and a weight-gradient GEMM of the same size (so weight
GEMMs cost 2 + 4 = 6 FLOPs per weight per token in training), elementwise ops gain an
elementwise op per input, views and moves reverse. Each gradient rule reads exactly the
forward values its op's derivative needs: a GEMM its two operands, a softmax its output,
a norm its input and per-row statistics, a dropout its mask, a linear op nothing
(:class:`Saves`). What the backward pass reads from the forward pass is what training
must keep in memory (:mod:`symroof.passes.saved` counts it).

Values a fused forward kept on chip keep their gradients on chip too. The
``recompute`` strategy (:class:`~symroof.options.Recompute`) says which forward values
the backward pass computes again instead of reading them: ``flash`` re-runs the ops whose
outputs a fused kernel kept on chip (FlashAttention's QK^T), ``selective`` also the
attention core (QK^T, softmax, dropout, and the product with V) from the kept Q, K, V,
``full`` every op of each repeated layer from the layer's input, ``none`` nothing (a
fused kernel writes out what the backward pass reads).

>>> from symroof.symbols import M, N, K
>>> from symroof.ir import Graph
>>> g = Graph("linear")
>>> y = g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="y")
>>> g.output(y)
>>> from symroof.cost import interpret
>>> interpret(backward(g)).flops
6*K*M*N
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, Op, Reduce, Role, Tensor,
                        Training, View, prod, same_dim)
from symroof.options import Recompute, Saves, option
from symroof.passes.recompute import recomputed_ops
from symroof.rules import RuleTable

__all__ = ["Backward", "backward", "GRADIENT_RULES", "gradient_rule", "Saves",
           "STATISTICS_PREFIX", "STATISTICS_BYTES"]

_ZERO = sp.Integer(0)

#: Tensors of per-row statistics the backward pass reads are named ``stats:<op>``.
STATISTICS_PREFIX = "stats:"
#: Bytes of one statistic (fp32, as PyTorch's norms and FlashAttention keep them).
STATISTICS_BYTES = 4


#: fp32 statistics per row: a norm's, and the logsumexp a recomputed fused softmax reads.
_PER_ROW = {Saves.NORM: 2, Saves.RMS_NORM: 1, Saves.OUTPUT: 1}


@dataclass(frozen=True)
class Backward:
    """Append the gradient computation of a forward graph (a Graph -> Graph pass).

    ``recompute``: which forward values are computed again rather than kept
    (:class:`~symroof.options.Recompute`; ``True`` is ``"flash"``, ``False`` ``"none"``).
    ``saves``: what the gradient of named elementwise ops reads (:class:`Saves`; others
    read their inputs). ``grad_flops_factor``: backward FLOPs per forward FLOP of an
    elementwise op, per input.
    """

    recompute: Recompute | bool | str = Recompute.FLASH
    grad_flops_factor: int = 1
    saves: tuple[tuple[str, Saves], ...] | Mapping[str, Saves | str] = ()
    name: str = "backward"

    def __post_init__(self) -> None:
        object.__setattr__(self, "recompute",
                           option(Recompute, self.recompute, f"{self.name} recompute"))
        pairs = self.saves.items() if isinstance(self.saves, Mapping) else self.saves
        object.__setattr__(self, "saves", tuple(sorted(
            (str(k), option(Saves, v, f"{self.name} saves[{k!r}]")) for k, v in pairs)))

    @property
    def declared(self) -> dict[str, Saves]:
        """``saves`` as a dict (op name -> :class:`Saves`)."""
        pairs = self.saves.items() if isinstance(self.saves, Mapping) else self.saves
        return {str(k): option(Saves, v, f"{self.name} saves") for k, v in pairs}

    @property
    def strategy(self) -> Recompute:
        """The recompute strategy, as the option."""
        assert isinstance(self.recompute, Recompute)  # __post_init__ made it one
        return self.recompute

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        if not isinstance(graph, Graph):
            raise SymroofError(f"{self.name}: expected a Graph, got {type(graph).__name__}")
        graph.validate()
        if not graph.outputs:
            raise SymroofError(f"{self.name}: graph {graph.name!r} has no outputs, so no "
                               "gradient flows (mark its results with graph.output(...))")
        if graph.provenance.training is not None:
            raise SymroofError(f"{self.name}: graph {graph.name!r} already has a backward pass")
        fwd_ops = graph.ops
        declared = self.declared
        unknown = sorted(set(declared) - {op.name for op in fwd_ops})
        if unknown:
            raise SymroofError(f"{self.name}: saves names no op of graph {graph.name!r}: "
                               f"{', '.join(unknown)}")
        g = graph.copy(f"{graph.name}-train")
        run = _Run(g, self, declared, recomputed_ops(graph, self.strategy))
        for out in graph.outputs:
            seed = g.input(f"d:{out.name}", out.shape, bytes_per_value=out.bytes_per_value,
                           count=graph.count(out), block=graph.block(out), role=Role.GRADIENT)
            run.contrib.setdefault(out, []).append(seed)
        for op in reversed(fwd_ops):
            run.op(op)
        for op in fwd_ops:  # a recomputed layer (or attention core) runs again in full
            if op.name in run.rerun.eager:
                for o in op.outputs:
                    run.recompute(o, op)
        grads: dict[str, str] = {}
        for t in graph.inputs:
            if t.kind == Kind.WEIGHT and t in run.contrib:
                d = run.grad(t, graph.count(t), graph.block(t))
                g.output(d)
                grads[t.name] = d.name
        g.record(training=Training(frozenset(op.name for op in fwd_ops), grads,
                                   self.strategy is not Recompute.NONE))
        return g


def backward(graph: Graph, *, recompute: Recompute | bool | str = Recompute.FLASH,
             saves: Mapping[str, Saves | str] | None = None) -> Graph:
    """The forward graph with its backward pass (see :class:`Backward`)."""
    return Backward(recompute=recompute, saves=saves or {}).apply(graph)


class _Run:
    """State of one backward construction: gradient contributions per forward tensor."""

    def __init__(self, g: Graph, opts: Backward, saves: Mapping[str, Saves],
                 rerun: Any) -> None:
        self.g = g
        self.opts = opts
        self.saves = saves
        self.rerun = rerun  # RecomputeSet: what the strategy recomputes
        self.forward = frozenset(op.name for op in g.ops)
        self.contrib: dict[Tensor, list[Tensor]] = {}
        self.done: dict[Tensor, Tensor] = {}
        self.recomputed: dict[Tensor, Tensor] = {}
        self.stats: dict[Op, Tensor] = {}

    # -- helpers -------------------------------------------------------------

    def on_chip(self, t: Tensor) -> bool:
        """A fused forward kept ``t`` on chip (it is never written across the boundary)."""
        prod_ = self.g.producer(t)
        return prod_ is not None and self.g.crossings(prod_, t) == 0

    def add(self, op: Op, like: Op) -> Op:
        self.g.add(op, count=self.g.count(like), block=self.g.block(like))
        return op

    def tensor(self, name: str, shape: tuple[sp.Expr, ...], like: Tensor) -> Tensor:
        """The gradient of a tensor like ``like`` (a weight's gradient is its own kind)."""
        kind = Kind.GRADIENT if like.kind == Kind.WEIGHT else Kind.ACTIVATION
        return Tensor(name, shape, kind, like.bytes_per_value, Role.GRADIENT)

    def grad(self, t: Tensor, count: sp.Expr, block: str) -> Tensor:
        """The gradient of ``t``: its contributions summed (one add op when several)."""
        if t in self.done:
            return self.done[t]
        parts = self.contrib.get(t)
        if not parts:
            raise SymroofError(f"backward: tensor {t.name!r} receives no gradient")
        if len(parts) == 1:
            result = parts[0]
        else:
            result = self.tensor(f"d:{t.name}", t.shape, t)
            self.g.add(Elementwise(f"grad_sum:{t.name}", tuple(parts), result, len(parts) - 1),
                       count=count, block=block)
        self.done[t] = result
        return result

    def give(self, t: Tensor, d: Tensor) -> None:
        if t.kind != Kind.KV_CACHE:
            self.contrib.setdefault(t, []).append(d)

    def saves_of(self, op: Elementwise) -> Saves:
        """What ``op``'s gradient reads (declared, or its inputs; nothing if linear)."""
        if op.linear:
            return Saves.NOTHING
        # a saves= option of the pass overrides what the builder declared on the op
        return self.saves.get(op.name) or op.saves or Saves.INPUTS

    def saved(self, t: Tensor) -> Tensor:
        """The forward value ``t`` as the backward pass reads it.

        A value the forward wrote to memory is read back, unless the strategy recomputes
        its op. One a fused forward kept on chip is recomputed (any strategy but
        ``none``), or else written out for the backward pass.
        """
        op = self.g.producer(t)
        if op is None or op.name not in self.forward:
            return t
        if op.name in self.rerun.ops or (self.opts.strategy is not Recompute.NONE
                                         and self.on_chip(t)):
            return self.recompute(t, op)
        if self.on_chip(t):
            self.g.set_edge_crossings(op, t, 1)  # written out for the backward pass
        return t

    def recompute(self, t: Tensor, op: Op) -> Tensor:
        """``t`` computed again by a copy of ``op`` reading what the backward pass has of
        its inputs (once: later readers share the copy)."""
        if t in self.recomputed:
            return self.recomputed[t]
        if isinstance(op, View):
            x = self.saved(op.x)
            self.recomputed[t] = self.reshape(x, t.shape, f"re:{t.name}", op, Role.RECOMPUTED)
            return self.recomputed[t]
        ins = {x.name: self.saved(x) for x in op.inputs}
        outs = tuple(replace(o, name=f"re:{o.name}", role=Role.RECOMPUTED) for o in op.outputs)
        clone = _with_operands(op, f"recompute:{op.name}", ins, outs)
        if isinstance(op, Elementwise) and isinstance(clone, Elementwise) and \
                self.saves_of(op) is Saves.OUTPUT and self.on_chip(t):
            # a fused softmax is computed again from its logsumexp, kept per row
            clone = replace(clone, xs=(*clone.xs, self.statistics(op, Saves.OUTPUT)))
        self.add(clone, op)
        for o, r in zip(op.outputs, outs):
            self.g.set_crossings(r, writes=0, reads=0)
            self.recomputed[o] = r
        return self.recomputed[t]

    def statistics(self, op: Elementwise, saves: Saves) -> Tensor:
        """The fp32 statistics per row of ``op`` (over its last axis) that its gradient
        or its recomputation reads: kept by the forward pass, or made again when the
        strategy recomputes ``op``."""
        if op in self.stats:
            return self.stats[op]
        again = op.name in self.rerun.ops
        x = op.xs[0]
        t = self.g.input(f"{STATISTICS_PREFIX}{op.name}", (*x.shape[:-1], 1),
                         bytes_per_value=STATISTICS_BYTES * _PER_ROW[saves],
                         count=self.g.count(op), block=self.g.block(op),
                         role=Role.RECOMPUTED if again else Role.VALUE)
        if again:
            self.g.set_crossings(t, reads=0)  # made by the recomputed op, used on chip
        self.stats[op] = t
        return t

    def keep_on_chip(self, fwd: Tensor, tensors: list[Tensor]) -> None:
        if self.on_chip(fwd):
            for x in tensors:
                self.g.set_crossings(x, writes=0, reads=0)

    # -- per op ----------------------------------------------------------------

    def op(self, op: Op) -> None:
        outs = [o for o in op.outputs if o in self.contrib]
        if not outs:
            return  # nothing downstream needs this op's outputs
        count, block = self.g.count(op), self.g.block(op)
        rule = GRADIENT_RULES.rule(op, self.opts.name)
        rule(self, op, self.grad(op.outputs[0], count, block))

    def reshape(self, x: Tensor, shape: tuple[sp.Expr, ...], name: str, like: Op,
                role: Role | None = None) -> Tensor:
        """``x`` viewed with ``shape`` (no traffic), at the count of ``like``."""
        out = Tensor(name, shape, x.kind, x.bytes_per_value, x.role if role is None else role)
        self.add(View(name, x, out), like)
        return out


# ---------------------------------------------------------------------------
# gradient rules, one per op type

#: A rule takes the run, its own op type (hence Any) and the gradient of the op's output.
GradientRule = Callable[["_Run", Any, Tensor], None]
GRADIENT_RULES: RuleTable[GradientRule] = RuleTable("gradient", "symroof.passes.backward.gradient_rule")
gradient_rule = GRADIENT_RULES.register


@gradient_rule(Gemm)
def _gemm(run: _Run, op: Gemm, dc: Tensor) -> None:
    """dA = dC B^T and dB = A^T dC: two GEMMs of the forward's size (it needs A and B)."""
    a_fwd, w_fwd = op.a, op.b
    a, w = run.saved(op.a), run.saved(op.b)
    batch_a, batch_w = a.shape[:-2], w.shape[:-2]
    if batch_w and not batch_a:
        raise SymroofError(f"backward: gemm {op.name!r} broadcasts its first operand over "
                           "a batch; not supported")
    if batch_a and not batch_w:
        if op.transpose_a:
            raise SymroofError(f"backward: gemm {op.name!r} has a transposed batched "
                               "operand with a shared weight; not supported")
        # a weight shared across the batch: fold the batch into M (a reshape, not a sum)
        rows = prod(a.shape[:-1])
        a2 = run.reshape(a, (rows, a.shape[-1]), f"flat:{a.name}:{op.name}", op)
        dc2 = run.reshape(dc, (rows, dc.shape[-1]), f"flat:{dc.name}", op)
    else:
        a2, dc2 = a, dc
    f = op.work_fraction
    # dA = dC @ B^T  (or B @ dC^T when A is stored transposed)
    da = run.tensor(f"d:{a_fwd.name}:{op.name}", a.shape, a_fwd)
    if op.transpose_a:
        run.add(Gemm(f"dA:{op.name}", w, dc, da, op.transpose_b, True, f), op)
    else:
        run.add(Gemm(f"dA:{op.name}", dc, w, da, False, not op.transpose_b, f), op)
    # dB = A^T @ dC  (or dC^T @ A when B is stored transposed)
    db = run.tensor(f"d:{w_fwd.name}:{op.name}", w.shape, w_fwd)
    if op.transpose_b:
        run.add(Gemm(f"dB:{op.name}", dc2, a2, db, True, op.transpose_a, f), op)
    else:
        run.add(Gemm(f"dB:{op.name}", a2, dc2, db, not op.transpose_a, False, f), op)
    for fwd, d in ((a_fwd, da), (w_fwd, db)):
        run.keep_on_chip(fwd, [d])
        run.give(fwd, d)

def _reads(run: _Run, op: Elementwise, saves: Saves, i: int, dy: Tensor) -> tuple[Tensor, ...]:
    """What the gradient of ``op``'s input ``i`` reads, per :class:`Saves`."""
    if saves is Saves.INPUTS:
        return (dy, run.saved(op.xs[i]))
    if saves is Saves.OUTPUT:
        return (dy, run.saved(op.out))
    if saves is Saves.MASK:
        return (dy, run.saved(op.xs[-1]))
    if saves in (Saves.NORM, Saves.RMS_NORM) and i < 2:  # the input and the gain: x-hat
        return (dy, run.saved(op.xs[0]), run.statistics(op, saves))
    return (dy,)  # a norm's bias, a linear op


@gradient_rule(Elementwise)
def _elementwise(run: _Run, op: Elementwise, dy: Tensor) -> None:
    """One elementwise op per input that takes a gradient, reading what :class:`Saves`
    says the op's derivative needs."""
    fpe = op.flops_per_element * run.opts.grad_flops_factor
    saves = run.saves_of(op)
    inputs = op.xs[:-1] if saves is Saves.MASK else op.xs  # a mask takes no gradient
    for i, x in enumerate(inputs):
        name = f"d:{x.name}:{op.name}" + (f":{i}" if op.xs.count(x) > 1 else "")
        ins = _reads(run, op, saves, i, dy)
        if len(x.shape) == len(op.out.shape) and all(
                same_dim(p, q) for p, q in zip(x.shape, op.out.shape)):
            dx = run.tensor(name, x.shape, x)
            run.add(Elementwise(f"bwd:{op.name}:{i}", ins, dx, fpe), op)
        else:  # a broadcast input (bias, norm gain): its gradient sums over the rest
            full = run.tensor(f"{name}:full", op.out.shape, x)
            run.add(Elementwise(f"bwd:{op.name}:{i}", ins, full, fpe), op)
            run.g.set_crossings(full, writes=0, reads=0)
            rows = run.reshape(full, (prod(op.out.shape) / prod(x.shape), *x.shape),
                             f"{name}:rows", op)
            run.g.set_crossings(rows, reads=0)
            dx = run.tensor(name, x.shape, x)
            run.add(Reduce(f"bwd_sum:{op.name}:{i}", rows, dx, 0, 1), op)
        run.keep_on_chip(op.out, [dx])
        run.give(x, dx)

@gradient_rule(View)
def _view(run: _Run, op: View, dy: Tensor) -> None:
    """The gradient viewed back to the input's shape."""
    dx = Tensor(f"d:{op.x.name}", op.x.shape, dy.kind, dy.bytes_per_value, Role.GRADIENT)
    run.add(View(f"bwd:{op.name}", dy, dx), op)
    run.give(op.x, dx)

@gradient_rule(Gather)
def _gather(run: _Run, op: Gather, dy: Tensor) -> None:
    """A scatter-add into a dense gradient of the whole table."""
    dt = run.tensor(f"d:{op.table.name}:{op.name}", op.table.shape, op.table)
    run.add(Move(f"bwd:{op.name}", (dy,), dt), op)
    run.give(op.table, dt)

@gradient_rule(Move)
@gradient_rule(Reduce)
def _move(run: _Run, op: Op, dy: Tensor) -> None:
    """Each input's gradient is the output's gradient moved back (a copy, no FLOPs)."""
    for i, x in enumerate(op.inputs):
        dx = run.tensor(f"d:{x.name}:{op.name}", x.shape, x)
        run.add(Move(f"bwd:{op.name}:{i}", (dy,), dx), op)
        run.give(x, dx)


def _with_operands(op: Op, name: str, ins: dict[str, Tensor], outs: tuple[Tensor, ...]) -> Op:
    """A copy of ``op`` named ``name`` reading ``ins`` (by forward name), writing ``outs``:
    every operand field is swapped, whatever the op type."""
    changes: dict[str, object] = {}
    for f in op.operands:
        value = getattr(op, f)
        changes[f] = (tuple(ins[x.name] for x in value) if isinstance(value, tuple)
                      else ins[value.name])
    changes["out"] = outs[0]  # every op writes one output field, out
    return replace(op, name=name, **changes)
