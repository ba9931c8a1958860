"""What the transformer graph builder reads from a model, and the pieces every layer uses.

:class:`TransformerShape` is the model description as the builder sees it (a
``TransformerModel`` satisfies it), :class:`LayerGroup` one kind of layer and how many
of it there are, and :class:`Builder` one graph under construction with its linear
layers and norms. Attention, the mixture of experts and latent attention build on it
(``layers``, ``experts``, ``latent``), so this module needs nothing from
``symroof.models``.

>>> LayerGroup(21, windowed=True).prefix, LayerGroup(3, dense_in_moe=True).block
('local.', 'dense_layer')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import sympy as sp

from symroof.ir import GEMM_EPILOGUE, Graph, Pattern, Tensor
from symroof.options import Saves
from symroof.passes.fuse import Fuse
from symroof.workloads.attention import ElementwiseFlops, FusionGroup

__all__ = ["TransformerShape", "LatentShape", "LayerGroup", "Builder", "DROPOUT_FLOPS", "MIXERS"]

#: FLOPs per element of each half of a dropout (drawing the mask; scaling by it), counted
#: only with ``ops="all"``.
DROPOUT_FLOPS = 1


@runtime_checkable
class LatentShape(Protocol):
    """Multi-head latent attention's widths (DeepSeek-V2/V3), as the builder reads them."""

    @property
    def kv_rank(self) -> sp.Expr: ...    # d_c: the cached latent per token

    @property
    def q_rank(self) -> sp.Expr | None: ...  # d_q: the query's low-rank path (None: none)

    @property
    def nope_dim(self) -> sp.Expr: ...   # d_n: per-head query/key width without rotary

    @property
    def rope_dim(self) -> sp.Expr: ...   # d_r: the decoupled rotary key, shared by all heads

    @property
    def v_dim(self) -> sp.Expr: ...      # d_v: per-head value width


#: Token mixers a layer group may run, with the prefix of their ops and weights (hybrid
#: models, :mod:`symroof.workloads.recurrent`): attention; a Mamba-2 (SSD) mixer; both
#: side by side on the same normed input, their outputs summed (Falcon-H1); an LFM2
#: short-convolution block; a Mamba-1 (selective scan) mixer (Jamba); a gated DeltaNet
#: (Qwen3-Next's linear attention); lightning attention (MiniMax's linear attention); none
#: (a layer that is only an MLP, as Nemotron-H's).
MIXERS = {"attention": "", "mamba2": "mamba.", "parallel": "parallel.", "shortconv": "conv.",
          "mamba1": "mamba1.", "deltanet": "delta.", "lightning": "lightning.",
          "none": "mlp_only."}
#: The mixers with a recurrent part (conv or scan states): all but attention alone and none.
RECURRENT_MIXERS = frozenset(MIXERS) - {"attention", "none"}


@dataclass(frozen=True)
class LayerGroup:
    """``count`` layers of one kind: windowed attention or not, a mixture of experts or a
    dense MLP. ``prefix`` names its ops and weights ("" for the model's main kind).
    A hybrid model's groups also say their token ``mixer`` (:data:`MIXERS`) and whether
    the layer has an MLP at all (``ffn``)."""

    count: sp.Expr
    windowed: bool = False
    moe: bool = False
    dense_in_moe: bool = False   # a dense MLP layer of a mixture-of-experts model
    mixer: str = "attention"     # a key of MIXERS
    ffn: bool = True             # the layer has an MLP (or experts) after its mixer

    @property
    def prefix(self) -> str:
        """``local.`` for windowed layers, ``dense.`` for a MoE model's dense layers (a
        hybrid's: ``mamba.`` (``mamba.mlp.`` with an MLP), ``parallel.``, ``mlp_only.``,
        ``no_mlp.`` before them)."""
        if self.mixer in ("mamba2", "mamba1", "deltanet", "lightning"):  # with an MLP: say so
            ffn = "mlp." if self.ffn else ""
        else:
            ffn = "" if self.ffn else "no_mlp."
        return (MIXERS[self.mixer] + ffn + ("local." if self.windowed else "")
                + ("dense." if self.dense_in_moe else ""))

    @property
    def block(self) -> str:
        """The repeat block's name: ``layer``, ``local_layer``, ``dense_layer``, ..."""
        return self.prefix.replace(".", "_") + "layer"


