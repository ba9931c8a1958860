"""Collectives as NCCL documents them (issue 25): the algorithm as a named option (ring,
tree, each device sending the full payload) and the alpha-beta latency from the chip
file's link.

nccl-tests' PERFORMANCE.md defines, for a collective of S bytes taking t seconds over n
ranks, the algorithm bandwidth algbw = S / t and the bus bandwidth busbw = algbw * 2(n-1)/n
(all-reduce) or algbw * (n-1)/n (all-gather): the per-link rate a ring achieves. A ring
that runs at the link's per-direction rate must therefore show busbw = that rate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof import hardware
from symroof.hardware import get as chip
from symroof.models import get, transformer
from symroof.passes.shard import collective_terms
from symroof.symbols import B, b
from symroof.workloads import decode

L, D, V = 3, 64, 100
MODEL = transformer(layers=L, d_model=D, heads=8, vocab=V)


def _payloads(t: int) -> tuple[sp.Expr, sp.Expr, int]:
    """The decode step's all-reduces (2 a layer and the embedding's, B D b each) and
    its all-gather of the logits (B V b), by hand."""
    return B * D * b, B * V * b, 2 * L + 1


@pytest.mark.parametrize("t", [2, 4, 8])
def test_ring_bytes_meet_nccl_bus_bandwidth(t):
    ar, ag, n_ar = _payloads(t)
    sent, steps, count = collective_terms(decode(MODEL, B, 16, tp=t).graph, "ring")
    assert sp.expand(sent - (n_ar * ar * sp.Rational(2 * (t - 1), t)
                             + ag * sp.Rational(t - 1, t))) == 0
    assert steps == n_ar * 2 * (t - 1) + (t - 1) and count == n_ar + 1
    # one all-reduce of S bytes at a link of R bytes/s each way: busbw = R
    link = sp.Rational(450 * 10**9)
    s_bytes = sp.Integer(8192)
    time = s_bytes * sp.Rational(2 * (t - 1), t) / link
    assert (s_bytes / time) * sp.Rational(2 * (t - 1), t) == link           # all-reduce
    time_ag = s_bytes * sp.Rational(t - 1, t) / link
    assert (s_bytes / time_ag) * sp.Rational(t - 1, t) == link              # all-gather


def test_tree_and_full_payload_conventions():
    """tree: NCCL's algorithm bandwidth is half the bus bandwidth (2S sent) for an
    all-reduce, the all-gather stays a ring; full: each device sends each payload once,
    in one step."""
    t = 4
    ar, ag, n_ar = _payloads(t)
    g = decode(MODEL, B, 16, tp=t).graph
    tree, tree_steps, _ = collective_terms(g, "tree")
    assert sp.expand(tree - (n_ar * 2 * ar + ag * sp.Rational(3, 4))) == 0
    assert tree_steps == n_ar * 2 * (t - 1) + (t - 1)
    full, full_steps, count = collective_terms(g, "full")
    assert sp.expand(full - (n_ar * ar + ag)) == 0 and full_steps == count == n_ar + 1
    with pytest.raises(SymroofError, match="collective"):
        collective_terms(g, "butterfly")


def test_latency_term_is_alpha_times_steps_plus_base():
    """Llama-3-70B, batch 1, tp 8 on H100 SXM NVLink (NCCL's NVLink ring LL figures in
    the chip file: 0.47 us a step, 3.6 us a collective): the latency is added to the
    bandwidth term by default, and dominates it at batch 1; latency=False drops it."""
    a = decode(get("llama-3-70b"), 1, 4096, tp=8)
    bare = sr.roofline(a, "h100-sxm", latency=False)
    timed = sr.roofline(a, "h100-sxm")
    _, steps, count = collective_terms(a.graph, "ring")
    alpha = steps * sp.Rational(47, 10**8) + count * sp.Rational(36, 10**7)
    assert timed.link_latency_s == alpha and bare.link_latency_s == 0
    assert timed.communication_time_s - bare.communication_time_s == alpha
    assert count == 2 * 80 + 2 and steps == (2 * 80 + 1) * 14 + 7
    assert timed.link_latency_s > 10 * bare.communication_time_s     # latency-bound
    full = sr.roofline(a, "h100-sxm", collective="full", latency=False)
    assert full.communication < bare.communication and full.collective == "full"


def test_chip_file_latency_needs_a_source(tmp_path):
    text = (chip("h100-sxm").interconnects["nvlink"].latency_source or "")
    assert "tuning.cc" in text
    text = (Path(hardware.__file__).parent / "l4.toml").read_text()
    text += '\nlatency_us = "0.5"\n'              # the last table is [interconnect.pcie]
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(SymroofError, match="latency_source"):
        hardware.load(path)
    path.write_text(text + 'latency_source = "a measurement"\n')
    assert hardware.load(path).interconnects["pcie"].step_latency_s == sp.Rational(1, 2 * 10**6)


def test_cli_latency_and_collective_flags(capsys):
    from tests.cli_run import run_json

    args = ("eval", "decode", "--model", "llama-3-70b", "--tp", "8", "--set", "B=1",
            "--set", "S=4096", "--hardware", "h100-sxm", "--json")
    (bare,) = run_json(capsys, *args, "--no-latency")["rows"]
    doc = run_json(capsys, *args, "--collective", "full")       # latency on by default
    (timed,) = doc["rows"]
    assert bare["link_latency_s"] == 0 and bare["collective"] == "ring"
    assert timed["collective"] == "full" and doc["request"]["latency"] is True
    # full payload: one step a collective, 162 collectives of 3.6 + 0.47 us
    assert timed["link_latency_s"] == pytest.approx(162 * 4.07e-6, rel=1e-12)
    assert timed["itl_s"] > bare["itl_s"]
