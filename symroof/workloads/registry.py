"""The one workload registry: name -> builder, help, the symbols it is built over, and its
options, each option derived from the builder's signature.

An option is a keyword-only parameter of the builder annotated with an option enum
(:mod:`symroof.options`: its members are the choices) or ``bool`` (a flag); an entry may
add numeric ones by name (``elementwise``'s ``flops_per_element``). The keyword-only
parameters of :data:`LAYOUT` are a model's parallel layout, not options. Every front door
reads this table: the command line's flags and choices, claim recipes (:func:`build`),
the docs. Builders are imported when first used, so that reading the table's names costs
no graph library.

>>> sorted(get("conv2d").options)
['flop_count', 'lowering']
>>> get("decode").options["traffic"].choices
('weights_and_kv', 'all')
>>> build("gemm", 2, 3, 4, options={"flop_count": "one_per_mac"}).flops
24
>>> build("gemm", 2, 3, 4, options={"lowering": "implicit"}, where="claim 'x'.workload")
Traceback (most recent call last):
...
symroof.errors.SymroofError: claim 'x'.workload.options: workload 'gemm' has no option 'lowering'; its options: flop_count
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

from symroof.errors import SymroofError, suggest
from symroof.options import option

if TYPE_CHECKING:
    from symroof.analysis import Analysis

__all__ = ["Option", "Entry", "ENTRIES", "LAYOUT", "IMPLIES", "HELP", "names", "get", "build",
           "all_options", "takers"]

#: Keyword-only parameters that are a model's parallel layout (a request's ``layout``).
LAYOUT = ("tp", "pp", "microbatches", "expert_reads")

#: Giving the first option sets another where the builder takes both and the other is
#: not given: how the S x S matrices cross when unfused makes attention unfused.
IMPLIES: Mapping[str, tuple[str, object]] = MappingProxyType({"unfused": ("fused", False)})


#: What the options that are not enums set (an enum's own docstring says it for the others).
HELP: Mapping[str, str] = MappingProxyType({
    "fused": "attention in one kernel: the S x S matrices stay on chip",
    "projections": "add the Q, K, V and output projections (the input is the layer's x)",
    "kv_write": "count the write of each step's new K and V entries",
    "flops_per_element": "FLOPs per output value",
})


@dataclass(frozen=True)
class Option:
    """One option of a workload: its name, its kind (an option enum, ``bool`` or ``int``)
    and the builder's default."""

    name: str
    kind: type
    default: object

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The enum's values, or None for a flag or a number."""
        if issubclass(self.kind, StrEnum):
            return tuple(m.value for m in self.kind)
        return None

    @property
    def flag(self) -> str:
        """The command line's spelling: ``--flop-count``."""
        return "--" + self.name.replace("_", "-")

    @property
    def help(self) -> str:
        """What the option sets: the enum's docstring up to its parenthesis (a flag's or a
        number's from :data:`HELP`)."""
        doc = inspect.getdoc(self.kind) if issubclass(self.kind, StrEnum) else None
        first = (doc or HELP.get(self.name) or self.name.replace("_", " "))
        first = first.split("\n")[0].split(" (")[0]
        if first[1:2].islower():  # "How a ..." reads "how a ...", "FLOPs" stays
            first = first[:1].lower() + first[1:]
        return first.rstrip(".")

    def value(self, raw: object, what: str) -> object:
        """``raw`` as this option's value (an enum member, a bool, a non-negative int);
        an error naming ``what`` otherwise."""
        if issubclass(self.kind, StrEnum):
            return option(self.kind, raw, what)
        if self.kind is bool:
            if not isinstance(raw, bool):
                raise SymroofError(f"{what}: expected true or false, got {raw!r}")
            return raw
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise SymroofError(f"{what}: expected a non-negative integer, got {raw!r}")
        return raw


def _enum_of(hint: object) -> type | None:
    """The option enum (or ``bool``) an annotation names: ``Causal | bool | str`` is
    Causal, ``bool`` is bool, anything else None."""
    if hint is bool:
        return bool
    for arg in (hint, *typing.get_args(hint)):
        if isinstance(arg, type) and issubclass(arg, StrEnum):
            return arg
    return None


