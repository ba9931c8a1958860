"""Start-up: the command line against ``import sympy``, and a one-row eval against it.

    python benchmarks/bench_startup.py [--repeat 10]

Each repetition starts every command once, in turn, as a new process, and times it from
the outside (wall clock, interpreter start included):

- ``python -c "import sympy"``: the floor (symroof works in SymPy);
- ``symroof --version`` (the installed entry point, or the same two lines it runs);
- ``python -c "import symroof"``;
- ``symroof eval decode --model llama-2-7b --hardware h100-sxm --set B=1 --set S=1024``.

Targets: ``--version`` within 1.2x of ``import sympy``; a one-row eval within 2x of
``--version``. The script also lists which heavy modules each command imports.

Each command also gets its CPU time (user + system, of the child process): the ratios of
those hold on a machine busy with other work, where wall times swing by 2x.

Bytecode: an installed symroof has its modules compiled (pip writes the ``.pyc`` files),
so by default the children run with a bytecode cache of their own (a temporary
``PYTHONPYCACHEPREFIX``, filled by the warm-up run), whatever ``PYTHONDONTWRITEBYTECODE``
says here. ``--no-bytecode`` measures a checkout run without one, where every start
compiles each symroof module it imports from source (that costs eval, which imports
about 70 of them, far more than ``--version``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, describe, header, line  # noqa: E402

ENTRY = "import sys; from symroof.cli import main; sys.exit(main({}))"


def entry(args: list[str]) -> list[str]:
    """The ``symroof`` console script of this interpreter, or what it runs."""
    script = Path(sys.executable).parent / "symroof"
    if script.exists() and script.read_text(errors="replace").startswith("#!"):
        return [sys.executable, str(script), *args]
    return [sys.executable, "-c", ENTRY.format(args)]


EVAL = ["eval", "decode", "--model", "llama-2-7b", "--hardware", "h100-sxm", "--set", "B=1",
        "--set", "S=1024"]
COMMANDS = {
    "import sympy": [sys.executable, "-c", "import sympy"],
    "symroof --version": entry(["--version"]),
    "import symroof": [sys.executable, "-c", "import symroof"],
    "symroof eval (one row)": entry(EVAL),
}


ENV = dict(os.environ)  # the children's environment (main() sets the bytecode mode)


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``cmd`` as a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env=ENV)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def wall(cmd: list[str]) -> float:
    return timed(cmd)[0]


def imported(code: str) -> str:
    probe = (code + "; import sys; print(' '.join(m for m in ('sympy', 'mpmath', 'networkx', "
             "'numpy', 'jinja2') if m in sys.modules) or 'none')")
    return subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, env=ENV).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="no bytecode cache: every start compiles symroof's modules")
    args = ap.parse_args()
    cache = None
    if args.no_bytecode:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        ENV.pop("PYTHONPYCACHEPREFIX", None)
        mode = "no bytecode cache (each start compiles symroof's modules from source)"
    else:
        cache = tempfile.TemporaryDirectory(prefix="symroof-pyc-")
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = cache.name
        mode = "bytecode cached, as an installed package runs (filled by the warm-up)"
    print(describe())
    print(f"bytecode: {mode}")
    print(f"symroof entry point: {' '.join(COMMANDS['symroof --version'][:2])}"
          f"{' (shutil.which: ' + str(shutil.which('symroof')) + ')'}")
    for name, code in (("import symroof", "import symroof"),
                       ("symroof --version", "import symroof.cli"),
                       ("eval's modules", "import symroof.cli.derive")):
        print(f"  {name:<20} imports: {imported(code)}")
    for cmd in COMMANDS.values():  # warm the file cache (and fill the bytecode cache) once
        wall(cmd)
    times: dict[str, dict[str, list[float]]] = {"wall": {k: [] for k in COMMANDS},
                                                 "CPU": {k: [] for k in COMMANDS}}
    ratios: dict[str, dict[str, list[float]]] = {"wall": {}, "CPU": {}}
    pairs = (("symroof --version", "import sympy"), ("import symroof", "import sympy"),
             ("symroof eval (one row)", "symroof --version"),
             ("symroof eval (one row)", "import sympy"))
    for _ in range(args.repeat):
        runs = {k: timed(c) for k, c in COMMANDS.items()}
        for i, kind in enumerate(("wall", "CPU")):
            now = {k: v[i] for k, v in runs.items()}
            for k, v in now.items():
                times[kind][k].append(v)
            for a, b in pairs:
                ratios[kind].setdefault(f"{a} / {b}", []).append(now[a] / now[b])
    for kind in ("wall", "CPU"):
        print(header(f"start-up ({kind} time of a new process; ratio of the two)"))
        for label, values in ratios[kind].items():
            target = ("<= 1.2x" if label.startswith("symroof --version") else
                      "<= 2x" if label.endswith("--version") else "")
            print(line(label, values, target=target))
        print(f"\nmedian {kind} times (s): " + ", ".join(
            f"{k} {sorted(v)[len(v) // 2]:.3f}" for k, v in times[kind].items()))
    if cache is not None:
        cache.cleanup()


if __name__ == "__main__":
    main()
