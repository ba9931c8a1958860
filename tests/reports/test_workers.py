"""Claims checked side by side in forked workers give what one process gives.

``symroof.verify.workers.compute`` is ``[fn(x) for x in items]`` shared with forked
workers; these tests check that the work is really shared (the items come back from
another process), that the order, the exceptions and SymPy's unevaluated forms are kept,
and that ``run_claims`` and ``prepare`` give the same outcome and the same typeset blocks
for any number of workers.
"""

from __future__ import annotations

import dataclasses
import io
import os
import select

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.present.appendix import prepare, render_latex, render_markdown
from symroof.verify import run_claims
from symroof.verify.appendix import seed_claims
from symroof.verify.workers import available, compute

x, y = sp.symbols("x y")


def _where(i: int) -> tuple[int, int]:
    return i * i, os.getpid()


class _Meet:
    """An item function whose first call in each process waits until every process has
    made its first call: each then holds a run of items, so all share the work however
    fast the items are (with no worker, this process waits 60 s, then computes them all
    and the test fails on the processes it counts)."""

    def __init__(self, workers: int) -> None:
        self.down, self.up = os.pipe(), os.pipe()
        self.parent, self.started, self.workers = os.getpid(), False, workers

    def __call__(self, i: int) -> tuple[int, int]:
        if not self.started:
            self.started = True
            if os.getpid() == self.parent:   # every worker has arrived: let them go
                for _ in range(self.workers - 1):
                    ready, _, _ = select.select([self.up[0]], [], [], 60)
                    if ready:
                        os.read(self.up[0], 1)
                os.write(self.down[1], b"!" * (self.workers - 1))
            else:
                os.write(self.up[1], b"!")
                ready, _, _ = select.select([self.down[0]], [], [], 60)
                assert ready and os.read(self.down[0], 1) == b"!"
        return _where(i)


@pytest.mark.parametrize("workers", [2, 3])
def test_compute_shares_the_items_and_keeps_their_order(workers):
    out = compute(_Meet(workers), list(range(40)), workers)
    assert [v for v, _ in out] == [i * i for i in range(40)]
    pids = {pid for _, pid in out}
    assert os.getpid() in pids and len(pids) == workers   # each worker sent some


def test_compute_with_one_worker_or_few_items_stays_here():
    assert {pid for _, pid in compute(_where, range(12), 1)} == {os.getpid()}
    assert {pid for _, pid in compute(_where, [5], 4)} == {os.getpid()}
    assert compute(_where, [], 3) == []


def _fails_at_7_and_23(i: int) -> int:
    if i in (7, 23):
        raise ValueError(f"item {i}")
    return i


def test_compute_raises_at_the_first_failing_item_as_one_process_would():
    with pytest.raises(ValueError, match="^item 7$"):
        compute(_fails_at_7_and_23, list(range(40)), 2)


def _awkward(i: int) -> object:
    if i % 5 == 0:
        return lambda: i              # does not pickle: computed again here
    if i == 13 and os.getpid() != PARENT:
        os._exit(3)                   # a worker that dies: its items are computed here
    return i


PARENT = os.getpid()


def test_compute_recovers_what_a_worker_cannot_send():
    out = compute(_awkward, list(range(30)), 2)
    assert [v() if callable(v) else v for v in out] == list(range(30))


def _unevaluated(i: int) -> sp.Expr:
    return sp.Mul(2 + i, x + y, evaluate=False)


def test_compute_keeps_an_expression_as_the_worker_built_it():
    out = compute(_unevaluated, list(range(24)), 2)
    # an evaluating rebuild would distribute 2*(x + y) into 2*x + 2*y
    assert [sp.srepr(e) for e in out] == [sp.srepr(_unevaluated(i)) for i in range(24)]
    assert all(isinstance(e, sp.Mul) for e in out)


@pytest.fixture(scope="module")
def part():
    """40 claims of the seed file (a table, named forms, alternatives, notes)."""
    source = seed_claims()
    return dataclasses.replace(source, claims=source.claims[60:100], charts=())


@pytest.fixture(scope="module")
def one(part):
    return run_claims(part, workers=1)


def _key(outcome):
    return [(r.claim, r.status, sp.srepr(r.formula), sp.srepr(r.derived), r.message,
             r.findings, r.alternatives, r.named, r.derivation) for r in outcome.results]


def test_run_claims_and_prepare_give_the_same_for_any_number_of_workers(part, one):
    three = run_claims(part, workers=3)
    assert _key(three) == _key(one)
    assert any(r.claim.table is not None for r in one.results)
    assert any(r.named is not None for r in one.results)
    here, shared = prepare(one, workers=1), prepare(one, workers=2)
    assert shared.entries == here.entries
    assert render_markdown(one, [], "c", shared) == render_markdown(one, [], "c")
    assert render_latex(one, [], "c", shared) == render_latex(one, [], "c")


def test_bad_worker_counts_are_refused_by_name(part, one):
    few = dataclasses.replace(part, claims=part.claims[:2])
    for bad in (0, -1, True, 1.5):
        with pytest.raises(SymroofError, match="^workers: expected a whole number"):
            run_claims(few, workers=bad)
        with pytest.raises(SymroofError, match="^workers: expected a whole number"):
            prepare(one, workers=bad)
    with pytest.raises(SymroofError, match="^prepared: made for another outcome"):
        render_markdown(one, [], "c", prepare(run_claims(few, workers=1)))


