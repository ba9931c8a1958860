"""How many sequences fit: the third step of the one memory count.

A sharded decode step of one sequence gives each device's parts (weights, that
sequence's KV cache: :mod:`symroof.memory.parts`); fitted on the chip with a reserve
(:mod:`symroof.memory.fit`) they give ``floor((capacity (1 - reserve) - weights) / KV per
sequence)``. ``sr.capacity``, ``symroof capacity``, the serving planner and
``symroof.serving`` read this one count.

>>> from symroof.models import get
>>> m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8", activations="fp8")
>>> max_sequences(m, "h100-sxm", context=8000, tp=4).sequences    # "190 users at 8k"
190
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof import hardware
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.ir import as_dim
from symroof.memory.fit import device_memory, fraction
from symroof.memory.parts import memory_parts
from symroof.models import TransformerModel
from symroof.options import WindowCache
from symroof.precision import Precision
from symroof.symbols import b
from symroof.workloads import decode
from symroof.workloads.parallel import check_layout

__all__ = ["Capacity", "max_sequences", "kv_cache_per_device", "capacity"]


def _model(model: object, what: str) -> TransformerModel:
    """``model``, checked."""
    if not isinstance(model, TransformerModel):
        raise SymroofError(f"{what}: expected a transformer model, got {type(model).__name__}")
    return model


def kv_cache_per_device(model: TransformerModel, *, batch: object, context: object,
                        tp: object = 1, pp: object = 1,
                        window_cache: WindowCache | str = WindowCache.WINDOW) -> sp.Expr:
    """KV-cache bytes one device holds for ``batch`` sequences at ``context`` positions
    (a decode graph's cache tensors, sharded: KV heads split or replicated, a stage's
    layers); a windowed layer's buffer holds ``window_cache`` positions (default W; see
    :class:`symroof.options.WindowCache`): the graph's parts, as :func:`max_sequences`
    reads them (:func:`symroof.memory.parts.memory_parts`)."""
    return memory_parts(decode(_model(model, "kv_cache_per_device").as_cached(window_cache),
                               batch, context, tp=tp, pp=pp)).kv_cache


@dataclass(frozen=True)
class Capacity:
    """How many sequences fit on each device, and the figures behind the count.

    ``exact`` is ``free / per_sequence`` before rounding down; ``sequences`` the count
    (0 when the weights alone do not fit).
    """

    sequences: sp.Expr
    exact: sp.Expr
    usable: sp.Expr          # capacity x (1 - reserve), per device
    weights: sp.Expr         # per device
    per_sequence: sp.Expr    # KV bytes of one sequence, per device
    capacity: sp.Expr
    reserve: sp.Expr
    tp: sp.Expr
    pp: sp.Expr

    @property
    def free(self) -> sp.Expr:
        """usable - weights: the room for KV caches on each device."""
        return self.usable - self.weights


def max_sequences(model: TransformerModel, hw: HardwareSpec | str, *, context: object,
                  tp: object = 1, pp: object = 1, reserve: object = 0,
                  precision: Precision | str = Precision.BF16,
                  level: str | None = None,
                  window_cache: WindowCache | str = WindowCache.WINDOW) -> Capacity:
    """Sequences of ``context`` positions whose caches fit beside the weights, on each of
    ``tp x pp`` devices: ``floor((capacity (1 - reserve) - weights) / KV per sequence)``,
    both per device from the sharded decode graph's parts (:mod:`symroof.memory.parts`)
    fitted on the chip (:mod:`symroof.memory.fit`); a free ``b`` is ``precision``'s.
    Activations and buffers are what ``reserve`` keeps room for; the seeds count neither.
    A windowed layer's rolling buffer holds ``window_cache`` positions once the context
    passes the window (default ``"window"``, W; ``"window_minus_1"``: transformers'
    dynamic cache).

    >>> from symroof.models import get
    >>> m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8", activations="fp8")
    >>> max_sequences(m, "h100-sxm", context=8000, tp=4).sequences    # "190 users at 8k"
    190
    """
    m = _model(model, "max_sequences")
    fmt = Precision.parse(precision)  # at the boundary: a name becomes a Precision
    spec = hardware.resolve(hw)
    t, p, _ = check_layout(m, tp=tp, pp=pp)
    cap = spec.capacity(level)
    if cap is None:
        raise SymroofError(f"max_sequences: {spec.name} has no published capacity for "
                           f"{level or 'main memory'}")
    step = decode(m.as_cached(window_cache), 1, as_dim(context, "context"), tp=t,
                  pp=p)   # one sequence's step
    mem = device_memory(step, spec, {b: fmt.bytes}, level=level,
                        reserve=fraction(reserve, "reserve", zero=True))
    usable = mem.usable
    assert usable is not None  # a known capacity
    weights, per_seq = mem.weights, mem.kv_cache
    exact = (usable - weights) / per_seq
    count = sp.Max(sp.Integer(0), sp.floor(exact)) if exact.is_number else exact
    return Capacity(count, exact, usable, weights, per_seq, cap, mem.reserve, t, p)


def capacity(model: TransformerModel, hw: HardwareSpec | str, *, context: object, tp: int = 1,
             level: str | None = None,
             precision: Precision | str = Precision.BF16,
             window_cache: WindowCache | str = WindowCache.WINDOW) -> sp.Expr:
    """How many sequences of ``context`` tokens fit beside the weights on ``tp`` devices:
    the ``sequences`` of :func:`max_sequences`, the one memory count
    (``symroof capacity`` prints the same), here without a reserve.

    Per device it is (capacity - weights / tp) / (KV bytes per sequence on a device),
    which is (tp * capacity - weights) / KV per sequence while ``tp`` divides the KV
    heads; past that each device keeps a whole KV head, so the count stops growing with
    ``tp``. A ``tp`` that does not divide the heads is refused, as every sharded workload
    refuses it. A windowed layer's cache holds at most its window (``window_cache``, as
    :func:`max_sequences` takes it). A model whose bytes per
    value are the free symbol ``b`` (a preset) is counted at ``precision``; set other
    formats with ``model.with_precision(...)``.
    """
    if not isinstance(model, TransformerModel):
        raise SymroofError(f"capacity: expected a transformer model, got {type(model).__name__}")
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        raise SymroofError(f"capacity tp: expected a positive integer, got {tp!r}")
    found: sp.Expr = max_sequences(model, hw, context=context, tp=tp, level=level,
                                   precision=precision, window_cache=window_cache).sequences
    return found
