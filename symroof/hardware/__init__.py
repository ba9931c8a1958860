"""Chip specs: one TOML file per chip in this package, loaded lazily into exact values.

>>> from symroof import hardware
>>> hw = hardware.get("h100-sxm")
>>> hw.ridge("bf16")                 # 989.4 TFLOP/s / 3.35 TB/s, never stored in the file
19788/67
>>> hw.peak("bf16", ops_per_mac=1)   # the same peak counting a MAC as one operation
494700000000000

A chip file (``*.toml``) named by a claim file from someone else must not reach any file
on the machine: inside :func:`chip_files` (which ``symroof report`` and ``symroof check``
enter while a claim file runs), :func:`resolve` reads a chip file only from the folders
given, after resolving ``..`` and links, and its refusal reads the same whether or not
the file exists, quoting nothing of it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from collections.abc import Iterable, Iterator
from importlib import resources

from symroof.budget import current
from symroof.errors import SymroofError, shown, suggest
from symroof.files import parse_toml, read_bytes
from symroof.hardware.spec import (PRECISIONS, UNITS, HardwareSpec, Link, MemoryLevel, Peak,
                                   parse_spec)

__all__ = ["resolve", "get", "names", "load", "chip_files", "HardwareSpec", "MemoryLevel", "Link", "Peak",
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


#: The folders chip files may come from while a stranger's file runs (None: anywhere).
_CHIP_FOLDERS: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "symroof_chip_folders", default=None)


@contextlib.contextmanager
def chip_files(folders: Iterable[str | os.PathLike[str]]) -> Iterator[tuple[str, ...]]:
    """Within the block, a chip file named to :func:`resolve` is read only from
    ``folders`` (a relative name is looked up in each, in order); shipped chips stay
    available by name. An empty list allows shipped chips alone.

    >>> with chip_files([]):
    ...     resolve("/etc/chip.toml")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: chip file '/etc/chip.toml': not a shipped chip nor a chip file beside the claim file (or in a folder given with --chips)
    """
    found = tuple(os.path.realpath(os.fspath(f)) for f in folders)
    token = _CHIP_FOLDERS.set(found)
    try:
        yield found
    finally:
        _CHIP_FOLDERS.reset(token)


def _confined(name: str, folders: tuple[str, ...]) -> str:
    """The real path of chip file ``name`` inside one of ``folders``, or a SymroofError
    that says the same whether or not such a file exists elsewhere."""
    tried = [name] if os.path.isabs(name) else [os.path.join(f, name) for f in folders]
    for candidate in tried:
        real = os.path.realpath(candidate)
        if any(real != f and os.path.commonpath([f, real]) == f for f in folders) and \
                os.path.isfile(real):
            return real
    raise SymroofError(f"chip file {name!r}: not a shipped chip nor a chip file beside the "
                       "claim file (or in a folder given with --chips)")


def resolve(hw: object) -> HardwareSpec:
    """A chip spec from a spec, a name, or the path of a chip file (``*.toml``; anything
    else is a SymroofError). Inside :func:`chip_files` a path must lie in its folders."""
    if isinstance(hw, HardwareSpec):
        return hw
    if isinstance(hw, str) and hw.endswith(".toml"):
        folders = _CHIP_FOLDERS.get()
        return load(hw if folders is None else _confined(hw, folders))
    if isinstance(hw, str):
        return get(hw)
    raise SymroofError(f"hardware: expected a chip name or a HardwareSpec, got "
                       f"{type(hw).__name__} {shown(hw)}")


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