@dataclass(frozen=True)
class Entry:
    """A workload: its builder (imported on first use), what it computes, the canonical
    symbols it is built over, and whether a model comes first."""

    name: str
    help: str
    module: str
    function: str
    arguments: Callable[[], tuple[object, ...]]
    model: bool = False
    numbers: tuple[str, ...] = ()
    #: The pipeline's stages the builder may run (:mod:`symroof.passes.pipeline`), in
    #: order; a graph's ``provenance.passes`` lists those it ran (``shard`` only on more
    #: than one device, ``fuse`` only where the builder queued a fusion).
    pipeline: tuple[str, ...] = ()

    @property
    def builder(self) -> Callable[..., Analysis]:
        """The builder function."""
        found: Callable[..., Analysis] = getattr(importlib.import_module(self.module),
                                                 self.function)
        return found

    @cached_property
    def _parameters(self) -> Mapping[str, inspect.Parameter]:
        return {n: p for n, p in inspect.signature(self.builder).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}

    @cached_property
    def options(self) -> Mapping[str, Option]:
        """The options, in the builder's order: keyword-only parameters with an option
        enum or ``bool`` annotation, and :attr:`numbers`."""
        hints = typing.get_type_hints(self.builder)
        out: dict[str, Option] = {}
        for name, p in self._parameters.items():
            kind = int if name in self.numbers else _enum_of(hints.get(name))
            if kind is None or name in LAYOUT:
                continue
            default = p.default
            if isinstance(kind, type) and issubclass(kind, StrEnum):
                default = option(kind, default, name)
            out[name] = Option(name, kind, default)
        missing = set(self.numbers) - set(out)
        if missing:  # a table entry that names no parameter: a bug here, caught at once
            raise SymroofError(f"workload {self.name!r}: no keyword-only parameter "
                               f"{', '.join(sorted(missing))}")
        return MappingProxyType(out)

    @cached_property
    def layout(self) -> tuple[str, ...]:
        """Which of :data:`LAYOUT` the builder takes (the serving workloads: all)."""
        return tuple(n for n in LAYOUT if n in self._parameters)

    @cached_property
    def aliases(self) -> Mapping[str, str]:
        """Old names of options the builder still accepts (``flops`` for ``flop_count``)."""
        renamed: Mapping[str, str] = getattr(self.builder, "__renamed__", {})
        return MappingProxyType({old: new for old, new in renamed.items()
                                 if new in self.options})

    def check(self, given: Mapping[str, object], where: str) -> dict[str, object]:
        """``given`` options as values of their kinds, under their names (an old name
        such as ``flops`` is ``flop_count``); an option the workload does not take, or a
        value not of its kind, is an error naming it (``where.options`` and
        ``where.options.NAME``)."""
        out: dict[str, object] = {}
        for key, raw in given.items():
            name = self.aliases.get(key, key)
            opt = self.options.get(name)
            if opt is None:
                known = ", ".join(self.options) or "none"
                raise SymroofError(f"{where}.options: workload {self.name!r} has no option "
                                   f"{key!r}{suggest(str(key), self.options)}; its options: "
                                   f"{known}")
            if name in out:
                raise SymroofError(f"{where}.options: {name} given twice (as {key!r} too)")
            out[name] = opt.value(raw, f"{where}.options.{key}")
        return out

    def keywords(self, options: Mapping[str, object]) -> dict[str, object]:
        """Checked ``options`` with what they imply (:data:`IMPLIES`): the keyword
        arguments the builder is called with."""
        out = dict(options)
        for name, (other, value) in IMPLIES.items():
            if name in out and other in self.options and other not in out:
                out[other] = value
        return out

    def build(self, *args: object, options: Mapping[str, object] | None = None,
              where: str = "workload", **kwargs: object) -> Analysis:
        """The builder called with ``args``, ``kwargs`` and the checked ``options``."""
        opts = self.keywords(self.check(options or {}, where))
        clash = set(opts) & set(kwargs)
        if clash:
            raise SymroofError(f"{where}: {', '.join(sorted(clash))} given twice (as an "
                               "option and as an argument)")
        return self.builder(*args, **kwargs, **opts)


