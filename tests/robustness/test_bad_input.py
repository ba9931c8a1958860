"""Bad input everywhere gives a SymroofError naming the field and the expectation (issue 6).

Table-driven: each row is an input that must be refused, and the substrings the one-line
message must contain (the field or node at fault, and what was expected). The CLI rows
check the command-line contract: exit 2, exactly one ``symroof: error: ...`` line on
stderr, nothing on stdout, never a traceback.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from needs import executable
import sympy as sp

from symroof.present.records import to_dict, to_text
import symroof as sr
from symroof import hardware, models
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.ir import Elementwise, Gemm, Graph, Tensor
from symroof.present.escape import latex_escape, markdown_escape
from symroof.symbols import B, D, K, M, N, S, b

REPO = Path(__file__).resolve().parents[2]
A100 = (Path(hardware.__file__).parent / "a100-80gb.toml").read_text(encoding="utf-8")


def refused(fn, *substrings: str) -> str:
    """Call fn; it must raise SymroofError whose one-line message holds every substring."""
    with pytest.raises(SymroofError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg, f"multi-line message: {msg!r}"
    for s in substrings:
        assert s in msg, f"{s!r} not in message {msg!r}"
    return msg


def cli_error(capsys, argv: list[str], *substrings: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    assert code == 2, (code, out, err)
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {err!r}"
    assert lines[0].startswith("symroof: error: "), lines[0]
    for s in substrings:
        assert s in lines[0], f"{s!r} not in {lines[0]!r}"
    return lines[0]


# ---------------------------------------------------------------------------
# dimensions


DIMENSION_CASES = {
    "tensor zero": (lambda: Tensor("A", (0, 4)), ["tensor 'A'", "dimension",
                                                    "positive integer", "got 0"]),
    "tensor negative": (lambda: Tensor("A", (4, -3)), ["tensor 'A'", "dimension 1",
                                                        "positive integer", "got -3"]),
    "tensor non-integer": (lambda: Tensor("A", (2.5, 4)), ["tensor 'A'", "positive integer",
                                                           "5/2"]),
    "tensor rational": (lambda: Tensor("A", (sp.Rational(1, 3),)), ["positive integer", "1/3"]),
    "tensor string dim": (lambda: Tensor("A", ("3", 4)), ["tensor 'A'", "expected a number"]),
    "tensor bool dim": (lambda: Tensor("A", (True, 4)), ["tensor 'A'", "expected a number"]),
    "tensor nan dim": (lambda: Tensor("A", (float("nan"),)), ["tensor 'A'", "finite"]),
    "tensor negative symbol": (lambda: Tensor("A", (sp.Symbol("x", negative=True),)),
                               ["tensor 'A'", "positive integer"]),
    "tensor shape not a tuple": (lambda: Tensor("A", 5), ["tensor 'A'", "expected a shape"]),
    "tensor shape a string": (lambda: Tensor("A", "MK"), ["tensor 'A'", "expected a shape"]),
    "tensor zero bytes": (lambda: Tensor("A", (2,), bytes_per_value=0),
                          ["bytes_per_value", "positive"]),
    "tensor empty name": (lambda: Tensor("", (2,)), ["tensor name", "non-empty"]),
    "gemm(0, ...)": (lambda: sr.workloads.gemm(0, 2, 2), ["positive integer", "got 0"]),
    "gemm(-1, ...)": (lambda: sr.workloads.gemm(-1, 2, 2), ["positive integer", "got -1"]),
    "gemm(2.5, ...)": (lambda: sr.workloads.gemm(2.5, 2, 2), ["positive integer", "5/2"]),
    "gemm(.., 0, ..)": (lambda: sr.workloads.gemm(2, 0, 2), ["positive integer", "got 0"]),
    "gemm(.., .., -4)": (lambda: sr.workloads.gemm(2, 2, -4), ["positive integer", "got -4"]),
    "gemm string": (lambda: sr.workloads.gemm("M", 2, 2), ["expected a number"]),
    "gemm batch 0": (lambda: sr.workloads.gemm(M, N, K, batch=0), ["batch", "positive integer"]),
    "gemm b=0": (lambda: sr.workloads.gemm(M, N, K, b=0), ["bytes_per_value", "positive"]),
    "gemm b=-2": (lambda: sr.workloads.gemm(M, N, K, b=-2), ["bytes_per_value", "positive"]),
    "gemv(0, ...)": (lambda: sr.workloads.gemv(0, 2), ["positive integer", "got 0"]),
    "elementwise(-5)": (lambda: sr.workloads.elementwise(-5), ["positive integer", "got -5"]),
    "elementwise inputs=0": (lambda: sr.workloads.elementwise(4, inputs=0),
                             ["inputs", "positive integer"]),
    "repeat 0": (lambda: Graph("g").repeat(0).__enter__(), ["repeat", "positive integer"]),
    "transformer heads=0": (lambda: sr.models.transformer(layers=2, d_model=64, heads=0),
                            ["heads", "positive integer"]),
    "decode batch 0": (lambda: sr.workloads.decode(models.get("llama-3-8b"), batch=0,
                                                   context=S), ["batch", "positive integer"]),
    "decode context -5": (lambda: sr.workloads.decode(models.get("llama-3-8b"), batch=B,
                                                      context=-5), ["context", "positive integer"]),
    "attention S=0": (lambda: sr.workloads.attention(0, 64, 4), ["attention seq",
                                                                "positive integer"]),
    "capacity tp=0": (lambda: sr.capacity(models.get("llama-3-8b"), "h100-sxm", context=8192,
                                          tp=0), ["tp", "positive integer"]),
    "tile size 0": (lambda: sr.passes.tile(sr.workloads.gemm(4, 4, 4).graph, {M: 0}),
                    ["tile size for M", "positive integer"]),
    "transformer d_model not divisible": (
        lambda: sr.models.transformer(layers=2, d_model=65, heads=4),
        ["head_dim", "positive integer", "65/4"]),
}


@pytest.mark.parametrize("case", sorted(DIMENSION_CASES))
def test_bad_dimension(case):
    fn, substrings = DIMENSION_CASES[case]
    refused(fn, *substrings)


# Values substituted into a formula must fit the symbol's assumptions too (M, N, K are
# positive integers, b is positive). symbol_map once checked only that a value was a
# number, so the library computed times for M=0, M=2.5 or b=-2, and for M=-1 reported
# "moves no counted bytes" (Q happened to be 0) instead of naming M.
SUBS_CASES = {
    "roofline M=0": ({M: 0, N: 2, K: 2}, ["M", "positive integer"]),
    "roofline M=-1": ({M: -1, N: 2, K: 2}, ["M", "positive integer"]),
    "roofline M=2.5": ({M: 2.5, N: 2, K: 2}, ["M", "positive integer"]),
    "roofline b=-2": ({M: 2, N: 2, K: 2, b: -2}, ["b", "positive"]),
}


@pytest.mark.parametrize("case", sorted(SUBS_CASES))
def test_bad_substituted_value(case):
    subs, substrings = SUBS_CASES[case]
    refused(lambda: sr.roofline(sr.workloads.gemm(M, N, K), "h100-sxm", subs=subs), *substrings)


def test_evaluate_refuses_zero_dimension():
    refused(lambda: sr.evaluate(sr.workloads.gemm(M, N, K).flops, {M: 0}), "M", "positive")


# ---------------------------------------------------------------------------
# GEMM inner dimensions, cycles and other malformed graphs


def _gemm_graph_mismatch():
    g = Graph("mlp")
    x = g.input("x", (M, D))
    w = g.weight("W1", (4 * D, D))
    return g.gemm(x, w, name="up")


GRAPH_CASES = {
    "Gemm node inner dims": (
        lambda: Gemm("mm", Tensor("a", (2, 3)), Tensor("b", (4, 5)), Tensor("c", (2, 5))),
        ["gemm 'mm'", "inner dimensions differ", "'a' has 3", "'b' has 4"]),
    "Graph.gemm symbolic inner dims": (
        _gemm_graph_mismatch, ["gemm 'up'", "inner dimensions differ", "'x' has D",
                               "'W1' has 4*D"]),
    "Gemm wrong output shape": (
        lambda: Gemm("mm", Tensor("a", (2, 3)), Tensor("b", (3, 5)), Tensor("c", (2, 4))),
        ["gemm 'mm'", "output 'c'", "expected (2, 5)"]),
    "Gemm batch dims differ": (
        lambda: Gemm("bmm", Tensor("a", (7, 2, 3)), Tensor("b", (8, 3, 5)),
                     Tensor("c", (7, 2, 5))),
        ["gemm 'bmm'", "batch dimensions differ"]),
    "Gemm rank 1 operand": (
        lambda: Gemm("mm", Tensor("a", (3,)), Tensor("b", (3, 5)), Tensor("c", (5,))),
        ["gemm 'mm'", "operand 'a'", "rank 1", ">= 2"]),
    "Elementwise no broadcast": (
        lambda: Elementwise("add", (Tensor("a", (2, 3)),), Tensor("c", (2, 4))),
        ["elementwise 'add'", "input 'a'", "broadcast"]),
}


@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
def test_bad_graph(case):
    fn, substrings = GRAPH_CASES[case]
    refused(fn, *substrings)


def test_op_writing_its_own_input_is_refused():
    g = Graph("g")
    x = g.input("x", (2, 2))
    refused(lambda: g.add(Elementwise("loop", (x,), x)), "elementwise 'loop'", "output 'x'",
            "already has a producer")


def test_op_closing_a_cycle_is_refused():
    """x -> f -> y -> h -> z, then an op z -> y would close y -> h -> z -> y."""
    g = Graph("g")
    x = g.input("x", (2, 2))
    y = g.elementwise(x, name="y")
    z = g.elementwise(y, name="z")
    refused(lambda: g.add(Elementwise("back", (z,), y)), "elementwise 'back'", "output 'y'",
            "already has a producer")
    assert g.ops  # the graph is still valid


def test_cycle_made_by_hand_is_named_by_validate_and_analyze():
    g = Graph("cyc")
    x = g.input("x", (2, 2))
    y = g.elementwise(x, name="f")
    op = g.node("f")
    g.nx.add_edge(y, op, crossings=sp.Integer(1))     # y feeds the op that makes it
    refused(g.validate, "graph 'cyc'", "cycle", "f")
    refused(lambda: g.ops, "graph 'cyc'", "cycle")
    refused(lambda: sr.analyze(g), "cycle")


def test_op_reading_a_foreign_tensor_is_refused():
    g = Graph("g")
    g.input("x", (2, 2))
    stray = Tensor("y", (2, 2))
    refused(lambda: g.add(Elementwise("e", (stray,), Tensor("o", (2, 2)))), "elementwise 'e'",
            "input 'y'", "not a tensor of graph 'g'")


def test_duplicate_names_are_refused():
    g = Graph("g")
    g.input("x", (2, 2))
    refused(lambda: g.input("x", (2, 2)), "graph 'g'", "'tensor x'", "defined twice")


# ---------------------------------------------------------------------------
# unknown names: closest known names suggested


NAME_CASES = {
    "hardware h100": (lambda: hardware.get("h100"), ["unknown hardware 'h100'", "did you mean",
                                                     "'h100-sxm'"]),
    "hardware a100-80": (lambda: hardware.get("a100-80"), ["did you mean", "'a100-80gb'"]),
    "hardware H100": (lambda: hardware.get("H100"), ["unknown hardware", "h100-sxm"]),
    "hardware not a str": (lambda: hardware.get(3), ["hardware name", "expected a string"]),
    "model llama-3-8": (lambda: models.get("llama-3-8"), ["unknown model 'llama-3-8'",
                                                          "did you mean", "'llama-3-8b'"]),
    "model lama-3-8b": (lambda: models.get("lama-3-8b"), ["did you mean", "'llama-3-8b'"]),
    "model mixtral-8x7": (lambda: models.get("mixtral-8x7"), ["did you mean",
                                                              "'mixtral-8x7b'"]),
    "roofline hardware h100": (lambda: sr.roofline(sr.workloads.gemm(M, N, K), "h100"),
                               ["unknown hardware 'h100'", "did you mean"]),
    "precision fp7": (lambda: hardware.get("h100-sxm").peak("fp7"),
                      ["precision 'fp7'", "did you mean", "'fp8'"]),
    "unit tensor": (lambda: hardware.get("h100-sxm").peak("bf16", unit="tensor"),
                    ["unit 'tensor'", "matrix", "vector"]),
    "level hmb": (lambda: hardware.get("h100-sxm").bandwidth("hmb"),
                  ["no memory level 'hmb'", "did you mean", "'hbm'"]),
}


@pytest.mark.parametrize("case", sorted(NAME_CASES))
def test_unknown_name(case):
    fn, substrings = NAME_CASES[case]
    refused(fn, *substrings)


# ---------------------------------------------------------------------------
# a precision the chip does not offer


def test_fp8_on_a100_peak():
    refused(lambda: hardware.get("a100-80gb").peak("fp8"), "a100-80gb", "fp8",
            "this chip offers", "bf16")


def test_fp8_on_a100_roofline():
    refused(lambda: sr.roofline(sr.workloads.gemm(M, N, K), "a100-80gb", precision="fp8",
                                subs={M: 2, N: 2, K: 2}), "a100-80gb", "fp8", "offers")


def test_fp8_on_a100_vector_unit():
    refused(lambda: hardware.get("a100-80gb").peak("fp32", unit="matrix"), "a100-80gb",
            "matrix", "fp32", "offers")


# ---------------------------------------------------------------------------
# hardware TOML files


def _a100(old: str, new: str) -> str:
    assert old in A100, old
    return A100.replace(old, new, 1)


TOML_CASES = {
    "unknown unit bandwidth_tb_per_hour": (
        _a100('bandwidth_gb_per_s = "2039"', 'bandwidth_tb_per_hour = "2"'),
        ["[memory.hbm]", "bandwidth_tb_per_hour", "unit suffix", "tb_per_s"]),
    "unknown peak unit": (_a100('bf16_tflops = "312"', 'bf16_tflops_dense = "312"'),
                          ["[peak.matrix]", "bf16_tflops_dense", "unit suffix", "tflops"]),
    "unknown precision": (_a100('bf16_tflops = "312"', 'fp2_tflops = "312"'),
                          ["[peak.matrix]", "fp2_tflops", "precision"]),
    "zero bandwidth": (_a100('bandwidth_gb_per_s = "2039"', 'bandwidth_gb_per_s = 0'),
                       ["[memory.hbm]", "bandwidth_gb_per_s", "positive number", "0"]),
    "zero bandwidth string": (_a100('bandwidth_gb_per_s = "2039"', 'bandwidth_gb_per_s = "0.0"'),
                              ["bandwidth_gb_per_s", "positive number"]),
    "negative capacity": (_a100('capacity_gb = "80"', "capacity_gb = -80"),
                          ["[memory.hbm]", "capacity_gb", "positive number", "-80"]),
    "negative peak": (_a100('bf16_tflops = "312"', 'bf16_tflops = "-312"'),
                      ["bf16_tflops", "positive number"]),
    "peak as boolean": (_a100('bf16_tflops = "312"', "bf16_tflops = true"),
                        ["bf16_tflops", "expected a number", "bool"]),
    "peak as text": (_a100('bf16_tflops = "312"', 'bf16_tflops = "312 TFLOPS"'),
                     ["bf16_tflops", "decimal number"]),
    "peak as list": (_a100('bf16_tflops = "312"', "bf16_tflops = [312]"),
                     ["bf16_tflops", "expected a number"]),
    "peak infinite": (_a100('bf16_tflops = "312"', "bf16_tflops = inf"),
                      ["bf16_tflops", "finite"]),
    "peak nan": (_a100('bf16_tflops = "312"', "bf16_tflops = nan"), ["bf16_tflops", "finite"]),
    "missing name": (_a100('name = "a100-80gb"\n', ""), ["missing required field 'name'"]),
    "missing memory": (A100.split("[memory.hbm]")[0], ["missing required field 'memory'"]),
    "missing source": (_a100('capacity_gb = "80"\nsource = "NVIDIA', 'capacity_gb = "80"\nsrc = "'),
                       ["[memory.hbm]", "missing required field 'source'"]),
    "ops_per_mac as string": (_a100("ops_per_mac = 2", 'ops_per_mac = "2"'),
                              ["ops_per_mac", "1 or 2"]),
    "ops_per_mac 3": (_a100("ops_per_mac = 2", "ops_per_mac = 3"), ["ops_per_mac", "1 or 2"]),
    "name empty": (_a100('name = "a100-80gb"', 'name = ""'), ["name", "non-empty string"]),
    "unknown top-level key": (_a100('main_memory = "hbm"', 'main_memory = "hbm"\nmain_mem = 1'),
                              ["unknown key 'main_mem'", "did you mean", "'main_memory'"]),
    "main memory names no level": (_a100('main_memory = "hbm"', 'main_memory = "hbm3"'),
                                   ["main_memory", "'hbm3'", "hbm"]),
    "main memory without bandwidth": (_a100('main_memory = "hbm"', 'main_memory = "l2"'),
                                      ["[memory.l2]", "bandwidth"]),
    "peak not a table": (_a100("[peak.matrix]", "[peak.matrix.bf16]"), ["peak"]),
    "unknown compute unit": (_a100("[peak.vector]", "[peak.tensor]"),
                             ["[peak]", "unknown key 'tensor'"]),
    "twice the same quantity": (
        _a100('capacity_gb = "80"', 'capacity_gb = "80"\ncapacity_gib = 75'),
                                ["[memory.hbm]", "capacity", "twice"]),
    "not TOML": (_a100("[memory.hbm]", "[memory.hbm"), ["not valid TOML", "line"]),
    "empty file": ("", ["missing required field"]),
    "duplicate key (TOML)": (_a100('name = "a100-80gb"', 'name = "a"\nname = "b"'),
                             ["not valid TOML"]),
}


@pytest.mark.parametrize("case", sorted(TOML_CASES))
def test_bad_hardware_file(case, tmp_path):
    text, substrings = TOML_CASES[case]
    path = tmp_path / "chip.toml"
    path.write_text(text, encoding="utf-8")
    msg = refused(lambda: hardware.load(path), *substrings)
    assert str(path) in msg, f"the message does not name the file: {msg!r}"


def test_hardware_file_not_utf8(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_bytes(A100.encode() + b"\n# \xff\xfe\n")
    refused(lambda: hardware.load(path), str(path), "UTF-8")


def test_hardware_file_missing_or_directory(tmp_path):
    refused(lambda: hardware.load(tmp_path / "nope.toml"), "nope.toml", "cannot read")
    refused(lambda: hardware.load(tmp_path), str(tmp_path), "not a regular file")


EXTREME_NUMBERS = {
    # tomllib raises a bare ValueError for integer literals over 4300 digits
    "integer literal of 5000 digits": "1" * 5000,
    # sympy.Rational raises TypeError on decimal strings over 4300 digits
    "decimal string of 4400 digits": '"' + "1" * 4400 + '"',
    "tiny decimal of 4400 digits": '"0.' + "0" * 4400 + '1"',
    # "1e5000" loads, then to_dict() (and repr) die on Python's int->str limit
    "1e5000": '"1e5000"',
    "1e-5000": '"1e-5000"',
}


@pytest.mark.parametrize("case", sorted(EXTREME_NUMBERS))
def test_hardware_file_extreme_number(case, tmp_path):
    """Refuse an absurd figure at load time (SymroofError naming the field), or make
    everything a loaded spec offers work on it: never another exception."""
    path = tmp_path / "chip.toml"
    path.write_text(_a100('bandwidth_gb_per_s = "2039"',
                          "bandwidth_gb_per_s = " + EXTREME_NUMBERS[case]))
    try:
        spec = hardware.load(path)
    except SymroofError as exc:
        assert "bandwidth_gb_per_s" in str(exc) and str(path) in str(exc), str(exc)
        return
    to_text(spec)
    json.dumps(to_dict(spec))
    repr(spec)
    sr.roofline(sr.workloads.gemm(64, 64, 64), spec)


_HANG_SCRIPT = textwrap.dedent("""
    import sys
    from symroof import hardware
    from symroof.errors import SymroofError
    try:
        hardware.load(sys.argv[1])
    except SymroofError as exc:
        print("SymroofError", exc)
    else:
        print("loaded")
