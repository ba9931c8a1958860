"""The ``symroof`` command: a table of subcommands, one module each, over the library.

Every command takes ``--json`` and ``--budget NAME=VALUE`` (the limits of
:mod:`symroof.budget`). Bad input, or a request over a limit, prints one line
``symroof: error: ...`` to stderr and exits 2, never a traceback (control characters a
message quotes from a file are written as escapes); a closed pipe (``| head``) ends
quietly with status 0; an output that cannot be written (a full disk, a closed standard
output) prints one line and exits 1; a request that runs out of memory prints one line
and exits 2.

Only the module of the command being run is imported, so ``symroof --version`` and each
command start as fast as their own imports allow. To add a command, write a module with
a ``COMMANDS`` tuple of :class:`~symroof.cli.common.Command` and add one line to
:data:`COMMANDS` below.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NamedTuple, NoReturn

from symroof.budget import limits, parse_limits
from symroof.cli.base import Command, Parser
from symroof.errors import SymroofError
from symroof.present.escape import terminal_safe
from symroof.version import __version__

__all__ = ["main", "run", "build_parser", "COMMANDS"]


class Entry(NamedTuple):
    """A subcommand: its name, the module that defines it, and its one-line help."""

    name: str
    module: str
    help: str


#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Entry, ...] = (
    Entry("derive", "symroof.cli.derive", "formulas F, Q, I (and values at --set points)"),
    Entry("eval", "symroof.cli.derive", "derive plus roofline time and bound on --hardware"),
    Entry("solve", "symroof.cli.solve", "limits and crossovers of a workload's quantities"),
    Entry("hardware", "symroof.cli.hardware", "list or show chip specs"),
    Entry("sim", "symroof.cli.sim", "the Try-it page: seed 000's roofline simulation as HTML"),
    Entry("atlas", "symroof.cli.atlas", "every crossover of a workload's parts and ridges"),
    Entry("crossovers", "symroof.cli.crossovers",
          "a hybrid model's crossovers: decode bytes, state vs KV, intensity, scan chunk"),
    Entry("report", "symroof.cli.report", "a claim file (or the seed appendix) into an appendix"),
    Entry("check", "symroof.cli.check", "verify the claims annotated in a Markdown/LaTeX file"),
    Entry("plot", "symroof.cli.plot", "charts: a chip's roofline with workloads, or a crossover"),
    Entry("measure", "symroof.cli.measure", "the machine at hand; measured times beside bounds"),
    Entry("train", "symroof.cli.train", "training memory per GPU, whether it fits, FLOPs, days"),
    Entry("memory", "symroof.cli.memory", "what each device holds serving a model, and the fit"),
    Entry("capacity", "symroof.cli.memory", "how many sequences of a context fit beside the weights"),
    Entry("plan", "symroof.cli.plan", "will these chips serve this model? the plan and its formulas"),
)


def _add_budget(p: argparse.ArgumentParser, dest: str) -> None:
    p.add_argument("--budget", action="append", dest=dest, default=[], metavar="NAME=VALUE",
                   help="raise or lower a limit: rows, ops, degree, seconds, memory_mib, "
                   "digits, file_bytes (see README, 'Limits')")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; ``command``'s options are added (all commands' when None)."""
    p = Parser(prog="symroof", description="Closed-form roofline formulas for NN workloads.")
    p.add_argument("--version", action="version", version=f"symroof {__version__}")
    _add_budget(p, "budget")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for entry in COMMANDS:
        child = sub.add_parser(entry.name, help=entry.help)
        _add_budget(child, "budget_after")  # before or after the command
        if command is None or command == entry.name:
            _command(entry).configure(child)
    return p


def _command(entry: Entry) -> Command:
    module = importlib.import_module(entry.module)
    found: Command = next(c for c in module.COMMANDS if c.name == entry.name)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 output error, 2 bad input)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        known = {e.name: e for e in COMMANDS}
        chosen = next((a for a in args_list if a in known), None)
        parser = build_parser(chosen if chosen in known else "")
        if not args_list:
            parser.print_help()
            return 0
        args = parser.parse_args(args_list)
        if sys.stdout is None:  # started with its standard output closed (`>&-`)
            raise OSError("standard output is closed")
        with limits(**parse_limits([*args.budget, *args.budget_after])):
            code = int(_command(known[args.command]).run(args, print))
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at exit
        return code
    except SymroofError as exc:  # one line, whatever the input held
        return _error(str(exc))
    except RecursionError:  # a structure nested past Python's stack, from any reader
        return _error("input nested too deeply")
    except MemoryError:  # a request past the memory at hand that no check caught first
        return _error("out of memory (the request is too large for this machine; see "
                      "--budget)")
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except BrokenPipeError:  # a reader such as `head` closed the pipe: stop quietly
        _silence_stdout()
        return 0
    except OSError as exc:  # a full disk or a closed stdout: one line, status 1
        _silence_stdout()
        print(f"symroof: error: cannot write output ({exc.strerror or exc})", file=sys.stderr)
        return 1


def run() -> NoReturn:
    """The ``symroof`` command (and ``python -m symroof``): :func:`main`, then the end of
    the process without freeing its heap object by object.

    A report leaves a large heap of SymPy expressions and caches behind, and the
    interpreter's ordinary teardown frees it one object at a time: about 0.3 s of the
    seed appendix's 4-5 s, for nothing the command needs. So the exit handlers run
    (``atexit``: logging, temporary folders, clients), the standard streams are flushed,
    and the process ends with the command's status (``os._exit``). Where another thread
    still runs, the ordinary exit joins it instead.
    """
    code = main()
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # what the ordinary exit would run first
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone or a stream closed: nothing to say
            pass
    os._exit(code)


def _error(message: str) -> int:
    line = terminal_safe(message)[:2000]  # line breaks, ESC and the other controls as escapes
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    line = line.encode(encoding, "backslashreplace").decode(encoding)  # a lone surrogate
    print(f"symroof: error: {line}", file=sys.stderr)
    return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for a closed pipe or a full disk
    must not raise a second error when Python flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass


if __name__ == "__main__":
    sys.exit(main())
