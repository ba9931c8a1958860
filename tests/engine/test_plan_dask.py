"""The plan on a Dask distributed cluster: a LocalCluster of two in-process workers gives
the serial answer; an address where no scheduler answers is a one-line error.

Both run in a child Python: distributed leaves threads behind (its event loop, profiler
and offload threads), and a test process with threads cannot fork, so every later
guarded computation in it would run without the budget's seconds and memory limits
(tests/conftest.py fails a test that leaves a thread running)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent('''
    import json
    import distributed
    from symroof.errors import SymroofError
    from symroof.plan import plan
    from symroof.plan.search import run_blocks
    ask = dict(workload=[(1000, 200)], objectives={"itl_s": 0.02},
               load={"requests_per_s": 2}, tp=(1, 2), pp=(1,), max_batch=300)
    serial = plan("llama-3-8b", {"a100-80gb": 2}, **ask)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        # small blocks, so that both workers get some
        found = plan("llama-3-8b", {"a100-80gb": 2}, scheduler=cluster.scheduler_address,
                     block_points=64, **ask)
    try:
        run_blocks([object()], scheduler="tcp://127.0.0.1:9", timeout=0.5)
        unreachable = None
    except SymroofError as err:
        unreachable = str(err)
    print(json.dumps({
        "points": [found.points, serial.points], "meeting": [found.meeting, serial.meeting],
        "best": found.best == serial.best, "front": found.front == serial.front,
        "unreachable": unreachable}))
''')


@pytest.fixture(scope="module")
def child() -> dict:
    try:
        import distributed  # noqa: F401  (the dask extra; CI installs it)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("distributed is not installed (pip install -e '.[dask]')")
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_local_cluster_gives_the_serial_plan(child):
    found, serial = child["points"]
    assert found == serial
    assert child["meeting"][0] == child["meeting"][1] > 0
    assert child["best"] and child["front"]


def test_unreachable_scheduler_is_an_error_naming_it(child):
    assert child["unreachable"] is not None
    assert "scheduler tcp://127.0.0.1:9: cannot reach" in child["unreachable"]
