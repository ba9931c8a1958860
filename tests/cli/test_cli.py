"""The ``symroof`` command, driven in-process through ``symroof.cli.main``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from fractions import Fraction

import pytest
from cli_run import run_error, run_json
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof import hardware
from symroof.cli import main
from symroof.parse import parse_assignments, parse_expr
from symroof.ir import Kind
from symroof.models import get as get_model
from symroof.symbols import CANONICAL, B, K, M, N, S, b
from symroof.workloads import decode
from symroof.workloads.basic import gemm, gemv

# H100 SXM datasheet figures, typed in independently of the TOML file:
# 989.4 TFLOP/s dense BF16, 3.35 TB/s HBM3.
H100_BF16 = Fraction("989.4") * 10**12
H100_HBM = Fraction("3.35") * 10**12




def expr(text: str) -> sp.Expr:
    """A formula string from the CLI, read back through the safe parser."""
    return parse_expr(text, CANONICAL)




# ---------------------------------------------------------------------------
# derive


def test_derive_gemm_json_formulas_and_row(capsys):
    doc = run_json(capsys, "derive", "gemm", "--set", "M=8192", "--set", "N=8192",
                   "--set", "K=8192")
    assert doc["workload"] == "gemm"
    assert_formula_equal(expr(doc["flops"]), 2 * M * N * K)
    # read A + read B + write C
    assert_formula_equal(expr(doc["bytes"]), b * (M * K + K * N + M * N))
    assert_formula_equal(expr(doc["intensity"]), 2 * M * N * K / (b * (M * K + K * N + M * N)))
    assert "two_per_mac" in doc["convention"]
    (row,) = doc["rows"]
    # derive, like eval, puts values at bf16 by default (b = 2) and says so in the row;
    # the formulas keep b
    assert row["subs"] == {"M": 8192, "N": 8192, "K": 8192, "b": 2}
    assert row["flops"] == 1099511627776 == 2 * 8192**3
    assert isinstance(row["flops"], int)
    assert row["intensity"] == pytest.approx(8192 / 3, rel=1e-12)                # 2n/(3b)
    assert row["bytes"] == 3 * 8192**2 * 2
    ev = run_json(capsys, "eval", "gemm", "--set", "M=8192", "--set", "N=8192",
                  "--set", "K=8192", "--hardware", "h100-sxm")["rows"][0]
    assert ev["subs"] == row["subs"] and ev["bytes"] == row["bytes"]  # the same default


def test_derive_with_b_and_precision_gives_numbers(capsys):
    doc = run_json(capsys, "derive", "gemm", "--set", "M=8192", "--set", "N=128",
                   "--set", "K=8192", "--set", "b=2")
    (row,) = doc["rows"]
    assert row["intensity"] == pytest.approx(4096 / 33, rel=1e-12)        # 124.1
    via_precision = run_json(capsys, "derive", "gemm", "--set", "M=8192", "--set", "N=128",
                             "--set", "K=8192", "--precision", "bf16")
    assert via_precision["rows"][0]["intensity"] == row["intensity"]
    assert via_precision["rows"][0]["bytes"] == 2 * (8192 * 8192 + 8192 * 128 + 8192 * 128)


def test_derive_value_lists_make_rows(capsys):
    doc = run_json(capsys, "derive", "gemm", "--set", "M=1,2", "--set", "N=3")
    rows = doc["rows"]
    assert [r["subs"] for r in rows] == [{"M": 1, "N": 3, "b": 2}, {"M": 2, "N": 3, "b": 2}]
    formula = gemm(M, N, K).flops
    for r in rows:
        assert_formula_equal(expr(r["flops"]), formula.subs({M: r["subs"]["M"], N: 3}))
    assert_formula_equal(expr(rows[0]["flops"]), 6 * K)
    assert_formula_equal(expr(rows[1]["flops"]), 12 * K)
    product = run_json(capsys, "derive", "gemm", "--set", "M=1,2", "--set", "N=3,4",
                       "--set", "K=5,6,7")
    assert len(product["rows"]) == 2 * 2 * 3


def test_derive_accepts_size_suffixes_and_expressions(capsys):
    doc = run_json(capsys, "derive", "elementwise", "--set", "n=16Mi", "--set", "b=2")
    (row,) = doc["rows"]
    assert row["subs"] == {"n": 16 * 2**20, "b": 2}
    assert row["intensity"] == pytest.approx(0.25, rel=1e-12)
    doc = run_json(capsys, "derive", "gemm", "--set", "M=2**13", "--set", "N=8*1024",
                   "--set", "K=8Ki", "--set", "b=2")
    assert doc["rows"][0]["intensity"] == pytest.approx(8192 / 3, rel=1e-12)   # 2730.7


def test_derive_flop_conventions(capsys):
    exact = run_json(capsys, "derive", "gemm", "--flops", "exact", "--set", "M=2",
                     "--set", "N=2", "--set", "K=2")
    assert exact["rows"][0]["flops"] == 12
    one = run_json(capsys, "derive", "gemm", "--flops", "one_per_mac", "--set", "M=2",
                   "--set", "N=2", "--set", "K=2")
    assert one["rows"][0]["flops"] == 8


def test_derive_text_output(capsys):
    assert main(["derive", "gemm", "--set", "M=1,2", "--set", "N=3"]) == 0
    out = capsys.readouterr().out
    f_line = next(line for line in out.splitlines() if line.strip().startswith("F = "))
    assert_formula_equal(expr(f_line.split("=", 1)[1]), 2 * M * N * K)
    assert out.count("  at ") == 2
    assert "at M=1 N=3" in out and "at M=2 N=3" in out


def test_help_exits_zero(capsys):
    assert main(["--help"]) == 0
    assert "derive" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# bad input: one line on stderr, exit 2


@pytest.mark.parametrize("argv, fragment", [
    (["derive", "nope"], "unknown workload 'nope'"),
    (["derive", "gemmm"], "did you mean 'gemm'"),
    (["derive", "gemm", "--set", "M=__import__('os')"], "__import__"),
    (["derive", "gemm", "--set", "M=().__class__"], "not allowed"),
    (["derive", "gemm", "--set", "M=open('/etc/passwd')"], "unknown function 'open'"),
    (["derive", "gemm", "--set", "Z=3"], "'Z' is an unknown symbol"),
    (["derive", "gemm", "--set", "M"], "missing '='"),
    (["derive", "gemm", "--set", "M=1", "--set", "M=2"], "more than once"),
    (["derive", "gemm", "--set", "M=1/0"], "division by zero"),
    (["derive", "gemm", "--precision", "fp9"], "--precision fp9: unknown precision 'fp9'"),
    (["derive", "gemm", "--flops", "bogus"], "invalid choice"),
    (["derive"], "required"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    line = run_error(capsys, *argv)
    assert fragment in line


@pytest.mark.parametrize("assignments", [
    ("b=0", "M=2", "N=2", "K=2"),       # today: TypeError traceback (intensity is zoo)
    ("M=-1", "N=2", "K=2"),             # today: TypeError traceback (bytes are 0)
    ("M=-1", "N=3", "K=3"),             # today: prints F = -18 FLOP
    ("M=0", "N=3", "K=3"),              # a zero dimension, which the IR itself rejects
    ("K=1/2", "M=2", "N=2"),            # not an integer
], ids=["b=0", "M=-1,zero-bytes", "M=-1", "M=0", "K=1/2"])
def test_values_against_symbol_assumptions_are_rejected(capsys, assignments):
    """Dimensions are positive integers and b is positive: the CLI must say so in one
    line, not crash with a traceback or print negative FLOPs."""
    argv = ["derive", "gemm"]
    for a in assignments:
        argv += ["--set", a]
    run_error(capsys, *argv)


def test_parse_assignments_is_what_the_cli_uses():
    got = parse_assignments(["M=1,2", "N=3"], CANONICAL)
    assert got == {M: (1, 2), N: (3,)}


# ---------------------------------------------------------------------------
# eval and hardware


def test_eval_gemv_on_h100_is_memory_bound_by_about_300x(capsys):
    doc = run_json(capsys, "eval", "gemv", "--set", "N=4096", "--set", "K=4096",
                   "--hardware", "h100-sxm")
    (row,) = doc["rows"]
    assert row["bound"] == "memory"
    assert row["hardware"] == "h100-sxm" and row["precision"] == "bf16"
    ridge = float(H100_BF16 / H100_HBM)                      # 295.34 FLOP/B
    assert row["ridge"] == pytest.approx(ridge, rel=1e-12)
    assert row["peak_flop_per_s"] == pytest.approx(float(H100_BF16), rel=1e-12)
    assert row["bandwidth_bytes_per_s"] == pytest.approx(float(H100_HBM), rel=1e-12)
    # memory-bound: attainable = bandwidth * I, so I = attainable / bandwidth
    intensity = row["attainable_flop_per_s"] / row["bandwidth_bytes_per_s"]
    assert intensity == pytest.approx(2048 / 2049, rel=1e-9)          # b = 2 (bf16)
    assert row["ridge"] / intensity == pytest.approx(295.49, rel=1e-3)
    assert row["ridge"] / intensity == pytest.approx(300, rel=0.05)    # seed: "~300"
    # bytes at b = 2: x (4096) + W (4096^2) + y (4096), 2 bytes each
    q = 2 * (4096 + 4096**2 + 4096)
    assert row["memory_time_s"] == pytest.approx(q / float(H100_HBM), rel=1e-9)
    assert row["time_s"] == row["memory_time_s"]
    assert row["compute_time_s"] == pytest.approx(2 * 4096**2 / float(H100_BF16), rel=1e-9)
    # second computation: the library's own hardware API and workload
    spec = hardware.get("h100-sxm")
    assert float(spec.ridge("bf16")) == pytest.approx(row["ridge"], rel=1e-12)
    i_lib = gemv(N, K).intensity.subs({N: 4096, K: 4096, b: 2})
    assert float(spec.ridge("bf16") / i_lib) == pytest.approx(row["ridge"] / intensity, rel=1e-9)


def test_eval_rows_report_values_at_the_bytes_per_value_used(capsys):
    """eval fixes b from the precision (bf16: 2) for the bound; the row's bytes and
    intensity must be the same numbers, not expressions in a free b."""
    doc = run_json(capsys, "eval", "gemv", "--set", "N=4096", "--set", "K=4096",
                   "--hardware", "h100-sxm")
    (row,) = doc["rows"]
    assert row["bytes"] == 2 * (4096 + 4096**2 + 4096)
    assert row["intensity"] == pytest.approx(2048 / 2049, rel=1e-9)


def test_eval_precision_sets_peak_and_bytes(capsys):
    doc = run_json(capsys, "eval", "gemv", "--set", "N=4096", "--set", "K=4096",
                   "--hardware", "h100-sxm", "--precision", "fp8")
    (row,) = doc["rows"]
    # fp8: 1 byte per value, 1978.9 TFLOP/s dense
    assert row["bytes"] == 4096 + 4096**2 + 4096
    assert row["intensity"] == pytest.approx(4096 / 2049, rel=1e-9)
    assert row["ridge"] == pytest.approx(float(Fraction("1978.9") * 10**12 / H100_HBM), rel=1e-12)
    assert row["bound"] == "memory"


def test_eval_one_per_mac_halves_the_peak(capsys):
    two = run_json(capsys, "eval", "gemm", "--set", "M=8192", "--set", "N=8192", "--set",
                   "K=8192", "--hardware", "h100-sxm")["rows"][0]
    one = run_json(capsys, "eval", "gemm", "--set", "M=8192", "--set", "N=8192", "--set",
                   "K=8192", "--hardware", "h100-sxm", "--flops", "one_per_mac")["rows"][0]
    assert one["peak_flop_per_s"] == pytest.approx(two["peak_flop_per_s"] / 2, rel=1e-12)
    assert one["ridge"] == pytest.approx(two["ridge"] / 2, rel=1e-12)
    assert two["bound"] == one["bound"] == "compute"        # 2730.7 vs ridge 295
    assert one["time_s"] == pytest.approx(two["time_s"], rel=1e-12)


def test_eval_text_prints_the_hardware_line(capsys):
    assert main(["eval", "gemv", "--set", "N=4096", "--set", "K=4096",
                 "--hardware", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "on h100-sxm (bf16, hbm)" in out and "memory" in out
    assert "ridge 295.343" in out


def test_eval_text_without_set_still_evaluates_on_the_hardware(capsys):
    """With no --set, eval's JSON has a roofline row; the text form must not drop it."""
    assert main(["eval", "gemm", "--hardware", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "h100-sxm" in out and "ridge" in out


@pytest.mark.parametrize("argv, fragment", [
    (["eval", "gemv", "--hardware", "nope"], "unknown hardware 'nope'"),
    (["eval", "gemv", "--hardware", "h100"], "did you mean"),
    (["eval", "gemv"], "--hardware"),
    (["eval", "gemv", "--hardware", "h100-sxm", "--precision", "int4"], "int4"),
    (["eval", "gemv", "--hardware", "h100-sxm", "--level", "l3"], "l3"),
])
def test_eval_bad_input(capsys, argv, fragment):
    assert fragment in run_error(capsys, *argv)


def test_hardware_list(capsys):
    assert main(["hardware", "list"]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[0] == "h100-sxm" for line in out.splitlines() if line.strip())
    doc = run_json(capsys, "hardware", "list")
    assert "h100-sxm" in doc["hardware"]
    assert list(doc["hardware"]) == sorted(doc["hardware"])
    assert tuple(doc["hardware"]) == hardware.names()


def test_hardware_show(capsys):
    doc = run_json(capsys, "hardware", "show", "h100-sxm")
    assert doc["name"] == "h100-sxm"
    bf16 = [r for r in doc["ridges"] if r["precision"] == "bf16" and r["unit"] == "matrix"]
    assert bf16[0]["ops_per_byte_float"] == pytest.approx(float(H100_BF16 / H100_HBM), rel=1e-12)
    assert main(["hardware", "show", "h100-sxm"]) == 0
    assert "h100-sxm" in capsys.readouterr().out


def test_hardware_show_unknown_suggests(capsys):
    line = run_error(capsys, "hardware", "show", "nope")
    assert "unknown hardware 'nope'" in line and "h100-sxm" in line
    line = run_error(capsys, "hardware", "show", "h100")
    assert "did you mean" in line and "'h100-sxm'" in line
    assert "expected a chip name" in run_error(capsys, "hardware", "show")


# ---------------------------------------------------------------------------
# output errors, in a real process: a closed pipe ends quietly, a full disk is one line


REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
MANY_ROWS = ["derive", "gemm", "--set", "M=" + ",".join(map(str, range(1, 101))),
             "--set", "N=" + ",".join(map(str, range(1, 41))), "--set", "K=2", "--set", "b=2"]
# 1,000 rows of JSON (about 145 kB, over a pipe's 64 kB buffer) on the exact path
MANY_JSON_ROWS = ["derive", "gemm", "--set", "M=" + ",".join(map(str, range(1, 51))),
                  "--set", "N=" + ",".join(map(str, range(1, 21))), "--set", "K=2", "--set", "b=2",
                  "--json"]


def _shell(line: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120,
                          env=env, cwd=REPO)


def _cmd(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "symroof", *argv])


def test_head_closing_the_pipe_ends_quietly():
    # 4,000 rows (about 400 kB) into `head -1`: the pipe closes while symroof writes
    done = _shell(f"{_cmd(MANY_ROWS)} | head -1; echo \"status=${{PIPESTATUS[0]}}\" >&2")
    assert done.stdout == "gemm  (FLOPs: two_per_mac, all ops; traffic: all tensors)\n"
    assert done.stderr.strip() in ("status=0", "status=141"), done.stderr


@pytest.mark.parametrize("argv", [["hardware", "list"], MANY_JSON_ROWS])
def test_reader_gone_before_the_first_line_ends_quietly(argv):
    proc = subprocess.Popen([sys.executable, "-m", "symroof", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    proc.stdout.close()                      # nobody will read a byte
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141) and err == "", err


@pytest.mark.parametrize("argv", [["hardware", "list"], ["hardware", "show", "h100-sxm", "--json"],
                                  MANY_ROWS])
def test_full_disk_is_one_line_and_status_1(argv):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    done = _shell(f"{_cmd(argv)} > /dev/full")
    assert done.returncode == 1, done.stderr
    assert done.stderr == "symroof: error: cannot write output (No space left on device)\n"


# ---------------------------------------------------------------------------
# serving (issue 11): seed 001's table and exercises as commands


TODAY_KEYS = {"subs", "flops", "bytes", "intensity", "hardware", "precision", "level",
              "peak_flop_per_s", "bandwidth_bytes_per_s", "ridge", "attainable_flop_per_s",
              "compute_time_s", "memory_time_s", "time_s", "time_serial_s", "bound",
              "tokens_per_s"}
SERVING_KEYS = {"tokens_per_s_per_user", "fits", "communication_time_s", "memory_bytes",
                "memory_capacity_bytes", "time_overlapped_s", "step_time_s"}


def test_tp8_table_as_a_command(capsys):
    """Seed 001's "Llama-3-70B on 8 x H100 (TP=8), FP16, context 4096" table: one row per
    batch, today's keys kept, the serving figures added (values: tests/engine/test_serving.py)."""
    doc = run_json(capsys, "eval", "decode", "--model", "llama-3-70b", "--hardware",
                   "h100-sxm", "--tp", "8", "--set", "B=1,8,32,128,512", "--set", "S=4096",
                   "--precision", "fp16", "--no-latency")     # the seed counts no latency
    assert isinstance(doc, dict) and len(doc["rows"]) == 5
    for row in doc["rows"]:
        assert TODAY_KEYS | SERVING_KEYS <= set(row)
        assert row["tp"] == 8 and row["link"] == "nvlink"
        assert row["link_bytes_per_s_per_direction"] == 450 * 10**9
        assert row["time_s"] == pytest.approx(
            max(row["compute_time_s"], row["memory_time_s"]) + row["communication_time_s"])
        assert row["tokens_per_s_per_user"] == pytest.approx(1 / row["time_s"])
    per_user = [r["tokens_per_s_per_user"] for r in doc["rows"]]
    assert per_user == pytest.approx([190.537, 176.237, 140.167, 77.0722, 27.5202], rel=1e-5)
    assert [r["fits"] for r in doc["rows"]] == [True, True, True, True, False]
    assert doc["rows"][4]["memory"]["kv_cache"] == 512 * 4096 * 40960     # 85.9 GB per GPU
    assert main(["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp",
                 "8", "--set", "B=1,512", "--set", "S=4096", "--precision", "fp16",
                 "--no-latency"]) == 0
    out = capsys.readouterr().out
    assert "tp 8 over nvlink (450 GB/s per direction)" in out
    assert "decode: ITL 5.248 ms, 190.537 tokens/s per user, 190.537 tokens/s in total" in out
    assert "= 103.6 GB of 80 GB: does NOT fit" in out and ": fits" in out
    # by default the collectives' latency (NCCL's NVLink figures) is a second term
    assert main(["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp",
                 "8", "--set", "B=1", "--set", "S=4096", "--precision", "fp16"]) == 0
    assert "decode: ITL 6.894 ms, 145.05 tokens/s per user" in capsys.readouterr().out


def test_worked_example_as_a_command(capsys):
    (row,) = run_json(capsys, "eval", "decode", "--model", "llama-3-8b", "--hardware",
                      "h100-sxm", "--precision", "fp16", "--set", "B=32", "--set",
                      "S=2048")["rows"]
    assert row["bytes"] == 23600046080 and row["bound"] == "memory"
    assert row["tokens_per_s"] == pytest.approx(4542.36, rel=1e-5)          # seed: 5,280
    assert row["tokens_per_s_per_user"] == pytest.approx(141.949, rel=1e-5)  # seed: 165
    low = run_json(capsys, "eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                   "--precision", "fp16", "--set", "B=32", "--set", "S=2048",
                   "--efficiency", "0.7")["rows"][0]
    assert low["tokens_per_s"] == pytest.approx(0.7 * row["tokens_per_s"], rel=1e-12)
    assert low["time_s"] == row["time_s"] and low["efficiency"] == pytest.approx(0.7)


def test_exercise_b_six_combinations(capsys):
    """FLOPs per decode token at 1k and 32k context, bytes at batch 1, 32, 256, ITL and
    throughput for the six; second computation from the parameter count."""
    doc = run_json(capsys, "eval", "decode", "--model", "llama-3-8b", "--hardware",
                   "h100-sxm", "--precision", "fp16", "--set", "B=1,32,256",
                   "--set", "S=1Ki,32Ki")
    rows = doc["rows"]
    assert [(r["subs"]["B"], r["subs"]["S"]) for r in rows] == [
        (1, 1024), (1, 32768), (32, 1024), (32, 32768), (256, 1024), (256, 32768)]
    params = 8030261248
    matmul = params - 128256 * 4096 - 65 * 4096      # gathered embedding, 2L + 1 norms
    for r in rows:
        batch, ctx = r["subs"]["B"], r["subs"]["S"]
        assert r["flops_per_token"] == 2 * matmul + 4 * 32 * ctx * 4096
        kv = 2 * 32 * 8 * 128 * 2 * ctx * batch
        assert r["bytes"] == (params - 128256 * 4096) * 2 + batch * 4096 * 2 + kv
        assert r["step_time_s"] == pytest.approx(r["time_s"])
        assert r["tokens_per_s"] == pytest.approx(batch / r["time_s"])
    fits = {(r["subs"]["B"], r["subs"]["S"]): r["fits"] for r in rows}
    assert fits[(32, 32768)] is False and fits[(256, 1024)] is True       # 34 GB of KV


def test_exercise_c_crossover_curve(capsys):
    assert main(["solve", "crossover", "decode", "--model", "llama-3-8b", "--var", "S",
                 "--lhs", "Q_kv_cache", "--rhs", "Q_weight", "--set", "b=2"]) == 0
    out = capsys.readouterr().out
    assert "S = (B + 1832257)/(16*B)" in out
    # second computation: on the curve, the decode graph's KV and weight bytes are equal
    dec = decode(get_model("llama-3-8b"), B, S)
    for batch in (1, 16, 64):
        at_ = {B: batch, S: sp.Rational(batch + 1832257, 16 * batch), b: 2}
        assert dec.bytes_by_kind[Kind.KV_CACHE].subs(at_) == dec.bytes_by_kind[Kind.WEIGHT].subs(at_)


def test_exercise_d_precisions_as_commands(capsys):
    def step(*extra: str, workload: str = "decode", s: str = "1Ki") -> float:
        return run_json(capsys, "eval", workload, "--model", "llama-3-8b", "--hardware",
                        "h100-sxm", "--set", "B=1", "--set", f"S={s}", *extra)["rows"][0]["time_s"]
    d16, d8, d4 = (step("--weights", w, "--kv-cache", "fp16", "--activations", a)
                   for w, a in (("fp16", "fp16"), ("fp8", "fp8"), ("int4", "fp16")))
    p16, p4 = (step("--weights", w, "--activations", "fp16", workload="prefill", s="4Ki")
               for w in ("fp16", "int4"))
    assert d16 / d8 == pytest.approx(2.0, rel=1e-2)
    assert d16 / d4 == pytest.approx(3.8964, rel=1e-4)
    assert p16 / p4 == pytest.approx(1.0, abs=1e-9)


def test_memory_and_capacity_commands(capsys):
    doc = run_json(capsys, "capacity", "--model", "llama-3-70b", "--hardware", "h100-sxm",
                   "--tp", "4", "--precision", "fp8", "--context", "8k,8Ki")
    assert [(r["context"], r["sequences"]) for r in doc["rows"]] == [(8000, 190), (8192, 185)]
    held = run_json(capsys, "capacity", "--model", "llama-3-70b", "--hardware", "h100-sxm",
                    "--tp", "4", "--precision", "fp8", "--context", "8k", "--reserve", "0.1")
    assert held["rows"][0]["sequences"] == 165
    assert main(["capacity", "--model", "Llama-3-70B", "--hardware", "H100-SXM", "--tp", "4",
                 "--precision", "fp8", "--context", "8k"]) == 0
    out = capsys.readouterr().out
    assert "190 sequences (190.309)" in out and "--reserve" in out
    mem = run_json(capsys, "memory", "--model", "llama-3-70b", "--hardware", "h100-sxm",
                   "--tp", "8", "--precision", "fp16", "--set", "B=32,512", "--set", "S=4096")
    assert [r["fits"] for r in mem["rows"]] == [True, False]
    assert mem["rows"][0]["weights"] == 17640734720 and mem["rows"][1]["memory_bytes"] > 80e9
    assert main(["memory", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--set", "B=1",
                 "--set", "S=1024"]) == 0
    assert "experts=8 (top-2)" in capsys.readouterr().out


def test_prompt_speculation_and_experts_as_options(capsys):
    (row,) = run_json(capsys, "eval", "decode", "--model", "llama-3-70b", "--hardware",
                      "h100-sxm", "--tp", "8", "--set", "B=1", "--set", "S=2048", "--prompt",
                      "2048", "--draft", "llama-3-8b", "--draft-tokens", "4", "--acceptance",
                      "0.8", "--draft-tp", "8")["rows"]
    assert row["ttft_s"] > row["time_s"] and row["ttft_prompt_tokens"] == 2048
    assert row["speculative"]["tokens_per_target_pass"] == pytest.approx(3.3616)
    assert row["speculative"]["speedup"] == pytest.approx(1.94408, rel=1e-4)   # latency on
    t = {mode: run_json(capsys, "eval", "decode", "--model", "mixtral-8x7b", "--hardware",
                        "h100-sxm", "--set", "B=1", "--set", "S=1024", "--expert-reads",
                        mode)["rows"][0]["time_s"] for mode in ("all", "expected")}
    assert t["all"] / t["expected"] == pytest.approx(3.6392, rel=1e-4)


@pytest.mark.parametrize("argv, fragments", [
    (["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp", "6"],
     ["--tp 6", "expected one of 1, 2, 4, 8, 16, 32, 64"]),
    (["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp", "0"],
     ["--tp", "positive integer"]),
    (["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--pp", "81"],
     ["--pp 81", "expected 1 to 80"]),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "opteron-x2", "--precision",
      "fp64", "--tp", "2"], ["--tp 2", "opteron-x2 lists no interconnect"]),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--weights", "fp3"],
     ["--weights", "invalid choice", "int4"]),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "q7"],
     ["--precision q7", "expected one of", "bf16"]),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision",
      "int4"], ["--precision int4", "no peak for int4", "offers", "fp8", "--weights int4"]),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "a100-80gb", "--activations",
      "fp8"], ["--activations fp8", "no peak for fp8"]),
    (["eval", "gemm", "--hardware", "h100-sxm", "--tp", "2"], ["--tp", "does not use it"]),
    (["eval", "prefill", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--prompt", "8"],
     ["--prompt", "only for decode"]),
    (["capacity", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp", "3",
      "--context", "8k"], ["--tp 3", "expected one of"]),
])
def test_serving_bad_input(capsys, argv, fragments):
    line = run_error(capsys, *argv)
    assert all(f in line for f in fragments), line


