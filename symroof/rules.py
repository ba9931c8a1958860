"""Rule tables: one per concern (cost, gradient), each rule keyed by its exact op type.

An op type without a rule is an error naming the op, never a silent zero. A rule
registers once; tests that add a rule for an op type of their own do it inside
``table.scoped()``, which restores the table afterwards.

>>> from symroof.ir import Gemm
>>> table: RuleTable[str] = RuleTable("demo", "table.register")
>>> with table.scoped():
...     _ = table.register(Gemm)("a rule")
...     table[Gemm]
'a rule'
>>> Gemm in table
False
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from symroof.errors import SymroofError
from symroof.ir import Op

__all__ = ["RuleTable"]

R = TypeVar("R")


class RuleTable(Mapping[type[Op], R], Generic[R]):
    """Rules of one concern (``"cost"``, ``"gradient"``), keyed by op type."""

    def __init__(self, concern: str, register_with: str) -> None:
        self.concern = concern
        self.register_with = register_with  # the decorator users call, named in errors
        self._rules: dict[type[Op], R] = {}

    def register(self, op_type: type[Op]) -> Callable[[R], R]:
        """Decorator: the rule of ``op_type`` (one per type)."""
        def add(rule: R) -> R:
            if op_type in self._rules:
                raise SymroofError(f"{self.concern} rule for {op_type.__name__} registered twice")
            self._rules[op_type] = rule
            return rule
        return add

    def rule(self, op: Op, where: str) -> R:
        """The rule for ``op``'s type; a SymroofError naming the op and ``where`` if none."""
        found = self._rules.get(type(op))
        if found is None:
            raise SymroofError(f"{where}: op {op.name!r}: no {self.concern} rule for "
                               f"{type(op).__name__} (register one with {self.register_with})")
        return found

    @contextlib.contextmanager
    def scoped(self) -> Iterator[RuleTable[R]]:
        """Rules registered inside the block are removed when it ends."""
        saved = dict(self._rules)
        try:
            yield self
        finally:
            self._rules.clear()
            self._rules.update(saved)

    def __getitem__(self, op_type: type[Op]) -> R:
        return self._rules[op_type]

    def __iter__(self) -> Iterator[type[Op]]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)
