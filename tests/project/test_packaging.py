"""pyproject.toml lists every package, so a wheel carries all of symroof, and the
templates ship inside it as ``symroof.templates``."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "symroof").rglob("__init__.py")}
    mapped = set(config["package-dir"])                  # folders outside symroof/
    assert listed == found | mapped, (sorted(found | mapped - listed), sorted(listed - found - mapped))
    for package, folder in config["package-dir"].items():
        assert (ROOT / folder / "__init__.py").exists(), package
