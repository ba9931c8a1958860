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
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
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


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t0


def imported(code: str) -> str:
    probe = (code + "; import sys; print(' '.join(m for m in ('sympy', 'mpmath', 'networkx', "
             "'numpy', 'jinja2') if m in sys.modules) or 'none')")
    return subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    print(describe())
    print(f"symroof entry point: {' '.join(COMMANDS['symroof --version'][:2])}"
          f"{' (shutil.which: ' + str(shutil.which('symroof')) + ')'}")
    for name, code in (("import symroof", "import symroof"),
                       ("symroof --version", "import symroof.cli"),
                       ("eval's modules", "import symroof.cli.derive")):
        print(f"  {name:<20} imports: {imported(code)}")
    for cmd in COMMANDS.values():  # warm the file cache once
        wall(cmd)
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    ratios: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        now = {k: wall(c) for k, c in COMMANDS.items()}
        for k, v in now.items():
            times[k].append(v)
        ratios.setdefault("symroof --version / import sympy", []).append(
            now["symroof --version"] / now["import sympy"])
        ratios.setdefault("import symroof / import sympy", []).append(
            now["import symroof"] / now["import sympy"])
        ratios.setdefault("symroof eval (one row) / symroof --version", []).append(
            now["symroof eval (one row)"] / now["symroof --version"])
    print(header("start-up (wall time of a new process; ratio of the two)"))
    for label, values in ratios.items():
        target = ("<= 1.2x" if label.startswith("symroof --version") else
                  "<= 2x" if "eval" in label else "")
        print(line(label, values, target=target))
    print("\nmedian wall times (s): " + ", ".join(
        f"{k} {sorted(v)[len(v) // 2]:.3f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
