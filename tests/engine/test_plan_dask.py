"""The plan on a Dask distributed cluster: a LocalCluster of two in-process workers gives
the serial answer; an address where no scheduler answers is a one-line error."""

from __future__ import annotations

import pytest

from symroof.errors import SymroofError
from symroof.plan import plan
from symroof.plan.search import run_blocks

distributed = pytest.importorskip("distributed")  # the dask extra

ASK = dict(workload=[(1000, 200)], objectives={"itl_s": 0.02}, load={"requests_per_s": 2},
           tp=(1, 2), pp=(1,), max_batch=300)


def test_local_cluster_gives_the_serial_plan():
    serial = plan("llama-3-8b", {"a100-80gb": 2}, **ASK)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        # small blocks, so that both workers get some
        found = plan("llama-3-8b", {"a100-80gb": 2}, scheduler=cluster.scheduler_address,
                     block_points=64, **ASK)
    assert found.points == serial.points and found.meeting == serial.meeting > 0
    assert found.best == serial.best
    assert found.front == serial.front


def test_unreachable_scheduler_is_an_error_naming_it():
    with pytest.raises(SymroofError, match=r"scheduler tcp://127\.0\.0\.1:9: cannot reach"):
        run_blocks([object()], scheduler="tcp://127.0.0.1:9", timeout=0.5)  # type: ignore[list-item]
