"""The atlas's records: parts, ridges, entries (one pair in one variable), the budget.

Plain typed data a template can walk: every formula is a SymPy expression, every
verdict an enum, every lever a sentence from :data:`LEVERS`.

>>> Ridge(RIDGE).name
'R'
>>> from symroof.symbols import B, D, S
>>> Invariant(S * B, 6 * D).form
Eq(B*S, 6*D)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

import sympy as sp

from symroof.errors import SymroofError
from symroof.rich import Rich
from symroof.solve import Crossover
from symroof.symbols import quantity

__all__ = ["RIDGE", "LEVERS", "Status", "Reason", "AtlasBudget", "Part", "Ridge", "Side",
           "Asymptote", "Invariant", "Entry", "Atlas"]

#: The symbolic ridge point (FLOP per byte), the ``R`` of the seeds' existence conditions.
RIDGE = quantity("R")

#: What shrinks each part (or helps on each side of a ridge): the lever a reader pulls
#: where that part dominates.
LEVERS: Mapping[str, str] = MappingProxyType({
    "F_weights": "fewer weight FLOPs: a smaller or sparser (MoE) model, faster low-precision math",
    "F_attention": "fewer attention FLOPs: shorter or windowed context, sparse attention",
    "F_other": "fewer elementwise FLOPs: fuse or drop softmax, norm and activation passes",
    "Q_weight": "quantize weights; batch more sequences per weight read",
    "Q_activation": "keep activations on chip: fuse ops, recompute instead of storing",
    "Q_kv_cache": "shrink the KV cache: GQA/MQA/MLA, KV quantization, shorter context",
    "Q_gradient": "fewer gradient bytes: lower-precision gradients, fused optimizer steps",
    "Q_optimizer_state": "fewer optimizer bytes: 8-bit or sharded (ZeRO) optimizer state",
    "Q_communication": "send fewer bytes: less tensor parallelism, overlap or fuse collectives",
    "memory": "move fewer bytes: batch, quantize, fuse",
    "compute": "do less math: lower precision, a better kernel",
})


class Status(StrEnum):
    """What the atlas found for one pair in one variable."""

    CROSSES = "crosses"     # at least one positive solution (maybe under conditions)
    NEVER = "never"         # no positive solution, for the reason given
    UNSOLVED = "unsolved"   # outside the budget or without a closed form


class Reason(StrEnum):
    """Why a pair never crosses, or was not solved."""

    ZERO = "zero"                    # one side is 0 for this workload (no such part)
    EQUAL = "equal"                  # the two sides are the same expression
    INDEPENDENT = "independent"      # neither side depends on the variable
    PROPORTIONAL = "proportional"    # both scale alike: their ratio is free of the variable
    ONE_SIGN = "one_sign"            # the difference keeps one sign for every positive value
    NO_POSITIVE_ROOT = "no_positive_root"  # every root is negative, zero or complex
    NOT_RATIONAL = "not_rational"    # not a rational function of the variable
    DEGREE = "degree"                # the polynomial to solve is above AtlasBudget.max_degree
    SIZE = "size"                    # the expressions are above AtlasBudget.max_ops / max_terms
    NO_CLOSED_FORM = "no_closed_form"  # the solver found no closed form
    TIME = "time"                    # AtlasBudget.seconds was spent before this pair


#: Wall time for a whole atlas by default (read when a budget is made, so a test suite on a
#: busy machine may raise it for every atlas at once).
DEFAULT_SECONDS = 30.0


@dataclass(frozen=True)
class AtlasBudget:
    """Limits on the work per pair; a pair beyond them is reported as unsolved."""

    max_degree: int = 2        # closed-form roots up to this degree (above 2: numeric only)
    max_ops: int = 400         # operations in either side before anything is expanded
    max_terms: int = 200       # terms of the difference's numerator once cancelled
    # wall time for a whole atlas; later pairs are not started
    seconds: float = field(default_factory=lambda: DEFAULT_SECONDS)

    def __post_init__(self) -> None:
        for name in ("max_degree", "max_ops", "max_terms"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise SymroofError(f"AtlasBudget {name}: expected a positive integer, got {value!r}")
        if not isinstance(self.seconds, (int, float)) or not 0 <= self.seconds <= 3600:
            raise SymroofError(f"AtlasBudget seconds: expected 0 to 3600, got {self.seconds!r}")


@dataclass(frozen=True)
class Part:
    """One part of F (``F_weights``, ``F_attention``, ``F_other``) or of Q (``Q_<kind>``)."""

    name: str
    quantity: str              # "flops" or "bytes"
    expr: sp.Expr
    lever: str


@dataclass(frozen=True)
class Ridge:
    """A ridge point: the symbol R, or a chip's peak/bandwidth at a precision and level."""

    value: sp.Expr
    hardware: str | None = None
    precision: str | None = None
    level: str | None = None
    #: values the chip's ridge implies: ``b`` from the precision, where the workload has it
    subs: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict, hash=False)

    @property
    def name(self) -> str:
        """The symbol (``R``), or ``R[h100-sxm bf16 hbm]`` for a chip's."""
        if self.hardware is None:
            return str(self.value)
        return f"R[{self.hardware} {self.precision} {self.level}]"


