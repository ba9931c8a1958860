"""Layers import downward only, and no module imports itself back (read with ``ast``).

The table below is the architecture: a module may import modules of its own layer or of
a layer above it in this list (lower layers), never one below it. Imports inside
``if TYPE_CHECKING:`` are annotations, not dependencies, and are skipped. An import
inside a function must say why on its line or the line before, or the module says why
for all of them in a comment that starts ``# imports inside functions:`` (an optional
heavy dependency, the pytest plugin's start-up cost).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2] / "symroof"

#: Layers, lowest first. A module belongs to the first entry that is it or its package.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("symroof.errors", "symroof.version", "symroof.rich",
     "symroof.units"),      # the one prefix table, read by evaluate and present
    ("symroof.symbols", "symroof.precision", "symroof.options", "symroof.parse",
     "symroof.files", "symroof.budget", "symroof.hardware"),
    ("symroof.ir",),
    ("symroof.rules", "symroof.cost"),
    ("symroof.analysis",),
    ("symroof.passes",),
    ("symroof.workloads.shape",     # a model's data, which every workload builder reads,
     "symroof.workloads.mixers"),   # and its token mixers' (Mamba-2, DeltaNet, ...) widths
    ("symroof.workloads",),
    ("symroof.models",),
    ("symroof.display", "symroof.evaluate", "symroof.device", "symroof.compiled.lambdified",
     "symroof.notation",
     "symroof.memory"),     # parts -> fit -> capacity: the roofline reads the fit
    ("symroof.solve", "symroof.regimes", "symroof.footprint", "symroof.levels", "symroof.bounds", "symroof.training",
     "symroof.serving"),
    ("symroof.compiled", "symroof.lambdified",
     "symroof.numeric"),     # the package, and the old paths of two of its modules
    ("symroof.request",),   # what every front door parses into: above all it builds and runs
    ("symroof.measure", "symroof.atlas", "symroof.verify",
     "symroof.plan"),       # the serving planner: requests' model reader, serving, compiled
    ("symroof.present",),
    ("symroof.cli",),
    ("symroof", "symroof.testing", "symroof.__main__"),   # the facade and the pytest plugin
)


def layer_of(module: str) -> int:
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    if found is None:
        raise AssertionError(f"module {module} is in no layer: add it to LAYERS")
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(node: ast.ImportFrom | ast.Import, here: str, is_package: bool) -> list[str]:
    """The symroof modules an import statement depends on."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "symroof"]
    base = node.module or ""
    if node.level:
        pkg = here.split(".") if is_package else here.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join([*pkg, *([base] if base else [])])
    if base.split(".")[0] != "symroof":
        return []
    out = []
    for alias in node.names:  # `from symroof import hardware` depends on symroof.hardware
        candidate = f"{base}.{alias.name}"
        rel = Path(*candidate.split("."))
        if (ROOT.parent / rel).is_dir() or (ROOT.parent / rel).with_suffix(".py").exists():
            out.append(candidate)
        else:
            out.append(base)
    return out


def _marked(tree: ast.AST) -> tuple[set[int], set[int]]:
    """The ids of the nodes under an ``if TYPE_CHECKING:`` body, and of those inside a
    function, in one pass (each node is visited once however deep functions nest)."""
    skip: set[int] = set()
    in_function: set[int] = set()

    def visit(node: ast.AST, skipped: bool, inner: bool) -> None:
        if skipped:
            skip.add(id(node))
        if inner:
            in_function.add(id(node))
        below_inner = inner or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        checking = isinstance(node, ast.If) and _is_type_checking(node)
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST):
                    visit(child, skipped or (checking and field == "body"), below_inner)

    visit(tree, False, False)
    return skip, in_function


@functools.cache
def _imports() -> tuple[tuple[str, str, int, bool, bool], ...]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        here = module_name(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        declared = any(line.startswith("# imports inside functions:") for line in lines)
        tree = ast.parse("\n".join(lines))
        skip, in_function = _marked(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skip:
                continue
            nearby = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
            inner = id(node) in in_function
            justified = declared or "#" in nearby
            targets = _resolve(node, here, path.name == "__init__.py")
            for target in targets or ([""] if inner else []):
                found.append((here, target, node.lineno, inner, justified))
    return tuple(found)


def imports() -> list[tuple[str, str, int, bool, bool]]:
    """(module, imported module, line, inside a function, justified by a comment); the
    tree is read once per test process (the tests below share it)."""
    return list(_imports())


def edges() -> list[tuple[str, str, int]]:
    return [(m, t, line) for m, t, line, _, _ in imports() if t and t != m]


def test_every_module_has_a_layer():
    for path in ROOT.rglob("*.py"):
        layer_of(module_name(path))


def test_no_upward_import():
    upward = [f"{m}:{line} imports {t} (layer {layer_of(t)} above {layer_of(m)})"
              for m, t, line in edges() if layer_of(t) > layer_of(m)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    g = nx.DiGraph((m, t) for m, t, _ in edges()
                   if not (t == "symroof" or m.startswith(t + ".")))  # a package's own modules
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles[:5]


def test_imports_inside_functions_say_why():
    silent = [f"{m}:{line} imports {t or 'a third-party module'} inside a function"
              for m, t, line, inner, why in imports() if inner and not why]
    assert not silent, "\n".join(silent)


@pytest.mark.parametrize("module, target, expected", [
    ("symroof.ir.graph", "symroof.cost", True),         # ir must not know cost rules
    ("symroof.models.config", "symroof.solve", True),
    ("symroof.cli.derive", "symroof.present.numbers", False),
    ("symroof.present.records", "symroof.evaluate", False),
    ("symroof.request", "symroof.cli.common", True),      # the request knows no command line
    ("symroof.request", "symroof.present.commands", True),
    ("symroof.workloads.registry", "symroof.models", True),
    ("symroof.request", "symroof.workloads.registry", False),
    ("symroof.cli.derive", "symroof.request", False),
    ("symroof.workloads.mixers", "symroof.workloads.recurrent", True),  # data, not builders
    ("symroof.workloads.mixers", "symroof.models.hybrid", True),
    ("symroof.workloads.recurrent", "symroof.workloads.mixers", False),
    ("symroof.models.hybrid", "symroof.workloads.mixers", False),
])
def test_the_table_would_catch_an_upward_edge(module, target, expected):
    assert (layer_of(target) > layer_of(module)) is expected


def test_a_models_data_sits_below_the_workloads():
    """The model's data (its fields, the mixers' widths) is one layer, below every
    workload builder; the model's counts are above them."""
    data = layer_of("symroof.workloads.shape")
    assert layer_of("symroof.workloads.mixers") == data
    assert all(layer_of(f"symroof.workloads.{m}") == data + 1
               for m in ("recurrent", "zamba", "layers", "builder"))
    assert layer_of("symroof.models.hybrid") > data + 1
    assert {t for m, t, _ in edges() if m == "symroof.workloads.mixers"} <= {
        "symroof.errors", "symroof.ir", "symroof.options"}
