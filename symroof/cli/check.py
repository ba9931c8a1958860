"""``symroof check DOC``: verify the claims annotated in a Markdown or LaTeX document.

Prints each mismatch with the derived value and the line; exits 1 on any mismatch, 2 if
an annotation cannot be read or computed, 0 when every claim holds. What it prints quotes
the document, so control characters (ESC, C1, bidirectional overrides) are written as
escapes; chip files the annotations name resolve only to shipped chips, files beside the
document and folders given with ``--chips``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from symroof import hardware
from symroof.cli.base import Command, Output
from symroof.errors import SymroofError
from symroof.present.appendix import claims_text
from symroof.present.check import check_lines
from symroof.present.escape import terminal_json, terminal_safe
from symroof.verify import run_claims
from symroof.verify.annotations import load_annotated

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("document", help="a Markdown (.md) or LaTeX (.tex) file with annotations")
    p.add_argument("--chips", action="append", default=[], metavar="DIR",
                   help="a folder of chip files the annotations may name (besides the "
                   "document's own folder and the shipped chips); may be repeated")
    p.add_argument("--json", action="store_true", help="every claim as JSON")


def _run(args: argparse.Namespace, out: Output) -> int:
    claims = load_annotated(args.document)
    with hardware.chip_files([Path(args.document).parent, *args.chips]):
        outcome = run_claims(claims)
    if args.json:
        out(terminal_json(claims_text(outcome).rstrip("\n")))
    else:
        for line in check_lines(outcome):
            out(terminal_safe(line))
    errors = [r.message for r in outcome.results if r.status == "error"]
    if errors:
        raise SymroofError(f"{len(errors)} annotation(s) could not be checked; first: "
                           f"{errors[0]}")
    return 1 if any(r.status == "mismatch" for r in outcome.results) else 0


COMMANDS = (Command("check", "verify the claims annotated in a Markdown or LaTeX document",
                    _configure, _run),)
