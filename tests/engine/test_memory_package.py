"""The memory package: parts of an analysis -> fit on a chip with a reserve -> sequences.

Checked here: the old module paths are the package's objects (one count, not copies);
the count against a hand computation from the model's sizes and the chip file's
capacity (seed-6.4b: 12 L D^2 weights, 2 L D b KV bytes per position); the reserve; a
16-bit count at tp 2 halving both parts; a format the chip cannot compute in still
gets a memory count (capacity needs no peak); ``sr.memory`` stays the footprint function
after the package is imported; ``fits`` decides or says it cannot.
"""

from __future__ import annotations

import pytest
import sympy as sp

import symroof as sr
from symroof import device, footprint, serving
from symroof.errors import SymroofError
from symroof.hardware import get as chip
from symroof.memory import capacity as cap_mod
from symroof.memory import fit, parts
from symroof.memory.capacity import max_sequences
from symroof.memory.fit import fits
from symroof.models import get

L, D = 32, 4096                   # seed-6.4b
WEIGHTS = 12 * L * D**2           # parameters (no embeddings, no norms)


def _hand(capacity: int, *, b: int, ctx: int, tp: int = 1, reserve: sp.Expr = sp.Integer(0)
          ) -> tuple[sp.Expr, int]:
    usable = capacity * (1 - reserve)
    per_seq = sp.Rational(2 * L * D * b * ctx, tp)
    exact = (usable - sp.Rational(WEIGHTS * b, tp)) / per_seq
    return exact, max(0, int(sp.floor(exact)))


def test_old_paths_are_the_package() -> None:
    assert footprint.capacity is cap_mod.capacity
    assert footprint.memory is sr.memory
    assert serving.max_sequences is max_sequences and serving.Capacity is cap_mod.Capacity
    assert serving.kv_cache_per_device is cap_mod.kv_cache_per_device
    assert device.DeviceMemory is fit.DeviceMemory and device.memory_parts is parts.memory_parts
    assert device.device_memory is fit.device_memory and device.fraction is fit.fraction
    import symroof.memory.footprint  # noqa: F401  (loads the package's modules)
    assert callable(sr.memory) and sr.memory.__module__ == "symroof.memory.footprint"


@pytest.mark.parametrize("hw,b,tp,reserve", [("h100-sxm", 2, 1, 0), ("h100-sxm", 2, 2, 0),
                                             ("h100-sxm", 1, 1, sp.Rational(1, 10)),
                                             ("a100-80gb", 1, 1, 0)])
def test_count_against_a_hand_computation(hw: str, b: int, tp: int, reserve: sp.Expr) -> None:
    prec = {2: "bf16", 1: "fp8"}[b]
    m = get("seed-6.4b")
    got = max_sequences(m, hw, context=4096, tp=tp, reserve=reserve, precision=prec)
    exact, count = _hand(int(chip(hw).capacity(None)), b=b, ctx=4096, tp=tp,
                         reserve=sp.Rational(reserve))
    assert sp.cancel(got.exact - exact) == 0 and got.sequences == count
    assert got.weights == sp.Rational(WEIGHTS * b, tp)
    assert got.per_sequence == sp.Rational(2 * L * D * b * 4096, tp)
    assert sr.capacity(m, hw, context=4096, tp=tp, precision=prec) == _hand(
        int(chip(hw).capacity(None)), b=b, ctx=4096, tp=tp)[1]


def test_fits() -> None:
    n = sp.Symbol("n", positive=True)
    assert fits(sp.Integer(5), sp.Integer(5)) is True
    assert fits(sp.Integer(6), sp.Integer(5)) is False
    assert fits(n, sp.Integer(5)) is None
    with pytest.raises(SymroofError, match="reserve: expected a fraction 0 <= x < 1"):
        max_sequences(get("seed-6.4b"), "h100-sxm", context=4096, reserve=1)


def test_training_memory_fits_by_the_one_fit_rule() -> None:
    """``TrainingMemory.fits`` is ``memory.fit.fits`` of its busiest stage: seed-6.4b's
    16 bytes a parameter (weights, gradients, Adam) are 16 x 12 L D^2 = 103 GB by hand,
    past an A100's 80 GB at any batch B, so even with B free the rule decides it; a
    cache that grows with B on a chip that holds its weights stays undecided."""
    from symroof.symbols import B
    from symroof.training.memory import training_memory

    mem = training_memory(get("seed-6.4b").with_bytes(2), batch=B, seq=2048)
    cap = chip("a100-80gb").capacity(None)
    assert 16 * WEIGHTS > cap
    assert mem.peak.params >= WEIGHTS   # and the embeddings
    assert mem.fits("a100-80gb") is False is fits(mem.peak.total, cap)
    assert fits(B * 10**9, cap) is None
    assert fits(B * 10**9 + 2 * cap, cap) is False
    assert fits(cap - 10**9, cap) is True