def _symbols(*names: str) -> Callable[[], tuple[object, ...]]:
    """The canonical dimensions of these names (made on first use)."""
    def made() -> tuple[object, ...]:
        from symroof.symbols import dim  # symbols cost SymPy: made when a workload is built

        return tuple(dim(n) for n in names)
    return made


def _conv_arguments() -> tuple[object, ...]:
    from symroof.symbols import dim  # as _symbols

    n, c, h, w, k, r, s = (dim(x) for x in ("N", "C", "H", "W", "K", "R", "S_f"))
    return (n, c, h, w, k, (r, s))


_BASIC, _MODEL = "symroof.workloads.basic", "symroof.workloads.transformer"

#: Every workload, by name, in the order help lists them; each uses the canonical symbols
#: (set them with ``--set``).
ENTRIES: Mapping[str, Entry] = MappingProxyType({e.name: e for e in (
    Entry("gemm", "C[M,N] = A[M,K] @ B[K,N]", _BASIC, "gemm", _symbols("M", "N", "K")),
    Entry("gemv", "y[N] = W[N,K] @ x[K] (GEMM with M = 1)", _BASIC, "gemv",
          _symbols("N", "K")),
    Entry("elementwise", "n outputs at --flops-per-element each (ReLU: 1)", _BASIC,
          "elementwise", _symbols("n"), numbers=("flops_per_element",)),
    Entry("conv2d", "convolution via im2col (--lowering explicit|implicit); symbols N C H W K R S_f",
          _BASIC, "conv2d", _conv_arguments, pipeline=("fuse",)),
    Entry("attention", "one attention layer's core over S tokens (--unfused to materialize "
          "the S x S matrices)", "symroof.workloads.attention", "attention",
          _symbols("S", "D", "H"), pipeline=("fuse",)),
    Entry("prefill", "forward over B x S prompt tokens (--model)", _MODEL, "prefill",
          _symbols("B", "S"), model=True, pipeline=("fuse", "shard")),
    Entry("decode", "one decode step: B sequences attending to S positions (--model)", _MODEL,
          "decode", _symbols("B", "S"), model=True, pipeline=("fuse", "shard")),
    Entry("training", "one training step over B x S tokens (--model)", _MODEL, "training",
          _symbols("B", "S"), model=True, pipeline=("fuse", "backward", "optimizer_step")),
    Entry("ssd", "the chunked Mamba-2 scan alone over S tokens: H heads of P channels, state "
          "N, chunks of Q (--groups G)", "symroof.workloads.recurrent", "ssd",
          _symbols("S", "H", "P", "N", "Q"), numbers=("groups",),
          pipeline=("fuse",)),
)})


def names() -> tuple[str, ...]:
    """The workloads' names, in the table's order."""
    return tuple(ENTRIES)


def get(name: object, where: str | None = None) -> Entry:
    """The entry of ``name``; an unknown name suggests close ones (after ``where``)."""
    entry = ENTRIES.get(name) if isinstance(name, str) else None
    if entry is None:
        raise SymroofError(f"{where + ': ' if where else ''}unknown workload {name!r}; "
                           f"expected one of {', '.join(sorted(ENTRIES))}"
                           f"{suggest(str(name), ENTRIES)}")
    return entry


def build(name: str, *args: object, options: Mapping[str, object] | None = None,
          where: str = "workload", **kwargs: object) -> Analysis:
    """Workload ``name`` built from ``args`` and ``kwargs`` (sizes, a model) with
    ``options`` checked against its builder's (errors name ``where`` and the option)."""
    return get(name, where).build(*args, options=options, where=where, **kwargs)


@cache
def all_options() -> Mapping[str, Option]:
    """Every workload's options by name (one kind per name across the table), for a front
    door that offers them all and refuses those a workload does not take."""
    out: dict[str, Option] = {}
    for entry in ENTRIES.values():
        for name, opt in entry.options.items():
            seen = out.setdefault(name, opt)
            if seen.kind is not opt.kind:  # one name, one meaning (README's glossary)
                raise SymroofError(f"option {name!r}: {seen.kind.__name__} in one workload, "
                                   f"{opt.kind.__name__} in {entry.name!r}")
    return MappingProxyType(out)


def takers(name: str) -> Iterator[str]:
    """The workloads that take option ``name``."""
    return (e.name for e in ENTRIES.values() if name in e.options)
