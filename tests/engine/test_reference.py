"""The claim-file reference documents every name the interpreter accepts, and only those:
a recipe node, a quantity ``q``, a rounding rule or a status without a line here fails."""

from __future__ import annotations

import re

import pytest
import sympy as sp

from symroof.cli import main
from symroof.errors import SymroofError
from symroof.verify import reference as ref
from symroof.verify import units
from symroof.verify.compare import RULES
from symroof.verify.grammar import NODE_KEYS, QUANTITY_DIMENSIONS, dimension_of
from symroof.verify.recipe import QUANTITY_NAMES, Context, evaluate
from symroof.verify.run import STATUSES

TEXT = ref.reference()
ROWS = {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", TEXT, re.M)}


def test_every_recipe_node_has_a_documented_line():
    assert set(ref.NODES) == set(NODE_KEYS)
    assert set(NODE_KEYS) <= ROWS
    for kind in NODE_KEYS:  # the row lists the keys the grammar allows for the node
        row = next(ln for ln in TEXT.splitlines() if ln.startswith(f"| `{kind}` | {kind}"))
        assert ", ".join(NODE_KEYS[kind]) in row


def test_every_quantity_has_a_documented_line_with_its_unit():
    assert set(ref.QUANTITIES) == set(QUANTITY_NAMES)
    for kind, names in QUANTITY_NAMES.items():
        assert set(ref.QUANTITIES[kind]) == set(names), kind
        section = TEXT.split(f"### `{kind}` node")[1].split("###")[0]
        for q in names:
            assert f"| `{q}` |" in section, (kind, q)


def test_the_reference_unit_of_each_quantity_measures_its_dimension():
    # the unit column is computed; here it is checked against the grammar's dimensions
    for kind, table in QUANTITY_DIMENSIONS.items():
        for q in QUANTITY_NAMES[kind]:
            node = {kind: "x", "q": q.replace("<op>", "C")}
            dim = dimension_of(node)
            assert dim is not None, (kind, q)
            unit = ref._unit(kind, q)
            assert units.dimension(unit) == dim, (kind, q, unit, dim)
    assert ref._unit("roofline", "ridge") == "FLOP/B"
    assert ref._unit("roofline", "time_s") == "s"
    assert ref._unit("model", "kv_bytes_per_token") == "B/token"


def test_rounding_rules_and_statuses_are_all_documented():
    assert list(ref.ROUNDING) == list(RULES)
    assert list(ref.STATUS) == list(STATUSES)
    for name in (*RULES, *STATUSES):
        assert f"| `{name}` |" in TEXT


def _value(node):
    return evaluate(node, Context({}), {}, "t")


# one node per kind that reads q, evaluated for every documented name: a documented
# name that the interpreter refuses fails here
_DECODE = {"builder": "decode", "model": "gpt2", "args": [4, 128]}
_NODES = {
    "workload": {"workload": _DECODE},
    "model": {"model": "gpt2"},
    "hardware": {"hardware": "h100-sxm"},
    "memory": {"memory": {"model": "gpt2", "batch": 2, "context": 128}},
    "roofline": {"roofline": {"workload": _DECODE, "hardware": "h100-sxm"}},
    "roofline_formula": {"roofline_formula": {"F": 2 * 10**9, "Q": 10**9, "peak": 10**12,
                                              "bandwidth": 10**11, "tokens": 4}},
    "curve": {"curve": {"lhs": {"expr": "2*n**2*K"}, "rhs": 100, "x": "n", "y": "K"}},
}


@pytest.mark.parametrize("kind", list(QUANTITY_NAMES))
def test_every_documented_quantity_is_one_the_interpreter_reads(kind):
    from symroof import workloads
    from symroof.models import get
    op = next(iter(workloads.decode(get("gpt2"), 4, 128).per_op))
    for q in QUANTITY_NAMES[kind]:
        value = _value({**_NODES[kind], "q": q.replace("<op>", op)})
        assert isinstance(value, sp.Expr), (kind, q)
    # and a name that is not documented is refused, naming the documented ones
    with pytest.raises(SymroofError, match=r"unknown|expected"):
        _value({**_NODES[kind], "q": "not_a_quantity"})


def test_workload_quantities_of_a_real_analysis_are_all_documented():
    from symroof import workloads
    from symroof.models import get
    from symroof.symbols import CANONICAL
    names = set(QUANTITY_NAMES["workload"])
    for a in (workloads.gemm(CANONICAL["n"], CANONICAL["n"], CANONICAL["n"]),
              workloads.decode(get("gpt2"), 4, 128),
              workloads.training(get("gpt2"), 2, 64)):
        assert set(a.quantities) <= names


def test_the_command_prints_the_same_text(capsys):
    assert main(["report", "--reference"]) == 0
    assert capsys.readouterr().out == TEXT


def test_reference_and_a_claim_file_are_refused_together(capsys):
    assert main(["report", "x.toml", "--reference"]) == 2
    assert "give no claim file" in capsys.readouterr().err
