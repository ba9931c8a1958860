"""Chip specs: one TOML file per chip in this package, loaded lazily into exact values.

>>> from symroof import hardware
>>> hw = hardware.get("h100-sxm")
>>> hw.ridge("bf16")                 # 989.4 TFLOP/s / 3.35 TB/s, never stored in the file
19788/67
>>> hw.peak("bf16", ops_per_mac=1)   # the same peak counting a MAC as one operation
494700000000000
"""

from __future__ import annotations

import functools
import os
from importlib import resources

from symroof.budget import current
from symroof.errors import SymroofError, suggest
from symroof.files import parse_toml, read_bytes
from symroof.hardware.spec import (PRECISIONS, UNITS, HardwareSpec, Link, MemoryLevel, Peak,
                                   parse_spec)

__all__ = ["resolve", "get", "names", "load", "HardwareSpec", "MemoryLevel", "Link", "Peak",
           "PRECISIONS", "UNITS"]


@functools.cache
def names() -> tuple[str, ...]:
    """Names of the shipped chips, sorted (each is a ``<name>.toml`` file here; the
    directory is listed once per process, not on every :func:`get`)."""
    files = resources.files(__name__).iterdir()
    return tuple(sorted(f.name[:-len(".toml")] for f in files if f.name.endswith(".toml")))


def get(name: str) -> HardwareSpec:
    """The shipped spec called ``name`` (in any case: ``H100-SXM`` is ``h100-sxm``);
    unknown names suggest close ones."""
    if not isinstance(name, str):
        raise SymroofError(f"hardware name: expected a string, got {type(name).__name__}")
    known = names()
    key = name if name in known else name.lower()
    if key not in known:
        raise SymroofError(f"unknown hardware {name!r}{suggest(key, known)}; "
                           f"known: {', '.join(known)}")
    return _get(key)


@functools.cache
def _get(name: str) -> HardwareSpec:
    path = f"symroof/hardware/{name}.toml"
    spec = _parse(resources.files(__name__).joinpath(f"{name}.toml").read_bytes(), path)
    if spec.name != name:
        raise SymroofError(f"{path}: name = {spec.name!r} must match the file name {name!r}")
    return spec


def resolve(hw: object) -> HardwareSpec:
    """A chip spec from a spec, a name, or the path of a chip file (``*.toml``; anything
    else is a SymroofError)."""
    if isinstance(hw, HardwareSpec):
        return hw
    if isinstance(hw, str) and hw.endswith(".toml"):
        return load(hw)
    if isinstance(hw, str):
        return get(hw)
    raise SymroofError(f"hardware: expected a chip name or a HardwareSpec, got "
                       f"{type(hw).__name__} {hw!r}")


def load(path: str | os.PathLike[str]) -> HardwareSpec:
    """Load and validate a user's own hardware file (same schema as the shipped ones).

    The file is read only if it is a regular file within the ``file_bytes`` limit
    (:mod:`symroof.budget`): a link to ``/dev/zero`` or a FIFO is refused, not read.
    """
    raw = read_bytes(path, "hardware file", limit=current().file_bytes)
    return _parse(raw, os.fspath(path))


def _parse(raw: bytes, origin: str) -> HardwareSpec:
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise SymroofError(f"{origin}: not UTF-8 text ({err.reason} at byte "
                           f"{err.start})") from None
    data = parse_toml(text, origin)
    return parse_spec(data, origin)
