"""``symroof sim``: write the Try-it page, seed 000's roofline simulation, as one HTML file."""

from __future__ import annotations

import argparse

from symroof.cli.base import Command, Output
from symroof.files import write_text
from symroof.present.commands import dumps
from symroof.present.page import DEFAULT_OUT, render_page, sim_workloads

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                   help=f"where to write the page (default {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _run(args: argparse.Namespace, out: Output) -> int:
    page = render_page()
    write_text(args.out, page)
    size = len(page.encode("utf-8"))
    if args.json:
        out(dumps({"out": args.out, "bytes": size,
                   "workloads": [w.key for w in sim_workloads()]}))
    else:
        out(f"wrote {args.out} ({size} bytes): the Try-it page, one self-contained HTML file")
    return 0


COMMANDS = (Command("sim", "the Try-it page (one self-contained HTML file)", _configure, _run),)
