"""The wall-clock and memory guard: a SymPy computation run in a forked child process that
is killed past the seconds or memory limit of :mod:`symroof.budget`, with the step it was
in named in the :class:`~symroof.budget.BudgetError`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from symroof.budget.checks import Budget, BudgetError, current, hint
from symroof.errors import SymroofError

try:
    import resource  # POSIX only: the guard's memory limit
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

__all__ = ["guarded", "note", "clock", "now"]

T = TypeVar("T")

# -- the wall-clock and memory guard -----------------------------------------------------
# SymPy cannot be interrupted from a thread, and a signal handler never runs inside one
# long C-level integer operation, so a guarded call runs in a forked child: the parent
# waits on a pipe until the deadline and kills the child if it is late. A fork costs
# about 10 ms (measured in this project: ~6 ms on top of a 15 ms decode limit); where
# fork is unavailable or unsafe (no os.fork, macOS, other threads running) the call runs
# in this process with the size and degree checks as its only bound.

_CHILD_PIPE: int | None = None   # set in a guarded child: where its notes and result go
_HEADER = struct.Struct("!cI")

#: The clock the guard's deadline is read from (seconds, monotonic): ``_collect`` calls
#: it once to set the deadline and again before each wait. The one injection point for
#: tests is the package's name for it, ``symroof.budget.clock`` (``monkeypatch.setattr(
#: budget, "clock", fake)``), so that a test of the seconds limit never depends on how
#: fast the machine is; :func:`now` reads it there.
clock: Callable[[], float] = time.monotonic


def now() -> float:
    """The time from ``symroof.budget.clock`` (this module's :data:`clock` unless a test
    replaced it there)."""
    import symroof.budget as package  # its attribute, read at each call: the injection point

    return package.clock()


def _send(fd: int, kind: bytes, payload: bytes) -> None:
    data = _HEADER.pack(kind, len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def note(step: str) -> None:
    """Name the step a guarded computation is in, so that a timeout can say which."""
    if _CHILD_PIPE is not None:
        _send(_CHILD_PIPE, b"S", step[:300].encode("utf-8", "replace"))


def _forkable() -> bool:
    return (hasattr(os, "fork") and sys.platform != "darwin"
            and threading.active_count() == 1)


def guarded(step: str, fn: Callable[..., T], /, *args: Any, unguarded: bool = False,
            **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` within the seconds and memory limits; ``step`` names the
    call in the BudgetError that ends a computation past them. ``unguarded`` (a light
    input, see :func:`light`) runs it here, without the fork.

    >>> guarded("a sum", sum, [1, 2, 3])
    6
    """
    b = current()
    if unguarded or _CHILD_PIPE is not None or (b.seconds is None and b.memory_mib is None) \
            or not _forkable():
        return fn(*args, **kwargs)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns about fork with threads; none run
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running any cleanup
        code = 0
        try:
            os.close(read_end)
            _child(write_end, b, fn, args, kwargs)
        except BaseException:  # noqa: BLE001 - nothing may escape into the parent's stack
            code = 70
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        return _collect(step, b, pid, read_end)
    finally:
        os.close(read_end)
        _reap(pid, kill=True)


def _child(fd: int, b: Budget, fn: Callable[..., Any], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> None:
    global _CHILD_PIPE
    _CHILD_PIPE = fd
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    out_of_memory = pickle.dumps(("memory", None))
    if b.memory_mib is not None and resource is not None:
        with contextlib.suppress(OSError, ValueError):
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            with open("/proc/self/statm", "rb") as fh:
                used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            want = used + b.memory_mib * 2**20
            if hard == resource.RLIM_INFINITY or want < hard:
                resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    try:
        payload = pickle.dumps(("ok", fn(*args, **kwargs)))
    except MemoryError:
        payload = out_of_memory
    except BaseException as exc:  # noqa: BLE001 - the parent re-raises it
        tb = "".join(traceback.format_exception(exc))
        try:
            payload = pickle.dumps(("error", exc, tb))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), tb))
    _send(fd, b"R", payload)


def _collect(step: str, b: Budget, pid: int, fd: int) -> Any:
    deadline = None if b.seconds is None else now() + b.seconds
    buf, last = b"", ""
    while True:
        left = None if deadline is None else deadline - now()
        if left is not None and left <= 0:
            os.kill(pid, signal.SIGKILL)
            where = f" while {last}" if last else ""
            raise BudgetError(f"{step}: still running after {b.seconds:g} s{where}; stopped "
                              f"at the seconds limit{hint('seconds')}", "seconds")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(buf)
            if len(buf) < _HEADER.size + size:
                break
            body, buf = buf[_HEADER.size:_HEADER.size + size], buf[_HEADER.size + size:]
            if kind == b"S":
                last = body.decode("utf-8", "replace")
            else:
                return _result(step, b, pickle.loads(body))
    status = _reap(pid, kill=False)
    where = f" while {last}" if last else ""
    raise BudgetError(f"{step}: the computation ended without a result{where} ({status}; "
                      f"out of memory?){hint('memory_mib')}", "memory_mib")


def _result(step: str, b: Budget, message: tuple[Any, ...]) -> Any:
    kind = message[0]
    if kind == "ok":
        return message[1]
    if kind == "memory":
        raise BudgetError(f"{step}: needed more than {b.memory_mib:,} MiB, the memory limit"
                          f"{hint('memory_mib')}", "memory_mib")
    exc, tb = message[1], message[2]
    if not isinstance(exc, SymroofError):
        exc.add_note(f"in symroof's guarded child process:\n{tb}")
    raise exc


def _reap(pid: int, kill: bool) -> str:
    """Wait for the child (killing it first if asked); how it ended, in words."""
    try:
        if kill:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        return "already ended"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"
