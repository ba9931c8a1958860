"""Every counting convention and model choice as a named option, with its default.

Each option is a ``StrEnum``: pass the member or its string value (``"half"``). A few
values the README once documented under other names keep working (``traffic="seed"`` is
:attr:`DecodeTraffic.WEIGHTS_AND_KV`); any other value is a :class:`SymroofError` that
lists the choices.

>>> option(Causal, True, "causal"), option(DecodeTraffic, "seed", "traffic")
(<Causal.HALF: 'half'>, <DecodeTraffic.WEIGHTS_AND_KV: 'weights_and_kv'>)
>>> option(Unfused, "both", "unfused")
Traceback (most recent call last):
...
symroof.errors.SymroofError: unfused: expected one of write_and_read, materialize_once, got 'both'
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import wraps
from typing import Any, TypeVar

from symroof.errors import SymroofError, suggest

__all__ = ["Saves", "FlopCount", "OpsCounted", "Causal", "Unfused", "DecodeTraffic", "Logits",
           "Lowering", "MlpKind", "Norm", "Activation", "Positions", "option", "renamed",
           "GLOSSARY", "WindowKernel", "WindowSpan", "LatentDecode", "ExpertReads", "QkNorm"]

E = TypeVar("E", bound=StrEnum)


class FlopCount(StrEnum):
    """How a multiply-accumulate counts (option ``flop_count``; default two FLOPs)."""

    TWO_PER_MAC = "two_per_mac"  # a MAC is 2 FLOPs: 2MNK (Kaplan, Pope, vendor peaks); default
    ONE_PER_MAC = "one_per_mac"  # a MAC is 1 operation: MNK (ResNet-50's 3.8 G, the TPU paper)
    EXACT = "exact"              # K multiplies and K-1 adds per output: MN(2K-1)

    @property
    def ops_per_mac(self) -> int:
        """How the matching hardware peak counts a MAC (exact counts compare with 2)."""
        return 1 if self is FlopCount.ONE_PER_MAC else 2


class OpsCounted(StrEnum):
    """Which ops' FLOPs count (option ``ops``; transformer workloads default to contractions)."""

    CONTRACTIONS = "contractions"  # GEMMs only, as the seeds and PyTorch's counter count
    ALL = "all"                    # also softmax, norms, activations, residual adds


class Causal(StrEnum):
    """How a causal mask reduces the work of QK^T and PV (option ``causal``; default half)."""

    HALF = "half"    # a causal kernel skips about half the products (the seeds); also True
    EXACT = "exact"  # S(S+1)/2 of the S^2 query-key pairs
    NONE = "none"    # no mask: every query meets every key (PyTorch eager); also False

    @classmethod
    def _missing_(cls, value: object) -> Causal | None:
        if value is True:
            return cls.HALF
        if value is False:
            return cls.NONE
        return None


class Unfused(StrEnum):
    """How unfused attention moves the S x S matrices (option ``unfused``)."""

    WRITE_AND_READ = "write_and_read"      # scores and probabilities written and read once each
    MATERIALIZE_ONCE = "materialize_once"  # one S x S matrix crosses once (the seed's simulation)


class DecodeTraffic(StrEnum):
    """Which tensors a decode step's bytes count (option ``traffic``; default weights and KV)."""

    WEIGHTS_AND_KV = "weights_and_kv"  # activations resident on chip, as the seeds model decode
    ALL = "all"                        # activations cross the boundary too

    @classmethod
    def _missing_(cls, value: object) -> DecodeTraffic | None:
        # the names README documented before the renovation
        return {"seed": cls.WEIGHTS_AND_KV, "full": cls.ALL}.get(value)  # type: ignore[call-overload]


class Logits(StrEnum):
    """Which positions the LM head runs on (option ``logits``; default all)."""

    ALL = "all"    # every position (training, and PyTorch's forward)
    LAST = "last"  # the last position of each sequence (serving a prompt)
    NONE = "none"  # no LM head


