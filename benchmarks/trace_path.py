"""The code path of one command, read by tracing it: which symroof functions run between
the command line and the printed number, in how many modules, and how often the path
climbs back up the layers (a call from a module into one of a higher layer, which a
layered design makes only through callbacks).

    python3 benchmarks/trace_path.py eval decode --model llama-3-8b --hardware h100-sxm \\
        --set B=32 --set S=2048

Code run while a module is imported is left out (the path is what runs for the
question, not what loading the library runs). Counts distinct functions (a function called many times counts once), so the figure is
the code a reader follows, not the work done. Layers are tests/project/test_layers.py's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layers():
    spec = importlib.util.spec_from_file_location("_layers", ROOT / "tests/project/test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.layer_of


def trace(argv: list[str]) -> dict[str, object]:
    from symroof.cli import main

    layer_of = _layers()
    seen: list[tuple[str, str]] = []
    climbs: set[tuple[str, str, str, str]] = set()
    base = str(ROOT / "symroof")

    def module_of(frame) -> str | None:
        path = frame.f_code.co_filename
        if not path.startswith(base):
            return None
        rel = Path(path).relative_to(ROOT).with_suffix("").parts
        return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)

    def tracer(frame, event, arg):
        if event != "call":
            return None
        mod = module_of(frame)
        if mod is None or frame.f_code.co_name.startswith("<"):
            return None
        f = frame.f_back
        while f is not None:   # code run by an import (a module's body) is not the path
            name = f.f_code.co_filename
            if (f.f_code.co_name == "<module>" and name.startswith(base)) or \
                    "importlib._bootstrap" in name:
                return None
            f = f.f_back
        key = (mod, frame.f_code.co_name)
        if key not in seen:
            seen.append(key)
        caller = frame.f_back
        while caller is not None and module_of(caller) is None:
            caller = caller.f_back
        if caller is not None:
            up = module_of(caller)
            if up != mod and layer_of(mod) > layer_of(up):
                climbs.add((up, caller.f_code.co_name, mod, frame.f_code.co_name))
        return None

    out = io.StringIO()
    sys.setprofile(None)
    sys.settrace(tracer)
    try:
        with contextlib.redirect_stdout(out):
            code = main(argv)
    finally:
        sys.settrace(None)
    return {"exit": code, "functions": len(seen), "modules": len({m for m, _ in seen}),
            "climbs": sorted(climbs), "output": out.getvalue()}


if __name__ == "__main__":
    found = trace(sys.argv[1:])
    print(f"exit {found['exit']}: {found['functions']} functions in {found['modules']} "
          f"modules, {len(found['climbs'])} calls up the layers")
    for c in found["climbs"]:
        print("  up:", "{}.{} -> {}.{}".format(*c))
