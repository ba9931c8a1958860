"""IR nodes: frozen tensor and op dataclasses with SymPy fields (networkx node keys).

A tensor has a symbolic shape, a kind (what it holds: weights, activations, KV cache,
...), bytes per value, and a role (a value of the computation, its gradient, or a value
the backward pass recomputed). An op names its operand fields, writes ``out`` and
belongs to a group; cost rules and passes match groups, never classes.

>>> from symroof.symbols import M, K
>>> Tensor("A", (M, K), Kind.ACTIVATION, 2).nbytes
2*K*M
>>> Gemm("x")
Traceback (most recent call last):
...
symroof.errors.SymroofError: gemm 'x': field 'a': expected a Tensor, got None
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, TypeVar, Union, dataclass_transform

import sympy as sp

from symroof.errors import SymroofError
from symroof.options import Saves, option
from symroof.symbols import b as _b

__all__ = [
    "Kind", "Role", "OpGroup", "Node", "Tensor", "Op", "Gemm", "Elementwise", "Reduce",
    "Gather", "Move", "View", "as_expr", "as_dim", "prod", "same_dim", "fmt_shape", "node",
]

Node = Union["Tensor", "Op"]
T = TypeVar("T")


class Kind(StrEnum):
    """What a tensor holds; traffic conventions select tensors by kind."""

    WEIGHT = "weight"                    # parameters, read by the forward pass
    ACTIVATION = "activation"            # inputs and intermediates of the computation
    KV_CACHE = "kv_cache"                # keys and values kept across decode steps
    GRADIENT = "gradient"                # gradients of the loss with respect to weights
    OPTIMIZER_STATE = "optimizer_state"  # master weights, moments (training)
    COMMUNICATION = "communication"      # bytes a device sends over a link (a collective)


class Role(StrEnum):
    """Where a tensor comes from; the backward pass sets it, footprints read it."""

    VALUE = "value"            # a value of the forward computation
    GRADIENT = "gradient"      # a gradient of the loss (of a weight or of a value)
    RECOMPUTED = "recomputed"  # a forward value the backward pass computes again


class OpGroup(StrEnum):
    """Op families; cost conventions and passes select ops by group, not by class."""

    CONTRACTION = "contraction"      # sums of products over a shared index (GEMM, conv as GEMM)
    ELEMENTWISE = "elementwise"      # one output per element from aligned inputs
    REDUCTION = "reduction"          # folds one axis (softmax denominators, norms)
    DATA_MOVEMENT = "data_movement"  # copies and rearranges values, no arithmetic


@dataclass_transform(frozen_default=True)
def node(cls: type[T]) -> type[T]:
    """A frozen dataclass whose hash is computed once (nodes are hashed on every graph
    lookup, and hashing their SymPy fields dominates large derivations).

    What a node caches (its hash, :func:`cached` values) lives in its ``__dict__`` under
    names starting with ``_``; pickles and copies leave it out, since a hash is only
    valid in the process that computed it."""
    cls = dataclass(frozen=True)(cls)
    field_hash: Callable[[Any], int] = cls.__hash__

    def __hash__(self: Any) -> int:
        found = self.__dict__.get("_hash")
        if found is None:
            found = field_hash(self)
            object.__setattr__(self, "_hash", found)
        return found

    def __getstate__(self: Any) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    cls.__hash__ = __hash__  # type: ignore[method-assign]
    cls.__getstate__ = __getstate__  # type: ignore[method-assign]
    return cls


def cached(self: Any, key: str, make: Callable[[], T]) -> T:
    """``make()``, computed once per node and kept in its ``__dict__`` under ``key``
    (a frozen node's derived values, such as a tensor's size, never change)."""
    found = self.__dict__.get(key)
    if found is None:
        found = make()
        object.__setattr__(self, key, found)
    return found


# ---------------------------------------------------------------------------
# leaf helpers


def as_expr(value: object, what: str) -> sp.Expr:
    """A SymPy number or expression from a Python or NumPy number, a Fraction, or a SymPy
    object (never text); floats are taken at their exact decimal value.

    >>> import numpy as np
    >>> as_expr(np.float64(0.5), "x"), as_expr(np.int64(3), "x")
    (1/2, 3)
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise SymroofError(f"{what}: expected a number or SymPy expression, got {value!r}")
    if isinstance(value, sp.Basic):
        if isinstance(value, sp.Expr):
            if value.has(sp.nan, sp.zoo):  # never a value: 0/0, or infinity without a sign
                raise SymroofError(f"{what}: expected a number or SymPy expression, got {value}")
            return value
    elif isinstance(value, numbers.Integral):
        return sp.Integer(int(value))
    elif isinstance(value, numbers.Rational):
        return sp.Rational(int(value.numerator), int(value.denominator))
    elif isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise SymroofError(f"{what}: expected a finite number, got {value!r}")
        return sp.Rational(repr(number))
    raise SymroofError(f"{what}: expected a number or SymPy expression, got "
                       f"{type(value).__name__} {_brief(value)}")