""")


def test_hardware_file_astronomical_exponent_does_not_hang(tmp_path):
    """"1e100000000" matches the decimal regex, and expanding 10**100000000 takes minutes
    of CPU and unbounded memory: loading must answer within seconds."""
    path = tmp_path / "chip.toml"
    path.write_text(_a100('bandwidth_gb_per_s = "2039"', 'bandwidth_gb_per_s = "1e100000000"'))
    try:
        done = subprocess.run([sys.executable, "-c", _HANG_SCRIPT, str(path)], cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail('hardware.load of bandwidth_gb_per_s = "1e100000000" ran for minutes')
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("SymroofError"), done.stdout
    assert "bandwidth_gb_per_s" in done.stdout


# ---------------------------------------------------------------------------
# Hugging Face config.json


LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
         "vocab_size": 128256}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "vocab_size": 50257}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "vocab_size": 32000, "num_local_experts": 8,
           "num_experts_per_tok": 2}


def _without(cfg: dict, key: str) -> dict:
    return {k: v for k, v in cfg.items() if k != key}


CONFIG_CASES = {
    "missing hidden_size": (_without(LLAMA, "hidden_size"), ["'hidden_size'", "missing",
                                                             "positive integer"]),
    "missing n_layer": (_without(GPT2, "n_layer"), ["'n_layer'", "missing"]),
    "missing model_type": (_without(LLAMA, "model_type"), ["'model_type'", "llama"]),
    "hidden_size string": ({**LLAMA, "hidden_size": "4096"}, ["'hidden_size'",
                                                              "positive integer", "'4096'"]),
    "hidden_size float": ({**LLAMA, "hidden_size": 4096.0}, ["'hidden_size'", "positive integer"]),
    "hidden_size negative": ({**LLAMA, "hidden_size": -4096}, ["'hidden_size'",
                                                               "positive integer", "-4096"]),
    "layers zero": ({**LLAMA, "num_hidden_layers": 0}, ["'num_hidden_layers'", "positive"]),
    "heads bool": ({**LLAMA, "num_attention_heads": True}, ["'num_attention_heads'",
                                                            "positive integer"]),
    "vocab list": ({**GPT2, "vocab_size": [50257]}, ["'vocab_size'", "positive integer"]),
    "head_dim zero": ({**LLAMA, "head_dim": 0}, ["'head_dim'", "positive integer"]),
    "tie_word_embeddings string": ({**LLAMA, "tie_word_embeddings": "yes"},
                                   ["'tie_word_embeddings'", "true or false"]),
    "unknown model_type": ({**LLAMA, "model_type": "lama"}, ["unknown model_type 'lama'",
                                                            "did you mean", "'llama'"]),
    "model_type not a string": ({**LLAMA, "model_type": 7}, ["'model_type'"]),
    "experts zero": ({**MIXTRAL, "num_local_experts": 0}, ["'num_local_experts'", "positive"]),
    # the next three are checked in TransformerModel; the message must still name the
    # file and its config.json fields, not the model label or symroof's field names
    "kv heads do not divide heads": ({**LLAMA, "num_key_value_heads": 5},
                                     ["num_key_value_heads", "num_attention_heads"]),
    "hidden_size not divisible by heads": ({**LLAMA, "hidden_size": 4097},
                                           ["hidden_size", "num_attention_heads"]),
    "experts per token above experts": ({**MIXTRAL, "num_experts_per_tok": 9},
                                        ["num_experts_per_tok", "num_local_experts"]),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_bad_config_json(case, tmp_path):
    cfg, substrings = CONFIG_CASES[case]
    folder = tmp_path / "some-model"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(cfg))
    msg = refused(lambda: models.from_hf_config(path), *substrings)
    assert str(path) in msg, f"the message does not name the file: {msg!r}"


RAW_CONFIG_CASES = {
    "not JSON": (b'{"model_type": "llama",', ["not valid JSON"]),
    "array": (b"[1, 2, 3]", ["expected a JSON object", "list"]),
    "number": (b"42", ["expected a JSON object", "int"]),
    "null": (b"null", ["expected a JSON object"]),
    "empty": (b"", ["not valid JSON"]),
    "invalid UTF-8": (b'{"model_type": "ll\xffama"}', ["not UTF-8 text", "byte 18"]),
    "deeply nested": (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ["not valid JSON"]),
    # json.loads raises a bare ValueError for an integer over 4300 digits
    "integer of 5000 digits": (b'{"model_type": "llama", "hidden_size": ' + b"9" * 5000 + b"}",
                               ["hidden_size"]),
}


@pytest.mark.parametrize("case", sorted(RAW_CONFIG_CASES))
def test_bad_config_json_bytes(case, tmp_path):
    raw, substrings = RAW_CONFIG_CASES[case]
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    msg = refused(lambda: models.from_hf_config(path), *substrings)
    assert str(path) in msg, msg


def test_config_json_missing_file_or_directory(tmp_path):
    refused(lambda: models.from_hf_config(tmp_path / "config.json"), "config.json", "cannot read")
    (tmp_path / "x.json").mkdir()
    refused(lambda: models.from_hf_config(tmp_path / "x.json"), "x.json", "not a regular file")


# ---------------------------------------------------------------------------
# the CLI: one line, exit 2, never a traceback


CLI_CASES = {
    "fp8 on a100": (["eval", "gemm", "--hardware", "a100-80gb", "--precision", "fp8",
                     "--set", "M=2", "--set", "N=2", "--set", "K=2"],
                    ["a100-80gb", "fp8", "offers"]),
    "unknown hardware": (["eval", "gemm", "--hardware", "h100"],
                         ["unknown hardware 'h100'", "did you mean", "'h100-sxm'"]),
    "unknown model": (["derive", "decode", "--model", "llama-3-8"],
                      ["unknown model 'llama-3-8'", "did you mean", "'llama-3-8b'"]),
    "unknown workload": (["derive", "gem"], ["unknown workload 'gem'", "did you mean",
                                             "'gemm'"]),
    "unknown precision": (["derive", "gemm", "--precision", "fp7"], ["precision 'fp7'",
                                                                     "'fp8'"]),
    "unknown level": (["eval", "gemm", "--hardware", "h100-sxm", "--level", "hmb"],
                      ["'hmb'", "hbm"]),
    "zero dimension": (["derive", "gemm", "--set", "M=0"], ["--set M", "positive integer"]),
    "negative dimension": (["derive", "gemm", "--set", "M=-1"], ["--set M", "positive integer"]),
    "non-integer dimension": (["derive", "gemm", "--set", "M=2.5"], ["--set M",
                                                                     "positive integer"]),
    "zero bytes per value": (["derive", "gemm", "--set", "b=0"], ["--set b", "positive"]),
    "python injection": (["derive", "gemm", "--set", "M=__import__('os').system('x')"],
                         ["M", "not allowed"]),
    "power tower": (["derive", "gemm", "--set", "B=9**9**9**9"], ["B", "exponent",
                                                                  "out of range"]),
    "1e400": (["derive", "gemm", "--set", "S=1e400"], ["S", "too large"]),
    "unbalanced paren": (["derive", "gemm", "--set", "K=("], ["K", "invalid syntax"]),
    "unknown symbol": (["derive", "gemm", "--set", "Z=3"], ["'Z'", "unknown symbol"]),
    "missing equals": (["derive", "gemm", "--set", "M"], ["missing '='"]),
    "set twice": (["derive", "gemm", "--set", "M=2", "--set", "M=3"], ["more than once"]),
    "bad var": (["solve", "limit", "decode", "--var", "Z"], ["--var 'Z'", "expected one of"]),
    "bad --of": (["solve", "limit", "decode", "--var", "B", "--of", "F.real"],
                 ["--of", "not allowed"]),
    "bad choice": (["derive", "gemm", "--flops", "three"], ["--flops", "invalid choice"]),
    "bad int": (["derive", "elementwise", "--flops-per-element", "x"],
                ["--flops-per-element", "non-negative integer"]),
    "hardware show without name": (["hardware", "show"], ["expected a chip name"]),
    "config.json missing": (["derive", "decode", "--model", "/nonexistent/config.json"],
                            ["/nonexistent/config.json", "cannot read"]),
    # the next two: a newline in user input must not become a second stderr line
    "newline in unrecognized argument": (["derive", "gemm", "extra\ntoken"],
                                         ["unrecognized arguments"]),
    "newline in a config path": (["derive", "decode", "--model", "new\nline.json"],
                                 ["cannot read"]),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_bad_input(case, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, substrings = CLI_CASES[case]
    cli_error(capsys, argv, *substrings)
    assert list(tmp_path.iterdir()) == []


def test_cli_bad_config_file(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": -2}))
    cli_error(capsys, ["derive", "decode", "--model", str(path)], str(path),
              "'num_hidden_layers'", "positive integer")


def test_cli_never_evaluates_python(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for value in ["M=__import__('os').system('touch pwned')",
                  "M=[c for c in ().__class__.__base__.__subclasses__()]",
                  "M=open('pwned','w').write('x')", "M=exec('1')", "M=eval('2')"]:
        cli_error(capsys, ["derive", "gemm", "--set", value], "M")
    assert not (tmp_path / "pwned").exists()


def test_library_source_has_no_eval():
    """Nothing is parsed with eval: no eval/exec/compile/__import__ calls, and no sympify
    (or sp.S) call outside symroof.testing, which refuses strings first."""
    found = []
    for path in sorted((REPO / "symroof").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else None
            if name in {"eval", "exec", "compile", "__import__"} and not (
                    isinstance(f, ast.Attribute) and name == "compile"
                    and isinstance(f.value, ast.Name) and f.value.id == "re"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
            # sympify turns any string into code SymPy evaluates: the library never calls it
            # (numbers go through ir.as_expr, text through symroof.parse); symroof.testing
            # refuses strings before it sympifies a user's expected formula
            if name in {"sympify", "S"} and "testing" not in path.relative_to(REPO).parts:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
            if name == "parse_expr" and path.name != "parse.py" and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {name}(str)")
            if isinstance(f, ast.Attribute) and f.attr == "parse_expr" and isinstance(
                    f.value, ast.Attribute) and f.value.attr == "sympy_parser":
                found.append(f"{path.relative_to(REPO)}:{node.lineno} sympy parse_expr")
    assert not found, found


# ---------------------------------------------------------------------------
# escaping filters


NASTY_NAMES = [
    "W_q", "50%", "R&D", "#1", "$x$", "{a}", "~home", "x^2", "C:\\path\\to",
    "a_b%c&d#e$f{g}h~i^j\\k",
    "\\textbf{bold}", "\\\\", "}{", "%comment", "\\end{document}", "^^M", "~~", "__init__",
    "\\", "\\\\\\", "$$", "&&&", "100% & ~50$ #1 {x} ^_^ \\o/",
]
_LATEX_SPECIALS = set("_%&#${}~^\\")
_LATEX_ESCAPES = re.compile(r"\\textbackslash\{\}|\\textasciitilde\{\}|\\textasciicircum\{\}"
                            r"|\\[_%&#${}]")


@pytest.mark.parametrize("name", NASTY_NAMES)
def test_latex_escape_leaves_no_special_character(name):
    escaped = latex_escape(name)
    rest = _LATEX_ESCAPES.sub("", escaped)
    assert not (set(rest) & _LATEX_SPECIALS), (name, escaped, rest)
    # the escapes decode back to the name
    decode = {r"\textbackslash{}": "\\", r"\textasciitilde{}": "~", r"\textasciicircum{}": "^"}
    back = _LATEX_ESCAPES.sub(lambda m: decode.get(m.group(0), m.group(0)[1:]), escaped)
    assert back == name


@pytest.mark.slow
def test_latex_escape_compiles(tmp_path):
    executable("pdflatex")
    body = "\n\n".join(f"\\section{{{latex_escape(n)}}}\n\\texttt{{{latex_escape(n)}}} "
                       f"\\begin{{tabular}}{{l}}{latex_escape(n)}\\end{{tabular}}"
                       for n in NASTY_NAMES)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n"
                                      f"\\begin{{document}}\n{body}\n\\end{{document}}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


# Markdown: characters that start emphasis, code, links, headings, lists, tables, HTML,
# math ($), strikethrough (~) or superscript (^, Pandoc and many renderers); plus the
# ones the brief lists for LaTeX, which a Markdown -> LaTeX pipeline passes through.
_MD_SPECIALS = set("\\`*_{}[]()#+-!|<>$%&~^")
_MD_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")   # backslash + ASCII punctuation (CommonMark)


@pytest.mark.parametrize("name", NASTY_NAMES + ["*bold*", "`code`", "[link](x)", "<b>",
                                                 "a|b", "# head", "- item", "+ item", "!img",
                                                 "~~strike~~", "2^10^"])
def test_markdown_escape_leaves_no_special_character(name):
    escaped = markdown_escape(name)
    rest = _MD_ESCAPE.sub("", escaped)
    assert not (set(rest) & _MD_SPECIALS), (name, escaped, sorted(set(rest) & _MD_SPECIALS))
    assert _MD_ESCAPE.sub(lambda m: m.group(0)[1], escaped) == name
