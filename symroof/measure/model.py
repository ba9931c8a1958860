"""Predicted against measured transformer steps: a tiny random-weight model from a config.json.

The model is built with transformers (``AutoModelForCausalLM.from_config``: random
weights, nothing downloaded) and timed on a CUDA device when there is one, else on the
CPU; beside each time sits symroof's bound for the same model
(``symroof.models.from_hf_dict``) on the measured or named chip. PyTorch and
transformers are optional and imported only here, lazily.
"""

from __future__ import annotations

# imports inside functions: numpy, torch, transformers and threadpoolctl load only when a
# measurement runs (torch and transformers are optional; numpy costs every command start-up)

import inspect
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof.budget import check_rows
from symroof.errors import SymroofError, shown
from symroof.files import parse_json, read_text
from symroof.evaluate import roofline
from symroof.hardware import HardwareSpec
from symroof.measure.gemm import target_spec
from symroof.measure.kernels import TORCH_DTYPES, resolve_device
from symroof.measure.limits import ITEMSIZE, check_bytes, check_reps, check_seconds
from symroof.measure.machine import Machine
from symroof.measure.probe import Load, LoadMeter, cpu_model, require_transformers
from symroof.measure.timing import Timing, time_call
from symroof.models import TransformerModel, from_hf_dict
from symroof.symbols import b
from symroof.workloads import decode, prefill

__all__ = ["ModelRow", "ModelRun", "measure_decode", "measure_prefill", "build_model",
           "load_config", "CACHE_NOTE"]

#: What the KV cache does each step, which the bound (weights + KV read once) leaves out.
CACHE_NOTE = ("transformers' DynamicCache grows by torch.cat: every step also reads and "
              "rewrites the whole cache into a new tensor, traffic the bound does not count")


@dataclass(frozen=True)
class ModelRow:
    """One (batch, past) decode step or (batch, seq) prefill: bound and measured time."""

    phase: str                   # "decode" or "prefill"
    batch: int
    past: int                    # cached tokens before the step (0 for prefill)
    seq: int                     # new tokens per sequence (1 for decode)
    tokens: int                  # batch * seq
    flops: int                   # symroof's F (contractions, 2 per MAC)
    bytes: float                 # symroof's Q
    intensity: float             # F / Q
    bound_s: float               # max(F / peak, Q / bandwidth)
    bound: str                   # "memory", "compute" or "balanced"
    timing: Timing
    measured_s: float            # timing.min_s
    ratio: float                 # measured_s / bound_s
    achieved_flop_per_s: float   # F / measured_s
    tokens_per_s: float          # tokens / measured_s
    bound_tokens_per_s: float    # tokens / bound_s

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {k: (v.as_dict() if isinstance(v, Timing) else v)
                for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class ModelRun:
    """A table of bound against measured steps for one model, chip and precision."""

    model: str
    config: str                  # the config.json mapping, as sorted JSON
    params: int                  # parameters of the built torch model
    symroof_params: int          # parameters of symroof's description of the same config
    hardware: str                # the spec the bounds used
    precision: str
    dtype: str                   # the torch dtype the model ran in
    device: str                  # "cpu" or "cuda"
    device_name: str
    threads: int | None          # torch's intra-op threads on the CPU
    attention: str               # transformers' attn_implementation
    traffic: str                 # symroof's decode traffic convention
    torch_version: str
    transformers_version: str
    rows: tuple[ModelRow, ...]
    load: Load | None            # other processes' CPU use while measuring
    notes: tuple[str, ...]
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("rows", "load")}
        out["load"] = None if self.load is None else self.load.as_dict()
        out["config"] = json.loads(self.config)
        out["notes"], out["warnings"] = list(self.notes), list(self.warnings)
        out["rows"] = [r.as_dict() for r in self.rows]
        return out


def load_config(config: Mapping[str, object] | str | os.PathLike[str]) -> dict[str, object]:
    """A config.json mapping, given as one or as a path to the file."""
    if isinstance(config, Mapping):
        return dict(config)
    if not isinstance(config, (str, os.PathLike)):
        raise SymroofError(f"config: expected a mapping or a file path, got "
                           f"{type(config).__name__} {shown(config)}")
    data = parse_json(read_text(config, "config.json"), os.fspath(config))
    if not isinstance(data, dict):
        raise SymroofError(f"{os.fspath(config)}: expected a JSON object")
    return data


def build_model(config: Mapping[str, object], *, precision: str = "fp32", device: str = "cpu",
                attention: str = "sdpa", seed: int = 0) -> Any:
    """A random-weight causal LM from a config.json mapping, in eval mode on ``device``."""
    transformers = require_transformers("measuring a model")
    import torch

    cfg = dict(config)
    kind = cfg.pop("model_type", None)
    if not isinstance(kind, str):
        raise SymroofError("config.json: missing field 'model_type'")
    if precision not in TORCH_DTYPES or precision == "tf32":
        raise SymroofError(f"measure model: precision {precision!r}: expected fp64, fp32, "
                           f"bf16 or fp16")
    for key in ("architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype"):
        cfg.pop(key, None)      # about the checkpoint, not the shapes
    try:
        conf = transformers.AutoConfig.for_model(kind, **cfg)
    except (ValueError, TypeError, KeyError) as err:
        raise SymroofError(f"config.json: transformers cannot build {kind!r}: {err}") from None
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(conf, attn_implementation=attention)
    dtype = getattr(torch, TORCH_DTYPES[precision])
    return model.to(device=device, dtype=dtype).train(False)  # inference mode