class Lowering(StrEnum):
    """How a convolution is lowered to a GEMM (option ``lowering``; default explicit)."""

    EXPLICIT = "explicit"  # im2col writes the duplicated CRS x NPQ matrix and reads it back
    IMPLICIT = "implicit"  # the lowering is fused into the GEMM (built on the fly)


class MlpKind(StrEnum):
    """The MLP of a transformer layer."""

    PLAIN = "plain"  # up, activation, down (GPT)
    GATED = "gated"  # gate and up, act(gate) * up, down (SwiGLU: Llama)


class Norm(StrEnum):
    """The normalisation of a transformer layer (``None``: not modelled, the seeds' 12LD^2)."""

    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"


class Activation(StrEnum):
    """The MLP's activation function."""

    GELU = "gelu"
    SILU = "silu"
    RELU = "relu"
    RELU2 = "relu2"  # relu(x)^2 (Nemotron, Arcee)
    XIELU = "xielu"  # xIELU, two learned scalars (alpha_p, alpha_n) per MLP (Apertus)


class Positions(StrEnum):
    """Position encoding (``None``: none modelled)."""

    LEARNED = "learned"  # a table of max_positions x D weights, looked up per position
    ROTARY = "rotary"    # rotary embeddings applied to q and k (no weights)


def option(enum: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum``; a SymroofError naming ``what`` and the choices."""
    try:
        return enum(value)  # type: ignore[arg-type]  # _missing_ takes any value
    except (ValueError, TypeError):  # TypeError: an unhashable value such as a list
        choices = [m.value for m in enum]
        raise SymroofError(f"{what}: expected one of {', '.join(choices)}, got {value!r}"
                           f"{suggest(str(value), choices)}") from None


F = TypeVar("F", bound=Callable[..., Any])


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Accept keyword arguments under their names from before the renovation.

    >>> @renamed(flops="flop_count")
    ... def f(*, flop_count="two_per_mac"): return flop_count
    >>> f(flops="exact")
    'exact'
    """
    def wrap(fn: F) -> F:
        @wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise SymroofError(f"{fn.__name__}: give {new!r}, not both {new!r} "
                                           f"and its old name {old!r}")
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        call.__renamed__ = dict(old_to_new)  # type: ignore[attr-defined]  # the registry reads it
        return call  # type: ignore[return-value]
    return wrap


#: The parameter names every builder uses, one per meaning (README's glossary).
GLOSSARY = {
    "batch": "B: sequences processed together in one step",
    "seq": "S: tokens of each sequence processed in one pass (a prefill's prompt, a "
           "training sequence, attention's queries)",
    "context": "S in decode: positions a new token attends, itself included",
    "past": "cached positions before a decode step (context = past + 1)",
    "flop_count": "how a multiply-accumulate counts (FlopCount)",
    "ops": "which ops' FLOPs count (OpsCounted)",
    "causal": "how a causal mask reduces attention's work (Causal)",
    "fused / unfused": "attention in one kernel, or how its S x S matrices cross (Unfused)",
    "traffic": "which tensors a decode step's bytes count (DecodeTraffic)",
}


class WindowKernel(StrEnum):
    """How prefill and training count a windowed layer's attention (option ``window_kernel``)."""

    BAND = "band"      # a windowed kernel visits only the band of W keys per query; default
    MASKED = "masked"  # the causal span is computed (per ``causal``) and the window masked off


class WindowSpan(StrEnum):
    """Positions a windowed layer attends (option ``window_span``; default exact)."""

    EXACT = "exact"    # min(positions, W): right at any length (a Min in symbolic formulas)
    FILLED = "filled"  # the window is full (positions >= W): W, no Min (limits); an assumption


class LatentDecode(StrEnum):
    """How a decode step runs multi-head latent attention (option ``latent``; default absorbed)."""

    ABSORBED = "absorbed"  # W_UK into the query, W_UV after attention: scores on the latent
    NAIVE = "naive"        # K and V up-projected from every cached latent each step (transformers)


class ExpertReads(StrEnum):
    """Which routed experts' weights a step reads (option ``expert_reads``; default
    ``"expected"``: the reads follow the batch wherever it has a value)."""

    ALL = "all"            # every expert: exact once tokens * k >= experts, an upper bound below
    ROUTED = "routed"      # min(E, tokens * k): no two routed (token, expert) pairs share one
    EXPECTED = "expected"  # E (1 - (1 - k/E)^tokens): tokens routed independently, uniformly
    ACTIVE = "active"      # k of E whatever the tokens: one token's experts (a lower bound)


class WindowCache(StrEnum):
    """Positions a windowed layer's rolling KV buffer holds between decode steps once the
    context passes the window (option ``window_cache``; default ``"window"``)."""

    WINDOW = "window"                  # W: the positions the next step attends, kept
    WINDOW_MINUS_1 = "window_minus_1"  # W - 1: transformers' DynamicSlidingWindowLayer


class QkNorm(StrEnum):
    """Normalisation of queries and keys before attention (``None``: none)."""

    HEAD = "head"  # RMSNorm over each head's head_dim (Qwen3, Gemma 3): 2 head_dim gains
    FULL = "full"  # RMSNorm over all of Q and all of K (OLMoE): q_dim + kv_dim gains
    HEADS = "heads"  # the model's norm over each head, a gain per head and value (Cohere)
    L2 = "l2"      # an L2 norm over each head, no gains, on the rotary layers only (Llama 4)


class Recompute(StrEnum):
    """Which forward values a training step's backward pass computes again instead of
    keeping them (option ``recompute``; default flash). ``True`` is ``"flash"`` and
    ``False`` is ``"none"``, the two settings the option had as a flag."""

    NONE = "none"            # keep every value the backward reads (a fused kernel writes them out)
    FLASH = "flash"          # values a fused kernel kept on chip are recomputed (FlashAttention)
    SELECTIVE = "selective"  # also the attention core from Q, K, V (Korthikanti et al., Megatron)
    FULL = "full"            # keep each layer's input only; the layer's forward runs again

    @classmethod
    def _missing_(cls, value: object) -> Recompute | None:
        if value is True:
            return cls.FLASH
        if value is False:
            return cls.NONE
        return None


class Statistics(StrEnum):
    """Whether the per-row fp32 statistics a backward pass reads count toward saved
    activations: a norm's mean and 1/sigma, FlashAttention's logsumexp (option
    ``statistics``; default saved)."""

    SAVED = "saved"      # counted, as PyTorch's layer_norm and FlashAttention keep them
    IGNORED = "ignored"  # left out as small buffers (Korthikanti et al. 2022)


class Bubble(StrEnum):
    """What a pipeline bubble is a fraction of (option ``bubble``; default ideal time)."""

    IDEAL = "ideal"  # (p - 1)/m: idle time over the ideal (bubble-free) time (Narayanan et al.)
    TOTAL = "total"  # (p - 1)/(m + p - 1): idle time over the whole step


__all__ += ["Recompute", "Statistics", "Bubble"]


class Saves(StrEnum):
    """What an elementwise op's gradient reads from the forward pass (the default: its
    inputs; an op marked ``linear`` reads nothing). The builder that makes an op says it
    (``Graph.elementwise(..., saves=...)``); the backward pass reads it from the op."""

    INPUTS = "inputs"      # f'(x) needs x: GELU, SiLU, each factor of a product
    OUTPUT = "output"      # the output alone: softmax, dx = y (dy - sum(dy y))
    NORM = "norm"          # a layer norm: its input and 2 fp32 per row (mean, 1/sigma)
    RMS_NORM = "rms_norm"  # an RMS norm: its input and 1 fp32 per row (1/rms)
    MASK = "mask"          # dropout x m/(1 - p): the mask (its last input), which takes no gradient
    NOTHING = "nothing"    # a linear map with fixed coefficients (rotary embeddings)
