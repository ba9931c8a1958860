"""The ``symroof`` command: a table of subcommands, one module each, over the library.

Every command takes ``--json``. Bad input prints one line ``symroof: error: ...`` to
stderr and exits 2, never a traceback; a closed pipe (``| head``) ends quietly.

Only the module of the command being run is imported, so ``symroof --version`` and each
command start as fast as their own imports allow. To add a command, write a module with
a ``COMMANDS`` tuple of :class:`~symroof.cli.common.Command` and add one line to
:data:`COMMANDS` below.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

from symroof.cli.base import Command, Parser
from symroof.errors import SymroofError
from symroof.version import __version__

__all__ = ["main", "build_parser", "COMMANDS"]


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
    Entry("atlas", "symroof.cli.atlas", "every crossover of a workload's parts and ridges"),
    Entry("report", "symroof.cli.report", "a claim file (or the seed appendix) into an appendix"),
    Entry("check", "symroof.cli.check", "verify the claims annotated in a Markdown/LaTeX file"),
    Entry("plot", "symroof.cli.plot", "charts: a chip's roofline with workloads, or a crossover"),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; ``command``'s options are added (all commands' when None)."""
    p = Parser(prog="symroof", description="Closed-form roofline formulas for NN workloads.")
    p.add_argument("--version", action="version", version=f"symroof {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for entry in COMMANDS:
        child = sub.add_parser(entry.name, help=entry.help)
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
        chosen = next((a for a in args_list if not a.startswith("-")), None)
        known = {e.name: e for e in COMMANDS}
        parser = build_parser(chosen if chosen in known else "")
        if not args_list:
            parser.print_help()
            return 0
        args = parser.parse_args(args_list)
        return int(_command(known[args.command]).run(args, print))
    except SymroofError as exc:  # one line, whatever the input held
        line = str(exc).replace("\r", "\\r").replace("\n", "\\n")
        print(f"symroof: error: {line[:2000]}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except BrokenPipeError:  # a reader such as `head` closed the pipe: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 0
    except OSError as exc:  # a full disk or a closed stdout: one line, status 1
        print(f"symroof: error: cannot write output ({exc.strerror or exc})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
