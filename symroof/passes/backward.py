"""The backward pass: a forward graph plus the ops that compute its gradients.

Each GEMM gains a data-gradient and a weight-gradient GEMM of the same size (so weight
GEMMs cost 2 + 4 = 6 FLOPs per weight per token in training), elementwise ops gain an
elementwise op that reads the saved forward input, views and moves reverse. Tensors a
fused forward kept on chip keep their gradients on chip too, and with ``recompute``
(FlashAttention) the ops that produced them run again in the backward pass instead of
saving their outputs: FLOPs spent to save bytes.

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

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, Op, Reduce, Role, Tensor,
                        Training, View, prod, same_dim)
from symroof.rules import RuleTable

__all__ = ["Backward", "backward", "GRADIENT_RULES", "gradient_rule"]

_ZERO = sp.Integer(0)


@dataclass(frozen=True)
class Backward:
    """Append the gradient computation of a forward graph (a Graph -> Graph pass).

    ``recompute``: re-run ops whose outputs a fused forward kept on chip, rather than
    read saved outputs (FlashAttention's backward). ``grad_flops_factor``: backward
    FLOPs per forward FLOP of an elementwise op, per input.
    """

    recompute: bool = True
    grad_flops_factor: int = 1
    name: str = "backward"

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        graph.validate()
        if not graph.outputs:
            raise SymroofError(f"{self.name}: graph {graph.name!r} has no outputs, so no "
                               "gradient flows (mark its results with graph.output(...))")
        if graph.provenance.training is not None:
            raise SymroofError(f"{self.name}: graph {graph.name!r} already has a backward pass")
        fwd_ops = graph.ops
        g = graph.copy(f"{graph.name}-train")
        run = _Run(g, self)
        for out in graph.outputs:
            seed = g.input(f"d:{out.name}", out.shape, bytes_per_value=out.bytes_per_value,
                           count=graph.count(out), block=graph.block(out), role=Role.GRADIENT)
            run.contrib.setdefault(out, []).append(seed)
        for op in reversed(fwd_ops):
            run.op(op)
        grads: dict[str, str] = {}
        for t in graph.inputs:
            if t.kind == Kind.WEIGHT and t in run.contrib:
                d = run.grad(t, graph.count(t), graph.block(t))
                g.output(d)
                grads[t.name] = d.name
        g.record(training=Training(frozenset(op.name for op in fwd_ops), grads, self.recompute))
        return g


def backward(graph: Graph, *, recompute: bool = True) -> Graph:
    """The forward graph with its backward pass (see :class:`Backward`)."""
    return Backward(recompute=recompute).apply(graph)


class _Run:
    """State of one backward construction: gradient contributions per forward tensor."""

    def __init__(self, g: Graph, opts: Backward) -> None:
        self.g = g
        self.opts = opts
        self.contrib: dict[Tensor, list[Tensor]] = {}
        self.done: dict[Tensor, Tensor] = {}
        self.recomputed: dict[Tensor, Tensor] = {}

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

    def saved(self, t: Tensor) -> Tensor:
        """The forward value ``t`` as the backward pass reads it.

        A value the forward wrote to memory is read back. One a fused forward kept on
        chip is recomputed (``recompute``), or else written out for the backward pass.
        """
        if not self.on_chip(t):
            return t
        if not self.opts.recompute:
            self.g.set_edge_crossings(self.g.producer(t), t, 1)  # type: ignore[arg-type]
            return t
        if t not in self.recomputed:
            op = self.g.producer(t)
            assert op is not None
            if isinstance(op, View):
                x = self.saved(op.x)
                self.recomputed[t] = self.reshape(x, t.shape, f"re:{t.name}", op,
                                                  Role.RECOMPUTED)
            else:
                ins = {x.name: self.saved(x) for x in op.inputs}
                outs = tuple(replace(o, name=f"re:{o.name}", role=Role.RECOMPUTED)
                             for o in op.outputs)
                clone = _with_operands(op, f"recompute:{op.name}", ins, outs)
                self.add(clone, op)
                for o, r in zip(op.outputs, outs):
                    self.g.set_crossings(r, writes=0, reads=0)
                    self.recomputed[o] = r
        return self.recomputed[t]

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

@gradient_rule(Elementwise)
def _elementwise(run: _Run, op: Elementwise, dy: Tensor) -> None:
    """One elementwise op per input (reading the saved input unless the op is linear)."""
    fpe = op.flops_per_element * run.opts.grad_flops_factor
    for i, x in enumerate(op.xs):
        name = f"d:{x.name}:{op.name}" + (f":{i}" if op.xs.count(x) > 1 else "")
        ins = (dy,) if op.linear else (dy, run.saved(x))
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
