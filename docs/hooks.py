"""MkDocs hook: the generated parts of the docs, filled in at build time from the code.

A page writes a marker where generated text goes, so nothing generated is committed and
nothing can drift from the code:

- ``<!-- symroof: reference -->``: the claim-file reference (``symroof report --reference``);
- ``<!-- symroof: help -->``: every command's ``--help``;
- ``<!-- symroof: conventions -->``: every named convention (symroof/options.py), each value
  with its meaning and the figure it reproduces, as the source comments state them;
- ``<!-- symroof: hardware -->``: the shipped chips with their peak, bandwidth and ridge;
- ``<!-- symroof: include PATH LANG -->``: a file of the repository, verbatim, fenced.

tests/project/test_docs.py builds the site with ``mkdocs build --strict`` and checks the
examples on the pages.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import io
import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_MARKER = re.compile(r"<!-- symroof: (\w+)((?: [^ >]+)*) -->")


def reference() -> str:
    from symroof.verify.reference import reference as text
    return text().split("\n", 2)[2]  # the page has its own title


def help_text() -> str:
    """Each command's ``--help`` (80 columns), under a heading per command."""
    from symroof.cli import COMMANDS, main
    os.environ["COLUMNS"] = "80"   # argparse wraps at the terminal's width
    out = []
    for entry in COMMANDS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main([entry.name, "--help"])
        out += [f"## symroof {entry.name}", "", entry.help[0].upper() + entry.help[1:] + ".",
                "", "```text", buf.getvalue().rstrip(), "```", ""]
    return "\n".join(out)


def _member_comments(cls: type) -> dict[str, str]:
    """``NAME = "value"  # comment`` lines of an enum's source: the comment per member."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    return {m.group(1): m.group(2).strip() for m in
            re.finditer(r"^\s+([A-Z_0-9]+) = \"[^\"]*\"\s*#\s*(.*)$", source, re.M)}


def conventions() -> str:
    """Every option of symroof.options: its question, its values and what each reproduces."""
    from symroof import options
    out = []
    enums = [c for c in vars(options).values() if isinstance(c, type) and
             issubclass(c, enum.Enum) and c.__module__ == options.__name__]
    for cls in sorted(enums, key=lambda c: inspect.getsourcelines(c)[1]):  # source order
        name = cls.__name__
        doc = " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())
        comments = _member_comments(cls)
        out += [f"## `{name}`", "", doc, "", "| value | meaning, and the figure it reproduces |",
                "| --- | --- |"]
        for member in cls:
            out.append(f"| `{member.value}` | {comments.get(member.name, '')} |".replace(
                "| |", "|  |"))
        out.append("")
    return "\n".join(out)


def hardware_table() -> str:
    """The shipped chips: peak (16-bit, or the widest the chip has), main memory, ridge."""
    from symroof import hardware
    from symroof.present.numbers import text_number
    rows = ["| file | chip | main memory bandwidth | capacity | bf16 peak | bf16 ridge |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    for name in hardware.names():
        hw = hardware.get(name)
        try:
            peak = f"{text_number(hw.peak('bf16') / 10**12)} TFLOP/s"
            ridge = f"{text_number(hw.ridge('bf16'))} FLOP/B"
        except Exception:  # noqa: BLE001 - a chip without a 16-bit peak (a CPU, the TPU v1)
            peak = ridge = "-"
        cap = hw.capacity(None)
        rows.append(f"| `{name}.toml` | {hw.display_name} | "
                    f"{text_number(hw.bandwidth(None) / 10**9)} GB/s | "
                    f"{'-' if cap is None else text_number(cap / 10**9) + ' GB'} | {peak} | "
                    f"{ridge} |")
    return "\n".join(rows) + "\n"


def include(path: str, lang: str = "") -> str:
    text = (ROOT / path).read_text(encoding="utf-8").rstrip("\n")
    return f"```{lang}\n{text}\n```"


def expand(markdown: str) -> str:
    """``markdown`` with every marker replaced by its generated text."""
    def one(m: re.Match[str]) -> str:
        kind, args = m.group(1), m.group(2).split()
        makers = {"reference": reference, "help": help_text, "conventions": conventions,
                  "hardware": hardware_table, "include": include}
        if kind not in makers:
            raise ValueError(f"unknown docs marker {kind!r}")
        return str(makers[kind](*args))
    return _MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return expand(markdown)