@runtime_checkable
class TransformerShape(Protocol):
    """What the graph builder reads from a model description (``TransformerModel``)."""

    @property
    def name(self) -> str: ...

    @property
    def layers(self) -> sp.Expr: ...

    @property
    def d_model(self) -> sp.Expr: ...

    @property
    def heads(self) -> sp.Expr: ...

    @property
    def kv_heads(self) -> sp.Expr: ...

    @property
    def head_dim(self) -> sp.Expr: ...

    @property
    def d_ff(self) -> sp.Expr: ...

    @property
    def vocab(self) -> sp.Expr | None: ...

    @property
    def mlp(self) -> str: ...

    @property
    def activation(self) -> str: ...

    @property
    def norm(self) -> str | None: ...

    @property
    def tied_embeddings(self) -> bool: ...

    @property
    def qkv_bias(self) -> bool: ...

    @property
    def o_bias(self) -> bool: ...

    @property
    def mlp_bias(self) -> bool: ...

    @property
    def positions(self) -> str | None: ...

    @property
    def max_positions(self) -> sp.Expr | None: ...

    @property
    def experts(self) -> sp.Expr: ...

    @property
    def experts_per_token(self) -> sp.Expr: ...

    @property
    def weight_bytes(self) -> sp.Expr: ...

    @property
    def activation_bytes(self) -> sp.Expr: ...

    @property
    def kv_bytes(self) -> sp.Expr: ...

    @property
    def window(self) -> sp.Expr | None: ...

    @property
    def layer_groups(self) -> Sequence[LayerGroup]: ...

    @property
    def expert_d_ff(self) -> sp.Expr | None: ...

    @property
    def shared_d_ff(self) -> sp.Expr | None: ...

    @property
    def shared_gate(self) -> bool: ...

    @property
    def router_bias(self) -> bool: ...

    @property
    def qk_norm(self) -> str | None: ...

    @property
    def post_norms(self) -> bool: ...

    @property
    def sinks(self) -> bool: ...

    @property
    def latent(self) -> LatentShape | None: ...

    @property
    def attention_dropout(self) -> sp.Expr: ...  # dropout probability on attention (0: none)

    @property
    def hidden_dropout(self) -> sp.Expr: ...     # on the embedding and sublayer outputs

    @property
    def dropout_mask_bytes(self) -> sp.Expr: ...


# -- widths derived from a model's data (the model's own properties call these) ---------


def q_dim(m: TransformerShape) -> sp.Expr:
    """Width of Q and of the attention output: heads * head_dim."""
    return m.heads * m.head_dim


def kv_dim(m: TransformerShape) -> sp.Expr:
    """Width of K (and of V): kv_heads * head_dim."""
    return m.kv_heads * m.head_dim


def routed_d_ff(m: TransformerShape) -> sp.Expr:
    """Width of each routed expert's MLP (``expert_d_ff``, else ``d_ff``)."""
    return m.d_ff if m.expert_d_ff is None else m.expert_d_ff


@dataclass
class Builder:
    """One graph under construction: the model, the FLOP table, the kernels to fuse, and
    the prefix of the layer group being built (``local.`` ...)."""

    g: Graph
    m: TransformerShape
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
        params = [self.weight(f"{name}.weight", (w,))] if getattr(m, "norm_weight", True) else []
        bias = getattr(m, "norm_bias", None)
        if (m.norm == "layernorm") if bias is None else bias:
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
        up = self.linear(x, f"{prefix}W_up", m.d_model, width, f"{prefix}up", m.mlp_bias)
        if m.mlp == "gated":
            gate = self.linear(x, f"{prefix}W_gate", m.d_model, width, f"{prefix}gate",
                               m.mlp_bias)
            h = g.elementwise(gate, up, name=self.n(f"{prefix}act"),
                              flops_per_element=act + fl.gate)
        else:
            h = g.elementwise(up, name=self.n(f"{prefix}act"), flops_per_element=act)
        return self.linear(h, f"{prefix}W_down", width, m.d_model, f"{prefix}down", m.mlp_bias)
