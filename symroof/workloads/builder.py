"""What the transformer graph builder reads from a model, and the pieces every layer uses.

The builder reads a model's data, a :class:`~symroof.workloads.shape.ModelShape` (a
``TransformerModel`` is one; ``TransformerShape`` is its old name here);
:class:`LayerGroup` is one kind of layer and how many of it there are, and
:class:`Builder` one graph under construction with its linear layers and norms.
Attention, the mixture of experts and latent attention build on it (``layers``,
``experts``, ``latent``), so this module needs nothing from ``symroof.models``.

>>> LayerGroup(21, windowed=True).prefix, LayerGroup(3, dense_in_moe=True).block
('local.', 'dense_layer')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from symroof.ir import GEMM_EPILOGUE, Graph, Pattern, Tensor
from symroof.options import Saves
from symroof.passes.fuse import Fuse
from symroof.workloads.attention import ElementwiseFlops, FusionGroup
from symroof.workloads.shape import (MIXERS, RECURRENT_MIXERS, LatentAttention, LayerGroup,
                                     ModelShape)

__all__ = ["TransformerShape", "LatentShape", "LayerGroup", "Builder", "DROPOUT_FLOPS", "MIXERS",
           "RECURRENT_MIXERS", "ModelShape"]

#: FLOPs per element of each half of a dropout (drawing the mask; scaling by it), counted
#: only with ``ops="all"``.
DROPOUT_FLOPS = 1


#: The model's data as the builders read it. The names are the old protocols', kept for
#: code that imports them: a model is now one type, :class:`ModelShape` (and
#: ``TransformerModel`` a subclass of it), and a latent attention a :class:`LatentAttention`.
TransformerShape = ModelShape
LatentShape = LatentAttention


# -- widths derived from a model's data (the model's own properties, as functions) -------


def q_dim(m: ModelShape) -> sp.Expr:
    """Width of Q and of the attention output: heads * head_dim."""
    return m.q_dim


def kv_dim(m: ModelShape) -> sp.Expr:
    """Width of K (and of V): kv_heads * head_dim."""
    return m.kv_dim


def routed_d_ff(m: ModelShape) -> sp.Expr:
    """Width of each routed expert's MLP (``expert_d_ff``, else ``d_ff``)."""
    return m.routed_d_ff


