"""The last silent answers and tracebacks (issue 25): each is a SymroofError that names
the argument. The public-API walk (test_public_api.py) covers the same classes by type;
these are the cases that need a file or a value worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

import symroof as sr
from symroof import hardware, models
from symroof.errors import SymroofError, shown
from symroof.measure.model import load_config
from symroof.symbols import H, dim

HUGE = "9" * 5000    # past Python's 4300-digit limit on int(str)


def _config_file(tmp_path, field="hidden_size", value=HUGE):
    text = json.dumps({"model_type": "llama", "num_attention_heads": 4, "hidden_size": 64,
                       "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 10})
    path = tmp_path / "config.json"
    path.write_text(text.replace(f'"{field}": 64', f'"{field}": {value}'))
    return path


@pytest.mark.parametrize("reader", [models.from_hf_config, models.resolve, load_config])
def test_config_json_with_an_integer_of_thousands_of_digits(tmp_path, reader):
    path = _config_file(tmp_path)
    with pytest.raises(SymroofError, match="field 'hidden_size' is out of range \\(an "
                                           "integer of 5000 digits\\)"):
        reader(str(path))


def test_the_same_file_with_a_plain_integer_reads(tmp_path):
    path = _config_file(tmp_path, value="64")
    assert models.from_hf_config(path).d_model == 64 == load_config(path)["hidden_size"]


@pytest.mark.parametrize("reader,what", [(models.from_hf_config, "config.json"),
                                         (load_config, "config"),
                                         (hardware.load, "hardware file")])
@pytest.mark.parametrize("bad", [None, b"config.json", bytearray(b"x"), 3, ["a.json"]])
def test_config_readers_refuse_what_is_not_a_path(reader, what, bad):
    with pytest.raises(SymroofError, match=f"{what}: expected a (mapping or a )?file path"):
        reader(bad)


def test_a_message_never_fails_on_a_huge_value():
    """An error about a value holding a huge integer describes it (its repr would raise)."""
    with pytest.raises(SymroofError, match="too large to show"):
        models.get({"n": 10**5000})          # type: ignore[arg-type]
    with pytest.raises(SymroofError, match="too large to show"):
        hardware.resolve({"n": 10**5000})
    assert shown(10**5000) == "a int (too large to show)"


def test_conv_kernel_larger_than_its_input_through_subs():
    """Substituted values that leave the output empty: refused with the factor that is
    not positive, where the counts were -400 FLOPs before."""
    R, W = dim("R"), dim("W")
    conv = sr.workloads.conv2d(1, 1, H, W, 1, R)
    with pytest.raises(SymroofError, match="H - R \\+ 1 is -2 in tensor 'Y'"):
        conv.subs({H: 2, W: 8, R: 5})
    with pytest.raises(SymroofError, match="-R \\+ W \\+ 1 is 0"):
        conv.subs({H: 8, W: 4, R: 5})
    # valid values: 4 x 4 outputs of a 5 x 5 kernel, 2 FLOPs per MAC
    assert conv.subs({H: 8, W: 8, R: 5})["flops"] == 2 * 16 * 25


@pytest.mark.parametrize("kernel", [(3, 3, 3), (3,), (), [5, 5, 5]])
def test_conv_kernel_tuples_of_the_wrong_length(kernel):
    with pytest.raises(SymroofError, match="conv2d kernel: expected one size or a "
                                           f"\\(height, width\\) pair, got {len(kernel)}"):
        sr.workloads.conv2d(1, 3, 8, 8, 4, kernel)
    assert sr.workloads.conv2d(1, 3, 8, 8, 4, [3, 5]).flops == \
        sr.workloads.conv2d(1, 3, 8, 8, 4, (3, 5)).flops


@pytest.mark.parametrize("values", [np.array(["1", "2"]), [None, 2], b"12", {"a": 1},
                                    np.array([1 + 1j]), [[1, 2], [3]], "12",
                                    np.array([True, False])])
def test_sweep_grid_values_that_are_not_real_numbers(values):
    n = dim("n")
    with pytest.raises(SymroofError, match="sweep grid n: expected an array of real numbers"):
        sr.sweep(2 * n, {n: values})
    assert sr.sweep(2 * n, {n: [1, 2.5]}).tolist() == [2.0, 5.0]


def test_sweep_grid_of_exact_numbers_still_sweeps():
    from fractions import Fraction

    import sympy as sp

    n = dim("n")
    grid = [Fraction(1, 2), sp.Integer(3), sp.Rational(5, 4)]
    assert sr.sweep(2 * n, {n: grid}).tolist() == [1.0, 6.0, 2.5]