@dataclass(frozen=True)
class Side:
    """Who dominates on one side of a crossing, and the lever that helps there."""

    dominant: str
    other: str
    lever: str
    bound: str | None = None   # ridge entries: "memory" or "compute"


@dataclass(frozen=True)
class Asymptote:
    """``of`` (a ratio ``lhs/rhs``, or ``I``) as ``var`` tends to ``to`` (0 or oo)."""

    of: str
    var: sp.Symbol
    to: sp.Expr
    value: sp.Expr


@dataclass(frozen=True)
class Invariant:
    """A product constant along a crossing curve: ``S*B = 6*D``."""

    product: sp.Expr
    value: sp.Expr

    @property
    def form(self) -> sp.Equality:
        return sp.Eq(self.product, self.value, evaluate=False)


@dataclass(frozen=True)
class Entry(Rich):
    """One pair ``lhs = rhs`` solved in ``var`` (None: the verdict holds in every variable)."""

    kind: str                            # "flops", "bytes" or "ridge"
    lhs: str
    rhs: str
    lhs_expr: sp.Expr
    rhs_expr: sp.Expr
    var: sp.Symbol | None
    status: Status
    solutions: tuple[Crossover, ...] = ()
    textbook: tuple[Crossover, ...] = ()     # the solutions with the named symbols (P)
    invariants: tuple[Invariant, ...] = ()
    below: Side | None = None                # as var -> 0 (below the crossing)
    above: Side | None = None                # as var -> oo (above it)
    asymptotes: tuple[Asymptote, ...] = ()
    reason: Reason | None = None
    detail: sp.Expr | None = None            # the ratio lhs/rhs, or the degree found
    ridge: Ridge | None = None


@dataclass(frozen=True)
class Atlas(Rich):
    """Every crossover of a workload over ``over``; see :func:`atlas`."""

    workload: str
    over: tuple[sp.Symbol, ...]
    parts: tuple[Part, ...]
    ridges: tuple[Ridge, ...]
    entries: tuple[Entry, ...]
    limits: tuple[Asymptote, ...]
    named: Mapping[sp.Symbol, sp.Expr] = field(hash=False)
    budget: AtlasBudget = field(default_factory=lambda: AtlasBudget())

    def __str__(self) -> str:
        """``print(atlas)``: the table ``symroof atlas`` prints, one line per crossover."""
        # by name, at display time: the text lives in symroof.present, a layer above
        shown = importlib.import_module("symroof.present.atlas").atlas_lines(self)
        return "\n".join(shown).rstrip("\n")

    def __repr__(self) -> str:
        return (f"<Atlas of {self.workload!r} over {', '.join(map(str, self.over))}: "
                f"{len(self.crossings)} crossing(s), {len(self.never)} never, "
                f"{len(self.unsolved)} unsolved; print() shows the table>")

    def _having(self, status: Status) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.status is status)

    @property
    def crossings(self) -> tuple[Entry, ...]:
        return self._having(Status.CROSSES)

    @property
    def never(self) -> tuple[Entry, ...]:
        return self._having(Status.NEVER)

    @property
    def unsolved(self) -> tuple[Entry, ...]:
        return self._having(Status.UNSOLVED)

    def find(self, lhs: str, rhs: str, var: sp.Symbol | None = None) -> Entry:
        """The entry for ``lhs = rhs`` (either order) in ``var``; a part that is 0 has one
        entry for every variable."""
        for e in self.entries:
            if {e.lhs, e.rhs} == {lhs, rhs} and (e.var == var or e.var is None):
                return e
        known = sorted({f"{e.lhs} = {e.rhs}" for e in self.entries})
        raise SymroofError(f"atlas of {self.workload!r}: no entry {lhs} = {rhs} in {var}; "
                           f"it has {', '.join(known)}")
