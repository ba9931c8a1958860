"""Every system package the tests use is installed by ``.ci/run``, found by checking.

A green run on a developer's machine can hide a package that an earlier install left
behind (it happened: ``lmodern``, a TeX font package that texlive only recommends, so
``--no-install-recommends`` never brought it and the appendix did not build on a fresh
machine). So nothing here is a list typed from memory:

- the executables are read out of the tests' own source (``shutil.which`` of a name and
  ``run`` of a command list), and the TeX packages out of the templates and the library's LaTeX
  (``\\usepackage``, ``\\RequirePackage``);
- each is found on this machine (``which``, ``kpsewhich``) and traced to the Debian package
  that owns its file (``dpkg -S``);
- that package must be one ``.ci/run`` installs, or a dependency of one (``apt-cache depends
  --recurse`` without recommends, as ``--no-install-recommends`` installs), or an essential
  package every Debian system has.

Under ``CI=true`` (where ``.ci/run`` has just installed everything) a missing executable or
TeX package fails; elsewhere it skips and says which.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI") == "true"

# an executable named in a test: shutil.which of a quoted name, or the first word of a command list
_CALLS = re.compile(r"""(?:shutil\.which|which)\(\s*["']([\w.+-]+)["']|"""
                    r"""(?:run|Popen|check_output|check_call|call)\(\s*\[\s*["']([\w.+-]+)["']""")
_PACKAGES = re.compile(r"\\(?:usepackage|RequirePackage)\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}")


def _tests_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests").rglob("*.py"))}


def executables() -> dict[str, list[str]]:
    """Each executable the tests call, with the files that call it."""
    found: dict[str, list[str]] = {}
    for path, text in _tests_sources().items():
        for m in _CALLS.finditer(text):
            name = m.group(1) or m.group(2)
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def tex_packages() -> dict[str, list[str]]:
    """Each LaTeX package the templates and the library's own LaTeX load."""
    found: dict[str, list[str]] = {}
    files = [*(ROOT / "templates").rglob("*.j2"), *(ROOT / "symroof").rglob("*.py")]
    for path in sorted(files):
        for m in _PACKAGES.finditer(path.read_text(encoding="utf-8")):
            for name in m.group(1).split(","):
                if re.fullmatch(r"[A-Za-z][\w-]*", name.strip()):
                    found.setdefault(name.strip(), []).append(str(path.relative_to(ROOT)))
    return found


def ci_apt_packages() -> list[str]:
    """The Debian packages ``.ci/run`` names after ``apt-get install``."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    names: list[str] = []
    for m in re.finditer(r"apt-get install([^\n>|&;]*)", text):
        names += [w for w in m.group(1).split() if not w.startswith("-")]
    return names


@functools.cache
def _closure() -> frozenset[str]:
    """``.ci/run``'s packages and everything they depend on (no recommends)."""
    done = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
         "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *ci_apt_packages()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return frozenset(line.strip() for line in done.stdout.splitlines()
                     if re.match(r"[a-z0-9]", line))


def _owner(path: str) -> str | None:
    """The Debian package that installed ``path``, or None: the path as found and with its
    links resolved, each also without ``/usr`` (a merged-/usr system finds ``/usr/bin/dash``
    where dpkg registered ``/bin/dash``)."""
    real = os.path.realpath(path)
    for candidate in dict.fromkeys([path, real, *(p.removeprefix("/usr") for p in (path, real)
                                                  if p.startswith("/usr/"))]):
        done = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True,
                              timeout=300)
        owners = [line.split(":", 1)[0].split(",")[0].strip() for line in done.stdout.splitlines()
                  if ":" in line and not line.startswith("diversion by")]
        if done.returncode == 0 and owners:
            return owners[0]
    return None


def _essential(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", package],
                          capture_output=True, text=True, timeout=300)
    return done.returncode == 0 and ("yes" in done.stdout.split() or "required" in done.stdout)


def _missing(what: str) -> None:
    if CI:
        pytest.fail(f"{what}; CI=true, where .ci/run must have installed it")
    pytest.skip(f"{what} (CI installs it with .ci/run)")


def _need_debian() -> None:
    for tool in ("dpkg", "dpkg-query", "apt-cache"):
        if shutil.which(tool) is None:
            _missing(f"{tool} is not on PATH: cannot trace packages")


def test_the_scans_find_what_the_suite_is_known_to_use() -> None:
    """The scans are not empty by accident: a regex that matched nothing would pass below."""
    assert {"pdflatex", "chromium", "chromedriver", "kpsewhich"} <= set(executables())
    assert {"pgfplots", "lmodern", "amsmath", "booktabs", "hyperref"} <= set(tex_packages())
    assert {"texlive-latex-base", "chromium", "chromium-driver", "lmodern"} <= \
        set(ci_apt_packages())


def _python_tool(path: str) -> bool:
    """An executable a pip extra installs (next to this interpreter, e.g. mypy)."""
    real = Path(os.path.realpath(path))
    return any(Path(p) in real.parents for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


@pytest.mark.parametrize("name", sorted(executables()))
def test_every_executable_the_tests_call_comes_from_ci_run(name: str) -> None:
    if name == "chromium-browser":   # the other spelling, tried after "chromium"
        pytest.skip("Debian's chromium is 'chromium'; 'chromium-browser' is a fallback")
    path = shutil.which(name)
    if path is None:
        _missing(f"{name} (called by {', '.join(sorted(set(executables()[name])))}) is not on PATH")
    assert path is not None
    if _python_tool(path):
        return   # installed by pip from pyproject's extras, not by apt
    _need_debian()
    owner = _owner(path)
    assert owner is not None, f"{name} at {path} belongs to no Debian package: install it from .ci/run"
    assert owner in _closure() or _essential(owner), (
        f"{name} comes from Debian package {owner!r}, which nothing .ci/run installs brings "
        f"(.ci/run installs {', '.join(ci_apt_packages())})")


@pytest.mark.parametrize("package", sorted(tex_packages()))
def test_every_tex_package_the_templates_load_comes_from_ci_run(package: str) -> None:
    if shutil.which("kpsewhich") is None:
        _missing("kpsewhich (texlive) is not on PATH")
    done = subprocess.run(["kpsewhich", f"{package}.sty"], capture_output=True, text=True,
                          timeout=300)
    sty = done.stdout.strip()
    if not sty:
        _missing(f"LaTeX package {package}.sty (loaded by "
                 f"{', '.join(sorted(set(tex_packages()[package])))}) is not installed")
    _need_debian()
    owner = _owner(sty)
    assert owner is not None, f"{sty} belongs to no Debian package"
    assert owner in _closure(), (
        f"LaTeX package {package} comes from Debian package {owner!r}, which nothing .ci/run "
        f"installs brings without recommends: add it to .ci/run")
