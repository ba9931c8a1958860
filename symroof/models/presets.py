"""Built-in model presets: the same description as a symbolic model, with published numbers.

Sources: the seeds (seed-6.4b); Brown et al. 2020, Table 2.1 (GPT-3); Meta's reference
``llama/model.py`` and each model's params.json (Llama FFN widths, derived by
:func:`llama_ffn`); the models' Hugging Face config.json files (Llama 2 and 3, Mistral,
Mixtral, Qwen2, Qwen1.5-MoE, Qwen3-MoE, Gemma 2, gpt-oss, DeepSeek-V3, GPT-2).

>>> llama_ffn(4096, multiple_of=1024, ffn_dim_multiplier=1.3)   # Llama-3-8B
14336
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.models.config import TransformerModel, transformer
from symroof.models.latent import LatentAttention

__all__ = ["PRESETS", "llama_ffn"]


def llama_ffn(d_model: object, multiple_of: object,
              ffn_dim_multiplier: object | None = None) -> sp.Expr:
    """The FFN width of Meta's Llama reference (``llama/model.py``, ``FeedForward``).

    From ``4 d``: two thirds of it (truncated), times ``ffn_dim_multiplier`` if given
    (truncated), rounded up to a multiple of ``multiple_of``. The multiplier is taken as
    its exact decimal (1.3 is 13/10), so no float rounding enters.

    >>> [llama_ffn(d, m, f) for d, m, f in ((8192, 4096, 1.3), (16384, 4096, 1.2), (4096, 256, None))]
    [28672, 53248, 11008]
    """
    d = as_dim(d_model, "llama_ffn d_model")
    step = as_dim(multiple_of, "llama_ffn multiple_of")
    hidden = sp.floor(sp.Rational(2, 3) * 4 * d)
    if ffn_dim_multiplier is not None:
        factor = as_expr(ffn_dim_multiplier, "llama_ffn ffn_dim_multiplier")
        if not factor.is_positive:
            raise SymroofError(f"llama_ffn ffn_dim_multiplier: expected a positive number, "
                               f"got {factor}")
        hidden = sp.floor(factor * hidden)
    return step * sp.ceiling(hidden / step)


def _llama(name: str, layers: int, d: int, heads: int, kv: int, ff: object, vocab: int,
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


def _deepseek_v3() -> TransformerModel:
    # deepseek-ai/DeepSeek-V3 config.json: MLA (d_c 512, d_r 64, d_n 128, d_v 128, d_q 1536),
    # 256 routed experts of 2048 (top 8), one shared expert of 2048, the first 3 layers dense
    # (18432); the multi-token-prediction module (num_nextn_predict_layers) is not the model
    mla = LatentAttention(kv_rank=512, rope_dim=64, nope_dim=128, v_dim=128, q_rank=1536)
    return transformer(name="deepseek-v3", layers=61, d_model=7168, heads=128, d_ff=18432,
                       vocab=129280, mlp="gated", norm="rmsnorm", positions="rotary",
                       experts=256, experts_per_token=8, expert_d_ff=2048, shared_d_ff=2048,
                       dense_layers=3, latent=mla)


PRESETS: MappingProxyType[str, Callable[[], TransformerModel]] = MappingProxyType({
    # the seeds' decode model: 32 layers, width 4,096, MHA, d_ff = 4D, weights only (12 L D^2)
    "seed-6.4b": lambda: transformer(name="seed-6.4b", layers=32, d_model=4096, heads=32),
    # Brown et al. 2020, Table 2.1 (n_ctx 2048, BPE vocab 50,257, tied input/output embeddings)
    "gpt3-6.7b": _gpt("gpt3-6.7b", 32, 4096, 32),
    "gpt3-175b": _gpt("gpt3-175b", 96, 12288, 96),
    "gpt2": _gpt("gpt2", 12, 768, 12, positions=1024),
    # Llama: shapes from config.json, FFN widths by Meta's rule from params.json
    # (multiple_of, ffn_dim_multiplier): 11008, 28672, 14336, 28672, 53248
    "llama-2-7b": _llama("llama-2-7b", 32, 4096, 32, 32, llama_ffn(4096, 256), 32000),
    "llama-2-70b": _llama("llama-2-70b", 80, 8192, 64, 8, llama_ffn(8192, 4096, 1.3), 32000),
    "llama-3-8b": _llama("llama-3-8b", 32, 4096, 32, 8, llama_ffn(4096, 1024, 1.3), 128256),
    "llama-3-70b": _llama("llama-3-70b", 80, 8192, 64, 8, llama_ffn(8192, 4096, 1.3), 128256),
    "llama-3.1-405b": _llama("llama-3.1-405b", 126, 16384, 128, 8,
                             llama_ffn(16384, 4096, 1.2), 128256),
    # mistralai/Mistral-7B-v0.1: every layer attends a sliding window of 4096 positions
    "mistral-7b": _llama("mistral-7b", 32, 4096, 32, 8, 14336, 32000, window=4096),
    "mixtral-8x7b": _llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, experts=8,
                           experts_per_token=2),
    "qwen2-7b": _llama("qwen2-7b", 28, 3584, 28, 4, 18944, 152064, qkv_bias=True),
    # Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408 (top 4), a gated shared expert of 5632
    "qwen1.5-moe-a2.7b": _llama("qwen1.5-moe-a2.7b", 24, 2048, 16, 16, 5632, 151936,
                                qkv_bias=True, experts=60, experts_per_token=4,
                                expert_d_ff=1408, shared_d_ff=5632, shared_gate=True),
    # Qwen/Qwen3-30B-A3B: 128 experts of 768 (top 8), per-head q/k norms, head_dim 128
    "qwen3-30b-a3b": _llama("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, head_dim=128,
                            experts=128, experts_per_token=8, expert_d_ff=768, qk_norm="head"),
    # google/gemma-2-9b: even layers local (window 4096), GeGLU, four norms a layer, tied
    "gemma-2-9b": _llama("gemma-2-9b", 42, 3584, 16, 8, 14336, 256000, tied=True,
                         head_dim=256, activation="gelu", post_norms=True, window=4096,
                         window_layers=21),
    # openai/gpt-oss-20b: 32 experts of 2880 (top 4) with biases, window 128 on even layers,
    # attention biases and sinks (bf16 parameters; the release stores experts in MXFP4)
    "gpt-oss-20b": _llama("gpt-oss-20b", 24, 2880, 64, 8, 2880, 201088, head_dim=64,
                          biases=True, experts=32, experts_per_token=4, router_bias=True,
                          sinks=True, window=128, window_layers=12),
    "deepseek-v3": _deepseek_v3,
})
