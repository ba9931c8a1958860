"""Atlases side by side: how each crossover moves across a family of workloads.

The members are workloads of one shape (one model at FP16, FP8 and INT4 weights; MHA
against GQA); each row is one pair in one variable with every member's entry. Where the
family is symbolic (weights at ``b_w`` bytes), ``general`` is its atlas, and each row
carries the general formula that every member's value is an instance of.

>>> import symroof as sr
>>> from symroof.symbols import B, S
>>> m = sr.models.get("seed-6.4b")
>>> fam = family({p: sr.workloads.decode(m.with_precision(weights=p, kv_cache="bf16"), B, S)
...               for p in ("bf16", "int4")}, over=[S])
>>> [e.solutions[0].value for e in fam.row("Q_kv_cache", "Q_weight", S).entries]
[24576/B, 6144/B]
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof.analysis import Analysis
from symroof.atlas.build import atlas
from symroof.atlas.records import Atlas, Entry
from symroof.errors import SymroofError
from symroof.rich import Rich

__all__ = ["Family", "FamilyRow", "family"]


@dataclass(frozen=True)
class FamilyRow:
    """One pair in one variable across the family: an entry per member (None where a
    member has no such pair), and the general entry where the family is symbolic."""

    lhs: str
    rhs: str
    var: sp.Symbol | None
    entries: tuple[Entry | None, ...]
    general: Entry | None = None


@dataclass(frozen=True)
class Family(Rich):
    """Members' atlases and their rows; see :func:`family`."""

    names: tuple[str, ...]
    atlases: tuple[Atlas, ...]
    general: Atlas | None
    rows: tuple[FamilyRow, ...]

    def __str__(self) -> str:
        """``print(family)``: the aligned table ``symroof atlas --compare`` prints."""
        # by name, at display time: the text lives in symroof.present, a layer above
        shown = importlib.import_module("symroof.present.atlas").family_lines(self)
        return "\n".join(shown)

    def __repr__(self) -> str:
        return (f"<Family of {len(self.names)} ({', '.join(self.names)}): {len(self.rows)} "
                "row(s); print() shows the table>")

    def member(self, name: str) -> Atlas:
        """The atlas of member ``name``."""
        if name not in self.names:
            raise SymroofError(f"family: no member {name!r}; members: {', '.join(self.names)}")
        return self.atlases[self.names.index(name)]

    def row(self, lhs: str, rhs: str, var: sp.Symbol | None = None) -> FamilyRow:
        """The row for ``lhs = rhs`` (either order) in ``var``."""
        for r in self.rows:
            if {r.lhs, r.rhs} == {lhs, rhs} and (r.var == var or r.var is None):
                return r
        raise SymroofError(f"family: no row {lhs} = {rhs} in {var}; rows: "
                           f"{', '.join(sorted({f'{r.lhs} = {r.rhs}' for r in self.rows}))}")


def _key(e: Entry) -> tuple[frozenset[str], sp.Symbol | None]:
    return frozenset((e.lhs, e.rhs)), e.var


def family(members: Mapping[str, Analysis], *, over: Iterable[sp.Symbol] | None = None,
           general: Analysis | None = None, **options: Any) -> Family:
    """The atlas of each member (same ``over`` and options, see :func:`atlas`), row by row.

    A pair one member has in every variable (a part that is 0 there) and another in each
    variable is matched by its variable.
    """
    if not isinstance(members, Mapping) or not members:
        raise SymroofError("family: expected a mapping of names to workloads, e.g. "
                           "{'fp16': decode(...), 'int4': decode(...)}")
    names = tuple(members)
    for name in names:
        if not isinstance(name, str):
            raise SymroofError(f"family: member names must be strings, got {name!r}")
    variables = None if over is None else tuple([over] if isinstance(over, sp.Symbol) else over)
    atlases = tuple(atlas(members[n], variables, **options) for n in names)
    gen = None if general is None else atlas(general, variables, **options)
    order: list[tuple[frozenset[str], sp.Symbol | None]] = []
    found: list[dict[tuple[frozenset[str], sp.Symbol | None], Entry]] = []
    for a in ((gen,) if gen is not None else ()) + atlases:
        table = {}
        for e in a.entries:
            table[_key(e)] = e
            if _key(e) not in order:
                order.append(_key(e))
        found.append(table)
    general_table, member_tables = (found[0], found[1:]) if gen is not None else ({}, found)
    per_variable = {pair for pair, var in order if var is not None}
    rows = []
    for key in order:
        if key[1] is None and key[0] in per_variable:
            continue  # matched through each variable's row
        entries = tuple(_lookup(t, key) for t in member_tables)
        first = next(e for e in (_lookup(general_table, key), *entries) if e is not None)
        rows.append(FamilyRow(first.lhs, first.rhs, key[1], entries, _lookup(general_table, key)))
    return Family(names, atlases, gen, tuple(rows))


def _lookup(table: Mapping[tuple[frozenset[str], sp.Symbol | None], Entry],
            key: tuple[frozenset[str], sp.Symbol | None]) -> Entry | None:
    """The entry for ``key``, or the member's variable-free entry for the same pair."""
    return table.get(key) or table.get((key[0], None))