def test_the_idle_cores_are_the_cores_less_the_processes_running(monkeypatch):
    from symroof.verify import workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    # (load average, runnable now counting this process) -> idle cores: busy only where
    # both say so
    for load, running, idle in ((0.2, 1, 4), (3.5, 1, 4), (0.4, 3, 4), (1.2, 2, 3),
                                (2.9, 5, 2), (9.0, 9, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        monkeypatch.setattr(workers, "open", lambda *a, running=running, **k: io.StringIO(
            f"{load:.2f} 0.40 0.30 {running}/312 4242\n"), raising=False)
        assert available() == idle
    monkeypatch.setattr(workers, "open", lambda *a, **k: io.StringIO(""), raising=False)
    for load, idle in ((0.9, 4), (1.2, 3), (3.99, 1)):  # no count: the load average
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert available() == idle


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


def test_a_queue_the_pipe_cannot_hold_is_refused_not_waited_on():
    from symroof.verify.workers import _queue

    fds = _open_fds()
    assert _queue(bytes(1 << 22)) is None      # past any pipe's default: no wait forever
    fd = _queue(b"abcd")
    assert fd is not None
    try:
        assert os.read(fd, 16) == b"abcd" and os.read(fd, 16) == b""   # then the end
    finally:
        os.close(fd)
    assert _open_fds() == fds


def test_a_fork_refused_leaves_the_work_here_and_no_pipe_open(monkeypatch):
    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    fds = _open_fds()
    monkeypatch.setattr(os, "fork", refused)
    assert compute(_where, list(range(40)), 3) == [(i * i, os.getpid()) for i in range(40)]
    assert _open_fds() == fds


def test_no_worker_outlives_compute_even_when_interrupted():
    fds = _open_fds()
    assert [v for v, _ in compute(_where, list(range(40)), 3)] == [i * i for i in range(40)]
    with pytest.raises(ChildProcessError):  # every worker reaped: no zombie, none running
        os.waitpid(-1, os.WNOHANG)
    never = os.pipe()   # nobody writes: a worker's first item waits (60 s at most)

    def stuck_there_interrupted_here(i: int) -> int:
        if os.getpid() == PARENT:
            raise KeyboardInterrupt
        select.select([never[0]], [], [], 60)
        return i

    try:
        with pytest.raises(KeyboardInterrupt):   # the workers hold a run each: one is left
            compute(stuck_there_interrupted_here, list(range(40)), 3)
        with pytest.raises(ChildProcessError):   # the waiting workers ended and reaped
            os.waitpid(-1, os.WNOHANG)
    finally:
        os.close(never[0])
        os.close(never[1])
    assert _open_fds() == fds


def test_a_module_first_imported_by_a_result_is_built_evaluating(tmp_path, monkeypatch):
    """A result whose class lives in a module only the worker imported: the module is
    imported here while the results load unevaluated, but its own SymPy is evaluated as
    on any import (its 2*(x + y) is 2*x + 2*y), and the result still as the worker
    built it."""
    name = f"rv_worker_module_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(
        "import sympy as sp\n"
        "x, y = sp.symbols('x y')\n"
        "DOUBLED = 2 * (x + y)\n"
        "class Box:\n"
        "    def __init__(self, e):\n"
        "        self.e = e\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    meet = _Meet(2)   # the parent and the worker take a run each

    def parent_waits(i: int) -> object:
        meet(i)
        if os.getpid() == PARENT:
            return None
        import importlib

        return importlib.import_module(name).Box(sp.Mul(2, x + y, evaluate=False))

    out = compute(parent_waits, list(range(8)), 2)
    import sys

    try:
        module = sys.modules[name]
        assert sp.srepr(module.DOUBLED) == sp.srepr(2 * x + 2 * y)
        sent = [o for o in out if o is not None]
        assert sent and all(sp.srepr(o.e) == sp.srepr(sp.Mul(2, x + y, evaluate=False))
                            for o in sent)
    finally:
        sys.modules.pop(name, None)


def test_a_worker_whose_parent_is_gone_takes_no_more_runs():
    from symroof.verify.workers import _queue, _taken

    fd = _queue(b"".join(i.to_bytes(4, "big") for i in (0, 4, 4, 8)))
    assert fd is not None
    try:
        assert list(_taken(fd, parent=os.getppid() + 10**7)) == []   # not its parent
        assert list(_taken(fd, parent=os.getppid())) == [0, 1, 2, 3, 4, 5, 6, 7]
    finally:
        os.close(fd)


def test_a_containers_cpu_quota_caps_the_cores(monkeypatch):
    from symroof.verify import workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(workers, "_busy", lambda: 0)
    files: dict[str, str] = {}

    def fake_open(path, *args, **kwargs):
        if path not in files:
            raise FileNotFoundError(path)
        return io.StringIO(files[path])

    monkeypatch.setattr(workers, "open", fake_open, raising=False)
    assert available() == 16                                   # no cgroup files
    files["/sys/fs/cgroup/cpu.max"] = "max 100000\n"
    assert available() == 16                                   # v2, no quota
    files["/sys/fs/cgroup/cpu.max"] = "200000 100000\n"
    assert available() == 2                                    # v2: docker --cpus=2
    files["/sys/fs/cgroup/cpu.max"] = "150000 100000\n"
    assert available() == 2                                    # 1.5 cores: rounded up
    del files["/sys/fs/cgroup/cpu.max"]
    files["/sys/fs/cgroup/cpu/cpu.cfs_quota_us"] = "400000\n"
    files["/sys/fs/cgroup/cpu/cpu.cfs_period_us"] = "100000\n"
    assert available() == 4                                    # v1
    files["/sys/fs/cgroup/cpu/cpu.cfs_quota_us"] = "-1\n"
    assert available() == 16                                   # v1, no quota