def test_inputs_a_user_expects(capsys, tmp_path):
    spec = hardware.get("h100-sxm")
    chip = tmp_path / "mine.toml"
    chip.write_text((REPO / "symroof" / "hardware" / "h100-sxm.toml").read_text())
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(
        (REPO / "tests" / "fixtures" / "hf_configs" / "llama-3-8b.json").read_text())
    by_path = run_json(capsys, "eval", "decode", "--model", str(folder), "--hardware",
                       str(chip), "--set", "B=32", "--set", "S=2048")["rows"][0]
    by_name = run_json(capsys, "eval", "decode", "--model", "LLAMA-3-8B", "--hardware",
                       "H100-SXM", "--set", "B=32", "--set", "S=2048")["rows"][0]
    assert by_path["time_s"] == pytest.approx(by_name["time_s"], rel=1e-12)
    assert by_path["ridge"] == pytest.approx(float(spec.ridge("bf16")))
    # 8Ki is 8192, 8k is 8000: each row says what it read
    rows = run_json(capsys, "eval", "decode", "--model", "llama-3-8b", "--hardware",
                    "h100-sxm", "--set", "B=1", "--set", "S=8k,8Ki")["rows"]
    assert [r["subs"]["S"] for r in rows] == [8000, 8192]
    assert main(["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--set",
                 "B=1", "--set", "S=8Ki"]) == 0
    assert "at B=1 S=8192 b=2" in capsys.readouterr().out
    assert main(["--version"]) == 0 and "symroof" in capsys.readouterr().out
    assert main([]) == 0 and "usage: symroof" in capsys.readouterr().out
    assert main(["eval", "--help"]) == 0
    assert "in derive and eval alike (default bf16; formulas keep b)" in \
        " ".join(capsys.readouterr().out.split())
    assert "holds no config.json" in run_error(capsys, "eval", "decode", "--model",
                                               str(tmp_path), "--hardware", "h100-sxm")



def test_training_rows_leave_memory_to_symroof_train(capsys):
    """A training step's memory (gradients, optimizer state, saved activations) is
    `symroof train`'s: eval reports no fit for it and prints no serving lines."""
    (row,) = run_json(capsys, "eval", "training", "--model", "llama-3-8b", "--hardware",
                      "h100-sxm", "--set", "B=1", "--set", "S=512")["rows"]
    assert row["fits"] is None and row["memory"] is None and row["memory_bytes"] is None
    assert main(["eval", "training", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                 "--set", "B=1", "--set", "S=512"]) == 0
    out = capsys.readouterr().out
    assert "time to first token" not in out and "memory per device" not in out
