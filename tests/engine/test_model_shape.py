"""The model is one type: its data (``workloads.shape.ModelShape``, what the builders read)
below the workloads, its counts (``models.TransformerModel``, a subclass) above them.

A bare ModelShape builds the same graphs as the TransformerModel with the same fields,
and the parameter count the model reads off those graphs matches the seeds' closed form.
"""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.models import TransformerModel, get, transformer
from symroof.models.latent import LatentAttention as PublicLatent
from symroof.symbols import B, D, H, L, S, b
from symroof.workloads import builder, layers
from symroof.workloads.shape import LatentAttention, ModelShape
from symroof.workloads.transformer import decode, prefill


def _shape_of(m: TransformerModel) -> ModelShape:
    return ModelShape(**{f.name: getattr(m, f.name) for f in dataclasses.fields(ModelShape)})


def test_model_is_its_shape_plus_counts():
    m = transformer(layers=L, d_model=D, heads=H)
    assert isinstance(m, ModelShape)
    # every field of the model is the shape's: the counts add none
    assert [f.name for f in dataclasses.fields(TransformerModel)] == \
        [f.name for f in dataclasses.fields(ModelShape)]
    shape = _shape_of(m)
    assert not hasattr(shape, "params") and not hasattr(shape, "kv_cache_bytes")
    assert shape.layer_groups == m.layer_groups
    # the old names are the new types
    assert builder.TransformerShape is layers.TransformerShape is ModelShape
    assert builder.LatentShape is PublicLatent is LatentAttention


def test_bare_shape_builds_the_models_graphs():
    m = get("llama-3-8b")
    shape = _shape_of(m)
    for build in (lambda x: prefill(x, B, S), lambda x: decode(x, B, S)):
        a, c = build(m), build(shape)
        assert sp.cancel(a.flops - c.flops) == 0
        assert sp.cancel(a.bytes - c.bytes) == 0
    # the count above reads the same graphs: the seeds' 12 L D^2 for their model
    assert sp.cancel(transformer(layers=L, d_model=D, heads=H).params - 12 * L * D**2) == 0


def test_shape_checks_its_fields_with_the_models_messages():
    with pytest.raises(SymroofError, match=r"model 'm': kv_heads 3 must divide heads 8"):
        ModelShape("m", layers=2, d_model=64, heads=8, kv_heads=3, head_dim=8, d_ff=256)
    with pytest.raises(SymroofError, match=r"model 'm' mlp: expected one of"):
        ModelShape("m", layers=2, d_model=64, heads=8, kv_heads=8, head_dim=8, d_ff=256,
                   mlp="geglu")  # type: ignore[arg-type]


def test_builders_name_their_argument_when_given_something_else():
    with pytest.raises(SymroofError, match=r"^prefill: expected a transformer model "
                       r"\(symroof.models.get or transformer\), got dict$"):
        prefill({"layers": 2}, 1, 8)  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match=r"^expected a transformer model, got str$"):
        layers.forward("llama", batch=1, seq=1)  # type: ignore[arg-type]



def test_mixers_are_one_type_below_the_workloads():
    """The hybrid mixers' widths are defined once, in workloads.mixers; every old path
    names the same class, and the builders read that class (no protocol copies it)."""
    import ast
    import importlib
    import inspect

    import symroof.models as public
    from symroof.workloads import mixers, recurrent, zamba

    hybrid = importlib.import_module("symroof.models.hybrid")  # the module, not the function
    for name in ("Mamba2", "Mamba1", "GatedDeltaNet", "LightningAttention", "ShortConv",
                 "SharedBlocks", "DECAY_GATES", "OUT_GATES"):
        assert getattr(hybrid, name) is getattr(mixers, name), name
    for name in ("Mamba2", "Mamba1", "GatedDeltaNet", "ShortConv"):
        assert getattr(public, name) is getattr(mixers, name), name
        assert getattr(mixers, name).__module__ == "symroof.workloads.mixers"
    assert zamba.SharedBlocks is mixers.SharedBlocks
    for name in ("Scan", "CbPer", "Passing", "ConvOutputs", "ScanChoices"):
        assert getattr(recurrent, name) is getattr(mixers, name), name
    # the protocols' old names are the types themselves
    assert (recurrent.SsmShape, recurrent.Mamba1Shape, recurrent.DeltaShape,
            recurrent.LightningShape) == (mixers.Mamba2, mixers.Mamba1, mixers.GatedDeltaNet,
                                          mixers.LightningAttention)
    assert recurrent.ConvShape == mixers.ConvMixer
    assert isinstance(mixers.ShortConv(), recurrent.ConvShape)
    assert not isinstance(mixers.LightningAttention(2, 8), recurrent.ConvShape)  # no conv
    # recurrent.py and zamba.py define no protocol (nor import one) and no class of widths
    for module in (recurrent, zamba):
        tree = ast.parse(inspect.getsource(module))
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        assert not [c.name for c in classes
                    if any("Protocol" in ast.unparse(base) for base in c.bases)]
        assert "Protocol" not in {a.name for n in ast.walk(tree)
                                  if isinstance(n, ast.ImportFrom) for a in n.names}
        assert {c.name for c in classes} <= {"_ChunkOps", "_ScanOnly"}, module.__name__


