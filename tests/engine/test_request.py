"""The typed front door (issue 24): number formats resolved once (Numerics), the one
workload registry, and one Request that the command line and Python both make, whose
values are checked once by one rule."""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
import sys
import typing
from enum import StrEnum
from pathlib import Path

import pytest
import sympy as sp

from symroof.cli import build_parser, main
from symroof.cli.common import request_of
from symroof.errors import SymroofError
from symroof.precision import BYTES, PRECISIONS, Numerics, Precision, bytes_per_value
from symroof.request import Layout, Request, analysis, make, points
from symroof.symbols import B, M, S, b
from symroof.workloads import registry

ROOT = Path(__file__).resolve().parents[2]
evaluate_module = importlib.import_module("symroof.evaluate")  # sr.evaluate is the function

P = Precision


# -- Precision and Numerics ------------------------------------------------------------


def test_precision_is_an_enum_with_its_bytes_and_the_old_names_still_work():
    assert [p.value for p in P] == list(PRECISIONS)
    assert {p.value: p.bytes for p in P} == dict(BYTES)
    assert P.INT4.bytes == sp.Rational(1, 2) and P.TF32.bytes == 4
    assert P.BF16 == "bf16" and f"{P.FP8}" == "fp8" and str(P.FP16) == "fp16"
    assert bytes_per_value("int8") == 1 and bytes_per_value(P.FP4) == sp.Rational(1, 2)
    with pytest.raises(SymroofError, match=r"^--precision fp7: unknown precision 'fp7'.*'fp8'"):
        P.parse("fp7", "--precision")


#: (given, expected weights, kv_cache, activations, peak, b, per_kind)
RESOLUTION = [
    ({}, "bf16", "bf16", "bf16", "bf16", "bf16", False),
    ({"precision": "fp8"}, "fp8", "fp8", "fp8", "fp8", "fp8", False),
    ({"weights": "int4"}, "int4", "bf16", "bf16", "bf16", "bf16", True),   # INT4 weight-only
    ({"weights": "int4", "precision": "fp8"}, "int4", "fp8", "fp8", "fp8", "fp8", True),
    ({"weights": "int4", "activations": "bf16", "precision": "fp8"},
     "int4", "fp8", "bf16", "bf16", "fp8", True),
    ({"kv_cache": "fp8"}, "bf16", "fp8", "bf16", "bf16", "bf16", True),
    ({"activations": "fp8"}, "bf16", "bf16", "fp8", "fp8", "bf16", True),
    ({"precision": "fp16", "activations": "bf16"}, "fp16", "fp16", "bf16", "bf16", "fp16", True),
]


@pytest.mark.parametrize("given, weights, kv, act, peak, b_, per_kind", RESOLUTION)
def test_numerics_are_resolved_by_one_rule(given, weights, kv, act, peak, b_, per_kind):
    n = Numerics.resolve(**given)
    assert (n.weights, n.kv_cache, n.activations, n.peak, n.values, n.per_kind) == (
        weights, kv, act, peak, b_, per_kind)
    assert all(isinstance(x, Precision) for x in (n.weights, n.kv_cache, n.activations, n.peak))
    assert n.b == Precision(b_).bytes


