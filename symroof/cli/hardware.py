"""``symroof hardware list|show``: the shipped chip specs."""

from __future__ import annotations

import argparse

from symroof import hardware
from symroof.cli.common import Command, Output
from symroof.errors import SymroofError
from symroof.present.commands import dumps
from symroof.present.records import to_dict, to_text

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _run(args: argparse.Namespace, out: Output) -> int:
    if args.action == "list":
        if args.name:
            raise SymroofError(f"hardware list: takes no name (got {args.name!r}); "
                               "use 'symroof hardware show NAME'")
        names = hardware.names()
        if args.json:
            out(dumps({"hardware": list(names)}))
        else:
            for name in names:
                out(f"{name:16s} {hardware.get(name).display_name}")
        return 0
    if not args.name:
        raise SymroofError("hardware show: expected a chip name (see 'symroof hardware list')")
    spec = hardware.get(args.name)
    out(dumps(to_dict(spec)) if args.json else to_text(spec))
    return 0


COMMANDS = (Command("hardware", "list or show chip specs", _configure, _run),)
