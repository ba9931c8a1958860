"""The pieces every command module builds on, kept free of the library so that the
``symroof`` entry point imports nothing heavy before it knows the command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from symroof.errors import SymroofError

__all__ = ["Parser", "Command", "Output"]

#: Where a command writes a line of output.
Output = Callable[[str], None]


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one SymroofError line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("symroof").strip()
        raise SymroofError(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Command:
    """One ``symroof`` subcommand: its options and what it runs."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Output], int]


