"""``symroof.cli.run``, the command's entry point, ends the process without the heap's
teardown: the exit handlers still run, the output still arrives whole, the status is the
command's, and where another thread runs the ordinary exit joins it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
flag = Path(sys.argv[1])
atexit.register(lambda: flag.write_text("ran"))
if sys.argv[2] == "thread":   # a thread still running when main returns
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
sys.argv = ["symroof", *sys.argv[3:]]
from symroof.cli import run
run()
print("not reached")
"""


def _run(tmp_path, mode, *argv):
    flag = tmp_path / f"flag-{mode}-{len(argv)}"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(flag), mode, *argv],
                          capture_output=True, text=True, timeout=300)
    return done, flag


def test_the_exit_handlers_run_and_the_output_arrives_whole(tmp_path):
    done, flag = _run(tmp_path, "plain", "eval", "gemm", "--set", "M=1,2,3,4,5,6,7,8",
                      "--set", "N=64", "--set", "K=64", "--hardware", "h100-sxm")
    assert done.returncode == 0, done.stderr
    assert flag.read_text() == "ran"
    rows = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(rows) >= 8 and "not reached" not in done.stdout


def test_the_status_is_the_commands(tmp_path):
    done, flag = _run(tmp_path, "plain", "eval", "gemm", "--set", "M=0")
    assert done.returncode == 2 and done.stderr.startswith("symroof: error: ")
    assert flag.read_text() == "ran"


def test_another_thread_is_joined_by_the_ordinary_exit(tmp_path):
    done, flag = _run(tmp_path, "thread", "--version")
    assert done.returncode == 0 and "thread done" in done.stdout
    assert flag.read_text() == "ran"