def measure_decode(config: Mapping[str, object] | str | os.PathLike[str],
                   hw: Machine | HardwareSpec | str, *, batches: Sequence[int] = (1, 8),
                   pasts: Sequence[int] = (128, 1024), precision: str = "fp32",
                   device: str = "auto", reps: int = 5, warmup: int = 2,
                   warmup_s: float = 0.25, attention: str = "sdpa",
                   traffic: str = "seed") -> ModelRun:
    """Time one decode step after ``past`` cached tokens for each batch and past.

    The cache is filled by a prefill of ``past`` random tokens, then cut back to ``past``
    before every timed step (untimed), so each repetition is the same step. The bound is
    ``roofline(decode(model, batch, past=past, traffic=traffic), hw, precision=...)``.
    """
    return _measure("decode", config, hw, [(b, p) for b in batches for p in pasts],
                    precision, device, reps, warmup, warmup_s, attention, traffic)


def measure_prefill(config: Mapping[str, object] | str | os.PathLike[str],
                    hw: Machine | HardwareSpec | str, *, batches: Sequence[int] = (1, 8),
                    seqs: Sequence[int] = (128, 512), precision: str = "fp32",
                    device: str = "auto", reps: int = 5, warmup: int = 2,
                    warmup_s: float = 0.25, attention: str = "sdpa") -> ModelRun:
    """Time one forward pass over ``batch x seq`` new tokens (no cache) for each pair.

    The bound is ``roofline(prefill(model, batch, seq), hw, precision=...)`` (causal
    attention counted as half the products, as a fused kernel skips them).
    """
    return _measure("prefill", config, hw, [(b, s) for b in batches for s in seqs],
                    precision, device, reps, warmup, warmup_s, attention, "full")


def _measure(phase: str, config: Mapping[str, object] | str | os.PathLike[str],
             hw: Machine | HardwareSpec | str, shapes: list[tuple[int, int]], precision: str,
             device: str, reps: int, warmup: int, warmup_s: float, attention: str,
             traffic: str) -> ModelRun:
    transformers = require_transformers(f"measure {phase}")
    import torch

    meter = LoadMeter()
    cfg = load_config(config)
    sym = from_hf_dict(cfg)          # fails early, with the config field named
    spec = target_spec(hw)
    spec.peak(precision)             # the chip must have this precision before any timing
    dev = resolve_device(device)
    check_reps(reps, warmup, f"measure {phase}")
    check_seconds(warmup_s, "warmup_s", f"measure {phase}")
    check_rows([("shapes", len(shapes))], f"measure {phase}")
    for b, n in shapes:                  # every shape fits before the model is built
        _check_shape(cfg, phase, b, n)
        check_bytes(_memory_need(sym, phase, b, n, ITEMSIZE.get(precision, 8), attention),
                    f"measure {phase} batch={b} {'past' if phase == 'decode' else 'seq'}={n} "
                    f"{precision} (weights, KV cache, logits and activations)")
    model = build_model(cfg, precision=precision, device=dev, attention=attention)
    sync = torch.cuda.synchronize if dev == "cuda" else None
    rows = []
    with torch.inference_mode():
        for b, n in shapes:
            if phase == "decode":
                timing = _time_decode(torch, model, cfg, b, n, dev, reps, warmup, warmup_s,
                                      sync)
                work = decode(sym, b, past=n, traffic=traffic)
                rows.append(_row(phase, b, n, 1, work, spec, precision, timing))
            else:
                ids = _ids(torch, cfg, b, n, dev)
                timing = time_call(lambda: model(input_ids=ids, use_cache=False),
                                   warmup=warmup, warmup_s=warmup_s, reps=reps, sync=sync)
                rows.append(_row(phase, b, 0, n, prefill(sym, b, n), spec, precision, timing))
    params = sum(p.numel() for p in model.parameters())
    sym_params = int(sym.params)
    threads = None if dev == "cuda" else int(torch.get_num_threads())
    name = torch.cuda.get_device_name(0) if dev == "cuda" else _cpu_name()
    notes = [f"no CUDA device: measured on the CPU ({threads} torch threads)"
             if dev == "cpu" else f"measured on {name} with torch.cuda.synchronize "
                                  f"before and after each repetition",
             "measured time: the best repetition; bound: symroof's max(F/peak, Q/bandwidth)",
             "ratio: measured / bound (above 1: slower than the bound)"]
    if phase == "decode":
        notes.append(CACHE_NOTE)
    warnings = [f"{phase} batch={r.batch} {'past' if phase == 'decode' else 'seq'}="
                f"{r.past if phase == 'decode' else r.seq}: {r.timing.warning}"
                for r in rows if r.timing.warning]
    if params != sym_params:
        warnings.append(f"the torch model has {params} parameters but symroof's description "
                        f"of the config has {sym_params}: the bound counts a different model")
    warnings += [f"batch={r.batch}: measured faster than the bound (ratio {r.ratio:.2f}): "
                 + ("data the bound charges to main memory stayed in the caches"
                    if r.bound == "memory" else "the chip's peak was under-measured")
                 for r in rows if r.ratio < 1]
    load = meter.stop()
    if load is not None and load.warning:
        warnings.append(load.warning)
    return ModelRun(sym.name, json.dumps(cfg, sort_keys=True), params, sym_params, spec.name,
                    precision, TORCH_DTYPES[precision], dev, name, threads, attention,
                    traffic, torch.__version__, transformers.__version__, tuple(rows), load,
                    tuple(notes), tuple(warnings))


