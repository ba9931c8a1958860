"""``symroof plan`` on the command line: the answer with its binding formulas, JSON, the
Pareto chart as SVG and pgfplots, and impossible input as one error line."""

from __future__ import annotations

from pathlib import Path

import pytest

from symroof.cli import main
from tests.cli_run import run_error, run_json

ROOT = Path(__file__).resolve().parents[2]
BASE = ("plan", "--model", "llama-3-70b", "--chip", "a100-80gb=4", "--workload", "2000:500",
        "--pp", "1")


def test_will_four_a100s_serve_it(capsys):
    code = main([*BASE, "--itl", "0.05", "--ttft", "2", "--users", "64",
                 "--prices", str(ROOT / "examples" / "prices.toml")])
    out = capsys.readouterr().out
    assert code == 0
    assert "answer: yes; best: a100-80gb tp4 pp1 bf16  B=64  4 chips" in out
    # the binding formulas, checkable by hand: the ITL crossover (the all-reduces' NVLink
    # latency included, the engine's default) and the memory limit
    assert "batch limited by ITL <= 50 ms: B <= Min(7665.0*T - 7.961, 8751.0*T - 158.2)" in out
    assert "so B <= 279" in out
    assert "B*S <= (usable - weights)/(KV bytes per position)" in out and "B <= 218" in out
    assert "efficiency: compute 1, bandwidth 1" in out and "ignores: queueing" in out
    assert "USD/M tokens" in out


def test_json_and_charts(capsys, tmp_path):
    svg, tex = tmp_path / "front.svg", tmp_path / "front.tex"
    doc = run_json(capsys, *BASE, "--itl", "0.05", "--rps", "2", "--chart", str(svg),
                   "--chart", str(tex))
    best = doc["best"]
    assert best["chip"] == "a100-80gb" and best["itl_s"] <= 0.05
    assert doc["binding"]["batch_itl"] == 279 and doc["binding"]["objective_symbol"] == "tau"
    assert len(doc["front"]) >= 2
    assert all(c["itl_s"] <= 0.05 for c in doc["front"])
    text = svg.read_text()
    assert text.startswith("<?xml") and "tokens/s per user" in text and "a100-80gb front" in text
    assert "\\begin{tikzpicture}" in tex.read_text()


def test_nothing_meets_says_what_binds(capsys):
    code = main([*BASE, "--itl", "0.01", "--users", "64"])
    out = capsys.readouterr().out
    assert code == 0
    assert "answer: no configuration meets the objectives" in out
    assert "binding objective: ITL <= 10 ms: the closest takes" in out


@pytest.mark.parametrize("extra, field", [
    (("--itl", "0.05", "--users", "-3"), "load users"),
    (("--itl", "0.05", "--rps", "0"), "load requests_per_s"),
    (("--itl", "0.05", "--users", "8", "--scheduler", "tcp://127.0.0.1:9",
      "--workers", "0"), "--workers"),
    (("--itl", "-1", "--users", "8"), "objectives itl_s"),
    (("--itl", "x", "--users", "8"), "--itl x"),
    (("--users", "8", "--precision", "weights=int5"), "--precision weights=int5"),
    (("--users", "8", "--workload", "10"), "--workload 10"),
    (("--users", "8", "--chart", "front.png"), "--chart"),
    (("--users", "8", "--mode", "disaggregated", "--kv-link-bandwidth", "0"),
     "--kv-link-bandwidth 0"),
    (("--users", "8", "--mode", "chunked", "--chunk-tokens", "0"), "--chunk-tokens 0"),
    (("--users", "8", "--microbatches", "0"), "--microbatches 0"),
    (("--users", "8", "--mode", "chunked", "--chunk-tokens", "3"),
     "service chunk_tokens 3: the chunk budget holds no sequence"),
])
def test_impossible_input_is_one_line(capsys, extra, field):
    assert field in run_error(capsys, *BASE, *extra)


def test_price_for_a_chip_not_given(capsys, tmp_path):
    prices = tmp_path / "p.toml"
    prices.write_text('currency = "USD"\n[price]\nh100-sxm = 3.5\n')
    line = run_error(capsys, *BASE, "--users", "8", "--prices", str(prices))
    assert "price.h100-sxm: no such chip among the chips given" in line


def test_disaggregated_prints_the_prefill_split_and_the_transfer(capsys):
    code = main(["plan", "--model", "llama-3-8b", "--chip", "a100-80gb=4", "--workload",
                 "4000:300", "--pp", "1", "--itl", "0.03", "--ttft", "0.5", "--rps", "2",
                 "--mode", "disaggregated", "--kv-link-bandwidth", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "answer: yes" in out and "for prefill):" in out
    assert "prefill replicas: tp" in out and "TTFT = prefill(P) + KV(P)/link" in out
    # 4000 tokens x 131072 B of KV cache over 50 GB/s: 10.49 ms
    assert "+ 10.49 ms = " in out and "link: service kv_link_bandwidth" in out


def test_chunked_prints_its_ttft_steps_and_budget(capsys):
    code = main([*BASE, "--itl", "0.05", "--ttft", "2", "--users", "64", "--mode", "chunked",
                 "--chunk-tokens", "1024"])
    out = capsys.readouterr().out
    assert code == 0
    assert "TTFT = floor(P/C) t_C(B) + t_(P mod C)(B) = 1 t_1024(B) + t_976(B)" in out
    assert "by the chunk budget: B*P/O <= C, B <= 1024*500/2000, so B <= 256" in out
