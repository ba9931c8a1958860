"""The Mamba-2 (SSD) layer: formulas against a brute-force SSD that really computes.

The brute-force scan below shares no code with symroof: it runs the chunked SSD on random
numbers with explicit loops (scores per group or per head, causal pairs or all of them,
chunk states passed sequentially or by all pairs of chunks), checks its output against
the plain recurrence h = exp(dt A) h + dt x B^T, y = C h + D x, and counts every
multiply-add of its contractions; symroof's SSD FLOPs must equal 2 x that count.
"""

from __future__ import annotations

import math
import random

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.models.hybrid import Mamba2, mamba2
from symroof.symbols import B, D, L, S, b, dim
from symroof.workloads.recurrent import ScanChoices, ssd_flops_per_token
from symroof.workloads.transformer import decode, prefill

H, P, N, G, Q, K = (dim(n) for n in ("H", "P", "N", "G", "Q", "K"))


def ssd_bruteforce(seq: int, heads: int, hp: int, ns: int, groups: int, chunk: int, *,
                   causal: bool, cb_per_head: bool, quadratic: bool,
                   seed: int = 0) -> tuple[int, float]:
    """(multiply-adds of the chunked scan's contractions, largest deviation of its output
    from the plain recurrence) for one sequence."""
    rnd = random.Random(seed)
    per = heads // groups
    x = [[[rnd.uniform(-1, 1) for _ in range(hp)] for _ in range(heads)] for _ in range(seq)]
    dt = [[rnd.uniform(0.1, 0.5) for _ in range(heads)] for _ in range(seq)]
    a = [-rnd.uniform(0.5, 1.5) for _ in range(heads)]
    bm = [[[rnd.uniform(-1, 1) for _ in range(ns)] for _ in range(groups)] for _ in range(seq)]
    cm = [[[rnd.uniform(-1, 1) for _ in range(ns)] for _ in range(groups)] for _ in range(seq)]
    dskip = [rnd.uniform(-1, 1) for _ in range(heads)]
    # the plain recurrence
    ref = [[[0.0] * hp for _ in range(heads)] for _ in range(seq)]
    for hh in range(heads):
        g = hh // per
        st = [[0.0] * ns for _ in range(hp)]
        for t in range(seq):
            decay = math.exp(dt[t][hh] * a[hh])
            for p in range(hp):
                for n in range(ns):
                    st[p][n] = decay * st[p][n] + dt[t][hh] * x[t][hh][p] * bm[t][g][n]
                ref[t][hh][p] = sum(cm[t][g][n] * st[p][n] for n in range(ns)) \
                    + dskip[hh] * x[t][hh][p]
    # the chunked scan, padded to whole chunks
    nc = -(-seq // chunk)
    pad = nc * chunk

    def at(arr: list, t: int, zero: object) -> object:  # the padded positions hold zeros
        return arr[t] if t < seq else zero

    macs = 0
    y = [[[0.0] * hp for _ in range(heads)] for _ in range(pad)]
    states = [[[[0.0] * ns for _ in range(hp)] for _ in range(heads)] for _ in range(nc)]
    cums = [[[0.0] * chunk for _ in range(heads)] for _ in range(nc)]
    zx, zb, zd = [[0.0] * hp] * heads, [[0.0] * ns] * groups, [0.0] * heads
    for c in range(nc):
        t0 = c * chunk
        for g in range(groups):
            scores = {}
            for l in range(chunk):
                for s in range(chunk):
                    if causal and s > l:
                        continue
                    cl, bs = at(cm, t0 + l, zb)[g], at(bm, t0 + s, zb)[g]
                    scores[l, s] = sum(cl[n] * bs[n] for n in range(ns))
                    macs += ns * (per if cb_per_head else 1)
            for hh in range(g * per, (g + 1) * per):
                cum, run = cums[c][hh], 0.0
                for l in range(chunk):
                    run += at(dt, t0 + l, zd)[hh] * a[hh]
                    cum[l] = run
                for l in range(chunk):
                    for s in range(chunk):
                        if causal and s > l:
                            continue
                        w = scores[l, s] * (math.exp(cum[l] - cum[s]) if s <= l else 0.0)
                        for p in range(hp):
                            y[t0 + l][hh][p] += w * at(dt, t0 + s, zd)[hh] * \
                                at(x, t0 + s, zx)[hh][p]
                            macs += 1
                for p in range(hp):
                    for n in range(ns):
                        total = 0.0
                        for l in range(chunk):
                            total += math.exp(cum[-1] - cum[l]) * at(bm, t0 + l, zb)[g][n] * \
                                at(dt, t0 + l, zd)[hh] * at(x, t0 + l, zx)[hh][p]
                            macs += 1
                        states[c][hh][p][n] = total
    # the state entering each chunk
    start = [[[[0.0] * ns for _ in range(hp)] for _ in range(heads)] for _ in range(nc)]
    for hh in range(heads):
        for c in range(1, nc):
            for p in range(hp):
                for n in range(ns):
                    if quadratic:  # every source chunk, the later ones weighted by zero
                        continue
                    start[c][hh][p][n] = math.exp(cums[c - 1][hh][-1]) * \
                        start[c - 1][hh][p][n] + states[c - 1][hh][p][n]
        if quadratic:  # target chunks 0..nc, source states 0..nc (the first one zero)
            for tc in range(nc + 1):
                for z in range(nc + 1):
                    if 0 < z <= tc - 0 and tc < nc and z <= tc:
                        w = math.exp(sum(cums[k][hh][-1] for k in range(z, tc)))
                        for p in range(hp):
                            for n in range(ns):
                                start[tc][hh][p][n] += w * states[z - 1][hh][p][n]
                    macs += hp * ns
    for c in range(nc):
        t0 = c * chunk
        for hh in range(heads):
            g = hh // per
            for l in range(chunk):
                for p in range(hp):
                    cl = at(cm, t0 + l, zb)[g]
                    y[t0 + l][hh][p] += math.exp(cums[c][hh][l]) * sum(
                        cl[n] * start[c][hh][p][n] for n in range(ns))
                    macs += ns
    dev = max(abs(y[t][hh][p] + dskip[hh] * x[t][hh][p] - ref[t][hh][p])
              for t in range(seq) for hh in range(heads) for p in range(hp))
    return macs, dev


def _ssd_flops(m, batch: object, seq: object) -> sp.Expr:
    a = prefill(m, batch, seq, logits="none")
    return sp.Add(*(c.flops for name, c in a.per_op.items() if "ssd_" in name))


CASES = [  # (seq, heads, P, N, groups, chunk, choices)
    (8, 4, 2, 3, 2, 4, {}),
    (12, 4, 2, 3, 1, 4, {"cb": "head", "causal": "none", "passing": "quadratic"}),
    (10, 2, 3, 2, 2, 4, {"causal": "exact"}),        # a padded last chunk
    (9, 4, 1, 2, 2, 3, {"causal": "none", "cb": "group", "passing": "quadratic"}),
]


@pytest.mark.parametrize("seq,heads,hp,ns,groups,chunk,choices", CASES)
def test_chunked_ssd_flops_equal_a_brute_force_scan(seq, heads, hp, ns, groups, chunk, choices):
    causal = choices.get("causal", "half")
    if causal == "half":  # the brute force counts pairs; "half" is the Q^2/2 convention
        choices = {**choices, "causal": "exact"}
    m = mamba2(layers=1, d_model=8, heads=heads, head_dim=hp, state=ns, groups=groups,
               chunk=chunk).with_scan(**choices)
    macs, dev = ssd_bruteforce(seq, heads, hp, ns, groups, chunk,
                               causal=choices["causal"] != "none",
                               cb_per_head=choices.get("cb") == "head",
                               quadratic=choices.get("passing") == "quadratic")
    assert dev < 1e-9  # the brute-force chunked scan computes the recurrence
    assert _ssd_flops(m, 1, seq) == 2 * macs
    assert _ssd_flops(m, 3, seq) == 6 * macs  # per sequence


def test_ssd_formula_per_token_and_in_chunk_size():
    m = mamba2(layers=L, d_model=D, heads=H, head_dim=P, state=N, groups=G, chunk=Q)
    per_token = sp.expand(_ssd_flops(m, B, S) / (B * S * L))
    assert sp.cancel(per_token - ssd_flops_per_token(H, P, N, G, Q)) == 0
    # the sequential recurrence: 2 P N per head and token (y = h C), no chunk size
    seq = _ssd_flops(m.with_scan(scan="sequential"), B, S)
    assert _ssd_flops(m.with_scan(scan="sequential"), B, S) == seq
    scan = prefill(m.with_scan(scan="sequential"), B, S, logits="none").per_op
    assert scan["mamba.scan_out"].flops == 2 * B * S * L * H * P * N


def test_prefill_and_decode_formulas():
    m = mamba2(layers=L, d_model=D, heads=H, head_dim=P, state=N, chunk=Q)
    inner, conv = H * P, H * P + 2 * N
    proj = 2 * D * (2 * inner + 2 * N + H) + 2 * inner * D     # in and out projections
    pf = prefill(m, B, S, logits="none")
    expect = B * S * L * (proj + 2 * 4 * conv + ssd_flops_per_token(H, P, N, 1, Q))
    assert sp.cancel(pf.flops - expect) == 0
    dec = decode(m, B, context=S, logits="none")
    assert sp.cancel(dec.flops - B * L * (proj + 2 * 4 * conv + 2 * H * P * N)) == 0
    # bytes: the weights once; per sequence the SSM state (H P N) and the conv state
    # (4 taps of x, B, C) each read once and written once
    state = H * P * N + 4 * conv
    assert sp.cancel(m.state_bytes_per_sequence - L * state * b) == 0
    assert sp.cancel(dec.bytes - m.params * b - 2 * B * L * state * b) == 0
    assert not dec.bytes.has(S)  # a fixed-size state: no context in a decode step
    no_write = decode(m.with_scan(state_write=False), B, context=S, logits="none")
    assert sp.cancel(no_write.bytes - m.params * b - B * L * state * b) == 0


def test_params_count_every_weight():
    m = mamba2(layers=2, d_model=64, heads=8, head_dim=16, state=16, groups=2, vocab=100)
    inner, conv = 128, 128 + 2 * 2 * 16
    per_layer = (64 * (2 * inner + 2 * 32 + 8) + inner * 64 + conv * 4 + conv
                 + 3 * 8 + inner + 64)  # in, out, conv w+b, dt_bias A_log D, gated norm, norm
    assert m.params == 2 * per_layer + 100 * 64 + 64 * 100 + 64


def test_fused_scan_keeps_its_intermediates_on_chip():
    m = mamba2(layers=1, d_model=D, heads=H, head_dim=P, state=N, chunk=Q)
    fused = prefill(m, B, S, logits="none")
    eager = prefill(m.with_scan(fused=False), B, S, logits="none")
    assert fused.flops == eager.flops
    assert (eager.bytes - fused.bytes).subs({B: 1, S: 64, D: 32, H: 4, P: 8, N: 4, Q: 16,
                                             b: 2}) > 0
    # the fused scan reads x, B, C, dt and writes y: its traffic has no chunk size
    assert not fused.bytes.has(Q)


@pytest.mark.parametrize("make,field", [
    (lambda: prefill(mamba2(layers=1, d_model=8, heads=2, head_dim=2, state=2, chunk=16), 1, 8),
     "chunk_size"),
    (lambda: Mamba2(heads=6, head_dim=2, state=4, groups=4), "n_groups"),
    (lambda: mamba2(layers=2, d_model=8, heads=2, head_dim=2, state=2).replace(layers=3),
     "layer pattern"),
    (lambda: mamba2(layers=1, d_model=8, heads=2, head_dim=2, state=2).with_scan(scan="x"),
     "scan"),
])
def test_bad_input_names_the_field(make, field):
    with pytest.raises(SymroofError, match=field):
        make()
