"""Derivation cost: flat in depth, symbolic about as cheap as numeric, and a training
step against an earlier commit, measured in one run.

    python benchmarks/bench_derive.py [--repeat 7] [--against 809016c]

A derivation is a workload builder's graph plus its analysis: F, Q and I as SymPy
expressions (``w.flops, w.bytes, w.intensity``). Each is timed three ways, in a child
interpreter per tree (the working tree, and ``--against``'s tree extracted with
``git archive`` into a temporary folder: the checkout's HEAD is never moved):

- cold: SymPy's cache cleared before each derivation (``sympy.core.cache.clear_cache``),
  after one derivation of another model has loaded every module (the cost of a new
  question in a running process);
- warm: the same derivation again, SymPy's cache full (asking again);
- first: the first derivation in a new interpreter (the least of three interpreters),
  every module imported before (also
  ``sympy.tensor``, which SymPy imports inside its first ``Add``: about 16 ms, the same
  for both trees, and an import rather than work).

Ratios: 126 layers / 2 layers (target <= 1.2: a repeated block is one subgraph with a
count), symbolic L / L = 32 (target <= 1.5), and the earlier commit / this tree for a
training step (target >= 2).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, describe, header, line, run_python  # noqa: E402

CHILD = r"""
import json, sys, time
from sympy.core.cache import clear_cache
import symroof as sr
from symroof.symbols import B, S, L, D, H
MODE, REPEAT = sys.argv[1], int(sys.argv[2])
sr.models, sr.workloads  # imported before timing (a lazy package imports them on first use)
import sympy.tensor.tensor  # SymPy imports it inside its first Add: an import, not work

def derive(kind, layers, d=4096, h=32):
    m = sr.models.transformer(layers=layers, d_model=d, heads=h)
    w = getattr(sr.workloads, kind)(m, B, S)
    return w.flops, w.bytes, w.intensity

CASES = {"train-L": ("training", L, D, H), "train-32": ("training", 32),
         "train-2": ("training", 2), "train-126": ("training", 126),
         "decode-2": ("decode", 2), "decode-126": ("decode", 126),
         "decode-L": ("decode", L), "decode-32": ("decode", 32)}
out = {}
if MODE == "first":
    case = CASES[sys.argv[3]]
    t = time.perf_counter(); derive(*case); out[sys.argv[3]] = time.perf_counter() - t
else:
    derive("training", 3, 64, 4)   # every module loaded, SymPy's lazy imports done
    for name, case in CASES.items():
        times = []
        for _ in range(REPEAT):
            if MODE == "cold":
                clear_cache()
            t = time.perf_counter(); derive(*case); times.append(time.perf_counter() - t)
        out[name] = min(times)
print(json.dumps(out))
"""


def tree(commit: str, folder: Path) -> Path:
    """``commit``'s tree in ``folder`` (git archive: the checkout is not touched)."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def measure(where: Path, mode: str, repeat: int, case: str = "") -> dict[str, float]:
    code = f"import sys; sys.argv = ['child', {mode!r}, '{repeat}', {case!r}]\n" + CHILD
    return json.loads(run_python(code, cwd=where, env={"PYTHONPATH": str(where)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--against", default="809016c")
    args = ap.parse_args()
    print(describe())
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old = tree(args.against, Path(tmp))
        for _ in range(args.repeat):
            for mode in ("cold", "warm"):
                new_t = measure(ROOT, mode, 5)
                old_t = measure(old, mode, 5)
                rows.setdefault(f"{mode}: 126 layers / 2 layers, training", []).append(
                    new_t["train-126"] / new_t["train-2"])
                rows.setdefault(f"{mode}: 126 layers / 2 layers, decode", []).append(
                    new_t["decode-126"] / new_t["decode-2"])
                rows.setdefault(f"{mode}: symbolic L / L = 32, training", []).append(
                    new_t["train-L"] / new_t["train-32"])
                rows.setdefault(f"{mode}: symbolic L / L = 32, decode", []).append(
                    new_t["decode-L"] / new_t["decode-32"])
                for case in ("train-L", "train-32"):
                    rows.setdefault(f"{mode}: {args.against} / this tree, {case}", []).append(
                        old_t[case] / new_t[case])
            for case in ("train-L", "train-32"):  # the least of 3 new interpreters each
                new_first = min(measure(ROOT, "first", 1, case)[case] for _ in range(3))
                old_first = min(measure(old, "first", 1, case)[case] for _ in range(3))
                rows.setdefault(f"first: {args.against} / this tree, {case}", []).append(
                    old_first / new_first)
    print(header("derivation (F, Q and I of a workload; ratio of times)"))
    for label, values in rows.items():
        target = ("<= 1.2" if "126 layers" in label else "<= 1.5" if "symbolic" in label
                  else ">= 2" if "this tree" in label else "")
        print(line(label, values, target=target))


if __name__ == "__main__":
    main()
