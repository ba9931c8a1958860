"""Built-in model presets: the same description as a symbolic model, with published numbers.

Sources: the seeds (seed-6.4b); Brown et al. 2020, Table 2.1 (GPT-3); the models'
Hugging Face config.json files (Llama 2 and 3, Mistral, Mixtral, Qwen2, GPT-2).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from symroof.models.config import TransformerModel, transformer

__all__ = ["PRESETS"]


def _llama(name: str, layers: int, d: int, heads: int, kv: int, ff: int, vocab: int,
           tied: bool = False, **kw: object) -> Callable[[], TransformerModel]:
    return lambda: transformer(name=name, layers=layers, d_model=d, heads=heads, kv_heads=kv,
                               d_ff=ff, vocab=vocab, mlp="gated", norm="rmsnorm",
                               positions="rotary", tied_embeddings=tied, **kw)  # type: ignore[arg-type]


def _gpt(name: str, layers: int, d: int, heads: int, vocab: int = 50257,
         positions: int = 2048, tied: bool = True) -> Callable[[], TransformerModel]:
    return lambda: transformer(name=name, layers=layers, d_model=d, heads=heads, d_ff=4 * d,
                               vocab=vocab, mlp="plain", norm="layernorm", biases=True,
                               positions="learned", max_positions=positions,
                               tied_embeddings=tied)


PRESETS: MappingProxyType[str, Callable[[], TransformerModel]] = MappingProxyType({
    # the seeds' decode model: 32 layers, width 4,096, MHA, d_ff = 4D, weights only (12 L D^2)
    "seed-6.4b": lambda: transformer(name="seed-6.4b", layers=32, d_model=4096, heads=32),
    # Brown et al. 2020, Table 2.1 (n_ctx 2048, BPE vocab 50,257, tied input/output embeddings)
    "gpt3-6.7b": _gpt("gpt3-6.7b", 32, 4096, 32),
    "gpt3-175b": _gpt("gpt3-175b", 96, 12288, 96),
    "gpt2": _gpt("gpt2", 12, 768, 12, positions=1024),
    # Hugging Face config.json of meta-llama/Llama-2-7b-hf, Meta-Llama-3-8B, Meta-Llama-3-70B
    "llama-2-7b": _llama("llama-2-7b", 32, 4096, 32, 32, 11008, 32000),
    "llama-2-70b": _llama("llama-2-70b", 80, 8192, 64, 8, 28672, 32000),
    "llama-3-8b": _llama("llama-3-8b", 32, 4096, 32, 8, 14336, 128256),
    "llama-3-70b": _llama("llama-3-70b", 80, 8192, 64, 8, 28672, 128256),
    "llama-3.1-405b": _llama("llama-3.1-405b", 126, 16384, 128, 8, 53248, 128256),
    "mistral-7b": _llama("mistral-7b", 32, 4096, 32, 8, 14336, 32000),
    "mixtral-8x7b": _llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, experts=8,
                           experts_per_token=2),
    "qwen2-7b": _llama("qwen2-7b", 28, 3584, 28, 4, 18944, 152064, qkv_bias=True),
})
