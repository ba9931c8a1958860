"""Independent items computed by this process and forked workers: the claims of one file
are independent of each other, so on a machine with several cores they are checked side by
side.

The items are cut into runs of neighbours: with ``key``, the stretches of consecutive
items that share a key (the claims of one section of a file tend to build the same
workloads, which each process then builds once), each cut to at most ``most`` items;
without, runs of 4. The processes take the next run from one shared pipe, so a slow run
never leaves a core idle while work is left.
Each worker sends back what it computed, pickled, and leaves; whatever a worker could not
compute or send (it died, an item raised, a result does not pickle) is computed here
afterwards, so the list returned is exactly ``[fn(x) for x in items]``: the same values in
the same order, and the same exception at the same item when one escapes ``fn``.

Forking is used only where it is safe and cheap (``os.fork`` exists, not macOS, and no
other thread runs in this process: :mod:`symroof.budget.guard`'s test, whose reaping the
workers share too); elsewhere, or with one worker, the items are computed here in order.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import signal
import struct
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from symroof.budget.guard import _forkable, _reap
from symroof.errors import SymroofError

__all__ = ["available", "compute", "runs", "PER_WORKER"]

T = TypeVar("T")
R = TypeVar("R")

_RUN = struct.Struct("!II")  # one run's first and last-but-one index, as the pipe carries it
_RUN_LENGTH = 4              # items per run without a key: small enough to balance

#: Items per worker below which they are computed in one process (a fork and the results'
#: way back cost about what a few claims do).
PER_WORKER = 24


def available() -> int:
    """The cores this process may run on and no other work keeps busy: its CPU affinity
    (where the platform has one) less the other processes that both the kernel's count
    of runnable processes now (``/proc/loadavg``, less this one, as GNU make's ``-l``
    reads it on Linux) and the last minute's load average say are running, at least 1.

    Each worker repeats part of the others' warm-up (about a fifth more CPU in all for
    the seed appendix), which pays only on an idle core: on a busy machine (a test run
    on every core) the claims are checked in one process. Either measure alone misleads:
    the count now catches a passing process, the average the run that just ended.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    return max(1, min(cores, _quota(cores)) - _busy())


