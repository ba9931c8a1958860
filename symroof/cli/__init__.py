"""The ``symroof`` command: a table of subcommands, one module each, over the library.

Every command takes ``--json``. Bad input prints one line ``symroof: error: ...`` to
stderr and exits 2, never a traceback; a closed pipe (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from symroof.cli import derive, hardware, solve
from symroof.cli.common import Command, Parser
from symroof.errors import SymroofError
from symroof.version import __version__

__all__ = ["main", "build_parser", "COMMANDS"]

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (*derive.COMMANDS, *solve.COMMANDS, *hardware.COMMANDS)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    p = Parser(prog="symroof", description="Closed-form roofline formulas for NN workloads.")
    p.add_argument("--version", action="version", version=f"symroof {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for cmd in COMMANDS:
        cmd.configure(sub.add_parser(cmd.name, help=cmd.help))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 output error, 2 bad input)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(args_list)
        command = next(c for c in COMMANDS if c.name == args.command)
        return command.run(args, print)
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
