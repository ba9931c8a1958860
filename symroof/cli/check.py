"""``symroof check DOC``: verify the claims annotated in a document (Markdown, Quarto,
MyST, LaTeX, reStructuredText or a Jupyter notebook; :mod:`symroof.verify.annotations`).

Prints each mismatch with the derived value and the line; exits 1 on any mismatch, 2 if
an annotation cannot be read or computed, 0 when every claim holds; every mismatch and
error is printed, each with its line (``cell N:LINE`` in a notebook). What it prints quotes
the document, so control characters (ESC, C1, bidirectional overrides) are written as
escapes; chip files the annotations name resolve only to shipped chips, files beside the
document and folders given with ``--chips``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from symroof import hardware
from symroof.cli.base import Command, Output
from symroof.errors import SymroofError
from symroof.present.appendix import claims_text
from symroof.present.commands import dumps
from symroof.present.check import check_lines
from symroof.present.escape import terminal_json, terminal_safe
from symroof.verify import run_claims
from symroof.verify.annotations import load_document

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("document", nargs="+", help="a document with annotations: Markdown (.md), "
                   "Quarto (.qmd), MyST (.md, .myst), LaTeX (.tex), reStructuredText (.rst) "
                   "or a Jupyter notebook (.ipynb); several may be given (the pre-commit "
                   "hook passes every changed file), each checked and reported in turn")
    p.add_argument("--chips", action="append", default=[], metavar="DIR",
                   help="a folder of chip files the annotations may name (besides the "
                   "document's own folder and the shipped chips); may be repeated")
    p.add_argument("--json", action="store_true", help="every claim as JSON (with several "
                   "documents, a list of {document, claims})")


def _check(document: str, chips: list[str]) -> tuple[str, list[str], str, bool]:
    """One document checked: (its claims as JSON, its lines, its first error, a mismatch)."""
    claims, relabel = load_document(document)  # relabel: a notebook's cell N:LINE
    with hardware.chip_files([Path(document).parent, *chips]):
        outcome = run_claims(claims)
    errors = [relabel(r.message) for r in outcome.results if r.status == "error"]
    return (relabel(claims_text(outcome).rstrip("\n")),
            [relabel(line) for line in check_lines(outcome)],
            f"{len(errors)} annotation(s) could not be checked; first: {errors[0]}"
            if errors else "", any(r.status == "mismatch" for r in outcome.results))


def _run(args: argparse.Namespace, out: Output) -> int:
    documents: list[str] = args.document
    if len(documents) == 1:  # one document: its errors end the command with one line
        text, lines, error, mismatch = _check(documents[0], args.chips)
        if args.json:
            out(terminal_json(text))
        else:
            for line in lines:
                out(terminal_safe(line))
        if error:
            raise SymroofError(error)
        return 1 if mismatch else 0
    failed: list[str] = []
    mismatched = False
    items: list[dict[str, object]] = []
    for document in documents:  # each one reported, whatever the one before it held
        try:
            text, lines, error, mismatch = _check(document, args.chips)
        except SymroofError as err:
            text, lines, error, mismatch = "[]", [f"error: {err}"], str(err), False
        mismatched |= mismatch
        if error:
            failed.append(error)
        if args.json:
            items.append({"document": document, "claims": json.loads(text)})
        else:
            for line in lines[:-1]:
                out(terminal_safe(line))
            out(terminal_safe(lines[-1] if lines[-1].startswith("error: ") else
                              f"{document}: {lines[-1]}"))   # whose summary it is
    if args.json:
        out(terminal_json(dumps(items)))
    if failed:
        raise SymroofError(f"{len(failed)} of {len(documents)} documents could not be checked "
                           f"whole; first: {failed[0]}")
    return 1 if mismatched else 0


COMMANDS = (Command("check", "verify the claims annotated in a document (Markdown, Quarto, "
                    "MyST, LaTeX, reStructuredText, Jupyter)",
                    _configure, _run),)
