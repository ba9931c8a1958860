"""A mixture-of-experts MLP as a graph: router, routed experts, shared experts.

Each token goes to ``k`` of ``E`` routed experts (Mixtral, Qwen-MoE, OLMoE, gpt-oss,
DeepSeek); a shared expert (DeepSeek, Qwen2-MoE) is a dense MLP every token passes
through, optionally scaled by a sigmoid gate (Qwen2-MoE). Expert tensors are laid out
per expert, (E, tokens, width), of which each token fills k/E: the expert GEMMs do that
fraction of the dense work and the routed activations cross the boundary at that
fraction. Which experts' weights a step reads is an option (:class:`ExpertReads`).

>>> from symroof.symbols import B, dim
>>> expert_read_fraction("routed", dim("E"), dim("k"), B)
Min(E, B*k)/E
>>> expert_read_fraction("expected", 256, 8, 1)   # one token reads its 8 experts
1/32
>>> 8 * expert_read_fraction("expected", 8, 2, 4)   # Mixtral, 4 tokens: 5.27 of 8 experts
175/32
"""

from __future__ import annotations

import sympy as sp

from symroof.ir import Tensor, as_expr
from symroof.options import ExpertReads, option
from symroof.workloads.builder import Builder, routed_d_ff

__all__ = ["moe_mlp", "expert_read_fraction"]


def expert_read_fraction(reads: ExpertReads | str, experts: object, per_token: object,
                         tokens: object) -> sp.Expr:
    """Fraction of the routed experts whose weights ``tokens`` tokens read, ``per_token``
    experts each: ``1 - (1 - k/E)^tokens`` (``"expected"``, the default: each token's k
    experts drawn uniformly and independently; E times it is the expected number of
    distinct experts), 1 (``"all"``, an upper bound), ``min(E, tokens k)/E``
    (``"routed"``: no two routed pairs share an expert, the most any routing reads) or
    ``k/E`` (``"active"``: one token's experts, whatever the batch; a lower bound).

    The expected form is a power in the batch: a symbolic solver for the batch (a
    crossover, a ridge point) may not solve it; ``"all"`` and ``"active"`` give a
    polynomial (see :func:`solvable_reads`)."""
    mode = option(ExpertReads, reads, "expert_reads")
    e, kk, t = (as_expr(v, f"expert_reads {what}") for v, what in
                ((experts, "experts"), (per_token, "experts per token"), (tokens, "tokens")))
    if mode is ExpertReads.ALL:
        return sp.Integer(1)
    if mode is ExpertReads.ROUTED:
        return sp.Min(e, t * kk) / e
    if mode is ExpertReads.ACTIVE:
        return kk / e
    return 1 - (1 - kk / e) ** t


def moe_mlp(b: Builder, x: Tensor, batch: sp.Expr, seq: sp.Expr,
            reads: ExpertReads | str = ExpertReads.EXPECTED) -> Tensor:
    """Router, dispatch, the routed experts' MLP, combine, and the shared expert if any."""
    g, m, fl = b.g, b.m, b.fl
    act = getattr(fl, str(m.activation))
    e, share = m.experts, m.experts_per_token / m.experts
    router = b.linear(x, "W_router", m.d_model, e, "router", m.router_bias)
    xd = g.move(x, name=b.n("dispatch"), shape=(e, batch * seq, m.d_model))
    g.set_crossings(xd, writes=share, reads=share)
    width = routed_d_ff(m)
    bias = m.routed_bias
    up = b.linear(xd, "W_up", m.d_model, width, "up", bias, e, share)
    # xIELU: each expert's own alpha_p and alpha_n
    one = sp.Integer(1)
    alphas = tuple(b.weight(f"xielu_{a}", (e, one, one)) for a in ("alpha_p", "alpha_n")
                   ) if m.activation == "xielu" else ()
    if m.mlp == "gated":
        gate = b.linear(xd, "W_gate", m.d_model, width, "gate", bias, e, share)
        h = g.elementwise(gate, up, *alphas, name=b.n("act"),
                          flops_per_element=(act + fl.gate) * share)
    else:
        h = g.elementwise(up, *alphas, name=b.n("act"), flops_per_element=act * share)
    g.set_crossings(h, writes=share, reads=share)
    y = b.linear(h, "W_down", width, m.d_model, "down", bias, e, share)
    # expert outputs weighted by the router's gates and summed
    y = g.move(y, router, name=b.n("combine"), shape=(batch, seq, m.d_model))
    fraction = expert_read_fraction(reads, e, m.experts_per_token, batch * seq)
    if fraction != 1:
        names = ("W_up", "W_down") + (("W_gate",) if m.mlp == "gated" else ())
        for name in names + (tuple(f"{n}.bias" for n in names) if bias else ()):
            weight = g.node(b.n(name))
            assert isinstance(weight, Tensor)  # a weight this MLP just declared
            g.set_crossings(weight, reads=fraction)
    if m.shared_d_ff is None:
        return y
    s = b.dense_mlp(x, m.shared_d_ff, prefix="shared.")
    if m.shared_gate:  # Qwen2-MoE: sigmoid(x W_g) scales the shared expert's output
        gw = b.linear(x, "W_shared_gate", m.d_model, sp.Integer(1), "shared_gate", False)
        s = g.elementwise(s, gw, name=b.n("shared_scale"), flops_per_element=act + fl.gate)
    return g.elementwise(y, s, name=b.n("add_shared"), flops_per_element=fl.residual,
                         linear=True)
