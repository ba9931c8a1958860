"""Hybrid and state-space model descriptions: Mamba-2 widths and a layer pattern.

A :class:`HybridModel` is a transformer description whose layers fall into groups by
token mixer (attention, Mamba-2, both side by side, none) and MLP (dense, experts,
none); the attention and MLP fields keep their transformer meaning for the layers that
have them. Its decode cache holds the attention layers' K and V (growing with the
context) and each Mamba-2 layer's conv and SSM states (fixed per sequence): memory,
capacity and a decode step's traffic count both.

The mixers' widths (:class:`Mamba2`, :class:`Mamba1`, :class:`GatedDeltaNet`,
:class:`LightningAttention`, :class:`ShortConv`, :class:`SharedBlocks`) are plain data
defined in :mod:`symroof.workloads.mixers`, and the model's own data (its fields, the
layer pattern and their checks) is :class:`symroof.workloads.shape.HybridShape`, both
below the workloads that read them; this module holds the model built on them and its
counts, and re-exports the mixers.

>>> from symroof.symbols import L, D, dim
>>> m = mamba2(layers=L, d_model=D, heads=dim("H"), head_dim=dim("P"), state=dim("N"))
>>> m.state_bytes_per_sequence    # SSM state H P N, conv state 4 taps of x, B and C
H*L*N*P*b + 4*H*L*P*b + 8*L*N*b
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from functools import cached_property

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Kind, as_dim
from symroof.models.config import TransformerModel, transformer
from symroof.symbols import b as _b
from symroof.workloads.builder import MIXERS, RECURRENT_MIXERS, LayerGroup
from symroof.workloads.layers import forward_graph, kv_cache_tensors
# The mixers' widths (and DECAY_GATES, OUT_GATES) live below the workloads, beside the rest
# of a model's data (the builders read them); this is their public path.
from symroof.workloads.mixers import (DECAY_GATES, OUT_GATES, GatedDeltaNet, LightningAttention,
                                      Mamba1, Mamba2, Scan, ScanChoices, SharedBlocks,
                                      ShortConv)
from symroof.workloads.recurrent import STATE_NAMES
from symroof.workloads.shape import HybridShape

__all__ = ["Mamba2", "Mamba1", "GatedDeltaNet", "LightningAttention", "ShortConv",
           "SharedBlocks", "HybridModel", "hybrid", "mamba2", "pattern_groups", "MLP_KINDS"]

#: What follows a layer's mixer: a dense MLP, routed experts, or nothing.
MLP_KINDS = ("dense", "moe", "none")


@dataclass(frozen=True)
class HybridModel(HybridShape, TransformerModel):
    """A transformer description with a layer pattern (``groups``, which must cover every
    layer) and the Mamba-2 widths (``ssm``) its mamba layers use.

    Its data (the fields, the pattern's checks, the layer groups) is a
    :class:`~symroof.workloads.shape.HybridShape`, which the workload builders read; the
    model adds the counts read off the graphs they build (parameters, the recurrent states'
    and the KV cache's bytes) and the same model under other scan conventions."""

    def count_params(self, *, active: bool = False, input_embedding: bool = True) -> sp.Expr:
        """Parameters (see :meth:`TransformerModel.count_params`), read off a decode step's
        graph: a one-token prefill would be shorter than the scan's chunk."""
        g = forward_graph(self, batch=1, seq=1, context=1, decode=True)
        total = []
        for t in g.inputs:
            if t.kind != Kind.WEIGHT or (not input_embedding and (
                    t.name == "pos_embed" or (t.name == "embed" and not self.tied_embeddings))):
                continue
            # (experts, d_in, d_out); latent attention's absorbed W_uk, W_uv are (heads, ., .)
            routed = len(t.shape) == 3 and "conv_" not in t.name and \
                not t.name.endswith(("W_uk", "W_uv"))
            share = self.experts_per_token / self.experts if active and routed else 1
            total.append(g.count(t) * t.numel * share)
        return sp.expand(sp.Add(*total))

    @cached_property
    def state_bytes_per_sequence(self) -> sp.Expr:
        """Bytes of the recurrent states one sequence carries (conv and SSM states of
        every mamba layer): fixed, whatever the context."""
        return self._cache_bytes(1, state=True)

    def attention_kv_bytes(self, context: object) -> sp.Expr:
        """K and V bytes of one sequence at ``context`` positions (attention layers only)."""
        return self._cache_bytes(context, state=False)

    @cached_property
    def kv_bytes_per_token(self) -> sp.Expr:
        """KV bytes per token of context (attention layers only; the states are per
        sequence: :attr:`state_bytes_per_sequence`)."""
        return self.attention_kv_bytes(1)

    def _cache_bytes(self, context: object, *, state: bool) -> sp.Expr:
        return sp.expand(sp.Add(*(
            count * t.nbytes for t, count in kv_cache_tensors(self, context)
            if any(s in t.name for s in STATE_NAMES) == state)))

    @property
    def attention_layers(self) -> sp.Expr:
        """Layers with attention (alone or beside a Mamba-2 mixer)."""
        return sp.Add(*(g.count for g in self.groups
                        if g.mixer in ("attention", "parallel", "zamba")))

    @property
    def ssm_layers(self) -> sp.Expr:
        """Layers with a recurrent mixer (:data:`RECURRENT_MIXERS`: Mamba-1 or -2, a short
        convolution, a gated DeltaNet, lightning attention)."""
        return sp.Add(*(g.count for g in self.groups if g.mixer in RECURRENT_MIXERS))

    def with_scan(self, choices: ScanChoices | None = None, **changes: object) -> HybridModel:
        """The same model under other scan conventions: ``choices`` whole, or
        :class:`ScanChoices` fields changed (``ScanChoices.torch()``: transformers' way).

        >>> from symroof.symbols import L, D, dim
        >>> m = mamba2(layers=L, d_model=D, heads=8, head_dim=64, state=128)
        >>> m.with_scan(scan="sequential").ssm.choices.scan
        <Scan.SEQUENTIAL: 'sequential'>
        """
        parts = [p for p in (self.ssm, self.short_conv, self.mamba1, self.deltanet,
                             self.lightning) if p is not None]
        if not parts:
            raise SymroofError(f"model {self.name!r}: no recurrent layers to set scan "
                               "choices on")
        base = parts[0].choices if choices is None else choices
        if not isinstance(base, ScanChoices):
            raise SymroofError(f"ssm choices: expected a ScanChoices, got {type(base).__name__}")
        try:
            new = replace(base, **changes)  # type: ignore[arg-type]
        except TypeError:
            raise SymroofError(f"ssm choices: unknown field(s) {', '.join(sorted(changes))}; "
                               f"expected {', '.join(f.name for f in fields(ScanChoices))}"
                               ) from None
        return replace(self, ssm=None if self.ssm is None else replace(self.ssm, choices=new),
                       short_conv=None if self.short_conv is None else replace(
                           self.short_conv, choices=new),
                       mamba1=None if self.mamba1 is None else replace(
                           self.mamba1, choices=replace(new, scan=Scan.SEQUENTIAL)),
                       deltanet=None if self.deltanet is None else replace(
                           self.deltanet, choices=new),
                       lightning=None if self.lightning is None else replace(
                           self.lightning, choices=new))


def pattern_groups(kinds: Sequence[tuple[str, str]], *, moe_model: bool,
                   what: str = "layer pattern") -> tuple[LayerGroup, ...]:
    """Layer groups from each layer's ``(mixer, mlp)``: mixers from :data:`MIXERS`, MLPs
    from :data:`MLP_KINDS`; a dense MLP in a mixture-of-experts model is its dense kind.

    >>> [(g.mixer, g.count, g.ffn) for g in pattern_groups(
    ...     [("mamba2", "none"), ("mamba2", "none"), ("attention", "dense")], moe_model=False)]
    [('mamba2', 2, False), ('attention', 1, True)]
    """
    counts: Counter[tuple[str, str]] = Counter()
    for i, kind in enumerate(kinds):
        if not (isinstance(kind, tuple) and len(kind) == 2 and kind[0] in MIXERS
                and kind[1] in MLP_KINDS):
            raise SymroofError(f"{what}: layer {i} is {kind!r}, expected (mixer, mlp) with a "
                               f"mixer in {', '.join(MIXERS)} and an mlp in "
                               f"{', '.join(MLP_KINDS)}")
        counts[kind] += 1
    return tuple(LayerGroup(sp.Integer(n), moe=mlp == "moe",
                            dense_in_moe=moe_model and mlp == "dense", mixer=mixer,
                            ffn=mlp != "none")
                 for (mixer, mlp), n in counts.items())


def hybrid(*, groups: Sequence[LayerGroup], ssm: Mamba2 | None = None,
           short_conv: ShortConv | None = None, mamba1: Mamba1 | None = None,
           deltanet: GatedDeltaNet | None = None, attn_output_gate: bool = False,
           lightning: LightningAttention | None = None, zamba: SharedBlocks | None = None,
           **transformer_fields: object) -> HybridModel:
    """A hybrid description: :func:`symroof.models.transformer`'s fields (the attention
    and MLP layers' widths) plus the layer ``groups`` and the Mamba-2 widths ``ssm``.

    >>> from symroof.symbols import L, D, H, dim
    >>> from symroof.workloads.builder import LayerGroup
    >>> a = dim("A")   # attention layers among L
    >>> m = hybrid(layers=L, d_model=D, heads=H, ssm=Mamba2(heads=H, head_dim=2 * D / H,
    ...            state=128), groups=(LayerGroup(a), LayerGroup(L - a, mixer="mamba2")))
    >>> m.attention_layers, m.ssm_layers
    (A, -A + L)
    """
    base = transformer(**transformer_fields)  # type: ignore[arg-type]
    return HybridModel(**{f: getattr(base, f) for f in base.__dataclass_fields__},
                       ssm=ssm, groups=tuple(groups), short_conv=short_conv, mamba1=mamba1,
                       deltanet=deltanet, attn_output_gate=attn_output_gate,
                       lightning=lightning, zamba=zamba)


def mamba2(*, layers: object, d_model: object, heads: object, head_dim: object, state: object,
           groups: object = 1, conv_kernel: object = 4, chunk: object = 256,
           vocab: object | None = None, tied_embeddings: bool = False, norm: str = "rmsnorm",
           bytes_per_value: object = _b, name: str = "mamba2",
           state_bytes: object | None = None) -> HybridModel:
    """A Mamba-2 language model: every layer a norm, a Mamba-2 mixer and a residual (no
    attention, no MLP)."""
    ssm = Mamba2(heads=heads, head_dim=head_dim, state=state, groups=groups,
                 conv_kernel=conv_kernel, chunk=chunk, state_bytes=state_bytes)
    # the attention fields are unused: the SSM heads stand in, so that tensor-parallel
    # degrees are checked against them
    return hybrid(layers=layers, d_model=d_model, heads=heads, head_dim=head_dim,
                  d_ff=d_model, vocab=vocab,
                  tied_embeddings=tied_embeddings, norm=norm, bytes_per_value=bytes_per_value,
                  name=name, ssm=ssm,
                  groups=(LayerGroup(as_dim(layers, f"model {name!r} layers"), mixer="mamba2",
                                     ffn=False),))
