"""Reading and writing files safely: user files are checked before they are read, and
outputs are written whole or not at all.

A path a user names may be a link to ``/dev/zero``, a FIFO or a huge file: it is read only
if it is a regular file under a size limit, and decoded as UTF-8 (an optional byte-order
mark is dropped). Outputs go to a temporary file in the same folder and are renamed
into place, so a failure never leaves half a report.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> write_text(os.path.join(d, "a.txt"), "hello")
>>> read_text(os.path.join(d, "a.txt"), "note")
'hello'
>>> read_text(d, "note")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symroof.errors.SymroofError: note ...: not a regular file
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from symroof.errors import SymroofError

__all__ = ["MAX_FILE_BYTES", "read_bytes", "read_text", "write_text", "parse_toml"]

#: The largest user file symroof reads (claim files, configs, chip files are kilobytes).
MAX_FILE_BYTES = 8 * 2**20


def read_bytes(path: str | os.PathLike[str], what: str, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes."""
    if not isinstance(path, (str, os.PathLike)):
        raise SymroofError(f"{what}: expected a file path, got {type(path).__name__} {path!r}")
    name = os.fspath(path)
    try:
        info = os.stat(name)  # follows links: a link to /dev/zero is judged by its target
    except OSError as err:
        raise SymroofError(f"{what} {name}: cannot read ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SymroofError(f"{what} {name}: not a regular file")
    if info.st_size > limit:
        raise SymroofError(f"{what} {name}: {info.st_size} bytes, more than the limit of "
                           f"{limit} bytes")
    try:
        with open(name, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        raise SymroofError(f"{what} {name}: cannot read ({err.strerror})") from None
    if len(data) > limit:  # the file grew while it was read
        raise SymroofError(f"{what} {name}: more than the limit of {limit} bytes")
    return data


def read_text(path: str | os.PathLike[str], what: str, *, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark is dropped)."""
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise SymroofError(f"{what} {os.fspath(path)}: not UTF-8 text ({err.reason} at byte "
                           f"{err.start})") from None


def parse_toml(text: str, origin: str, what: str = "") -> dict[str, Any]:
    """``text`` read as TOML; every way it can fail is a :class:`SymroofError` that starts
    with ``origin`` (and ``what``, e.g. ``"the annotation "``): bad syntax with its line,
    nesting too deep for the parser, an integer past Python's digit limit with its key.

    >>> parse_toml("a = 1", "x.toml")
    {'a': 1}
    >>> parse_toml("a = " + "9" * 5000, "x.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: x.toml: a: expected a number, got an integer of 5000 digits
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SymroofError(f"{origin}: {what}not valid TOML: {err}") from None
    except RecursionError:
        raise SymroofError(f"{origin}: {what}arrays or tables nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit: name its key
        hit = re.search(r"^\s*([\w.\"-]+)\s*=\s*[+-]?([0-9_]{1000,})", text, re.M)
        key, digits = (hit.group(1), len(hit.group(2).replace("_", ""))) if hit else ("a value",
                                                                                     None)
        size = f"{digits} digits" if digits else "thousands of digits"
        raise SymroofError(f"{origin}: {what}{key}: expected a number, got an integer of "
                           f"{size}") from None


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file in the same folder, renamed."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is for everyone
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as err:
        raise SymroofError(f"cannot write {target}: {err.strerror or err}") from None
