"""Model descriptions: a symbolic ``transformer(...)``, presets and Hugging Face configs.

>>> from symroof.models import get
>>> get("seed-6.4b").params
6442450944
"""

from __future__ import annotations

from functools import cache

from symroof.errors import SymroofError, shown, suggest
from symroof.models.config import TransformerModel, transformer
from symroof.models.hf import from_hf_config, from_hf_dict
from symroof.models.hybrid import (GatedDeltaNet, HybridModel, Mamba1, Mamba2, ShortConv,
                                   hybrid, mamba2)
from symroof.models.latent import LatentAttention
from symroof.models.presets import PRESETS, llama_ffn

__all__ = ["TransformerModel", "transformer", "get", "names", "from_hf_config", "from_hf_dict",
           "resolve", "LatentAttention", "llama_ffn", "HybridModel", "Mamba1", "Mamba2",
           "ShortConv", "GatedDeltaNet", "hybrid", "mamba2"]


def names() -> tuple[str, ...]:
    """Preset names, sorted."""
    return tuple(sorted(PRESETS))


def get(name: str) -> TransformerModel:
    """A preset model by name (unknown names suggest the closest ones)."""
    if not isinstance(name, str) or name not in PRESETS:
        hint = suggest(name, PRESETS) if isinstance(name, str) else ""
        raise SymroofError(f"unknown model {shown(name)}{hint}; "
                           f"known: {', '.join(sorted(PRESETS))}")
    return _preset(name)


@cache
def _preset(name: str) -> TransformerModel:
    return PRESETS[name]()


def resolve(spec: str, *, ignore: tuple[str, ...] = ()) -> TransformerModel:
    """A preset name, or a path to a Hugging Face config.json (anything ending in .json;
    ``ignore`` names refused config fields to accept, see :func:`from_hf_dict`)."""
    if isinstance(spec, str) and spec.endswith(".json"):
        return from_hf_config(spec, ignore=ignore)
    return get(spec)