def _brief(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails must not hide the real error
        text = "?"
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(value: object, *, zero: bool = False) -> sp.Expr | None:
    """``value`` as a SymPy object when it is plainly valid (a positive symbol, a positive
    or, with ``zero``, non-negative integer or fraction), else None: nodes check their
    common fields this way, before and without building an error message."""
    if isinstance(value, sp.Symbol):
        return value if value.is_positive else None
    if isinstance(value, sp.Rational):  # Integer too; .p is the numerator, .q > 0
        return value if value.p > 0 or (zero and value.p == 0) else None
    if type(value) is int:
        return sp.Integer(value) if value > 0 or (zero and value == 0) else None
    return None


def _plain_dim(value: object) -> sp.Expr | None:
    """``value`` when it is plainly a dimension (a positive integer symbol or number)."""
    if isinstance(value, sp.Symbol):
        return value if value.is_integer and value.is_positive else None
    if isinstance(value, sp.Integer):
        return value if value.p > 0 else None
    if type(value) is int:
        return sp.Integer(value) if value > 0 else None
    return None


def _amount(value: object, what: Callable[[], str], *, zero: bool) -> sp.Expr:
    """A finite, real, non-negative (``zero``) or positive count such as FLOPs per element
    (``what()`` names it in an error)."""
    plain = _plain(value, zero=zero)
    if plain is not None:
        return plain
    expr = as_expr(value, what())
    bad = expr.has(sp.oo, -sp.oo, sp.zoo, sp.nan, sp.I)
    if bad or expr.is_negative or expr.is_real is False or (not zero and expr.is_zero) or (
            expr.is_number and not (expr.is_nonnegative if zero else expr.is_positive)):
        kind = "non-negative" if zero else "positive"
        raise SymroofError(f"{what()}: expected a finite, {kind} number, got {expr}")
    return expr


def as_dim(value: object, what: str) -> sp.Expr:
    """A dimension: a positive integer, or an expression not known to be otherwise."""
    expr = as_expr(value, what)
    if expr.is_number:
        if not (expr.is_integer and expr.is_positive):
            raise SymroofError(f"{what}: expected a positive integer dimension, got {expr}")
    elif expr.is_positive is False or expr.is_integer is False:
        raise SymroofError(
            f"{what}: expected a positive integer dimension, got {expr} "
            "(use symbols from symroof.symbols, which are positive integers)")
    return expr


def _as_bytes(value: object, tensor: str) -> sp.Expr:
    plain = _plain(value)
    if plain is not None:
        return plain
    what = f"tensor {tensor!r} bytes_per_value"
    expr = as_expr(value, what)
    if expr.is_positive is False or expr.is_zero or (expr.is_number and not expr.is_positive):
        raise SymroofError(f"{what}: expected positive bytes per value, got {expr}")
    return expr


def prod(values: Iterable[sp.Expr]) -> sp.Expr:
    """The product of dimensions (1 for none)."""
    return sp.Mul(*values)


def same_dim(a: sp.Expr, c: sp.Expr) -> bool:
    """Two dimensions are equal (structurally, or after expanding their difference)."""
    return a == c or sp.expand(a - c) == 0


def _shape(shape: Sequence[object], tensor: str) -> tuple[sp.Expr, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise SymroofError(f"tensor {tensor!r} shape: expected a shape (a tuple of "
                           f"dimensions), got {shape!r}")
    out = []
    for i, d in enumerate(shape):
        plain = _plain_dim(d)
        out.append(as_dim(d, f"tensor {tensor!r} shape dimension {i}") if plain is None
                   else plain)
    return tuple(out)


def fmt_shape(shape: Sequence[sp.Expr]) -> str:
    """A shape as error messages show it: ``(B, S, D)``."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


# ---------------------------------------------------------------------------
# nodes


@node
class Tensor:
    """A value with a symbolic shape, a kind, bytes per value and a role.

    >>> from symroof.symbols import M, K
    >>> Tensor("A", (M, K), Kind.ACTIVATION, 2).nbytes
    2*K*M
    """

    name: str
    shape: tuple[sp.Expr, ...]
    kind: Kind = Kind.ACTIVATION
    bytes_per_value: sp.Expr = _b
    role: Role = Role.VALUE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SymroofError(f"tensor name: expected a non-empty string, got {self.name!r}")
        object.__setattr__(self, "shape", _shape(self.shape, self.name))
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            raise SymroofError(
                f"tensor {self.name!r} kind: expected one of "
                f"{', '.join(k.value for k in Kind)}, got {self.kind!r}") from None
        object.__setattr__(self, "bytes_per_value",
                           _as_bytes(self.bytes_per_value, self.name))
        try:
            object.__setattr__(self, "role", Role(self.role))
        except ValueError:
            raise SymroofError(
                f"tensor {self.name!r} role: expected one of "
                f"{', '.join(r.value for r in Role)}, got {self.role!r}") from None

    @property
    def numel(self) -> sp.Expr:
        """Number of values."""
        return cached(self, "_numel", lambda: prod(self.shape))

    @property
    def nbytes(self) -> sp.Expr:
        """Size in bytes."""
        return cached(self, "_nbytes", lambda: self.numel * self.bytes_per_value)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {fmt_shape(self.shape)}, {self.kind.value})"


@dataclass(frozen=True)
class Op:
    """Base of all ops: a name; subclasses name their operand fields, write ``out``, and
    belong to a group. Construction checks every operand field and then ``_validate``."""

    name: str
    group: ClassVar[OpGroup]
    operands: ClassVar[tuple[str, ...]] = ()  # fields holding inputs (a tuple field: several)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SymroofError(f"{type(self).__name__.lower()} name: expected a non-empty "
                               f"string, got {self.name!r}")
        for f in (*self.operands, "out"):
            value = getattr(self, f, None)
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if not isinstance(item, Tensor):
                    raise self._fail(f"field {f!r}: expected a Tensor, got {item!r}")
        self._validate()

    def _validate(self) -> None:
        """Shape checks of a subclass (raise ``self._fail(...)``)."""

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The tensors the op reads, in operand order."""
        found: list[Tensor] = []
        for f in self.operands:
            value = getattr(self, f)
            found.extend(value if isinstance(value, tuple) else (value,))
        return tuple(found)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """The tensors the op writes."""
        return (self.out,)  # type: ignore[attr-defined]

    def _fail(self, message: str) -> SymroofError:
        return SymroofError(f"{type(self).__name__.lower()} {self.name!r}: {message}")


@node
class Gemm(Op):
    """``out[..., m, n] = sum_k a[..., m, k] * b[..., k, n]``, batched over leading dims.

    ``work_fraction`` is the fraction of the ``batch*M*N*K`` multiply-adds performed:
    1 for a dense product, 1/2 where a causal mask lets a kernel skip the masked half.
    """

    a: Tensor = None  # type: ignore[assignment]
    b: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    transpose_a: bool = False
    transpose_b: bool = False
    work_fraction: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.CONTRACTION
    operands: ClassVar[tuple[str, ...]] = ("a", "b")

    def _validate(self) -> None:
        object.__setattr__(self, "work_fraction",
                           _amount(self.work_fraction, lambda: f"gemm {self.name!r} work_fraction",
                                   zero=False))
        batch, m, n, k = self.dims
        if tuple(self.out.shape) != (*batch, m, n) and not (
                len(self.out.shape) == len(batch) + 2
                and all(same_dim(x, y) for x, y in zip(self.out.shape, (*batch, m, n)))):
            raise self._fail(f"output {self.out.name!r} has shape {fmt_shape(self.out.shape)}, "
                             f"expected {fmt_shape((*batch, m, n))}")

    @property
    def dims(self) -> tuple[tuple[sp.Expr, ...], sp.Expr, sp.Expr, sp.Expr]:
        """(batch dims, M, N, K), validated: ranks, inner dimensions, batch dims."""
        return cached(self, "_dims", self._dims)

    def _dims(self) -> tuple[tuple[sp.Expr, ...], sp.Expr, sp.Expr, sp.Expr]:
        for t in (self.a, self.b):
            if len(t.shape) < 2:
                raise self._fail(f"operand {t.name!r} has rank {len(t.shape)}, expected >= 2")
        *batch_a, m, ka = self.a.shape
        if self.transpose_a:
            m, ka = ka, m
        *batch_b, kb, n = self.b.shape
        if self.transpose_b:
            kb, n = n, kb
        if not same_dim(ka, kb):
            raise self._fail(f"inner dimensions differ: {self.a.name!r} has {ka}, "
                             f"{self.b.name!r} has {kb}")
        if batch_a and batch_b and (len(batch_a) != len(batch_b) or not all(
                same_dim(x, y) for x, y in zip(batch_a, batch_b))):
            raise self._fail(f"batch dimensions differ: {fmt_shape(batch_a)} vs {fmt_shape(batch_b)}")
        return tuple(batch_a or batch_b), m, n, ka


@node
class Elementwise(Op):
    """One output value per element from inputs of the output's shape (or broadcast).

    ``linear`` marks a sum of its inputs (a residual or bias add): its gradient needs no
    saved input values. ``saves`` says what the gradient reads otherwise (:class:`Saves`:
    the output for a softmax, the input and statistics for a norm, the mask for dropout;
    None: its inputs), as the builder that made the op knows.
    """

    xs: tuple[Tensor, ...] = ()
    out: Tensor = None  # type: ignore[assignment]
    flops_per_element: sp.Expr = sp.Integer(1)
    linear: bool = False
    saves: Saves | None = None
    group: ClassVar[OpGroup] = OpGroup.ELEMENTWISE
    operands: ClassVar[tuple[str, ...]] = ("xs",)

    def _validate(self) -> None:
        object.__setattr__(self, "flops_per_element", _amount(
            self.flops_per_element, lambda: f"elementwise {self.name!r} flops_per_element",
            zero=True))
        if not self.xs:
            raise self._fail("expected at least one input")
        if self.saves is not None:
            object.__setattr__(self, "saves", option(Saves, self.saves,
                                                     f"elementwise {self.name!r} saves"))
        for x in self.xs:
            if len(x.shape) > len(self.out.shape) or not all(
                    d == 1 or same_dim(d, o) for d, o in zip(reversed(x.shape), reversed(self.out.shape))):
                raise self._fail(f"input {x.name!r} of shape {fmt_shape(x.shape)} does not broadcast "
                                 f"to the output shape {fmt_shape(self.out.shape)}")


@node
class Reduce(Op):
    """Folds axis ``axis`` of ``x``; ``flops_per_element`` per input element."""

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    axis: int = -1
    flops_per_element: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.REDUCTION
    operands: ClassVar[tuple[str, ...]] = ("x",)

    def _validate(self) -> None:
        object.__setattr__(self, "flops_per_element", _amount(
            self.flops_per_element, lambda: f"reduce {self.name!r} flops_per_element", zero=True))
        rank = len(self.x.shape)
        if not -rank <= self.axis < rank:
            raise self._fail(f"axis {self.axis} out of range for {self.x.name!r} of rank {rank}")
        axis = self.axis % rank
        kept = (*self.x.shape[:axis], *self.x.shape[axis + 1:])
        keepdims = (*self.x.shape[:axis], 1, *self.x.shape[axis + 1:])
        if self.out.shape not in (kept, keepdims):
            raise self._fail(f"output shape {fmt_shape(self.out.shape)}, expected {fmt_shape(kept)}")


@node
class Gather(Op):
    """Rows of ``table`` picked by index (an embedding lookup): only those rows are read."""

    table: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("table",)

    def _validate(self) -> None:
        row = self.table.shape[1:]
        if len(self.out.shape) < len(row) or not all(
                same_dim(x, y) for x, y in zip(self.out.shape[len(self.out.shape) - len(row):], row)):
            raise self._fail(f"output shape {fmt_shape(self.out.shape)} must end in the table's "
                             f"row shape {fmt_shape(row)}")

    @property
    def rows(self) -> sp.Expr:
        """How many rows are looked up."""
        return prod(self.out.shape[: len(self.out.shape) - len(self.table.shape) + 1])


@node
class Move(Op):
    """Copies or rearranges values (im2col, a slice, a KV-cache append): no arithmetic.

    Each input is read once (``read_fraction`` of it: a slice of the last position reads
    1/S of its input) and the output written once.
    """

    xs: tuple[Tensor, ...] = ()
    out: Tensor = None  # type: ignore[assignment]
    read_fraction: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("xs",)

    def _validate(self) -> None:
        if not self.xs:
            raise self._fail("expected at least one input")
        object.__setattr__(self, "read_fraction",
                           _amount(self.read_fraction, lambda: f"move {self.name!r} read_fraction",
                                   zero=True))


@node
class View(Op):
    """The same values under another shape (a reshape or head split): no FLOPs, no traffic."""

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("x",)

    def _validate(self) -> None:
        if not same_dim(self.x.numel, self.out.numel):
            raise self._fail(f"{self.x.name!r} has {self.x.numel} values, the view "
                             f"{fmt_shape(self.out.shape)} has {self.out.numel}")

