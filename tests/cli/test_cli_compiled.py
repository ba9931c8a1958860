"""``symroof eval`` with many rows takes the compiled float64 path; ``--exact`` the exact one.
Both print the same text (the compiled figures agree with the exact ones to 1e-12)."""

from __future__ import annotations

import pytest

from symroof.cli import main
from symroof.cli.derive import COMPILED_ROWS
from symroof import compiled, evaluate

BATCHES = ",".join(str(i) for i in range(1, COMPILED_ROWS // 4 + 1))
ARGV = ["eval", "decode", "--model", "llama-2-7b", "--hardware", "h100-sxm",
        "--set", f"B={BATCHES}", "--set", "S=128,256,512,1024"]


def test_many_rows_take_the_compiled_path_and_print_what_the_exact_path_prints(
        capsys, monkeypatch):
    calls = {"compiled": 0}
    real = compiled.points

    def counting(*args, **kwargs):
        calls["compiled"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(compiled, "points", counting)
    assert main(ARGV) == 0
    fast = capsys.readouterr().out
    assert calls["compiled"] == 1
    assert main([*ARGV, "--exact"]) == 0
    exact = capsys.readouterr().out
    assert calls["compiled"] == 1                     # --exact stayed on the exact path
    assert fast == exact and fast.count("  at B=") == COMPILED_ROWS


def test_few_rows_and_json_stay_exact(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled path used")
    monkeypatch.setattr(compiled, "points", refuse)
    assert main(["eval", "gemm", "--hardware", "h100-sxm", "--set", "M=1,2", "--set", "N=64",
                 "--set", "K=64"]) == 0
    assert main([*ARGV, "--json"]) == 0
    capsys.readouterr()
