"""The roofline's regimes beside the roofline: closed-form conditions against numbers.

Checked here: the regimes moved from ``symroof.solve`` and are still reached there and
as ``sr.regimes``; at many sizes the branch whose closed-form condition holds is the
roof a numeric evaluation of the roofline at that size finds largest (two roofs for a
GEMM; three for a sharded prefill whose link is a roof of its own), and the branch's
time is the overlapped roofline time there; a tp-1 workload has no link branch; an
undecided condition and a bad option are refused naming them.
"""

from __future__ import annotations

import importlib

import pytest
import sympy as sp

import symroof as sr
from symroof import solve
from symroof.errors import SymroofError
from symroof.evaluate import roofline
from symroof.regimes import regime_at, regimes
from symroof.symbols import S, n


def test_regimes_moved_beside_the_roofline() -> None:
    # sr.regimes is the function (as always); the module is reached by its full name
    reg_mod = importlib.import_module("symroof.regimes")
    assert sr.regimes is reg_mod.regimes and sr.Regime is reg_mod.Regime
    assert solve.regimes is reg_mod.regimes and solve.Regime is reg_mod.Regime
    assert callable(sr.regimes)   # the module import did not take the function's place


def test_gemm_two_roofs_against_numbers() -> None:
    branches = regimes(sr.workloads.gemm(n, n, n), "h100-sxm", var=n)
    for size in (64, 512, 886, 887, 4096, 65536):
        r = roofline(sr.workloads.gemm(n, n, n), "h100-sxm", subs={n: size})
        mem, comp = float(r.memory_time_s), float(r.compute_time_s)
        found = regime_at(branches, {n: size})
        assert found is not None and found.bound == ("memory" if mem > comp else "compute")
        assert found.time_s.xreplace({n: size}) == r.time_s


def test_sharded_prefill_three_roofs_against_numbers() -> None:
    work = sr.workloads.prefill(sr.models.get("llama-3-8b"), batch=1, seq=S, tp=8)
    branches = regimes(work, "h100-sxm", var=S, link="pcie", communication=True)
    assert [b.bound for b in branches] == ["memory", "compute", "communication"]
    seen = set()
    for size in (8, 40, 1000, 480_000, 500_000, 2_000_000):
        r = roofline(work, "h100-sxm", subs={S: size}, link="pcie")
        times = {"memory": float(r.memory_time_s), "compute": float(r.compute_time_s),
                 "communication": float(r.communication_time_s)}
        found = regime_at(branches, {S: size})
        assert found is not None and found.bound == max(times, key=lambda k: times[k])
        assert found.time_s.xreplace({S: size}) == r.time_overlapped_s
        seen.add(found.bound)
    assert seen == {"memory", "communication", "compute"}
    # the communication branch starts where its time meets the memory time
    comm = branches[2]
    start = min(c.value for c in comm.boundary)
    r = roofline(work, "h100-sxm", link="pcie")
    assert sp.cancel((r.communication_time_s - r.memory_time_s).xreplace({S: start})) == 0


def test_one_device_has_no_link_branch_and_bad_input() -> None:
    g = sr.workloads.gemm(n, n, n)
    assert [b.bound for b in regimes(g, "h100-sxm", var=n, communication=True)] == \
        ["memory", "compute"]
    with pytest.raises(SymroofError, match="regimes communication: expected true or false"):
        regimes(g, "h100-sxm", communication="yes")  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match="regime_at: the memory condition .* not decided"):
        regime_at(regimes(g, "h100-sxm", var=n), {})