@pytest.mark.parametrize("given, weights, kv, act, peak, b_, per_kind", RESOLUTION)
def test_the_command_line_resolves_numerics_the_same_way(given, weights, kv, act, peak, b_,
                                                        per_kind):
    argv = ["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
    for key, value in given.items():
        argv += [f"--{key.replace('_', '-')}", value]
    args = build_parser("eval").parse_args(argv)
    r = request_of(args, chip=True)
    assert r.numerics == Numerics.resolve(**given)
    m = analysis(r).graph  # the model takes the kinds only where they were given
    assert (b in analysis(r).bytes.free_symbols) is (not per_kind)
    assert m.name == "llama-3-8b-decode"


def test_int4_weights_compute_at_the_16_bit_peak(capsys):
    r = make("decode", model="llama-3-8b", weights="int4", chip="h100-sxm",
             sets={"B": 1, "S": 1024})
    (p,) = points(r)
    assert p.roofline is not None and p.roofline.precision is P.BF16
    assert main(["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                 "--weights", "int4", "--set", "B=1", "--set", "S=1024"]) == 0
    assert "on h100-sxm (bf16, hbm)" in capsys.readouterr().out


def test_a_peak_the_chip_lacks_names_the_option_that_set_it():
    with pytest.raises(SymroofError, match=r"^--activations fp8: a100-80gb has no peak"):
        make("decode", model="llama-3-8b", activations="fp8", chip="a100-80gb",
             names={"activations": "--activations"})
    with pytest.raises(SymroofError, match=r"^precision int4: h100-sxm has no peak.*--weights int4"):
        make("gemm", precision="int4", chip="h100-sxm")


# -- the registry ----------------------------------------------------------------------


def _expected_options(entry: registry.Entry) -> dict[str, object]:
    """The options read from the builder's signature here, independently of the registry:
    keyword-only parameters annotated with an option enum or bool, and the entry's
    numbers; the layout parameters excepted."""
    fn = inspect.unwrap(entry.builder)
    hints = typing.get_type_hints(fn)
    out: dict[str, object] = {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY or name in registry.LAYOUT:
            continue
        hint = hints[name]
        enums = [a for a in (hint, *typing.get_args(hint))
                 if isinstance(a, type) and issubclass(a, StrEnum)]
        if name in entry.numbers:
            out[name] = int
        elif enums:
            out[name] = enums[0]
        elif hint is bool:
            out[name] = bool
    return out


@pytest.mark.parametrize("name", registry.names())
def test_the_registry_options_match_each_builders_signature(name):
    entry = registry.get(name)
    expected = _expected_options(entry)
    assert {k: o.kind for k, o in entry.options.items()} == expected
    params = inspect.signature(inspect.unwrap(entry.builder)).parameters
    for key, opt in entry.options.items():
        assert opt.default == params[key].default
        if issubclass(opt.kind, StrEnum):
            assert opt.choices == tuple(m.value for m in opt.kind)
    assert entry.layout == tuple(k for k in registry.LAYOUT if k in params)


def test_every_option_is_a_flag_of_derive_with_the_registrys_choices():
    parser = build_parser("derive")
    derive = next(a for a in parser._subparsers._actions  # noqa: SLF001 - argparse's own table
                  if isinstance(a, argparse._SubParsersAction)).choices["derive"]
    by_dest = {a.dest: a for a in derive._actions}
    for name, opt in registry.all_options().items():
        if name == "fused":  # --unfused MODE implies it
            continue
        assert opt.flag in by_dest[name].option_strings, name
        if opt.choices is not None:
            assert tuple(by_dest[name].choices) == opt.choices
    assert "--flops" in by_dest["flop_count"].option_strings  # the old name still works


def test_registry_build_serves_claim_recipes_with_errors_naming_the_option():
    a = registry.build("attention", S, 8, 2, options={"unfused": "materialize_once"},
                       where="claim 'x'.workload")
    assert a.graph.name == "attention-unfused-materialize_once"   # unfused implies fused=False
    assert registry.build("gemm", 2, 3, 4, options={"flops": "exact"}).flops == 2 * 3 * (2 * 4 - 1)
    with pytest.raises(SymroofError, match=r"^claim 'x'.workload.options.traffic: expected one "
                                           r"of weights_and_kv, all, got 'some'"):
        registry.build("decode", None, B, S, options={"traffic": "some"},
                       where="claim 'x'.workload")
    with pytest.raises(SymroofError, match=r"^w.options: workload 'gemm' has no option 'causal'"):
        registry.build("gemm", 2, 3, 4, options={"causal": "none"}, where="w")
    with pytest.raises(SymroofError, match=r"^w.options.fused: expected true or false"):
        registry.build("attention", S, 8, 2, options={"fused": "no"}, where="w")
    with pytest.raises(SymroofError, match=r"unknown workload 'gem'.*did you mean"):
        registry.get("gem")


# -- one request from every front door ---------------------------------------------------


def _from_cli(*argv: str) -> Request:
    args = build_parser(argv[0]).parse_args(list(argv))
    return request_of(args, sets=args.set or [], chip=argv[0] == "eval")


@pytest.mark.parametrize("argv, python", [
    (["derive", "gemm", "--set", "M=8192", "--set", "N=8192,128", "--set", "K=8192",
      "--flops", "one_per_mac"],
     dict(workload="gemm", options={"flop_count": "one_per_mac"},
          sets={"M": 8192, "N": (8192, 128), "K": 8192})),
    (["eval", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--tp", "8",
      "--set", "B=1,128", "--set", "S=4096", "--precision", "fp16"],
     dict(workload="decode", model="llama-3-70b", tp=8, chip="h100-sxm", precision="fp16",
          sets={B: (1, 128), S: 4096})),
    (["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--weights", "int4",
      "--set", "B=1,64", "--set", "S=1024"],
     dict(workload="decode", model="llama-3-8b", weights="int4", chip="h100-sxm",
          sets={"B": "1,64", "S": "1024"})),
    (["derive", "attention", "--unfused", "materialize_once", "--set", "S=4096"],
     dict(workload="attention", options={"unfused": "materialize_once"}, sets={"S": 4096})),
])
def test_a_request_from_the_command_line_equals_one_made_in_python(argv, python):
    workload = python.pop("workload")
    cli, py = _from_cli(*argv), make(workload, **python)
    assert cli == py
    a, c = analysis(cli), analysis(py)
    assert (a.flops, a.bytes, a.intensity) == (c.flops, c.bytes, c.intensity)
    for compiled in (False, True):
        left, right = list(points(cli, compiled=compiled)), list(points(py, compiled=compiled))
        assert [(p.values, p.flops, p.bytes, p.intensity) for p in left] == \
            [(p.values, p.flops, p.bytes, p.intensity) for p in right]
        assert [p.roofline for p in left] == [p.roofline for p in right]


def test_a_request_is_frozen_and_names_what_it_ran(capsys):
    r = make("decode", model="seed-6.4b", sets={"B": (1, 64), "S": 1024})
    with pytest.raises(AttributeError):
        r.workload = "gemm"  # type: ignore[misc]
    assert r.layout == Layout() and r.numerics == Numerics()
    assert main(["derive", "decode", "--model", "seed-6.4b", "--set", "B=1,64", "--set",
                 "S=1024", "--json"]) == 0
    import json
    doc = json.loads(capsys.readouterr().out)
    assert doc["request"]["workload"] == "decode" and doc["request"]["model"] == "seed-6.4b"
    assert doc["request"]["sets"] == {"B": [1, 64], "S": [1024]}
    assert doc["request"]["numerics"]["b"] == "bf16"


def test_a_workload_refuses_what_it_does_not_take_at_every_door():
    with pytest.raises(SymroofError, match=r"^tp: workload 'gemm' does not use it"):
        make("gemm", tp=2)
    with pytest.raises(SymroofError, match=r"^model: workload 'gemm' does not use it"):
        make("gemm", model="llama-3-8b")
    with pytest.raises(SymroofError, match=r"^--tp: workload 'gemm' does not use it"):
        _from_cli("derive", "gemm", "--tp", "1")


# -- one value check -----------------------------------------------------------------------


def _counted(monkeypatch):
    calls: list[str] = []
    original = evaluate_module.check_value

    def counting(sym, value, where, **kw):
        calls.append(where)
        return original(sym, value, where, **kw)
    monkeypatch.setattr(evaluate_module, "check_value", counting)
    return calls


BAD = "--set M: expected a positive integer (a dimension), got 0"


@pytest.mark.parametrize("argv", [
    ["derive", "gemm", "--set", "M=0"],
    ["eval", "gemm", "--hardware", "h100-sxm", "--set", "M=0"],
    ["solve", "limit", "gemm", "--var", "N", "--set", "M=0"],
    ["atlas", "gemm", "--set", "M=0"],
    ["plot", "roofline", "gemm", "--hardware", "h100-sxm", "--set", "M=0", "--out", "x.svg"],
])
def test_a_bad_set_value_is_refused_once_with_one_message(argv, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    calls = _counted(monkeypatch)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"symroof: error: {BAD}"
    assert calls == ["--set M"]   # one check, by the one rule
    with pytest.raises(SymroofError, match=r"^sets M: expected a positive integer"):
        make("gemm", sets={M: 0})


def test_each_value_is_checked_once_however_many_rows(monkeypatch, capsys):
    calls = _counted(monkeypatch)
    assert main(["eval", "decode", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                 "--set", "B=1,32,64", "--set", "S=1024,2048"]) == 0
    assert sorted(calls) == ["--set B"] * 3 + ["--set S"] * 2   # 5 values, 6 rows
    capsys.readouterr()


def test_the_request_layer_imports_no_graph_library_numpy_or_jinja():
    code = ("import sys, symroof.request, symroof.workloads.registry as r; r.names(); "
            "print(sorted(m for m in ('networkx', 'numpy', 'jinja2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip()
    assert out == "[]"


def test_the_serving_extras_are_part_of_the_request():
    from symroof.request import Draft, served
    from symroof.serving import ServingRow

    r = make("decode", model="llama-3-70b", tp=8, chip="h100-sxm", sets={"B": 1, "S": 2048},
             prompt=2048, draft=Draft("llama-3-8b", sp.Integer(4), sp.Rational(4, 5), sp.Integer(8)))
    (row,) = served(r, points(r))
    assert isinstance(row, ServingRow) and row.ttft is not None and row.speculation is not None
    assert row.ttft.tokens_per_sequence == 2048
    cli = _from_cli("eval", "decode", "--model", "llama-3-70b", "--tp", "8", "--hardware",
                    "h100-sxm", "--set", "B=1", "--set", "S=2048")
    assert list(served(cli, points(cli))) == list(points(cli))   # nothing asked: the points
    with pytest.raises(SymroofError, match=r"^prompt: only for decode \(workload 'prefill'\)"):
        make("prefill", model="llama-3-8b", prompt=8)
    with pytest.raises(SymroofError, match=r"^prompt: expected a positive integer"):
        make("decode", model="llama-3-8b", chip="h100-sxm", prompt=0)


def test_fixed_symbols_build_the_workload_at_numbers():
    """``fixed`` passes a number to the builder in the symbol's place: the formulas are the
    symbolic ones at that number (cancel), and the seed's hand counts (fused attention
    2S²D FLOPs over 4SDb bytes; unfused, materialized once, hS²b more)."""
    from symroof.symbols import D, H

    fused = analysis(make("attention", fixed={"D": 4096, "H": 32}))
    once = analysis(make("attention", fixed={D: 4096, H: 32},
                         options={"unfused": "materialize_once"}))
    symbolic = analysis(make("attention", options={"unfused": "materialize_once"}))
    at = {D: 4096, H: 32}
    assert sp.cancel(once.flops - symbolic.flops.subs(at)) == 0
    assert sp.cancel(once.bytes - symbolic.bytes.subs(at)) == 0
    assert sp.cancel(fused.flops - 2 * S**2 * 4096) == 0
    assert sp.cancel(fused.bytes - 4 * S * 4096 * b) == 0
    assert sp.cancel(once.bytes - (4 * S * 4096 * b + 32 * S**2 * b)) == 0
    assert not fused.flops.free_symbols & {D, H}
    conv = analysis(make("conv2d", fixed={"S_f": 3, "R": 3}))
    assert {x.name for x in conv.flops.free_symbols} == {"N", "C", "H", "W", "K"}


@pytest.mark.parametrize("given, message", [
    ({"fixed": {"D": 0}}, "fixed D: expected a positive integer (a dimension), got 0"),
    ({"fixed": {"B": 2}}, "fixed B: attention is not built over B (its symbols: S, D, H)"),
    ({"fixed": {"D": 64}, "sets": {"D": 64}}, "sets D: attention does not use D"),
])
def test_a_fixed_symbol_is_checked_by_the_one_rule(given, message):
    with pytest.raises(SymroofError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make("attention", **given)
