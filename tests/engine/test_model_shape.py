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
from symroof.symbols import B, D, H, L, S
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
