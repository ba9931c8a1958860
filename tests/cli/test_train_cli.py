"""``symroof train``: memory per GPU by part, whether it fits, FLOPs per step, the bubble,
days for a token budget; driven in-process through ``symroof.cli.main``.

The figures are GPT-3 175B on Korthikanti et al.'s layout (t = 8, p = 8, 64 sequences a
step), checked against the library (tests/engine/test_training_memory.py checks the library
against hand arithmetic) and against the seed's 6N: 6 x 174.6e9 x 300e9 FLOPs on 64 A100s
at 50% MFU is 6 N T / (64 x 312e12 x 0.5) seconds.
"""

from __future__ import annotations

import json

import pytest

from symroof.cli import main
from symroof.models import get
from symroof.training import TrainingLayout, training_memory

ARGS = ["train", "--model", "gpt3-175b", "--hardware", "a100-80gb", "--seq", "2048",
        "--tp", "8", "--pp", "8", "--global-batch", "64", "--sequence-parallel",
        "--dropout", "0.1", "--recompute", "selective", "--statistics", "ignored"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_output(capsys):
    code, out, err = run(capsys, *ARGS, "--tokens", "300e9", "--mfu", "0.5")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("training gpt3-175b on 64 x NVIDIA A100 SXM4 80GB, bf16, "
                        "recompute selective")
    assert "first pipeline stage: 12 layers, 8 micro-batches in flight" in lines[2]
    parts = {line.split()[0]: line for line in lines[3:8]}
    assert parts["activations"].endswith("10.3 GB")
    assert "55.4 GB of 80.0 GB: fits" in parts["total"]
    assert "pipeline bubble: (p - 1)/m = 7/64 = 10.9% of the ideal step time" in out
    # the time: model FLOPs at 50% of 64 x 312 TFLOP/s; 6N T alone gives 365 days, the
    # attention and LM head add 1.1%
    n = float(get("gpt3-175b").params)
    six_nt = 6 * n * 300e9 / (64 * 312e12 * 0.5) / 86400
    assert round(six_nt) == 364
    days = float(lines[-1].split("): ")[1].split(" days")[0])
    assert days == pytest.approx(369.3, abs=0.05)
    assert 1.0 < days / six_nt < 1.02


def test_json_output_matches_the_library(capsys):
    code, out, _ = run(capsys, *ARGS, "--json")
    assert code == 0
    doc = json.loads(out)
    mem = training_memory(get("gpt3-175b").replace(attention_dropout=0.1, hidden_dropout=0.1)
                          .with_bytes(2), batch=1, seq=2048,
                          layout=TrainingLayout(tp=8, pp=8, sequence_parallel=True,
                                                micro_batches=64),
                          recompute="selective", statistics="ignored")
    first = doc["stages"][0]
    assert first["stage"] == "first" and first["in_flight"] == 8
    assert first["activations_bytes"] == int(mem.stages[0].activations)
    assert first["total_bytes"] == int(mem.stages[0].total)
    assert doc["fits"] is True and doc["layout"]["devices"] == 64
    assert doc["bubble"] == pytest.approx(7 / 64)
    assert "time" not in doc
    # the request it ran, in the form eval's --json prints it
    req = doc["request"]
    assert req["workload"] == "training" and req["hardware"] == "a100-80gb"
    assert req["model"] == "gpt3-175b" and req["numerics"]["b"] == "bf16"
    # the model is the preset with --dropout's fields changed: the request says which
    assert req["model_fields"] == {"preset": True, "attention_dropout": 0.1,
                                   "hidden_dropout": 0.1}
    assert req["options"] == {"recompute": "selective", "causal": "half", "fused": True}


def test_does_not_fit_without_recomputation(capsys):
    code, out, _ = run(capsys, "train", "--model", "gpt3-175b", "--hardware", "a100-80gb",
                       "--seq", "2048", "--tp", "8", "--pp", "8", "--dropout", "0.1",
                       "--recompute", "none", "--unfused")
    assert code == 0
    assert "of 80.0 GB: does not fit" in out


@pytest.mark.parametrize("argv,message", [
    (["--tp", "0"], "--tp '0': expected a positive whole number"),
    (["--pp", "7"], "pp: 7 stages do not divide the 96 layers"),
    (["--tokens", "1e9"], "give tokens and mfu together"),
    (["--mfu", "0.5", "--tokens", "1e9", "--precision", "fp8"], "fp8"),
    (["--global-batch", "63", "--pp", "2", "--dp", "2"], "global_batch: 63 sequences"),
    (["--sequence-parallel"], "--sequence-parallel: splits activations"),
    (["--mfu", "1.5", "--tokens", "1e9"], "utilization in (0, 1]"),
    (["--dropout", "x"], "--dropout"),
])
def test_bad_input_is_one_line(capsys, argv, message):
    base = ["train", "--model", "gpt3-175b", "--hardware", "a100-80gb", "--seq", "2048"]
    code, out, err = run(capsys, *base, *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err


def _error(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", (code, out)
    return err


@pytest.mark.parametrize("flags", [
    ["--model", "gpt3-175b", "--hardware", "a100-80gb", "--precision", "fp8"],   # the chip's peak
    ["--model", "no-such-model", "--hardware", "a100-80gb"],                     # the model
    ["--model", "gpt3-175b", "--hardware", "no-such-chip"],                      # the chip
])
def test_train_parses_into_the_one_request_and_refuses_as_eval_does(capsys, flags):
    """``symroof train`` is a parser into a Request of the registry's training workload:
    its model, formats and chip meet the same checks as ``symroof eval``'s, so each bad
    value is refused with the very line eval prints (before, train had its own model
    reader and chip check, with other messages)."""
    train = _error(capsys, "train", *flags, "--seq", "2048")
    evaluate = _error(capsys, "eval", "decode", *flags, "--set", "B=1", "--set", "S=2")
    assert train == evaluate and train.startswith("symroof: error: ")


def test_train_reads_the_model_as_every_front_door_does(capsys):
    """A preset in any case (request.load_model, which also reads a config.json or a
    folder holding one) gives the same plan as the preset's name; the options are the
    registry entry's members."""
    import argparse

    from symroof.cli.train import request_of
    from symroof.options import Causal, Recompute

    base = ["--hardware", "a100-80gb", "--seq", "1024", "--json"]
    _, want, _ = run(capsys, "train", "--model", "gpt2", *base)
    _, upper, _ = run(capsys, "train", "--model", "GPT2", *base)
    assert upper == want and json.loads(want)["model"] == "gpt2"
    args = argparse.Namespace(model="gpt2", dropout=None, recompute="selective",
                              causal="none", unfused=True, precision=None, hardware="h100-sxm")
    r = request_of(args)
    assert r.workload == "training" and dict(r.options) == {
        "recompute": Recompute.SELECTIVE, "causal": Causal.NONE, "fused": False}