@dataclass
class Builder:
    """One graph under construction: the model, the FLOP table, the kernels to fuse, and
    the prefix of the layer group being built (``local.`` ...)."""

    g: Graph
    m: ModelShape
    fl: ElementwiseFlops
    fusions: list[FusionGroup] = field(default_factory=list)
    prefix: str = ""
    patterns: list[Pattern] = field(default_factory=list)

    def want(self, pattern: Pattern) -> None:
        """Ask the fusion pass to fuse every region ``pattern`` matches (once)."""
        if pattern not in self.patterns:
            self.patterns.append(pattern)

    def fusion(self) -> Fuse:
        """The fusion pass of the patterns and the named groups this builder collected."""
        return Fuse(tuple(grp for grp, _ in self.fusions),
                    tuple(tile for _, tile in self.fusions), patterns=tuple(self.patterns))

    def n(self, name: str) -> str:
        """``name`` in the current layer group."""
        return self.prefix + name

    def weight(self, name: str, shape: tuple[sp.Expr, ...]) -> Tensor:
        """A weight of the current layer group at the model's weight bytes."""
        return self.g.weight(self.n(name), shape, bytes_per_value=self.m.weight_bytes)

    def linear(self, x: Tensor, w_name: str, d_in: sp.Expr, d_out: sp.Expr, name: str,
               bias: bool, experts: sp.Expr | None = None,
               share: sp.Expr = sp.Integer(1)) -> Tensor:
        """``x @ W (+ bias)``; a bias add is fused into the GEMM as its epilogue.

        With ``experts``, W is (experts, d_in, d_out) and each token row meets ``share`` of
        the experts (the GEMM does that fraction of the dense work).
        """
        g = self.g
        shape = (d_in, d_out) if experts is None else (experts, d_in, d_out)
        y = g.gemm(x, self.weight(w_name, shape), name=self.n(name), work_fraction=share)
        if bias:
            bshape = (d_out,) if experts is None else (experts, 1, d_out)
            bvec = self.weight(f"{w_name}.bias", bshape)
            out = g.elementwise(y, bvec, name=self.n(f"{name}+bias"),
                                flops_per_element=self.fl.bias * share, linear=True)
            self.want(GEMM_EPILOGUE)  # the GEMM's epilogue
            y = out
        if share != 1:
            g.set_crossings(y, writes=share, reads=share)
        return y

    def norm(self, x: Tensor, name: str, width: sp.Expr | None = None) -> Tensor:
        """The model's norm over the last ``width`` values (default d_model); none: ``x``."""
        m = self.m
        if m.norm is None:
            return x
        w = m.d_model if width is None else width
        # a gain unless the model's norms have none (OLMo), a bias where the norm has one
        # (a layernorm unless norm_bias says otherwise: Cohere's has none)
        params = [self.weight(f"{name}.weight", (w,))] if m.norm_weight else []
        if (m.norm == "layernorm") if m.norm_bias is None else m.norm_bias:
            params.append(self.weight(f"{name}.bias", (w,)))
        layernorm = m.norm == "layernorm"
        per = self.fl.layernorm if layernorm else self.fl.rmsnorm
        return self.g.elementwise(x, *params, name=self.n(name), flops_per_element=per,
                                  saves=Saves.NORM if layernorm else Saves.RMS_NORM)

    def dropout(self, x: Tensor, name: str, p: sp.Expr) -> Tensor:
        """``x * mask / (1 - p)`` when ``p`` is not 0 (else ``x``): one kernel that reads
        ``x`` once, draws the mask (``{name}_mask``, ``dropout_mask_bytes`` per value) and
        writes it for the backward pass, and writes the result."""
        if p == 0:
            return x
        g = self.g
        mask = g.elementwise(x, name=self.n(f"{name}_mask"), flops_per_element=DROPOUT_FLOPS,
                             bytes_per_value=self.m.dropout_mask_bytes)
        g.set_edge_crossings(x, g.node(self.n(f"{name}_mask")), 0)  # x is read once, below
        y = g.elementwise(x, mask, name=self.n(name), flops_per_element=DROPOUT_FLOPS,
                          saves=Saves.MASK)
        g.set_edge_crossings(mask, g.node(self.n(name)), 0)  # used in registers as it is drawn
        return y

    def rms(self, x: Tensor, name: str, width: sp.Expr) -> Tensor:
        """An RMSNorm with ``width`` gains (query/key and latent norms, whatever the model's)."""
        gain = self.weight(f"{name}.weight", (width,))
        return self.g.elementwise(x, gain, name=self.n(name), flops_per_element=self.fl.rmsnorm,
                                  saves=Saves.RMS_NORM)

    def dense_mlp(self, x: Tensor, width: sp.Expr, prefix: str = "") -> Tensor:
        """up (and gate), the activation, down: a dense MLP of ``width``."""
        g, m, fl = self.g, self.m, self.fl
        act = getattr(fl, str(m.activation))
        # xIELU's learned alpha_p and alpha_n: two scalars per MLP
        alphas = tuple(self.weight(f"{prefix}xielu_{a}", (sp.Integer(1),)) for a in
                       ("alpha_p", "alpha_n")) if m.activation == "xielu" else ()
        up = self.linear(x, f"{prefix}W_up", m.d_model, width, f"{prefix}up", m.mlp_bias)
        if m.mlp == "gated":
            gate = self.linear(x, f"{prefix}W_gate", m.d_model, width, f"{prefix}gate",
                               m.mlp_bias)
            h = g.elementwise(gate, up, *alphas, name=self.n(f"{prefix}act"),
                              flops_per_element=act + fl.gate)
        else:
            h = g.elementwise(up, *alphas, name=self.n(f"{prefix}act"), flops_per_element=act)
        return self.linear(h, f"{prefix}W_down", width, m.d_model, f"{prefix}down", m.mlp_bias)
