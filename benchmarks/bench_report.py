"""The main job, ``symroof report appendix``, end to end and where its time goes.

    python benchmarks/bench_report.py [--repeat 5]

Each repetition runs ``python -c "import sympy"`` as a new process (the yardstick: the
ratio of the command to it is what this machine's load cannot fake), then the command
once as a new process (wall clock, into a temporary folder), and twice more in a child
interpreter that times its stages the way ``symroof.cli.report.write_report`` runs them:
imports, the claims' derivations and checks (``run_claims``), the charts
(``render_charts``), typesetting every claim's block for both flavours (``prepare``),
rendering (Markdown, LaTeX, JSON) and writing; once with the workers the command chooses
(one per core, see ``symroof.verify.workers``) and once in one process, so the ratio of
the two is the gain from the cores. Shares are each stage's part of the child's total;
the last line says how often SymPy's ``simplify`` ran in the one-process run (a worker's
calls are counted in its own copy; the main path must not call it, and the test is
tests/project/test_no_simplify.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, describe, header, line, run_python  # noqa: E402

CHILD = r"""
import json, sys, time
from pathlib import Path
out = Path(sys.argv[1]); stages = {}
t = time.perf_counter()
import importlib, sympy
where = importlib.import_module("sympy.simplify.simplify")
calls = [0]
def counted(*args, _real=where.simplify, **kwargs):
    calls[0] += 1
    return _real(*args, **kwargs)
sympy.simplify = where.simplify = counted  # sp.simplify(...) and Expr.simplify() both land here
from symroof.cli.report import write_report  # noqa: F401 - what the command imports
from symroof.files import write_text
from symroof.present.appendix import claims_json, prepare, render_latex, render_markdown
from symroof.present.claim_charts import render_charts
from symroof.verify import run_claims
from symroof.verify.appendix import seed_claims
workers = None if sys.argv[2] == "auto" else int(sys.argv[2])
stages["imports"] = time.perf_counter() - t
t = time.perf_counter(); outcome = run_claims(seed_claims(), workers=workers); stages["derivations"] = time.perf_counter() - t
t = time.perf_counter(); charts = render_charts(outcome); stages["charts"] = time.perf_counter() - t
t = time.perf_counter(); prepared = prepare(outcome, workers=workers); stages["typesetting the blocks"] = time.perf_counter() - t
t = time.perf_counter()
command = "symroof report appendix"
texts = {out / "seed_appendix.md": render_markdown(outcome, charts, command, prepared),
         out / "seed_appendix.tex": render_latex(outcome, charts, command, prepared),
         out / "seed_claims.json": json.dumps(claims_json(outcome), indent=1, ensure_ascii=False,
                                              allow_nan=False) + "\n"}
texts.update({out / "charts" / f"{c.id}.svg": c.svg for c in charts})
stages["rendering"] = time.perf_counter() - t
t = time.perf_counter()
for path, text in texts.items():
    write_text(path, text)
stages["writing"] = time.perf_counter() - t
print(json.dumps({"stages": stages, "simplify": calls[0], "claims": len(outcome.results)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="no bytecode cache: every start compiles symroof's modules")
    args = ap.parse_args()
    # as bench_startup.py: by default the children run with a bytecode cache of their own
    # (an installed package has one), whatever PYTHONDONTWRITEBYTECODE says here
    cache = None
    if args.no_bytecode:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
    else:
        cache = tempfile.TemporaryDirectory(prefix="symroof-pyc-")
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = cache.name
        subprocess.run([sys.executable, "-c", "import symroof.cli.report, "
                        "symroof.present.claim_charts, symroof.verify.appendix"], cwd=ROOT,
                       check=True)   # fills the cache once
    print(describe())
    print("bytecode: " + ("none (each start compiles symroof's modules)" if cache is None else
                          "cached, as an installed package runs"))
    ends: list[float] = []
    shares: dict[str, list[float]] = {}
    seconds: dict[str, list[float]] = {}
    simplify = claims = 0
    script = Path(sys.executable).parent / "symroof"
    cmd = [sys.executable, str(script)] if script.exists() else \
        [sys.executable, "-c", "from symroof.cli import run; run()"]  # the script's entry
    ratios: list[float] = []
    totals: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        t0 = time.perf_counter()  # the yardstick, side by side: a new process importing sympy
        subprocess.run([sys.executable, "-c", "import sympy"], cwd=ROOT, check=True)
        sympy_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([*cmd, "report", "appendix", "--out", tmp], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            ends.append(time.perf_counter() - t0)
        ratios.append(ends[-1] / sympy_s)
        for workers in ("auto", "1"):   # the command's own choice, then one process
            with tempfile.TemporaryDirectory() as tmp:
                code = f"import sys; sys.argv = ['child', {tmp!r}, {workers!r}]\n" + CHILD
                found = json.loads(run_python(code))
            total = sum(found["stages"].values())
            for k, v in found["stages"].items():
                shares.setdefault(f"{k}, workers {workers}", []).append(100 * v / total)
                seconds.setdefault(f"{k}, workers {workers}", []).append(v)
            totals.setdefault(workers, []).append(total)
            simplify, claims = found["simplify"], found["claims"]   # the last: workers 1
    print(header(f"symroof report appendix ({claims} claims): stage / whole child run, in %"))
    for k, v in shares.items():
        print(line(f"{k} (median {sorted(seconds[k])[len(seconds[k]) // 2]:.2f} s)", v, "%"))
    lo, mid, hi = min(ends), sorted(ends)[len(ends) // 2], max(ends)
    print(header("the child's whole run: workers as the command chooses / one process"))
    print(line("workers auto / workers 1", [a / o for a, o in zip(totals["auto"], totals["1"])],
               "x"))
    print(header("symroof report appendix / python -c 'import sympy' (new processes, wall)"))
    print(line("appendix end to end / import sympy", ratios, "x",
               "< 5 s on 2 idle cores (issue 21): about 12x at 0.4 s per import"))
    print(f"\nend to end (new process, wall): min {lo:.2f} s, median {mid:.2f} s, max {hi:.2f} s")
    print(f"sympy simplify calls while generating: {simplify}")


if __name__ == "__main__":
    main()