def _quota(cores: int) -> int:
    """The cores a container's CPU quota allows (cgroup v2 ``cpu.max``, or v1's
    ``cfs_quota_us``/``cfs_period_us``), rounded up; ``cores`` where there is none: a
    ``docker --cpus=2`` container on a large host sees every host core in its affinity."""
    for path in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        try:
            with open(path, encoding="ascii") as fh:
                fields = fh.read().split()
            if path.endswith("cpu.max"):
                quota, period = fields[0], fields[1]
            else:
                with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as fh:
                    quota, period = fields[0], fh.read().split()[0]
            if quota == "max" or int(quota) <= 0:
                return cores
            return max(1, -(-int(quota) // int(period)))
        except (OSError, IndexError, ValueError, ZeroDivisionError):
            continue
    return cores


def _busy() -> int:
    """Processes other than this one using a core (see :func:`available`)."""
    try:
        average = int(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - no load average here
        return 0
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            running = fh.read().split()[3].split("/")[0]
        return max(0, min(average, int(running) - 1))
    except (OSError, IndexError, ValueError):
        return average


def runs(items: Sequence[T], key: Callable[[T], object] | None = None,
         most: int = 24) -> list[tuple[int, int]]:
    """The runs ``(start, stop)`` that :func:`compute` shares out (see the module's text).

    >>> runs("aaabbbbbc", key=str, most=3)
    [(0, 3), (3, 6), (6, 8), (8, 9)]
    """
    if key is None:
        return [(i, min(i + _RUN_LENGTH, len(items))) for i in range(0, len(items), _RUN_LENGTH)]
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(items) + 1):
        if i == len(items) or i - start == most or key(items[i]) != key(items[start]):
            out.append((start, i))
            start = i
    return out


def compute(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None,
            key: Callable[[T], object] | None = None, most: int = 24) -> list[R]:
    """``[fn(x) for x in items]``, shared between this process and ``workers - 1`` forked
    workers, in runs of neighbours (``key``, ``most``: see :func:`runs`). ``workers``
    None takes the idle cores (:func:`available`), at most one per :data:`PER_WORKER`
    items; else it is a whole number, at least 1.

    >>> compute(abs, [-3, 1, -2, 5, -8, 13], workers=2)
    [3, 1, 2, 5, 8, 13]
    """
    if workers is None:
        workers = min(available(), len(items) // PER_WORKER)
    elif isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SymroofError(f"workers: expected a whole number of processes, at least 1, "
                           f"got {workers!r}")
    n = len(items)
    shares = runs(items, key, most)
    workers = min(workers, len(shares))
    if workers <= 1 or not _forkable():
        return [fn(x) for x in items]
    queue_r = _queue(b"".join(_RUN.pack(*run) for run in shares))
    if queue_r is None:  # more than the pipe holds unread: keep it simple, run here
        return [fn(x) for x in items]
    _flush_std_streams()  # nothing buffered here is written again by a worker
    children: list[tuple[int, int]] = []
    done: dict[int, R] = {}
    try:
        for _ in range(workers - 1):
            try:
                _fork(fn, items, queue_r, children)
            except OSError:  # no more processes to be had: those forked share the work
                break
        for i in _taken(queue_r):
            try:
                done[i] = fn(items[i])
            except Exception:  # noqa: BLE001 - computed again below, in order, and raised
                continue
        sent = [item for _, fd in children for item in _received(fd)]
    finally:
        os.close(queue_r)
        for pid, fd in children:
            os.close(fd)
            _reap(pid, kill=True)   # done already when its message was read whole
    if sent:
        from sympy.core.parameters import evaluate  # loaded already by whoever sends SymPy

        with evaluate(False):  # each expression as the worker built it (2*(x + y) stays);
            for item in sent:  # once for all: SymPy clears its cache at each switch
                try:
                    i, value = _Unevaluated(io.BytesIO(item)).load()
                except Exception:  # noqa: BLE001 - computed here below
                    continue
                done[i] = value
    return [done[i] if i in done else fn(items[i]) for i in range(n)]


class _Unevaluated(pickle.Unpickler):
    """Loads a worker's result under ``evaluate(False)``, except that a module it names
    and this process has not imported yet is imported evaluating, as every import runs
    (else that module's own expressions, such as a constant ``2*(x + y)``, would be built
    unevaluated here for good)."""

    def find_class(self, module: str, name: str) -> Any:
        if module not in sys.modules:
            from sympy.core.parameters import evaluate  # loaded: the caller is in it

            with evaluate(True):
                importlib.import_module(module)
        return super().find_class(module, name)


def _queue(data: bytes) -> int | None:
    """The read end of a pipe holding ``data`` whole, its write end closed (every reader
    sees the end of the queue once it is empty); None where the pipe cannot hold it all."""
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(write_end, False)  # a full pipe refuses, rather than wait forever
        whole = os.write(write_end, data) == len(data)
    except BlockingIOError:
        whole = False
    finally:
        os.close(write_end)
    if not whole:
        os.close(read_end)
        return None
    return read_end


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone or a stream closed: not ours to say
            pass


def _taken(queue: int, parent: int | None = None) -> Iterator[int]:
    """The items of each run this process takes from the queue, until it is empty (a read
    of a few bytes from a pipe is atomic, so no two processes take one run); a worker
    (``parent``: the pid that forked it) stops too once that process is gone (killed, as
    by ``timeout``'s SIGTERM: nobody would read the rest)."""
    while parent is None or os.getppid() == parent:
        data = os.read(queue, _RUN.size)
        if len(data) < _RUN.size:
            return
        yield from range(*_RUN.unpack(data))


def _fork(fn: Callable[[T], R], items: Sequence[T], queue: int,
          children: list[tuple[int, int]]) -> None:
    """A worker that computes the runs it takes from ``queue``, added to ``children`` as
    its pid and the read end of the pipe it answers on."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        with warnings.catch_warnings():  # Python 3.12 warns about fork with threads; none run
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the worker: compute what it takes, send it, leave without any cleanup
        code = 0
        try:
            os.close(read_end)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            sent: list[bytes] = []
            for i in _taken(queue, parent):
                try:
                    sent.append(pickle.dumps((i, fn(items[i]))))
                except Exception:  # noqa: BLE001 - the parent computes it again, and raises
                    continue
            data = pickle.dumps(sent)
            while data:
                data = data[os.write(write_end, data):]
        except BaseException:  # noqa: BLE001 - nothing may escape into the parent's stack
            code = 70
        finally:
            os._exit(code)
    children.append((pid, read_end))  # at once: ended and reaped whatever comes next
    os.close(write_end)


def _received(fd: int) -> list[bytes]:
    """What one worker sent, each item pickled (nothing when it died before sending all
    of it)."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    try:
        sent: list[bytes] = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a worker cut off mid-message: compute it here
        return []
    return sent