def _time_decode(torch: Any, model: Any, cfg: Mapping[str, object], batch: int, past: int,
                 device: str, reps: int, warmup: int, warmup_s: float, sync: Any) -> Timing:
    """One step after ``past`` cached tokens; the cache is cut back before every step."""
    out = model(input_ids=_ids(torch, cfg, batch, past, device), use_cache=True)
    cache = _cache_of(out)
    del out
    new = _ids(torch, cfg, batch, 1, device)
    kw = _cache_kwarg(model)

    def reset() -> None:
        extra = cache.get_seq_length() - past
        if extra > 0:
            cache.crop(-extra)       # a negative crop removes tokens (every 4.x/5.x release)

    return time_call(lambda: model(input_ids=new, use_cache=True, **{kw: cache}),
                     warmup=warmup, warmup_s=warmup_s, reps=reps, setup=reset, sync=sync)


def _row(phase: str, batch: int, past: int, seq: int, work: Any, spec: HardwareSpec,
         precision: str, timing: Timing) -> ModelRow:
    r = roofline(work, spec, precision=precision)
    flops, bound_s, tokens = int(r.flops), float(r.time_s), batch * seq
    return ModelRow(phase, batch, past, seq, tokens, flops, float(r.bytes), float(r.intensity),
                    bound_s, r.bound or "unknown", timing, timing.min_s,
                    timing.min_s / bound_s, flops / timing.min_s, tokens / timing.min_s,
                    tokens / bound_s)


def _ids(torch: Any, cfg: Mapping[str, object], batch: int, length: int, device: str) -> Any:
    vocab = cfg.get("vocab_size")
    if not isinstance(vocab, int) or vocab < 1:
        raise SymroofError("config.json: vocab_size must be a positive integer to draw tokens")
    gen = torch.Generator(device="cpu").manual_seed(batch * 1_000_003 + length)
    return torch.randint(0, vocab, (batch, length), generator=gen).to(device)


def _check_shape(cfg: Mapping[str, object], phase: str, batch: int, n: int) -> None:
    what = "past" if phase == "decode" else "seq"
    for name, v in (("batch", batch), (what, n)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise SymroofError(f"measure {phase}: {name} must be a positive integer, got {v!r}")
    limit = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    need = n + 1 if phase == "decode" else n
    if isinstance(limit, int) and need > limit:
        raise SymroofError(f"measure {phase}: {what}={n} needs {need} positions but the config "
                           f"allows {limit} (max_position_embeddings)")


def _memory_need(sym: TransformerModel, phase: str, batch: int, n: int, itemsize: int,
                 attention: str) -> int:
    """A generous estimate of the bytes one step holds: the weights, the KV cache (twice:
    transformers' cache grows by concatenation), the logits of every token and a few
    activations per token, and eager attention's score matrices."""
    def number(e: object) -> int:
        value = sp.Integer(e) if isinstance(e, int) else e
        if not isinstance(value, sp.Basic):
            return 0
        value = value.xreplace({b: itemsize})
        return int(value) if value.is_number and value.is_finite else 0
    tokens = batch * n
    need = number(sym.params) * itemsize
    if phase == "decode":   # the prefill that fills the cache computes n tokens' logits too
        need += 2 * number(sym.kv_cache_bytes(sp.Integer(n + 1))) * batch
    width = number(sym.vocab or 0) + 4 * number(sym.d_model) + 2 * number(sym.d_ff)
    need += tokens * width * itemsize
    if attention == "eager":
        need += batch * number(sym.heads) * n * n * itemsize
    return need


def _cache_kwarg(model: Any) -> str:
    """transformers 5 names the forward argument ``cache``; earlier releases ``past_key_values``."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(output: Any) -> Any:
    for attr in ("cache", "past_key_values"):   # the new name first: the old one warns
        c = getattr(output, attr, None)
        if c is not None:
            return c
    raise SymroofError("measure decode: the model returned no KV cache (use_cache=True)")


def _cpu_name() -> str:

    return cpu_model()
