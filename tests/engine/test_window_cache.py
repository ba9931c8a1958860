"""The rolling KV buffer convention (``window_cache``: W, the default, or W - 1 as
transformers' dynamic cache keeps it) reaches the serving footprint, the capacity count
and the ``memory``/``capacity`` commands. Second computation: the KV bytes by hand from
the model's sizes (K and V, kv_heads x head_dim values, per cached position and layer)."""

from __future__ import annotations

import pytest
import sympy as sp

import symroof as sr
from symroof import serving
from symroof.errors import SymroofError
from symroof.footprint import capacity, memory
from symroof.models import get, transformer
from symroof.symbols import b
from tests.cli_run import run_json

CTX = 32768


def _by_hand(layers: int, kv_heads: int, head_dim: int, positions: int, nbytes: int) -> int:
    return 2 * layers * kv_heads * head_dim * positions * nbytes


def test_capacity_holds_w_or_w_minus_1_positions_per_windowed_layer():
    m = get("mistral-7b")                     # 32 layers, 8 KV heads of 128, window 4096
    w = serving.max_sequences(m, "h100-sxm", context=CTX)
    w1 = serving.max_sequences(m, "h100-sxm", context=CTX, window_cache="window_minus_1")
    assert w.per_sequence == _by_hand(32, 8, 128, 4096, 2)
    assert w1.per_sequence == _by_hand(32, 8, 128, 4095, 2)
    assert w1.weights == w.weights and w1.exact > w.exact
    assert w1.per_sequence == m.kv_cache_bytes(CTX, "window_minus_1").subs(b, 2)
    # tensor parallelism splits the 8 KV heads over 2 devices, the buffer stays W - 1
    t2 = serving.max_sequences(m, "h100-sxm", context=CTX, tp=2, window_cache="window_minus_1")
    assert t2.per_sequence == _by_hand(32, 4, 128, 4095, 2)
    assert capacity(m, "h100-sxm", context=CTX, window_cache="window_minus_1") == w1.sequences
    # below the window both conventions hold every position
    short = [serving.max_sequences(m, "h100-sxm", context=1000, window_cache=c).per_sequence
             for c in ("window", "window_minus_1")]
    assert short[0] == short[1] == _by_hand(32, 8, 128, 1000, 2)


def test_only_the_windowed_layers_shrink():
    m = transformer(name="half", layers=4, d_model=64, heads=4, kv_heads=2, window=8,
                    window_layers=2)
    kv = [serving.kv_cache_per_device(m, batch=3, context=100, window_cache=c).subs(b, 2)
          for c in ("window", "window_minus_1")]
    assert kv[0] == 3 * (_by_hand(2, 2, 16, 100, 2) + _by_hand(2, 2, 16, 8, 2))
    assert kv[1] == 3 * (_by_hand(2, 2, 16, 100, 2) + _by_hand(2, 2, 16, 7, 2))
    fp = memory(m, batch=3, context=100, window_cache="window_minus_1")
    assert sp.expand(fp.kv_cache.subs(b, 2) - kv[1]) == 0
    assert memory(m, batch=3, context=100).kv_cache.subs(b, 2) == kv[0]
    with pytest.raises(SymroofError, match="window_cache"):
        memory(m, batch=3, context=100, window_cache="w-1")
    assert sr.models.get("llama-3-8b").as_cached("window_minus_1") == get("llama-3-8b")


def test_memory_and_capacity_commands_take_window_cache(capsys):
    args = ("--model", "mistral-7b", "--hardware", "h100-sxm")
    base = run_json(capsys, "capacity", *args, "--context", str(CTX))
    held = run_json(capsys, "capacity", *args, "--context", str(CTX), "--window-cache",
                    "window_minus_1")
    assert base["window_cache"] == "window" and held["window_cache"] == "window_minus_1"
    assert base["rows"][0]["kv_bytes_per_sequence"] == _by_hand(32, 8, 128, 4096, 2)
    assert held["rows"][0]["kv_bytes_per_sequence"] == _by_hand(32, 8, 128, 4095, 2)
    assert "W - 1 = 4095 positions of its window of 4096" in held["model"]
    mem = run_json(capsys, "memory", *args, "--set", "B=2", "--set", f"S={CTX}",
                   "--window-cache", "window_minus_1")
    assert mem["rows"][0]["kv_cache"] == 2 * _by_hand(32, 8, 128, 4095, 2)
