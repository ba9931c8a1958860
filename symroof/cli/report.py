"""``symroof report FILE|appendix``: a claim file into an appendix (Markdown, LaTeX, JSON).

``symroof report appendix`` renders the seed appendix from the claim file that ships
with symroof into ``reports/``: ``seed_appendix.md``, ``seed_appendix.tex``,
``seed_claims.json`` and the charts. The set of files is written whole (every temporary
file first, then each renamed: a full disk leaves the old set as it was), never outside
``--out`` whatever a chart is called, and the same command always writes the same bytes.

A claim file may come from someone else: while it runs, the chip files it names resolve
only to shipped chips, files beside it, or files in a folder given with ``--chips``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from symroof import hardware
from symroof.cli.base import Command, Output
from symroof.errors import SymroofError
from symroof.files import write_files
from symroof.present.appendix import claims_text, prepare, render_latex, render_markdown
from symroof.present.commands import dumps
from symroof.present.escape import terminal_json, terminal_safe
from symroof.present.claim_charts import render_outcome_charts
from symroof.verify import load_claims, run_claims
from symroof.verify.appendix import seed_claims

__all__ = ["COMMANDS", "FORMATS", "write_report"]

FORMATS = ("md", "tex", "json")


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="FILE|appendix", nargs="?",
                   help="a claim file (TOML), or 'appendix' for the seed appendix")
    p.add_argument("--reference", action="store_true",
                   help="print the claim-file reference (every recipe node, quantity, unit, "
                   "rounding rule and status) as Markdown, and nothing else")
    p.add_argument("--out", default=None, help="output folder (default: reports/ for the "
                   "appendix, the claim file's folder otherwise)")
    p.add_argument("--format", default="md,tex,json",
                   help="comma-separated: md, tex, json (default all three)")
    p.add_argument("--chips", action="append", default=[], metavar="DIR",
                   help="a folder of chip files the claim file may name (besides its own "
                   "folder and the shipped chips); may be repeated")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _formats(text: str) -> list[str]:
    chosen = [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        raise SymroofError(f"--format: expected some of {', '.join(FORMATS)}, got {text!r}")
    return chosen


def write_report(source: str, out: Path, formats: list[str],
                 chips: Sequence[str | Path] = ()) -> tuple[dict[str, int], list[Path], list[str]]:
    """Render ``source`` into ``out``: (status counts, files written, error messages).
    The chip files the claims name resolve only to shipped chips, files beside
    ``source`` and files in ``chips``."""
    if source == "appendix":
        claims, stem, json_name = seed_claims(), "seed_appendix", "seed_claims.json"
        command, beside = "symroof report appendix", []
    else:
        claims = load_claims(source)
        stem = Path(source).stem
        json_name, command = f"{stem}.json", f"symroof report {Path(source).name}"
        beside = [Path(source).parent]
    with hardware.chip_files([*beside, *chips]):
        outcome = run_claims(claims)
        outcome, charts = render_outcome_charts(outcome)   # a chart that fails is its own error
    texts: dict[Path, str] = {}
    # every claim's block in both flavours at once, side by side on the cores there are
    prepared = prepare(outcome, [f for f in ("md", "tex") if f in formats])
    if "md" in formats:
        texts[Path(f"{stem}.md")] = render_markdown(outcome, charts, command, prepared)
        for ch in charts:
            texts[Path("charts") / f"{ch.id}.svg"] = ch.svg
    if "tex" in formats:
        texts[Path(f"{stem}.tex")] = render_latex(outcome, charts, command, prepared)
    if "json" in formats:
        texts[Path(json_name)] = claims_text(outcome)
    write_files(out, texts)  # every text is rendered before the first is written
    errors = [r.message for r in outcome.results if r.status == "error"]
    return outcome.counts, [out / p for p in texts], errors


def _run(args: argparse.Namespace, out: Output) -> int:
    if args.reference:
        if args.source is not None:
            raise SymroofError("--reference prints the reference; give no claim file with it")
        from symroof.verify.reference import reference  # only this flag needs it
        out(reference().rstrip("\n"))
        return 0
    if args.source is None:
        raise SymroofError("report: expected a claim file (or 'appendix'), or --reference")
    folder = Path(args.out) if args.out else (
        Path("reports") if args.source == "appendix" else Path(args.source).parent)
    if folder.exists() and not folder.is_dir():   # refused before any claim runs
        raise SymroofError(f"--out {folder}: not a folder (the report is a set of files)")
    counts, written, errors = write_report(args.source, folder, _formats(args.format), args.chips)
    if args.json:
        out(terminal_json(dumps({"counts": counts, "written": [str(p) for p in written],
                                 "errors": errors})))
    else:
        for path in written:
            out(terminal_safe(f"wrote {path}"))
        for message in errors:   # every error of the file, each naming its claim and field
            out(terminal_safe(f"error: {message}"))
        out(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if errors:
        raise SymroofError(f"{len(errors)} claim(s) could not be computed (each is listed "
                           f"above, and in the report); first: {errors[0]}")
    return 0


COMMANDS = (Command("report", "a claim file (or the seed appendix) into Markdown, LaTeX, JSON",
                    _configure, _run),)