def test_builders_refuse_a_stand_in_for_a_mixer_by_name():
    """The builders check the concrete mixer type (a look-alike of another type, which
    the protocols let through, is refused) with the messages they gave before."""
    from types import SimpleNamespace

    from symroof.ir import Graph
    from symroof.workloads.attention import ElementwiseFlops
    from symroof.workloads.builder import Builder
    from symroof.workloads.mixers import Mamba2
    from symroof.workloads.recurrent import mamba1_mixer, short_conv_mixer

    look_alike = Mamba2(heads=2, head_dim=4, state=8)   # has every field a ShortConv has
    model = SimpleNamespace(name="m", short_conv=look_alike, mamba1=look_alike)
    b = Builder(Graph("g"), model, ElementwiseFlops())  # type: ignore[arg-type]
    one = sp.Integer(1)
    with pytest.raises(SymroofError, match=r"^model 'm' short_conv: a shortconv layer group "
                       r"needs the model's short convolution \(symroof.models.ShortConv\)$"):
        short_conv_mixer(b, None, batch=one, seq=one, decode=True)  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match=r"^model 'm' mamba1: a mamba1 layer group needs "
                       r"the model's Mamba-1 widths \(symroof.models.Mamba1\)$"):
        mamba1_mixer(b, None, batch=one, seq=one, decode=True)  # type: ignore[arg-type]


#: A hybrid's own fields: its layer pattern and its mixers' widths (HybridShape's, not a
#: plain transformer's).
_HYBRID_FIELDS = ("groups", "ssm", "mamba1", "deltanet", "lightning", "short_conv", "zamba",
                  "attn_output_gate")


def test_hybrid_model_is_its_shape_plus_counts():
    """A HybridModel is a HybridShape (the data, below the workloads) plus its counts; a
    bare HybridShape builds the model's graphs and is checked with its messages."""
    from symroof.models.hybrid import HybridModel, mamba2
    from symroof.workloads.builder import LayerGroup
    from symroof.workloads.shape import HybridShape

    m = mamba2(layers=L, d_model=D, heads=8, head_dim=16, state=32, chunk=64)
    assert isinstance(m, HybridShape) and isinstance(m, TransformerModel)
    assert HybridShape.__module__ == "symroof.workloads.shape"
    assert [f.name for f in dataclasses.fields(HybridModel)] == \
        [f.name for f in dataclasses.fields(HybridShape)]
    assert [f.name for f in dataclasses.fields(HybridShape)][-8:] == [
        "ssm", "groups", "short_conv", "mamba1", "deltanet", "attn_output_gate", "lightning",
        "zamba"]
    shape = HybridShape(**{f.name: getattr(m, f.name) for f in dataclasses.fields(HybridShape)})
    assert shape.layer_groups == m.groups
    assert not hasattr(shape, "state_bytes_per_sequence") and not hasattr(shape, "with_scan")
    for build in (lambda x: prefill(x, B, 256), lambda x: decode(x, B, S)):
        a, c = build(m), build(shape)
        assert sp.cancel(a.flops - c.flops) == 0 and sp.cancel(a.bytes - c.bytes) == 0
    # the count above reads those graphs: per layer the SSM state H P N and the conv
    # state of K - 1 = 4 taps (the default) of x, B and C, H P + 2 G N (the module's doctest)
    assert sp.cancel(m.state_bytes_per_sequence
                     - L * (8 * 16 * 32 + 4 * (8 * 16 + 2 * 32)) * b) == 0
    with pytest.raises(SymroofError, match=r"^model 'h' ssm: mamba2 layers need the Mamba-2 "
                       r"widths$"):
        HybridShape("h", layers=2, d_model=64, heads=8, kv_heads=8, head_dim=8, d_ff=256,
                    groups=(LayerGroup(sp.Integer(2), mixer="mamba2", ffn=False),))
    with pytest.raises(SymroofError, match=r"^model 'h' layer pattern: its groups cover 1 "
                       r"layers, the model has 2 \(num_hidden_layers\)$"):
        HybridShape("h", layers=2, d_model=64, heads=8, kv_heads=8, head_dim=8, d_ff=256,
                    groups=(LayerGroup(sp.Integer(1)),))


def test_builders_read_the_hybrid_fields_as_typed_fields():
    """The builders read a hybrid's fields off HybridShape (after an isinstance check),
    never with getattr and a default: no getattr on the model, none naming such a field."""
    import ast
    import inspect

    from symroof.workloads import layers as layers_module
    from symroof.workloads import parallel, recurrent, zamba

    found = []
    for module in (recurrent, zamba, layers_module, parallel):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args):
                continue
            target = ast.unparse(node.args[0])
            name = node.args[1] if len(node.args) > 1 else None
            if target in ("m", "b.m", "model") or (
                    isinstance(name, ast.Constant) and name.value in _HYBRID_FIELDS):
                found.append(f"{module.__name__}:{node.lineno} {ast.unparse(node)}")
    assert not found, found
