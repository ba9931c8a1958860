"""Reading and writing files safely: user files are checked before they are read, and
outputs are written whole or not at all.

A path a user names may be a link to ``/dev/zero``, a FIFO or a huge file: it is read only
if it is a regular file under a size limit, and decoded as UTF-8 (an optional byte-order
mark is dropped).

Outputs go to temporary files beside their targets and are renamed into place, so a
failure never leaves half a file. A set of files (a report: Markdown, LaTeX, JSON and
its charts) is written by :func:`write_files`: every temporary file is written before
the first is renamed, so a full disk leaves the old set as it was; no target may lie
outside the output folder, whatever its name (``..``, an absolute path or a link out of
the folder are refused); temporary files that a killed run left are removed. A target
that exists and is not a regular file is never replaced by one: :func:`write_text`
writes into a FIFO (with a reader) or a character device such as ``/dev/null`` in place,
and refuses a folder; :func:`write_files` refuses them all.

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

import errno
import json
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from symroof.errors import SymroofError, shown

try:
    import fcntl  # POSIX only: a FIFO written in place
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["MAX_FILE_BYTES", "read_bytes", "read_text", "write_text", "write_files",
           "parse_toml", "parse_json"]

#: The largest user file symroof reads (claim files, configs, chip files are kilobytes).
MAX_FILE_BYTES = 8 * 2**20


def read_bytes(path: str | os.PathLike[str], what: str, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes."""
    if not isinstance(path, (str, os.PathLike)):
        raise SymroofError(f"{what}: expected a file path (a str or os.PathLike), got "
                           f"{type(path).__name__} {shown(path)}")
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


def parse_json(text: str, origin: str) -> Any:
    """``text`` read as JSON; every way it can fail is a :class:`SymroofError` that starts
    with ``origin``: bad syntax, nesting too deep, an integer past Python's digit limit
    (with its key).

    >>> parse_json('{"n": ' + "9" * 5000 + "}", "config.json")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: config.json: field 'n' is out of range (an integer of 5000 digits)
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SymroofError(f"{origin}: not valid JSON ({exc})") from None
    except RecursionError:
        raise SymroofError(f"{origin}: not valid JSON (nested too deeply)") from None
    except ValueError:  # an integer past Python's digit limit
        hit = re.search(r'"([^"]{1,80})"\s*:\s*-?([0-9]{1000,})', text)
        what = f"field {hit.group(1)!r}" if hit else "a value"
        size = f"{len(hit.group(2))} digits" if hit else "thousands of digits"
        raise SymroofError(f"{origin}: {what} is out of range (an integer of {size})") from None


# a temporary file of ours: .<target name>.symroof-<pid>-<mkstemp's 8 characters>.tmp
_TEMP = re.compile(r"\.(?P<name>.+)\.symroof-(?P<pid>[0-9]{1,10})-[a-z0-9_]{8}\.tmp")


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on doubt, it does)."""
    if os.name != "posix":  # pragma: no cover - os.kill(pid, 0) would end it on Windows
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # another user's process
        return True
    return True


def _remove_stale(folder: str) -> None:
    """Remove the temporary files a killed symroof run left in ``folder`` (ours by their
    name, and the run that made each no longer running)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        m = _TEMP.fullmatch(entry.name)
        if m is None or int(m.group("pid")) == os.getpid() or _alive(int(m.group("pid"))):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
        except OSError:
            pass


def _mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # mkstemp makes 0600; a report is for everyone


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _target(root: str, name: str | os.PathLike[str]) -> str:
    """``name`` inside the folder ``root`` (resolved): ``..``, an absolute path and links
    are resolved first, and anything that lands outside ``root`` is refused. The last
    component is not followed: a link there is replaced, never written through."""
    rel = os.fspath(name)
    joined = os.path.normpath(os.path.join(root, rel))
    full = os.path.join(os.path.realpath(os.path.dirname(joined)), os.path.basename(joined))
    if not rel or "\0" in rel or full == root or os.path.commonpath([root, full]) != root:
        raise SymroofError(f"cannot write {rel!r}: outside the output folder {root}")
    return full


def write_files(folder: str | os.PathLike[str], texts: Mapping[Any, str]) -> list[Path]:
    """Write ``texts`` (names relative to ``folder`` -> text) as one set: every target
    is checked, then every temporary file written, then each renamed into place. A
    failure before the renames (a full disk) leaves every old file as it was and no
    temporary file behind. Returns the paths written.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> [p.name for p in write_files(d, {"a.md": "a", "charts/b.svg": "b"})]
    ['a.md', 'b.svg']
    >>> write_files(d, {"../x.md": "x"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: cannot write '../x.md': outside the output folder ...
    """
    root = os.path.realpath(os.fspath(folder))
    targets: dict[str, str] = {}
    for name, text in texts.items():
        full = _target(root, name)
        try:
            info = os.stat(full)  # a link is judged by what it leads to
        except FileNotFoundError:
            info = None
        except OSError as err:
            raise SymroofError(f"cannot write {full}: {err.strerror or err}") from None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise SymroofError(f"cannot write {full}: not a regular file ({_kind(info.st_mode)}); "
                               "a report's files are replaced whole, so name another folder")
        targets[full] = text
    temps: list[tuple[str, str]] = []
    where = root
    try:
        for parent in dict.fromkeys(os.path.dirname(t) for t in targets):
            where = parent
            os.makedirs(parent, exist_ok=True)
            _remove_stale(parent)
        mode = _mode()
        for full, text in targets.items():
            where = full
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), suffix=".tmp",
                                       prefix=f".{os.path.basename(full)}.symroof-{os.getpid()}-")
            temps.append((tmp, full))
            try:
                _write_all(fd, text.encode("utf-8"))
            finally:
                os.close(fd)
            os.chmod(tmp, mode)
        while temps:
            tmp, full = temps[0]
            where = full
            os.replace(tmp, full)
            temps.pop(0)
    except OSError as err:
        raise SymroofError(f"cannot write {where}: {err.strerror or err}") from None
    finally:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return [Path(t) for t in targets]


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file in the same folder, renamed.
    A FIFO (with a reader) or a character device such as ``/dev/null``, or a link to one,
    is written in place; a folder or another kind of file is refused."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError:
        info = None
    if info is not None and (stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode)):
        _write_in_place(name, text, stat.S_ISFIFO(info.st_mode))
        return
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise SymroofError(f"cannot write {name}: not a regular file ({_kind(info.st_mode)})")
    folder, base = os.path.split(os.path.abspath(name))
    write_files(folder, {base: text})


def _write_in_place(name: str, text: str, fifo: bool) -> None:
    """Write into an existing FIFO or character device (never waiting for a reader)."""
    try:
        flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0)
        fd = os.open(name, flags | (getattr(os, "O_NONBLOCK", 0) if fifo else 0))
    except OSError as err:
        if err.errno == errno.ENXIO and fifo:
            raise SymroofError(f"cannot write {name}: a FIFO with no reader") from None
        raise SymroofError(f"cannot write {name}: {err.strerror or err}") from None
    try:
        if fifo and fcntl is not None:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        _write_all(fd, text.encode("utf-8"))
    except OSError as err:
        raise SymroofError(f"cannot write {name}: {err.strerror or err}") from None
    finally:
        os.close(fd)
